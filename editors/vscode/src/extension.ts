// The sculpt extension: starts `sculpt lsp` through vscode-languageclient
// (v10, which maps textDocument/inlineCompletion onto VS Code's inline
// suggestions), shows sculpt/status in the status bar, and adds commands to
// restart the server, show its log and toggle automatic completion.
import * as vscode from 'vscode';
//
// Errors: a failed completion request turns the status bar item into a
// warning, with the message in its tooltip, until a request succeeds; the
// message goes to the output channel once. No pop-up per failed request
// (revealOutputChannelOn: Never), since automatic requests fail on every
// keystroke when they fail at all.
import {
  LanguageClient, LanguageClientOptions, RevealOutputChannelOn, ServerOptions,
} from 'vscode-languageclient/node';
import {
  isQuietError, serverCommand, serverEnv, serverSettings, shouldAsk, statusBar, SculptStatus, ShownErrors,
  userSet,
} from './logic';

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let item: vscode.StatusBarItem;
let lastStatus: SculptStatus | undefined;
let requestError: string | undefined;
const shownErrors = new ShownErrors();

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('sculpt');
}

function automatic(): boolean {
  return config().get<boolean>('automaticCompletion', true);
}

function settings(): Record<string, unknown> {
  const c = config();
  return serverSettings((k) => c.get(k), (k) => userSet(c.inspect(k)));
}

function showStatus(): void {
  const s = statusBar(lastStatus, automatic(), requestError);
  item.text = s.text;
  item.tooltip = s.tooltip;
  item.backgroundColor = s.error ? new vscode.ThemeColor('statusBarItem.errorBackground')
    : s.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  item.show();
}

/** Writes `what` and `message` to the output channel, the first time the
 * message (or one like it, see ShownErrors) is seen. */
function logErrorOnce(message: string, what = ''): void {
  if (shownErrors.firstTime(message)) output.warn(what + message);
}

/** A failed request: the warning item, and the message logged once. */
function requestFailed(e: unknown): void {
  const code = (e as { code?: unknown } | undefined)?.code;
  if (e instanceof vscode.CancellationError || isQuietError(code)) return;
  const message = e instanceof Error ? e.message : String(e);
  logErrorOnce(message, 'completion request failed: ');
  if (requestError !== message) {
    requestError = message;
    showStatus();
  }
}

function requestSucceeded(): void {
  if (requestError === undefined) return;
  requestError = undefined;
  showStatus();
}

/** Runs a completion provider of the language client: a failure is
 * reported (above) and answered with no completion; a cancellation passes. */
async function guarded<T>(provide: () => vscode.ProviderResult<T>): Promise<T | null | undefined> {
  try {
    const result = await provide();
    requestSucceeded();
    return result;
  } catch (e) {
    requestFailed(e);
    if (e instanceof vscode.CancellationError) throw e;
    return null;
  }
}

async function start(): Promise<void> {
  const { command, args } = serverCommand(config().get<string>('serverPath'));
  const serverOptions: ServerOptions = { command, args, options: { env: serverEnv(process.env) } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: settings(),
    middleware: {
      // Automatic completion off: only explicit requests reach the server.
      provideInlineCompletionItems: (document, position, context, token, next) => {
        if (!shouldAsk(automatic(), context.triggerKind)) return null;
        return guarded(() => next(document, position, context, token));
      },
      provideCompletionItem: (document, position, context, token, next) =>
        guarded(() => next(document, position, context, token)),
      workspace: {
        // The server pulls section "sculpt": answer with what it reads.
        configuration: (params) =>
          params.items.map((i) => (i.section === 'sculpt' ? settings() : null)),
      },
    },
  };
  client = new LanguageClient('sculpt', 'sculpt', serverOptions, clientOptions);
  client.onNotification('sculpt/status', (s: SculptStatus) => {
    lastStatus = s;
    if (s.state === 'error' && s.message) logErrorOnce(s.message);
    showStatus();
  });
  lastStatus = undefined;
  requestError = undefined;
  shownErrors.clear();
  showStatus();
  try {
    await client.start();
  } catch (e) {
    lastStatus = { state: 'error', message: `cannot start ${command}: ${String(e)}` };
    showStatus();
  }
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) await c.stop().catch(() => undefined);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('sculpt', { log: true });
  item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  item.command = 'sculpt.showLog';
  context.subscriptions.push(
    output, item,
    vscode.commands.registerCommand('sculpt.restartServer', async () => {
      await stop();
      await start();
    }),
    vscode.commands.registerCommand('sculpt.showLog', () => output.show(true)),
    vscode.commands.registerCommand('sculpt.toggleAutomaticCompletion', async () => {
      await config().update('automaticCompletion', !automatic(), vscode.ConfigurationTarget.Global);
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration('sculpt')) return;
      if (e.affectsConfiguration('sculpt.serverPath')) {
        await stop();
        await start();
        return;
      }
      showStatus();
      if (client?.isRunning()) {
        await client.sendNotification('workspace/didChangeConfiguration', { settings: { sculpt: settings() } });
      }
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await stop();
}
