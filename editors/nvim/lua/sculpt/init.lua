-- sculpt.nvim: inline (ghost text) completion from the sculpt language server.
--
-- Works on Neovim 0.7.2 (Debian 12) and later. The server is started through
-- the built-in LSP client: vim.lsp.start where it exists (0.8+), else
-- vim.lsp.start_client + vim.lsp.buf_attach_client. Ghost text comes from
-- textDocument/inlineCompletion (LSP 3.18): Neovim's own
-- vim.lsp.inline_completion when present (0.12+) unless `native = false`,
-- otherwise extmarks drawn by this file. Completion items
-- (textDocument/completion) are offered through omnifunc (<C-x><C-o>).
--
-- Errors reach the user once: a failed request, or the server saying it is
-- in error (sculpt/status), is shown with vim.notify at WARN the first time
-- its message is seen. The server writes only its error lines to stderr
-- (SCULPT_LOG=error), because Neovim files everything on a server's stderr
-- as ERROR in :LspLog; its other lines come as window/logMessage, which
-- Neovim files at their own level.
local M = {}

local api = vim.api

M.defaults = {
  -- The server command; `sculpt` from PATH by default.
  cmd = { 'sculpt', 'lsp' },
  -- Filetypes the server is attached to.
  filetypes = { 'c', 'cpp', 'python', 'javascript', 'typescript', 'typescriptreact',
                'javascriptreact', 'go', 'rust', 'java', 'lua', 'sh' },
  -- Server settings (section "sculpt"): modelPath, device, weights, algorithm,
  -- threshold, eosPenalty, maxTokens, contextBudget, debounceMs, enabledLanguages,
  -- holeMarker, lengthCandidates, logLevel, repair, kvReuse, drafts,
  -- draftThreshold, maxDocumentBytes, indexMaxFiles, autoPull, backend
  -- (a URL or {url, model, apiKeyEnv, apiKey, timeoutMs, maxTries, provider,
  -- fimTemplate, stream, cutOff, drafts, contextTokens}). Empty: the
  -- server's defaults (README "Settings").
  settings = {},
  -- Extra environment for the server process (e.g. { SCULPT_MODEL = '...' }).
  -- SCULPT_LOG (the server's stderr level) is 'error' unless set here or in
  -- Neovim's environment.
  cmd_env = nil,
  -- The workspace root sent to the server: a function of the buffer's file
  -- name; nil: the file's git work tree, else its folder (else the cwd).
  root_dir = nil,
  -- Ask for a completion while typing in insert mode; false: only on the
  -- `trigger` key.
  auto = true,
  -- Use vim.lsp.inline_completion when Neovim has it.
  native = true,
  -- Set omnifunc to the LSP one in attached buffers.
  omnifunc = true,
  -- Insert-mode keys; false disables one.
  keys = {
    accept = '<Tab>',
    accept_word = '<M-Right>',
    accept_line = '<M-Down>',
    dismiss = '<C-]>',
    trigger = '<M-\\>',
  },
}

M.config = vim.deepcopy(M.defaults)

-- The state of the one suggestion on screen (at most one per editor).
local ns = api.nvim_create_namespace('sculpt')
local sug = nil        -- { bufnr, row, col, text, command, tick }
local client_id = nil  -- the client on 0.7 (one for the session)
local own_tick = {}     -- bufnr -> changedtick after our own edit (not to be answered)
M.status = nil         -- the last sculpt/status params

-- The clients attached to `bufnr`: get_clients (0.10+), get_active_clients
-- with a filter (0.8, 0.9), buf_get_clients (0.7, a map).
local function buf_clients(bufnr)
  if bufnr == 0 then bufnr = api.nvim_get_current_buf() end
  if vim.lsp.get_clients then return vim.lsp.get_clients({ bufnr = bufnr }) end
  if vim.fn.has('nvim-0.8') == 1 then return vim.lsp.get_active_clients({ bufnr = bufnr }) end
  return vim.tbl_values(vim.lsp.buf_get_clients(bufnr))
end

local function get_client(bufnr)
  for _, c in ipairs(buf_clients(bufnr)) do
    if c.name == 'sculpt' then return c end
  end
  return nil
end

-- Client methods: called with `:` from 0.11 (the `.` form is deprecated).
local method_call = vim.fn.has('nvim-0.11') == 1
local function crequest(client, method, params, handler, bufnr)
  if method_call then return client:request(method, params, handler, bufnr) end
  return client.request(method, params, handler, bufnr)
end
local function ccancel(client, id)
  if method_call then return client:cancel_request(id) end
  return client.cancel_request(id)
end
local function cstop(client)
  if method_call then return client:stop() end
  return client.stop()
end
M.get_client = get_client

local function native_available()
  return M.config.native and vim.lsp.inline_completion ~= nil
end

-- ----------------------------------------------------------------- ghost text

function M.clear()
  if sug and api.nvim_buf_is_valid(sug.bufnr) then
    api.nvim_buf_clear_namespace(sug.bufnr, ns, 0, -1)
  end
  sug = nil
end

-- Draws `text` at (row, col): the first line after the cursor, the others as
-- virtual lines below. 'inline' virtual text exists from 0.10; before, 'eol'
-- (right for the common case, completing at the end of a line).
local function render()
  if not sug then return end
  api.nvim_buf_clear_namespace(sug.bufnr, ns, 0, -1)
  local lines = vim.split(sug.text, '\n', { plain = true })
  local pos = vim.fn.has('nvim-0.10') == 1 and 'inline' or 'eol'
  local opts = { virt_text = { { lines[1], 'SculptGhost' } }, virt_text_pos = pos,
                 hl_mode = 'combine' }
  if #lines > 1 then
    local vl = {}
    for i = 2, #lines do vl[#vl + 1] = { { lines[i], 'SculptGhost' } } end
    opts.virt_lines = vl
  end
  sug.mark = api.nvim_buf_set_extmark(sug.bufnr, ns, sug.row, sug.col, opts)
end

-- The suggestion shown now ({ text, row, col, ... }) or nil; for tests and
-- statuslines.
function M.suggestion()
  return sug
end

local function cursor()
  local c = api.nvim_win_get_cursor(0)
  return c[1] - 1, c[2]
end

-- Text of the buffer from (r1, c1) to (r2, c2), byte columns.
local function buf_text(bufnr, r1, c1, r2, c2)
  local ok, t = pcall(api.nvim_buf_get_text, bufnr, r1, c1, r2, c2, {})
  if not ok then return nil end
  return table.concat(t, '\n')
end

-- An LSP character offset in `line` as a byte index.
local function byteindex(line, character, enc)
  if vim.lsp.util._str_byteindex_enc then -- up to 0.10
    return vim.lsp.util._str_byteindex_enc(line, character, enc)
  end
  local ok, b = pcall(vim.str_byteindex, line, enc, character, false) -- 0.11+
  return ok and b or character
end

-- ------------------------------------------------------------------ errors

-- Messages already shown (message -> true), for the session of the client.
local shown_errors = {}

-- JSON-RPC errors that are part of normal typing, never shown: the request
-- was cancelled by the client or the server, or the document changed.
local QUIET_CODES = { [-32800] = true, [-32801] = true, [-32802] = true }

-- What makes two messages the same error: the text without the LSP method
-- the server puts first ("textDocument/inlineCompletion: ") and with any
-- number as '#' (automatic requests fail the same way on every keystroke,
-- with other counts: "768 prefix + 32 canvas ...").
function M._error_key(msg)
  local key = msg
  local rest
  repeat
    rest = nil
    for _, ns in ipairs({ 'textDocument', 'workspace', 'completionItem', 'codeAction' }) do
      rest = rest or key:match('^' .. ns .. '/[%a/]+: (.*)$')
    end
    if rest then key = rest end
  until not rest
  return (key:gsub('%d+', '#'))
end

-- Shows `msg` with vim.notify at WARN unless its key (above) contains, or is
-- contained in, the key of one shown before: a failed request repeats the
-- server's status message ("no model: X" after "X"). Returns true when
-- shown.
function M._report_error(msg)
  if type(msg) ~= 'string' or msg == '' then return false end
  local key = M._error_key(msg)
  for seen in pairs(shown_errors) do
    if seen:find(key, 1, true) or key:find(seen, 1, true) then return false end
  end
  shown_errors[key] = true
  vim.schedule(function() vim.notify('sculpt: ' .. msg, vim.log.levels.WARN) end)
  return true
end

local function report_request_error(err)
  if type(err) ~= 'table' or QUIET_CODES[err.code] then return end
  M._report_error(err.message or vim.inspect(err))
end

local function on_inline_result(bufnr, tick, err, result)
  if err then report_request_error(err) end
  if err or not result then return end
  if not api.nvim_buf_is_valid(bufnr) or bufnr ~= api.nvim_get_current_buf() then return end
  -- Stale: the buffer changed since the request (the server also says so).
  if api.nvim_buf_get_changedtick(bufnr) ~= tick then return end
  local items = result.items or result
  local item = items and items[1]
  if not item or not item.insertText or item.insertText == '' then
    M.clear()
    return
  end
  local client = get_client(bufnr)
  local enc = client and client.offset_encoding or 'utf-16'
  local row, col = cursor()
  local text = item.insertText
  if type(text) == 'table' then text = text.value end -- a snippet: shown as is
  if item.range then
    -- What the range covers before the cursor was typed already: show only
    -- the rest of the suggestion.
    local srow = item.range.start.line
    local line = api.nvim_buf_get_lines(bufnr, srow, srow + 1, false)[1] or ''
    local scol = byteindex(line, item.range.start.character, enc)
    local typed = buf_text(bufnr, srow, scol, row, col) or ''
    if text:sub(1, #typed) ~= typed then return end
    text = text:sub(#typed + 1)
  end
  if text == '' then return end
  M.clear()
  sug = { bufnr = bufnr, row = row, col = col, text = text, command = item.command,
          tick = tick }
  render()
end

-- Asks the server for an inline completion at the cursor. `manual`: the
-- user asked (triggerKind Invoked, no debounce on the server).
function M.request(manual)
  local bufnr = api.nvim_get_current_buf()
  local client = get_client(bufnr)
  if not client then return false end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = manual and 1 or 2 }
  local tick = api.nvim_buf_get_changedtick(bufnr)
  if M._pending then pcall(ccancel, M._pending.client, M._pending.id) end
  -- Declared first: the handler must see this request's id (a `local ok,
  -- id = ...` is not in scope inside its own right-hand side).
  local ok, id
  ok, id = crequest(client, 'textDocument/inlineCompletion', params, function(err, result)
    if M._pending and M._pending.id == id then M._pending = nil end
    on_inline_result(bufnr, tick, err, result)
  end, bufnr)
  if ok then M._pending = { client = client, id = id } end
  return ok
end

local function notify_command(name)
  if not sug then return end
  local client = get_client(sug.bufnr)
  local cmd = sug.command
  if client and name == 'sculpt.accept' and cmd then
    crequest(client, 'workspace/executeCommand',
             { command = cmd.command, arguments = cmd.arguments }, function() end, sug.bufnr)
  elseif client and name == 'sculpt.dismiss' then
    crequest(client, 'workspace/executeCommand', { command = 'sculpt.dismiss' }, function() end,
             sug.bufnr)
  end
end

-- The first word of `text`: leading blanks, then a run of word characters or
-- a single other character.
function M._next_word(text)
  local w = text:match('^%s*[%w_]+') or text:match('^%s*[^%w_%s]') or text:match('^%s+')
  return w or text
end

-- The rest of the current line of `text`, with its newline; a leading
-- newline takes the next line too.
function M._next_line(text)
  local nl = text:find('\n', 1, true)
  if not nl then return text end
  if nl == 1 then
    local nl2 = text:find('\n', 2, true)
    return nl2 and text:sub(1, nl2 - 1) or text
  end
  return text:sub(1, nl - 1)
end

-- Inserts `part` (a prefix of the suggestion) at the cursor and keeps the
-- rest on screen.
local function insert_part(part)
  local s = sug
  local lines = vim.split(part, '\n', { plain = true })
  api.nvim_buf_set_text(s.bufnr, s.row, s.col, s.row, s.col, lines)
  own_tick[s.bufnr] = api.nvim_buf_get_changedtick(s.bufnr)
  local row = s.row + #lines - 1
  local col = (#lines == 1 and s.col or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { row + 1, col })
  local rest = s.text:sub(#part + 1)
  if rest == '' then
    notify_command('sculpt.accept')
    M.clear()
  else
    s.row, s.col, s.text = row, col, rest
    s.tick = api.nvim_buf_get_changedtick(s.bufnr)
    render()
  end
end

local function valid_here()
  if not sug or sug.bufnr ~= api.nvim_get_current_buf() then return false end
  local row, col = cursor()
  return row == sug.row and col == sug.col
end

-- What :SculptStatus prints: the server's state, model, device, last
-- latency, and what the last completion came to ("offered", "dropped:
-- would not parse", ...) with this session's counts.
function M.status_text()
  local s = M.status
  if not s then return 'sculpt: no status yet' end
  local text = string.format('sculpt: %s, model %s on %s%s', s.state,
                             vim.fn.fnamemodify(s.model or '?', ':t'), s.device or '?',
                             s.lastLatencyMs and string.format(', last %.0f ms', s.lastLatencyMs) or '')
  if s.lastOutcome then
    local n = s.completions or {}
    text = text .. string.format('; last completion: %s (this session: %d answered, %d offered, '
                                 .. '%d dropped)', s.lastOutcome, n.answered or 0, n.offered or 0,
                                 n.dropped or 0)
  end
  if s.state == 'error' and s.message then text = text .. ': ' .. s.message end
  return text
end

-- Accepts the whole suggestion / a word / a line. Each returns true when
-- there was one to accept.
function M.accept()
  if native_available() then return vim.lsp.inline_completion.get() end
  if not valid_here() then return false end
  insert_part(sug.text)
  return true
end

function M.accept_word()
  if not valid_here() then return false end
  insert_part(M._next_word(sug.text))
  return true
end

function M.accept_line()
  if not valid_here() then return false end
  insert_part(M._next_line(sug.text))
  return true
end

function M.dismiss()
  if not sug then return false end
  notify_command('sculpt.dismiss')
  M.clear()
  return true
end

-- ---------------------------------------------------------------- the client

local function on_status(_, params)
  -- Neovim 0.7 handlers take (err, result, ctx, config).
  M.status = params
  if params and params.state == 'error' and params.message then
    M._report_error(params.message)
  end
  vim.schedule(function() vim.cmd('doautocmd <nomodeline> User SculptStatus') end)
end

-- The folder holding `name` (a file) that has a .git entry, else nil.
local function git_work_tree(name)
  local dir = vim.fn.fnamemodify(name, ':p:h')
  while dir and dir ~= '' do
    if vim.loop.fs_stat(dir .. '/.git') then return dir end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then break end
    dir = parent
  end
  return nil
end

-- The workspace root for `bufnr`: the `root_dir` option, else the git work
-- tree of its file, else its folder; the cwd for a buffer with no file. Not
-- the cwd first: Neovim is often started in a parent folder.
function M._root_dir(bufnr)
  local name = api.nvim_buf_get_name(bufnr)
  if type(M.config.root_dir) == 'function' then
    local r = M.config.root_dir(name)
    if r then return r end
  end
  if name == '' or name:match('^%a[%w+.-]*://') then return vim.loop.cwd() end
  return git_work_tree(name) or vim.fn.fnamemodify(name, ':p:h')
end

local function client_config(bufnr)
  local cfg = M.config
  local settings = vim.deepcopy(cfg.settings or {})
  local env = vim.deepcopy(cfg.cmd_env or {})
  if env.SCULPT_LOG == nil and vim.env.SCULPT_LOG == nil then env.SCULPT_LOG = 'error' end
  return {
    name = 'sculpt',
    cmd = cfg.cmd,
    cmd_env = env,
    root_dir = M._root_dir(bufnr),
    init_options = settings,
    settings = { sculpt = settings },
    handlers = {
      ['sculpt/status'] = on_status,
      -- The server asks for section "sculpt": answer from `settings`.
      ['workspace/configuration'] = function(_, params)
        local out = {}
        for i, item in ipairs(params.items or {}) do
          out[i] = item.section == 'sculpt' and settings or vim.NIL
        end
        return out
      end,
    },
    -- A new server: its errors may be shown again.
    on_init = function() shown_errors = {} end,
    on_attach = function(_, bufnr)
      if cfg.omnifunc then
        api.nvim_buf_set_option(bufnr, 'omnifunc', 'v:lua.vim.lsp.omnifunc')
      end
      if native_available() then
        pcall(vim.lsp.inline_completion.enable, true, { bufnr = bufnr })
      end
    end,
  }
end

-- Attaches the server to `bufnr` (starting it the first time).
function M.attach(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if vim.lsp.start then
    return vim.lsp.start(client_config(bufnr), { bufnr = bufnr })
  end
  if not client_id or not vim.lsp.get_client_by_id(client_id) then
    client_id = vim.lsp.start_client(client_config(bufnr))
    if not client_id then return nil end
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
  return client_id
end

function M.stop()
  local c = client_id and vim.lsp.get_client_by_id(client_id) or get_client(0)
  if c then cstop(c) end
  client_id = nil
  M.clear()
end

-- Maps `lhs` in insert mode to `fn`; when it has nothing to do, the key does
-- what it did before (e.g. <Tab> inserts a tab).
local function map_insert(lhs, fn)
  if not lhs then return end
  vim.keymap.set('i', lhs, function()
    if not fn() then
      api.nvim_feedkeys(api.nvim_replace_termcodes(lhs, true, false, true), 'n', false)
    end
  end, { desc = 'sculpt', silent = true })
end

local function on_text_changed()
  local bufnr = api.nvim_get_current_buf()
  if own_tick[bufnr] == api.nvim_buf_get_changedtick(bufnr) then return end
  M.clear()
  if M.config.auto and not native_available() then M.request(false) end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  if opts and opts.filetypes then M.config.filetypes = opts.filetypes end
  api.nvim_set_hl(0, 'SculptGhost', { link = 'Comment', default = true })
  local group = api.nvim_create_augroup('sculpt', { clear = true })
  api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.config.filetypes,
    callback = function(a) M.attach(a.buf) end,
  })
  api.nvim_create_autocmd('TextChangedI', { group = group, callback = on_text_changed })
  api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    callback = function() M.clear() end,
  })
  api.nvim_create_autocmd('CursorMovedI', {
    group = group,
    callback = function()
      if sug and not valid_here() then M.clear() end
    end,
  })
  local k = M.config.keys or {}
  map_insert(k.accept, M.accept)
  map_insert(k.accept_word, M.accept_word)
  map_insert(k.accept_line, M.accept_line)
  map_insert(k.dismiss, M.dismiss)
  map_insert(k.trigger, function() return M.request(true) end)
  api.nvim_create_user_command('SculptComplete', function() M.request(true) end, {})
  api.nvim_create_user_command('SculptRestart', function()
    M.stop()
    vim.defer_fn(function() M.attach(0) end, 200)
  end, {})
  api.nvim_create_user_command('SculptStatus', function() print(M.status_text()) end, {})
  -- Buffers already open when setup runs.
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and vim.tbl_contains(M.config.filetypes, vim.bo[b].filetype) then
      M.attach(b)
    end
  end
end

return M
