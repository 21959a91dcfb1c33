-- Driven by test_nvim.py: headless Neovim with the plugin, the real server
-- and a planted model that answers "defghijklmnopqrstuvwxyz" after "abc".
-- Exits 0 when every check passes, 1 otherwise (:cquit).
local env = vim.env
vim.opt.runtimepath:prepend(env.SCULPT_NVIM_PLUGIN)
local ALPHABET = 'defghijklmnopqrstuvwxyz'
local failures = 0

local function log(msg) io.stderr:write(msg .. '\n') end
local function check(ok, what, got)
  if ok then
    log('ok   ' .. what)
  else
    failures = failures + 1
    log('FAIL ' .. what .. (got ~= nil and (': got ' .. vim.inspect(got)) or ''))
  end
end
local function finish()
  vim.cmd(failures == 0 and 'qall!' or 'cquit! 1')
end

local sculpt = require('sculpt')
-- Pure helpers first.
check(sculpt._next_word('foo bar') == 'foo', 'next word', sculpt._next_word('foo bar'))
check(sculpt._next_word('  (x)') == '  (', 'next word: punctuation')
check(sculpt._next_line('a b\nc') == 'a b', 'next line', sculpt._next_line('a b\nc'))
check(sculpt._next_line('\n  x\ny') == '\n  x', 'next line after a newline')
-- Errors: one key for the same error whatever its counts and LSP method.
check(sculpt._error_key('textDocument/inlineCompletion: infill: 768 prefix') == 'infill: # prefix',
      'error key', sculpt._error_key('textDocument/inlineCompletion: infill: 768 prefix'))
check(sculpt._error_key('model/x: cannot open') == 'model/x: cannot open', 'error key: a path kept')
local notified = {}
local real_notify = vim.notify
vim.notify = function(msg, level) notified[#notified + 1] = { msg, level } end
check(sculpt._report_error('/m/config.json: cannot open'), 'an error is shown')
check(not sculpt._report_error('textDocument/inlineCompletion: no model: /m/config.json: cannot open'),
      'the same error through a request is not shown again')
check(sculpt._report_error('textDocument/inlineCompletion: infill: 768 prefix'), 'another error is')
check(not sculpt._report_error('textDocument/completion: infill: 632 prefix'),
      'with other numbers and method it is the same')
vim.wait(100, function() return #notified == 2 end, 10)
check(#notified == 2 and notified[1][2] == vim.log.levels.WARN, 'two warnings', notified)
vim.notify = real_notify

sculpt.setup({
  cmd = { env.SCULPT_BIN, 'lsp' },
  settings = { modelPath = env.SCULPT_TEST_MODEL, lengthCandidates = 4 },
  auto = false,
})
vim.cmd('edit ' .. vim.fn.fnameescape(env.SCULPT_FIXTURE))
local buf = vim.api.nvim_get_current_buf()
check(vim.bo.filetype == 'c', 'filetype c', vim.bo.filetype)

local attached = vim.wait(10000, function() return sculpt.get_client(buf) ~= nil end, 50)
check(attached, 'the client attached to the buffer')
if not attached then return finish() end
check(vim.bo[buf].omnifunc == 'v:lua.vim.lsp.omnifunc', 'omnifunc set', vim.bo[buf].omnifunc)

local ready = vim.wait(60000, function()
  return sculpt.status ~= nil and sculpt.status.state ~= 'loading'
end, 50)
check(ready and sculpt.status.state == 'ready', 'sculpt/status ready', sculpt.status)
if not ready then return finish() end

-- Cursor after "abc" in "int abc;" (byte column 7).
vim.api.nvim_win_set_cursor(0, { 1, 7 })
check(sculpt.request(true), 'request sent')
local shown = vim.wait(60000, function() return sculpt.suggestion() ~= nil end, 50)
check(shown, 'a suggestion arrived')
if not shown then return finish() end
check(sculpt.suggestion().text == ALPHABET, 'the planted middle', sculpt.suggestion().text)
local ns = vim.api.nvim_get_namespaces().sculpt
local marks = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
check(#marks == 1 and marks[1][2] == 0 and marks[1][3] == 7, 'one extmark at the cursor', marks)
local vt = marks[1] and marks[1][4].virt_text
check(vt and vt[1][1] == ALPHABET and vt[1][2] == 'SculptGhost', 'ghost text drawn', vt)

-- Accept a word: here the whole alphabet is one word.
check(sculpt.accept_word(), 'accept word')
check(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == 'int abc' .. ALPHABET .. ';',
      'the buffer has the completion', vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1])
check(sculpt.suggestion() == nil, 'nothing left on screen')
check(#vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, {}) == 0, 'the extmark is gone')

-- Typing through: undo, ask again, the dismiss key clears it.
vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'int abc;' })
vim.api.nvim_win_set_cursor(0, { 1, 7 })
sculpt.request(true)
check(vim.wait(60000, function() return sculpt.suggestion() ~= nil end, 50), 'a second suggestion')
check(sculpt.dismiss(), 'dismiss')
check(sculpt.suggestion() == nil, 'dismissed')

-- Automatic: the TextChangedI autocmd asks by itself (triggerKind 2).
sculpt.config.auto = true
vim.api.nvim_exec_autocmds('TextChangedI', { buffer = buf })
check(vim.wait(60000, function() return sculpt.suggestion() ~= nil end, 50),
      'automatic suggestion after a change')
check(sculpt.suggestion() and sculpt.suggestion().text == ALPHABET, 'automatic: the planted middle')
-- Moving the cursor away drops it.
vim.api.nvim_win_set_cursor(0, { 1, 2 })
vim.api.nvim_exec_autocmds('CursorMovedI', { buffer = buf })
check(sculpt.suggestion() == nil, 'cursor moved: dropped')
sculpt.config.auto = false
vim.api.nvim_win_set_cursor(0, { 1, 7 })

-- textDocument/completion, the items omnifunc uses.
local params = vim.lsp.util.make_position_params(0, 'utf-16')
local res = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 30000)
local items = {}
for _, r in pairs(res or {}) do
  if r.result then items = r.result.items or r.result end
end
check(items[1] and items[1].textEdit and items[1].textEdit.newText == ALPHABET,
      'completion item for omnifunc', items[1])

sculpt.stop()
vim.wait(2000, function() return #vim.lsp.get_active_clients() == 0 end, 50)
finish()
