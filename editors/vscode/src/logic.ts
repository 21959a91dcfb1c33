// Client-side logic with no dependency on the vscode module, so that node's
// test runner can check it (test/logic.test.ts).

/** The settings the server reads (section "sculpt", README "Settings"). */
export const SERVER_SETTINGS = [
  'modelPath', 'device', 'weights', 'algorithm', 'threshold', 'eosPenalty', 'maxTokens', 'contextBudget',
  'debounceMs', 'enabledLanguages', 'holeMarker', 'lengthCandidates', 'logLevel',
  'repair', 'kvReuse', 'drafts', 'draftThreshold', 'backend', 'maxDocumentBytes', 'indexMaxFiles', 'autoPull',
] as const;

/** The process to start: `serverPath` (a setting) or `sculpt` from PATH. */
export function serverCommand(serverPath: string | undefined | null): { command: string; args: string[] } {
  const p = (serverPath ?? '').trim();
  return { command: p === '' ? 'sculpt' : p, args: ['lsp', '--stdio'] };
}

/**
 * The server's environment: the extension host's, with SCULPT_LOG (the
 * server's stderr level) set to "error" unless it is set already. The
 * language client files every stderr line as an error in the output
 * channel; the server's other lines come as window/logMessage, at their own
 * level (setting sculpt.logLevel).
 */
export function serverEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return { ...env, SCULPT_LOG: env.SCULPT_LOG ?? 'error' };
}

/**
 * Settings whose server default is not a value the client can send: the
 * server fits contextBudget to the model's context by itself, silently,
 * while an explicit 1024 is the user's choice, and warns when the model's
 * context is smaller (256 for the shipped model). Unless the user set one,
 * it is sent as null ("the server's default").
 */
export const NULL_UNLESS_SET: readonly string[] = ['contextBudget'];

/**
 * The "sculpt" settings object sent to the server, from a getter over the
 * VS Code configuration (which answers defaults too) and whether the user
 * set a key anywhere (user, workspace, folder or language settings).
 * Unset values (undefined) are left out, so the server keeps its own; an
 * empty modelPath is sent as null, which the server reads as "the default
 * model"; a NULL_UNLESS_SET key the user did not set is sent as null.
 */
export function serverSettings(get: (key: string) => unknown,
                               userSet: (key: string) => boolean = () => true): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    const v = get(key);
    if (v === undefined) continue;
    if (NULL_UNLESS_SET.includes(key) && !userSet(key)) out[key] = null;
    else out[key] = key === 'modelPath' && (v === '' || v === null) ? null : v;
  }
  return out;
}

/** What WorkspaceConfiguration.inspect answers, as far as userSet reads it. */
export interface Inspected {
  globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown;
  globalLanguageValue?: unknown; workspaceLanguageValue?: unknown; workspaceFolderLanguageValue?: unknown;
}

/** Did the user set the key anywhere? (Its default alone: no.) */
export function userSet(inspected: Inspected | undefined): boolean {
  if (!inspected) return false;
  return [inspected.globalValue, inspected.workspaceValue, inspected.workspaceFolderValue,
    inspected.globalLanguageValue, inspected.workspaceLanguageValue,
    inspected.workspaceFolderLanguageValue].some((v) => v !== undefined);
}

/** The params of the sculpt/status notification. */
export interface SculptStatus {
  state: 'loading' | 'ready' | 'error' | string;
  model?: string;
  device?: string;
  progress?: number;
  lastLatencyMs?: number;
  message?: string;
  /** What the last completion came to: "offered", "dropped: would not parse", ... */
  lastOutcome?: string;
  /** This session's completions the model answered. */
  completions?: { answered: number; offered: number; dropped: number };
}

/** The last completion's outcome and the session's counts, for the tooltip. */
export function outcomeText(s: SculptStatus | undefined): string {
  if (!s?.lastOutcome) return '';
  const n = s.completions ?? { answered: 0, offered: 0, dropped: 0 };
  return `\nlast completion: ${s.lastOutcome} (this session: ${n.answered} answered, ` +
    `${n.offered} offered, ${n.dropped} dropped)`;
}

/** What the status bar item shows: text, tooltip, and its colour (error:
 * the server is unusable; warning: the last request failed). */
export interface StatusBarView { text: string; tooltip: string; error: boolean; warning: boolean }

/**
 * Text and tooltip of the status bar item. `requestError`: the message of
 * the last request that failed, when no request has succeeded since; it
 * turns a ready item into a warning (the server's own error state wins).
 */
export function statusBar(s: SculptStatus | undefined, automatic: boolean,
                          requestError?: string): StatusBarView {
  const view = statusBarState(s, automatic);
  if (requestError === undefined || view.error) return view;
  return {
    text: '$(warning) sculpt',
    tooltip: `sculpt: a completion request failed: ${requestError}` +
      (s?.model ? `\n${s.model} on ${s.device ?? '?'}` : ''),
    error: false,
    warning: true,
  };
}

function statusBarState(s: SculptStatus | undefined, automatic: boolean): StatusBarView {
  const off = automatic ? '' : ' (manual)';
  if (!s) return { text: '$(loading~spin) sculpt', tooltip: 'sculpt: starting', error: false, warning: false };
  const model = s.model ?? 'no model';
  const device = s.device ?? '?';
  switch (s.state) {
    case 'loading': {
      const pct = typeof s.progress === 'number' ? ` ${Math.round(s.progress)}%` : '';
      // An autoPull download names itself ("downloading ID: a of b MB").
      const what = s.message ?? `loading ${model} on ${device}`;
      return { text: `$(loading~spin) sculpt${pct}`, tooltip: `sculpt: ${what}`, error: false, warning: false };
    }
    case 'ready': {
      const ms = typeof s.lastLatencyMs === 'number' ? ` ${Math.round(s.lastLatencyMs)} ms` : '';
      return {
        text: `$(sparkle) sculpt${ms}${off}`,
        tooltip: `sculpt: ${model} on ${device}` +
          (typeof s.lastLatencyMs === 'number' ? `, last completion ${s.lastLatencyMs.toFixed(1)} ms` : '') +
          (automatic ? '' : '; automatic completion is off') + outcomeText(s),
        error: false,
        warning: false,
      };
    }
    default:
      return { text: '$(error) sculpt', tooltip: `sculpt: ${s.message ?? s.state}`, error: true, warning: false };
  }
}

/** JSON-RPC error codes that are part of normal typing and never shown:
 * RequestCancelled, ContentModified (the document changed), ServerCancelled. */
export function isQuietError(code: unknown): boolean {
  return code === -32800 || code === -32801 || code === -32802;
}

/**
 * What makes two error messages the same error: the text without the LSP
 * method the server puts first ("textDocument/completion: ") and with any
 * number as "#" (automatic requests fail the same way on every keystroke,
 * with other counts: "768 prefix + 32 canvas ...").
 */
export function errorKey(message: string): string {
  return message.replace(/^(?:(?:textDocument|workspace|completionItem|codeAction)\/[A-Za-z/]+: )+/, '')
    .replace(/[0-9]+/g, '#');
}

/**
 * Remembers which error messages the user has been shown, so each is shown
 * once. A message whose key (errorKey) contains one already shown, or is
 * contained in one, counts as shown: a failed request repeats the server's
 * status message ("no model: X" after "X").
 */
export class ShownErrors {
  private readonly seen: string[] = [];

  /** True the first time `message` (or a message like it) is offered. */
  firstTime(message: string): boolean {
    const key = errorKey(message);
    if (key === '') return false;
    if (this.seen.some((m) => m.includes(key) || key.includes(m))) return false;
    this.seen.push(key);
    return true;
  }

  clear(): void {
    this.seen.length = 0;
  }
}

/** InlineCompletionTriggerKind: 0 Invoke, 1 Automatic (VS Code's numbering). */
export function shouldAsk(automaticEnabled: boolean, vscodeTriggerKind: number): boolean {
  return automaticEnabled || vscodeTriggerKind === 0;
}
