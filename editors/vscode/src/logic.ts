// Client-side logic with no dependency on the vscode module, so that node's
// test runner can check it (test/logic.test.ts).

/** The settings the server reads (section "sculpt", README "Settings"). */
export const SERVER_SETTINGS = [
  'modelPath', 'device', 'algorithm', 'threshold', 'eosPenalty', 'maxTokens', 'contextBudget',
  'debounceMs', 'enabledLanguages', 'holeMarker', 'lengthCandidates', 'logLevel',
  'repair', 'backend',
] as const;

/** The process to start: `serverPath` (a setting) or `sculpt` from PATH. */
export function serverCommand(serverPath: string | undefined | null): { command: string; args: string[] } {
  const p = (serverPath ?? '').trim();
  return { command: p === '' ? 'sculpt' : p, args: ['lsp', '--stdio'] };
}

/**
 * The "sculpt" settings object sent to the server, from a getter over the
 * VS Code configuration. Unset values (undefined) are left out, so the server
 * keeps its own; an empty modelPath is sent as null, which the server reads
 * as "the default model".
 */
export function serverSettings(get: (key: string) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    const v = get(key);
    if (v === undefined) continue;
    out[key] = key === 'modelPath' && (v === '' || v === null) ? null : v;
  }
  return out;
}

/** The params of the sculpt/status notification. */
export interface SculptStatus {
  state: 'loading' | 'ready' | 'error' | string;
  model?: string;
  device?: string;
  progress?: number;
  lastLatencyMs?: number;
  message?: string;
}

/** Text and tooltip of the status bar item. */
export function statusBar(s: SculptStatus | undefined, automatic: boolean): { text: string; tooltip: string; error: boolean } {
  const off = automatic ? '' : ' (manual)';
  if (!s) return { text: '$(loading~spin) sculpt', tooltip: 'sculpt: starting', error: false };
  const model = s.model ?? 'no model';
  const device = s.device ?? '?';
  switch (s.state) {
    case 'loading': {
      const pct = typeof s.progress === 'number' ? ` ${Math.round(s.progress)}%` : '';
      return { text: `$(loading~spin) sculpt${pct}`, tooltip: `sculpt: loading ${model} on ${device}`, error: false };
    }
    case 'ready': {
      const ms = typeof s.lastLatencyMs === 'number' ? ` ${Math.round(s.lastLatencyMs)} ms` : '';
      return {
        text: `$(sparkle) sculpt${ms}${off}`,
        tooltip: `sculpt: ${model} on ${device}` +
          (typeof s.lastLatencyMs === 'number' ? `, last completion ${s.lastLatencyMs.toFixed(1)} ms` : '') +
          (automatic ? '' : '; automatic completion is off'),
        error: false,
      };
    }
    default:
      return { text: '$(error) sculpt', tooltip: `sculpt: ${s.message ?? s.state}`, error: true };
  }
}

/** InlineCompletionTriggerKind: 0 Invoke, 1 Automatic (VS Code's numbering). */
export function shouldAsk(automaticEnabled: boolean, vscodeTriggerKind: number): boolean {
  return automaticEnabled || vscodeTriggerKind === 0;
}
