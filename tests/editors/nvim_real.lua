-- Driven by test_nvim_real.py, test_nvim_errors.py and test_nvim_root.py:
-- headless Neovim with the plugin set up as a user would (setup() with no
-- options but the spec's temporary settings), `sculpt` from PATH (the
-- recording tap), the shipped model. Reads its task from $SCULPT_SPEC:
--   mode "positions": open each file, put the cursor at each position, ask
--     (what <M-\> does) and note what is shown;
--   mode "errors": open one file, ask `requests` times, note what the user
--     was told (vim.notify and :messages);
--   mode "root": open one file and note the root and the server's index;
--   mode "quickfix": for each case open its file, publish its diagnostic as
--     another server would (its own namespace), put the cursor on it, run
--     vim.lsp.buf.code_action() and pick sculpt's first fix, as a user
--     picks from the menu; note what was offered and the buffer after.
-- Writes what it saw to $SCULPT_RESULT (JSON) and exits 0; the Python side
-- judges. Exits 1 only when the script itself breaks.
local env = vim.env
vim.opt.runtimepath:prepend(env.SCULPT_NVIM_PLUGIN)
-- The cursor may sit after the last character in normal mode, as it does
-- in insert mode, so that "end of line" positions can be asked for.
vim.o.virtualedit = 'onemore'

local f = assert(io.open(env.SCULPT_SPEC))
local spec = vim.json.decode(f:read('*a'))
f:close()

local out = { notes = {}, positions = {}, log = {} }
local function log(msg)
  io.stderr:write(msg .. '\n')
  out.log[#out.log + 1] = msg
end

-- What the user is told: every vim.notify, still shown as usual.
local notify = vim.notify
vim.notify = function(msg, level, opts)
  out.notes[#out.notes + 1] = { msg = msg, level = level or vim.log.levels.INFO }
  return notify(msg, level, opts)
end

local function finish(code)
  out.messages = vim.fn.execute('messages')
  out.lsp_log = vim.lsp.get_log_path()
  local w = assert(io.open(env.SCULPT_RESULT, 'w'))
  w:write(vim.json.encode(out))
  w:close()
  vim.cmd(code == 0 and 'qall!' or 'cquit! 1')
end

local sculpt = require('sculpt')
local opts = {}
if spec.settings and next(spec.settings) then opts.settings = spec.settings end
sculpt.setup(opts)

-- Opens `path`; waits for the client and for the model to be loaded (or to
-- have failed). Returns the buffer, or nil.
local function open(path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  if not vim.wait(20000, function() return sculpt.get_client(buf) ~= nil end, 20) then
    log('no client attached to ' .. path .. ' (filetype ' .. vim.bo.filetype .. ')')
    return nil
  end
  if not vim.wait(120000, function()
    return sculpt.status ~= nil and sculpt.status.state ~= 'loading'
  end, 20) then
    log('the model did not load')
    return nil
  end
  return buf
end

-- Asks at the cursor as <M-\> does; waits for the answer. Returns the
-- suggestion shown (text) or nil.
local function ask()
  if not sculpt.request(true) then
    log('request not sent')
    return nil
  end
  if not vim.wait(120000, function() return sculpt._pending == nil end, 10) then
    log('no answer')
    return nil
  end
  local s = sculpt.suggestion()
  return s and s.text or nil
end

local ok, err = pcall(function()
  if spec.mode == 'positions' then
    for _, p in ipairs(spec.positions) do
      local buf = open(p.path)
      if not buf then return end
      vim.api.nvim_win_set_cursor(0, { p.line + 1, p.col })
      local shown = ask()
      local marks = vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_get_namespaces().sculpt, 0, -1,
                                                  { details = true })
      -- Drawn: one extmark, at the cursor, carrying the text.
      local vt = marks[1] and marks[1][4].virt_text
      local drawn = #marks == 1 and marks[1][2] == p.line and marks[1][3] == p.col
        and vt ~= nil and vt[1][1] == vim.split(shown or '', '\n', { plain = true })[1]
      out.positions[#out.positions + 1] = { file = p.file, line = p.line, col = p.col,
                                            shown = shown or vim.NIL, drawn = drawn }
      log(string.format('%s:%d:%d -> %s', p.file, p.line + 1, p.col + 1, vim.inspect(shown)))
      sculpt.dismiss()
    end
    -- What :SculptStatus prints after them, and the status it read.
    vim.wait(300, function() return false end, 20)
    out.status = sculpt.status
    out.status_text = vim.trim(vim.fn.execute('SculptStatus'))
  elseif spec.mode == 'errors' then
    local buf = open(spec.path)
    if not buf then return end
    out.status = sculpt.status
    vim.api.nvim_win_set_cursor(0, { spec.line + 1, 0 })
    for _ = 1, spec.requests do ask() end
    -- Let scheduled notifications run.
    vim.wait(300, function() return false end, 20)
  elseif spec.mode == 'quickfix' then
    out.cases = {}
    local ns = vim.api.nvim_create_namespace('compiler')
    for _, q in ipairs(spec.cases) do
      local buf = open(q.path)
      if not buf then return end
      vim.diagnostic.set(ns, buf, { { lnum = q.line, col = q.col, end_lnum = q.line,
                                      end_col = q.col + 1, severity = vim.diagnostic.severity.ERROR,
                                      message = q.message, source = q.source } })
      vim.api.nvim_win_set_cursor(0, { q.line + 1, q.col })
      local offered, picked = {}, false
      local select = vim.ui.select
      vim.ui.select = function(items, opts, on_choice)
        local choice
        for i, it in ipairs(items) do
          local title = (it[2] or it.action or it).title or ''
          offered[#offered + 1] = title
          if not choice and title:find('^sculpt: fix') then choice = i end
        end
        picked = true
        on_choice(choice and items[choice] or nil, choice)
      end
      local tick, notes = vim.api.nvim_buf_get_changedtick(buf), #out.notes
      vim.lsp.buf.code_action()
      -- Until the menu opens, or Neovim says there is nothing to offer.
      vim.wait(120000, function()
        for i = notes + 1, #out.notes do
          if tostring(out.notes[i].msg):find('No code actions') then return true end
        end
        return picked
      end, 20)
      vim.wait(5000, function() return vim.api.nvim_buf_get_changedtick(buf) ~= tick end, 20)
      vim.ui.select = select
      out.cases[#out.cases + 1] = { file = q.file, offered = offered,
                                    text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, true),
                                                        '\n') .. '\n' }
      log(string.format('%s: offered %s', q.file, vim.inspect(offered)))
      vim.diagnostic.reset(ns, buf)
    end
  elseif spec.mode == 'root' then
    local buf = open(spec.path)
    if not buf then return end
    local c = sculpt.get_client(buf)
    out.root = c and c.config.root_dir
    vim.wait(60000, function()
      local idx = sculpt.status and sculpt.status.index
      return idx ~= nil and (idx.state == 'ready' or idx.state == 'failed')
    end, 20)
    out.index = sculpt.status and sculpt.status.index
  end
end)
if not ok then
  log('script error: ' .. tostring(err))
  return finish(1)
end
sculpt.stop()
vim.wait(2000, function() return #vim.lsp.get_active_clients() == 0 end, 20)
finish(0)
