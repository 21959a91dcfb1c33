// The real server over stdio with vscode-jsonrpc, as the extension starts
// it: initialize -> initialized -> (workspace/configuration) -> didOpen ->
// textDocument/inlineCompletion -> sculpt.accept -> shutdown -> exit. The
// planted model (tools/planted_checkpoints.py) answers
// "defghijklmnopqrstuvwxyz" after "int abc".
// SCULPT_BIN: the binary (else the test is skipped, or fails when
// SCULPT_REQUIRE_SERVER=1, as in ctest). SCULPT_TEST_MODEL: the planted
// model (else it is written to a temporary folder).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { serverCommand, serverSettings, statusBar, SculptStatus } from '../src/logic';

const ALPHABET = 'defghijklmnopqrstuvwxyz';
const bin = process.env.SCULPT_BIN;
const required = process.env.SCULPT_REQUIRE_SERVER === '1';

function plantedModel(): string {
  if (process.env.SCULPT_TEST_MODEL) return process.env.SCULPT_TEST_MODEL;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sculpt-vscode-'));
  const src = path.resolve(__dirname, '..', '..', '..', '..');
  execFileSync('/usr/bin/python3', [path.join(src, 'tools', 'planted_checkpoints.py'), dir]);
  return path.join(dir, 'planted-successor-shifted-bytes');
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<T>((_, rej) => { timer = setTimeout(() => rej(new Error('timeout: ' + what)), ms); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

test('inline completion from the real server', { skip: !bin && !required ? 'SCULPT_BIN is not set' : false }, async () => {
  assert.ok(bin, 'SCULPT_BIN must name the sculpt binary');
  const conf: Record<string, unknown> = { modelPath: plantedModel(), lengthCandidates: 4, logLevel: 'info' };
  const settings = serverSettings((k) => conf[k]);
  const { args } = serverCommand(bin);
  const proc = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise<number | null>((res) => proc.on('exit', (code) => res(code)));
  const conn = createMessageConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
  const statuses: SculptStatus[] = [];
  let ready: () => void;
  const isReady = new Promise<void>((res) => { ready = res; });
  let configPulled = false;
  conn.onNotification('sculpt/status', (s: SculptStatus) => {
    statuses.push(s);
    if (s.state === 'ready') ready();
  });
  conn.onNotification('window/logMessage', () => undefined);
  conn.onRequest('workspace/configuration', (p: { items: { section?: string }[] }) => {
    configPulled = true;
    return p.items.map((i) => (i.section === 'sculpt' ? settings : null));
  });
  conn.listen();
  try {
    const init: any = await withTimeout(conn.sendRequest('initialize', {
      processId: process.pid, rootUri: null,
      capabilities: { workspace: { configuration: true } },
      clientInfo: { name: 'sculpt-vscode-test' },
      initializationOptions: settings,
    }), 10000, 'initialize');
    assert.equal(init.capabilities.inlineCompletionProvider, true);
    await conn.sendNotification('initialized', {});
    await withTimeout(isReady, 60000, 'sculpt/status ready');
    const st = statusBar(statuses[statuses.length - 1], true);
    assert.match(st.tooltip, /planted-successor-shifted-bytes/);
    const uri = 'file:///w/main.c';
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: 'c', version: 1, text: 'int abc;\n' },
    });
    const res: any = await withTimeout(conn.sendRequest('textDocument/inlineCompletion', {
      textDocument: { uri }, position: { line: 0, character: 7 }, context: { triggerKind: 1 },
    }), 60000, 'inlineCompletion');
    assert.equal(res.items.length, 1);
    assert.equal(res.items[0].insertText, ALPHABET);
    assert.deepEqual(res.items[0].range.start, { line: 0, character: 7 });
    const cmd = res.items[0].command;
    assert.equal(cmd.command, 'sculpt.accept');
    assert.equal(await conn.sendRequest('workspace/executeCommand', { command: cmd.command, arguments: cmd.arguments }), null);
    assert.ok(configPulled, 'the server pulled section "sculpt"');
    assert.equal(await withTimeout(conn.sendRequest('shutdown'), 10000, 'shutdown'), null);
    await conn.sendNotification('exit');
    assert.equal(await withTimeout(exited, 10000, 'exit'), 0);
  } catch (e) {
    proc.kill();
    throw new Error(String(e) + '\nserver stderr:\n' + stderr);
  } finally {
    conn.dispose();
  }
});
