// The client-side logic, without VS Code: node --test.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  errorKey, isQuietError, SERVER_SETTINGS, serverCommand, serverEnv, serverSettings, shouldAsk, ShownErrors, statusBar,
  userSet,
} from '../src/logic';
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

test('serverSettings: a contextBudget the user never set is null, the server fits its own', () => {
  // VS Code's get() answers the contributed default (1024) for a key nobody
  // set; sent as is, the server took it as the user's choice and warned that
  // the shipped model's context is 256 tokens (issue 43).
  const defaults: Record<string, unknown> = { contextBudget: 1024, maxTokens: 64 };
  const none = serverSettings((k) => defaults[k], () => false);
  assert.equal(none.contextBudget, null);
  assert.equal(none.maxTokens, 64);
  const set = serverSettings((k) => defaults[k], (k) => k === 'contextBudget');
  assert.equal(set.contextBudget, 1024);
  // inspect(): a default alone is not the user's; any scope's value is.
  assert.equal(userSet({ globalValue: undefined, workspaceValue: undefined }), false);
  assert.equal(userSet(undefined), false);
  assert.equal(userSet({ workspaceFolderValue: 512 }), true);
  assert.equal(userSet({ globalLanguageValue: 2048 }), true);
});

test('statusBar: loading, ready with latency, error', () => {
  assert.match(statusBar({ state: 'loading', model: 'm', device: 'cpu', progress: 40 }, true).text, /40%/);
  assert.match(statusBar({ state: 'loading', model: 'm', device: 'cpu', progress: 40 }, true).tooltip, /loading m on cpu/);
  const d = statusBar({ state: 'loading', model: 'a/b', progress: 7, message: 'downloading a/b: 7.0 of 100.0 MB' }, true);
  assert.match(d.text, / 7%/);
  assert.match(d.tooltip, /downloading a\/b: 7\.0 of 100\.0 MB/);
  const r = statusBar({ state: 'ready', model: 'm', device: 'cpu', lastLatencyMs: 12.4 }, true);
  assert.equal(r.text, '$(sparkle) sculpt 12 ms');
  assert.match(r.tooltip, /m on cpu, last completion 12\.4 ms/);
  assert.match(statusBar({ state: 'ready', model: 'm', device: 'cpu' }, false).text, /manual/);
  const e = statusBar({ state: 'error', message: 'no model' }, true);
  assert.equal(e.error, true);
  assert.match(e.tooltip, /no model/);
});

test('statusBar: the tooltip says what the last completion came to, and the counts', () => {
  const s = {
    state: 'ready', model: 'm', device: 'cpu', lastLatencyMs: 3, lastOutcome: 'dropped: would not parse',
    completions: { answered: 10, offered: 6, dropped: 4 },
  };
  assert.match(statusBar(s, true).tooltip,
    /last completion: dropped: would not parse \(this session: 10 answered, 6 offered, 4 dropped\)/);
  assert.doesNotMatch(statusBar({ state: 'ready', model: 'm', device: 'cpu' }, true).tooltip, /last completion:/);
});

test('shouldAsk: explicit requests always, automatic ones when enabled', () => {
  assert.equal(shouldAsk(false, 0), true);
  assert.equal(shouldAsk(false, 1), false);
  assert.equal(shouldAsk(true, 1), true);
});

test('statusBar: a failed request turns a ready item into a warning with the message', () => {
  const ready = { state: 'ready', model: 'm', device: 'cpu', lastLatencyMs: 3 };
  const w = statusBar(ready, true, 'infill: too long');
  assert.equal(w.warning, true);
  assert.equal(w.error, false);
  assert.match(w.text, /warning/);
  assert.match(w.tooltip, /request failed: infill: too long/);
  assert.equal(statusBar(ready, true, undefined).warning, false);
  // The server's own error state wins over a request's.
  const e = statusBar({ state: 'error', message: 'no model' }, true, 'no model: x');
  assert.equal(e.error, true);
  assert.equal(e.warning, false);
  assert.match(e.tooltip, /no model/);
});

test('isQuietError: cancellations and stale answers only', () => {
  for (const c of [-32800, -32801, -32802]) assert.equal(isQuietError(c), true);
  for (const c of [-32602, -32603, -32803, undefined, 'x']) assert.equal(isQuietError(c), false);
});

test('ShownErrors: each message once; one containing another counts as seen', () => {
  const s = new ShownErrors();
  assert.equal(s.firstTime('/m/config.json: cannot open'), true);
  assert.equal(s.firstTime('/m/config.json: cannot open'), false);
  assert.equal(s.firstTime('textDocument/inlineCompletion: no model: /m/config.json: cannot open'), false);
  assert.equal(s.firstTime('infill: exceeds the context'), true);
  assert.equal(s.firstTime('infill: 768 prefix + 32 canvas exceed'), true);
  assert.equal(s.firstTime('infill: 632 prefix + 16 canvas exceed'), false);
  assert.equal(s.firstTime('textDocument/inlineCompletion: backend x is unreachable'), true);
  assert.equal(s.firstTime('textDocument/completion: backend x is unreachable'), false);
  assert.equal(s.firstTime(''), false);
  s.clear();
  assert.equal(s.firstTime('infill: exceeds the context'), true);
});

test('serverEnv: the server writes only errors to stderr, unless SCULPT_LOG says otherwise', () => {
  assert.deepEqual(serverEnv({ PATH: '/bin' }), { PATH: '/bin', SCULPT_LOG: 'error' });
  assert.equal(serverEnv({ SCULPT_LOG: 'debug' }).SCULPT_LOG, 'debug');
});

test('errorKey: no leading LSP method, numbers as #', () => {
  assert.equal(errorKey('textDocument/inlineCompletion: infill: 768 prefix'), 'infill: # prefix');
  assert.equal(errorKey('/m/config.json: cannot open'), '/m/config.json: cannot open');
});
