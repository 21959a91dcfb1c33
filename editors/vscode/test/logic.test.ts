// The client-side logic, without VS Code: node --test.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { SERVER_SETTINGS, serverCommand, serverSettings, shouldAsk, statusBar } from '../src/logic';
import * as pkg from '../package.json';

test('serverCommand: PATH by default, the setting when given', () => {
  assert.deepEqual(serverCommand(undefined), { command: 'sculpt', args: ['lsp', '--stdio'] });
  assert.deepEqual(serverCommand('  '), { command: 'sculpt', args: ['lsp', '--stdio'] });
  assert.equal(serverCommand('/opt/sculpt/bin/sculpt').command, '/opt/sculpt/bin/sculpt');
});

test('every server setting is contributed, with a default the server accepts', () => {
  const props = (pkg as any).contributes.configuration.properties as Record<string, any>;
  for (const key of SERVER_SETTINGS) {
    assert.ok(props['sculpt.' + key], 'sculpt.' + key + ' is contributed');
    assert.ok('default' in props['sculpt.' + key], 'sculpt.' + key + ' has a default');
  }
  for (const cmd of ['sculpt.restartServer', 'sculpt.showLog', 'sculpt.toggleAutomaticCompletion'])
    assert.ok((pkg as any).contributes.commands.some((c: any) => c.command === cmd), cmd);
});

test('serverSettings: only server keys; empty modelPath means the default model', () => {
  const conf: Record<string, unknown> = {
    modelPath: '', maxTokens: 5, serverPath: '/x', automaticCompletion: false, enabledLanguages: null,
  };
  assert.deepEqual(serverSettings((k) => conf[k]), { modelPath: null, maxTokens: 5, enabledLanguages: null });
});

test('statusBar: loading, ready with latency, error', () => {
  assert.match(statusBar({ state: 'loading', model: 'm', device: 'cpu', progress: 40 }, true).text, /40%/);
  const r = statusBar({ state: 'ready', model: 'm', device: 'cpu', lastLatencyMs: 12.4 }, true);
  assert.equal(r.text, '$(sparkle) sculpt 12 ms');
  assert.match(r.tooltip, /m on cpu, last completion 12\.4 ms/);
  assert.match(statusBar({ state: 'ready', model: 'm', device: 'cpu' }, false).text, /manual/);
  const e = statusBar({ state: 'error', message: 'no model' }, true);
  assert.equal(e.error, true);
  assert.match(e.tooltip, /no model/);
});

test('shouldAsk: explicit requests always, automatic ones when enabled', () => {
  assert.equal(shouldAsk(false, 0), true);
  assert.equal(shouldAsk(false, 1), false);
  assert.equal(shouldAsk(true, 1), true);
});
