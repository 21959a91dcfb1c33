// Driven by test_vscode_real.py: headless Chromium (Debian's, through
// puppeteer-core from editors/vscode's devDependencies) on a code-server
// that has the sculpt .vsix installed, as a user would use it: open a
// folder, open a file with Ctrl+P, move with Ctrl+G, type, ask with the
// command palette ("Trigger Inline Suggestion"), Tab to accept. It reads
// what VS Code shows (ghost text, the status bar item, the output channel),
// takes screenshots, and writes all of it to the result file; the Python
// side judges, with the conversation lsp_tap.py recorded.
//
//   node vscode_e2e.js SPEC.json
//
// SPEC: {base, chromium, profile, tap, result, extension, windows: [...]}:
// each window opens a folder and runs its steps in order:
//   {kind: "positions", positions: [{file, line, col, text}]}  ask at each
//   {kind: "type", tries: [{file, line, text}], shot, shotAccepted}  type
//     on an empty line until ghost text shows, then Tab
//   {kind: "settings", settings}  write the folder's .vscode/settings.json
//     ({} removes it) and wait for the server to get the change
//   {kind: "status", file, line, col, text, shot}  type, read the status
//     bar item and the output channel
//   {kind: "root", file}  note the root sent and the server's index
// Lines and columns are 0-based, as in LSP; `text` in a position is the
// line's text (for tabs: Ctrl+G counts columns on screen).
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const puppeteer = createRequire(path.join(spec.extension, 'package.json'))('puppeteer-core');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.log(new Date().toISOString().slice(11, 23), ...a);

// ------------------------------------------------------ the recorded conversation

// Each window has its own extension host and so its own server process: the
// records of the current window's server are those of `serverPid`, the
// process that got the first initialize after the window was opened.
let serverPid = null;
let windowMark = 0;

function allRecords() {
  if (!fs.existsSync(spec.tap)) return [];
  return fs.readFileSync(spec.tap, 'utf8').split('\n').filter((l) => l.trim() !== '')
    .map((l) => { try { return JSON.parse(l); } catch { return null; } }).filter(Boolean);
}

function tapRecords() {
  const all = allRecords();
  if (serverPid === null) {
    const init = all.slice(windowMark).find((r) => r.dir === 'c2s' && r.msg.method === 'initialize');
    if (!init) return [];
    serverPid = init.pid;
  }
  return all.filter((r) => r.pid === serverPid);
}

/** inlineCompletion requests with their answers: [{t, uri, line, character, response}]. */
function inlineExchanges() {
  const byKey = new Map();
  const out = [];
  for (const r of tapRecords()) {
    const m = r.msg;
    const key = `${r.pid}/${JSON.stringify(m.id)}`;
    if (r.dir === 'c2s' && m.method === 'textDocument/inlineCompletion') {
      const e = { t: r.t, uri: m.params.textDocument.uri, line: m.params.position.line,
                  character: m.params.position.character, response: null };
      byKey.set(key, e);
      out.push(e);
    } else if (r.dir === 's2c' && m.method === undefined && byKey.has(key)) {
      byKey.get(key).response = m;
      byKey.delete(key);
    }
  }
  return out;
}

function lastStatus() {
  const st = tapRecords().filter((r) => r.dir === 's2c' && r.msg.method === 'sculpt/status');
  return st.length ? st[st.length - 1].msg.params : null;
}

async function until(pred, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

// ------------------------------------------------------------------ the page

async function key(page, combo) {
  const parts = combo.split('+');
  for (const k of parts.slice(0, -1)) await page.keyboard.down(k);
  await page.keyboard.press(parts[parts.length - 1]);
  for (const k of parts.slice(0, -1).reverse()) await page.keyboard.up(k);
}

async function openFolder(browser, folder) {
  serverPid = null;
  windowMark = allRecords().length;
  const page = await browser.newPage();
  page.on('pageerror', (e) => log('page error:', String(e).slice(0, 200)));
  const t0 = Date.now();
  await page.goto(`${spec.base}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  log(`window: workbench in ${Date.now() - t0} ms`);
  return page;
}

/** After the first file: the extension (activated by the file's language)
 * shows its item, its server starts, the model loads (or fails to). */
async function serverUp(page) {
  const t0 = Date.now();
  await page.waitForSelector('[id="sculpt.sculpt"]', { timeout: 90000 });
  await until(() => ['ready', 'error'].includes((lastStatus() || {}).state), 120000, 'the model');
  log(`extension, server and model in ${Date.now() - t0} ms`);
}

async function quickPick(page, opener, text, rowMatch) {
  await key(page, opener);
  await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 20000 });
  await page.keyboard.type(text);
  await page.waitForFunction((m) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')]
    .some((r) => r.textContent.includes(m)), { timeout: 30000 }, rowMatch);
  await page.keyboard.press('Enter');
  await page.waitForSelector('.quick-input-widget', { hidden: true, timeout: 20000 }).catch(() => {});
}

async function runCommand(page, title) {
  await quickPick(page, 'F1', title, title);
}

/** Ctrl+P and the file's path in the folder; waits for its editor. */
async function openFile(page, rel) {
  const base = path.basename(rel);
  const active = await page.$eval('.tab.active', (e) => e.getAttribute('aria-label') || e.textContent)
    .catch(() => '');
  if (active.includes(base) && await page.$('.monaco-editor.focused')) return;
  await quickPick(page, 'Control+KeyP', rel, base);
  await page.waitForFunction((b) => {
    const tab = document.querySelector('.tab.active');
    return tab && tab.textContent.includes(b) && document.querySelector('.monaco-editor .view-lines');
  }, { timeout: 30000 }, base);
  await sleep(300);
}

async function cursorLineCol(page) {
  const t = await page.$eval('[id="status.editor.selection"]', (e) => e.textContent).catch(() => '');
  const m = /Ln (\d+), Col (\d+)/.exec(t);
  return m ? { line: Number(m[1]) - 1, col: Number(m[2]) - 1 } : null;
}

/** The column on screen of character `col` of `text`: Ctrl+G and the status
 * bar count a tab as the columns up to the next tab stop. */
async function screenColumn(page, text, col) {
  if (!text || !text.slice(0, col).includes('\t')) return col;
  const ind = await page.$eval('[id="status.editor.indentation"]', (e) => e.textContent).catch(() => '');
  const size = Number((/(\d+)/.exec(ind) || [0, 4])[1]);
  let v = 0;
  for (const ch of text.slice(0, col)) v = ch === '\t' ? v + size - (v % size) : v + 1;
  return v;
}

/** Ctrl+G "line:column" (VS Code counts both from 1); checks where it went. */
async function gotoPosition(page, line, col, text) {
  const scol = await screenColumn(page, text, col);
  await key(page, 'Control+KeyG');
  await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 20000 });
  await page.keyboard.type(`${line + 1}:${scol + 1}`);
  await sleep(200);
  await page.keyboard.press('Enter');
  await until(async () => {
    const p = await cursorLineCol(page);
    return p && p.line === line && p.col === scol;
  }, 10000, `the cursor at ${line + 1}:${scol + 1}`);
}

/** The text of the ghost text VS Code shows in the active editor, or ''. */
async function ghostText(page) {
  return page.evaluate(() => {
    const ed = document.querySelector('.monaco-editor.focused') || document.querySelector('.monaco-editor');
    if (!ed) return '';
    return [...ed.querySelectorAll('.ghost-text-decoration, .ghost-text-decoration-preview, .ghost-text .view-line')]
      .map((e) => e.textContent).join('').replace(/\u00a0/g, ' ');
  });
}

/** The text of the cursor's line as the page shows it, ghost text left out. */
async function cursorLineText(page) {
  return page.evaluate(() => {
    const ed = document.querySelector('.monaco-editor.focused');
    const cursor = ed && ed.querySelector('.cursors-layer .cursor');
    if (!cursor) return null;
    const top = cursor.style.top;
    const line = [...ed.querySelectorAll('.view-lines .view-line')].find((l) => l.style.top === top);
    if (!line) return null;
    const copy = line.cloneNode(true);
    copy.querySelectorAll('[class*="ghost"]').forEach((g) => g.remove());
    return copy.textContent.replace(/\u00a0/g, ' ');
  });
}

async function statusItem(page) {
  return page.$eval('[id="sculpt.sculpt"]', (e) => ({
    text: e.textContent.trim(),
    label: e.getAttribute('aria-label') || '',
    classes: e.className,
    icons: [...e.querySelectorAll('.codicon')].map((i) => i.className),
    background: getComputedStyle(e).backgroundColor,
  }));
}

/** "sculpt: Show the log", then the output panel's entries: the panel
 * wraps long lines, so each entry (from its timestamp on) is joined up. */
async function outputChannel(page) {
  await runCommand(page, 'sculpt: Show the log');
  await sleep(1000);
  const text = await page.$$eval('.part.panel .view-lines', (els) => els.map((e) => e.innerText).join('\n'));
  await key(page, 'Control+KeyJ'); // hide the panel again
  return text.replace(/\u00a0/g, ' ').replace(/\n(?!\d{4}-\d\d-\d\d \d\d:)/g, '');
}

/** Asks at the cursor with Alt+\ (the extension binds it to "Trigger Inline
 * Suggestion"); waits for the server's answer to that request and for VS
 * Code to draw it. Returns {response, ghost}. */
async function askHere(page, uriEnd, line, col) {
  const before = inlineExchanges().length;
  const asked = () => inlineExchanges().slice(before).find((e) => e.uri.endsWith(uriEnd));
  const where = `${uriEnd}:${line + 1}:${col + 1}`;
  await key(page, 'Alt+Backslash');
  // A press that brings no request within 10 s is pressed once more, and
  // what the page showed is logged: CI once saw none in 20 s in a C file
  // (jq, 2026-12-06) with the server ready, and nothing said why.
  let ex = null, again = false;
  try {
    ex = await until(asked, 10000, `a request after Alt+\\ at ${where}`);
  } catch (e) {
    log(`no request 10 s after Alt+\\ at ${where}; the page: ${JSON.stringify(await pageState(page))}`);
    again = true;
    await key(page, 'Alt+Backslash');
    ex = await until(asked, 20000, `a request after Alt+\\ pressed twice at ${where}`);
  }
  if (ex.line !== line || ex.character !== col) {
    throw new Error(`asked at ${ex.line + 1}:${ex.character + 1}, not ${line + 1}:${col + 1}`);
  }
  await until(() => ex.response || inlineExchanges().slice(before).find((e) => e.uri.endsWith(uriEnd)).response,
    120000, `the answer at ${uriEnd}:${line + 1}:${col + 1}`);
  const done = inlineExchanges().slice(before).find((e) => e.uri.endsWith(uriEnd));
  // Something to show: give VS Code time to draw it; else a moment.
  const items = (done.response.result && (done.response.result.items || done.response.result)) || [];
  const some = Array.isArray(items) && items.some((i) => i.insertText);
  let ghost = '';
  try {
    ghost = await until(async () => (await ghostText(page)) || null, some ? 5000 : 300, 'ghost text');
  } catch {
    ghost = await ghostText(page);
  }
  return { response: done.response, ghost, again };
}

/** Where the keyboard's focus is and what might hold it, for a log line. */
async function pageState(page) {
  return page.evaluate(() => {
    const a = document.activeElement;
    const shown = (sel) => [...document.querySelectorAll(sel)].filter((e) => e.offsetParent !== null)
      .map((e) => e.innerText.slice(0, 200));
    return {
      focus: a ? `${a.tagName}.${a.className}`.slice(0, 120) : null,
      editorFocused: !!document.querySelector('.monaco-editor.focused'),
      tab: (document.querySelector('.tab.active') || {}).textContent || null,
      cursor: (document.querySelector('[id="status.editor.selection"]') || {}).textContent || null,
      language: (document.querySelector('[id="status.editor.mode"]') || {}).textContent || null,
      quickInput: shown('.quick-input-widget').length > 0,
      notifications: shown('.notification-list-item-message'),
      dialogs: shown('.monaco-dialog-box'),
    };
  });
}

// --------------------------------------------------------------------- steps

/** Types `text` at each of `t.tries` (empty lines) in turn until ghost text
 * shows (the shipped model often has nothing to offer; each miss is typed
 * away again), then screenshots it, presses Tab and reads the line. */
async function stepType(page, folder, t) {
  const misses = [];
  for (const at of t.tries) {
    await openFile(page, at.file);
    await serverUp(page);
    await gotoPosition(page, at.line, 0, '');
    const before = inlineExchanges().length;
    await page.keyboard.type(at.text, { delay: 60 });
    // The answer to the last request VS Code made while typing.
    let last = null;
    try {
      last = await until(() => {
        const ex = inlineExchanges().slice(before).filter((e) => e.uri.endsWith(at.file));
        const e = ex[ex.length - 1];
        return e && e.response && e.character === at.text.length ? e : null;
      }, 60000, 'the answer after typing');
    } catch (e) {
      log(String(e));
    }
    const items = last && last.response.result && (last.response.result.items || last.response.result);
    let ghost = '';
    if (Array.isArray(items) && items.some((i) => i.insertText)) {
      try {
        ghost = await until(async () => (await ghostText(page)) || null, 5000, 'ghost text');
      } catch {
        ghost = '';
      }
    }
    if (!ghost) {
      misses.push(`${at.file}:${at.line + 1}`);
      log(`nothing to show after typing at ${at.file}:${at.line + 1}`);
      await page.keyboard.press('Escape');
      await key(page, 'Shift+Home');
      await key(page, 'Shift+Home');
      await page.keyboard.press('Delete');
      continue;
    }
    await sleep(300);
    const lineBefore = await cursorLineText(page);
    if (t.shot) await page.screenshot({ path: t.shot });
    const status = await statusItem(page);
    await page.keyboard.press('Tab');
    await sleep(800);
    const lineAfter = await cursorLineText(page);
    const cursorAfter = await cursorLineCol(page);
    if (t.shotAccepted) await page.screenshot({ path: t.shotAccepted });
    return { at, misses, ghost, lineBefore, lineAfter, cursorAfter, status };
  }
  return { misses, ghost: '' };
}

async function stepPositions(page, folder, t) {
  const out = [];
  for (const p of t.positions) {
    const t0 = Date.now();
    await openFile(page, p.file);
    await serverUp(page);
    await gotoPosition(page, p.line, p.col, p.text);
    const r = await askHere(page, p.file, p.line, p.col);
    log(`${p.file}:${p.line + 1}:${p.col + 1} -> ${JSON.stringify(r.ghost)} (${Date.now() - t0} ms)`);
    out.push({ file: p.file, line: p.line, col: p.col, ghost: r.ghost, again: r.again,
               error: r.response.error || null });
    await page.keyboard.press('Escape');
  }
  return { positions: out, status: await statusItem(page) };
}

async function stepSettings(page, folder, t) {
  const dir = path.join(folder, '.vscode');
  const file = path.join(dir, 'settings.json');
  const before = tapRecords().length;
  if (Object.keys(t.settings).length === 0) {
    fs.rmSync(file, { force: true });
  } else {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(file, JSON.stringify(t.settings));
  }
  // The extension passes the change on (didChangeConfiguration).
  await until(() => tapRecords().slice(before).some((r) => r.dir === 'c2s' &&
    r.msg.method === 'workspace/didChangeConfiguration'), 30000, 'the settings to reach the server');
  await sleep(1500);
  return { settings: t.settings };
}

async function stepStatus(page, folder, t) {
  await openFile(page, t.file);
  await serverUp(page);
  await gotoPosition(page, t.line, t.col, t.lineText);
  // Typing asks automatically, once per keystroke or so.
  await page.keyboard.type(t.text, { delay: 150 });
  await sleep(2000);
  await page.keyboard.press('Escape'); // VS Code's own word suggestions
  const status = await statusItem(page);
  // The tooltip, as the user sees it when pointing at the item.
  await page.hover('[id="sculpt.sculpt"]');
  let tooltip = '';
  try {
    tooltip = await until(() => page.$$eval('.workbench-hover, .monaco-hover', (els) =>
      els.filter((e) => e.offsetParent !== null).map((e) => e.innerText).join('\n')), 10000, 'the tooltip');
  } catch (e) {
    log(String(e));
  }
  if (t.shot) await page.screenshot({ path: t.shot });
  await page.mouse.move(600, 300);
  const output = await outputChannel(page);
  return { status, tooltip, output, serverStatus: lastStatus() };
}

async function stepRoot(page, folder, t) {
  await openFile(page, t.file);
  await serverUp(page);
  let index = null;
  try {
    index = await until(() => {
      const i = (lastStatus() || {}).index;
      return i && (i.state === 'ready' || i.state === 'failed') ? i : null;
    }, 60000, 'the index');
  } catch (e) {
    log(String(e));
  }
  const init = tapRecords().find((r) => r.dir === 'c2s' && r.msg.method === 'initialize');
  return { index, rootUri: init ? init.msg.params.rootUri : null,
           workspaceFolders: init ? init.msg.params.workspaceFolders : null };
}

const STEPS = { type: stepType, positions: stepPositions, settings: stepSettings,
                status: stepStatus, root: stepRoot };

(async () => {
  const browser = await puppeteer.launch({
    executablePath: spec.chromium,
    headless: true,
    userDataDir: spec.profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-breakpad',
           '--disable-background-networking', '--no-first-run', '--disable-extensions',
           '--window-size=1280,800'],
    defaultViewport: { width: 1280, height: 800 },
    env: { ...process.env, HOME: path.dirname(spec.profile) },
  });
  const results = [];
  try {
    for (const w of spec.windows) {
      const started = Date.now();
      let page = null;
      try {
        page = await openFolder(browser, w.folder);
      } catch (e) {
        results.push({ kind: 'window', folder: w.folder, failed: String(e && e.stack || e) });
        continue;
      }
      for (const t of w.steps) {
        log(`${t.kind} in ${path.basename(w.folder)}`);
        const t0 = Date.now();
        let r;
        try {
          r = await STEPS[t.kind](page, w.folder, t);
        } catch (e) {
          r = { failed: String(e && e.stack || e) };
          log(`${t.kind} failed: ${r.failed}`);
          if (spec.failShot) await page.screenshot({ path: spec.failShot }).catch(() => {});
        }
        r.kind = t.kind;
        r.name = t.name || t.kind;
        r.seconds = (Date.now() - t0) / 1000;
        results.push(r);
        fs.writeFileSync(spec.result, JSON.stringify(results, null, 1));
        if (r.failed) break;
      }
      await page.close().catch(() => {});
      log(`window ${path.basename(w.folder)}: ${(Date.now() - started) / 1000} s`);
    }
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
