-- Driven by test_line_ends.py: headless Neovim with the plugin and the real
-- server on a file with mixed line ends ($SCULPT_FIXTURE: \r\n lines, then
-- \n lines, then lines holding a lone \r). Neovim reads it as a unix buffer,
-- where each \r is a character (^M). After substitutions across it, a
-- deleted line and typing after a ^M, sculpt's copy of the document
-- (sculpt/test/document) must equal the buffer. Exits 0 when it does.
local env = vim.env
vim.opt.runtimepath:prepend(env.SCULPT_NVIM_PLUGIN)
local sculpt = require('sculpt')
local function log(m) io.stderr:write(m .. '\n') end
local failures = 0
local function check(ok, what, got)
  if ok then log('ok   ' .. what) else
    failures = failures + 1
    log('FAIL ' .. what .. (got ~= nil and (': got ' .. vim.inspect(got)) or ''))
  end
end
sculpt.setup({ cmd = { env.SCULPT_BIN, 'lsp' }, settings = { modelPath = env.SCULPT_TEST_MODEL },
               auto = false })
vim.cmd('edit ' .. vim.fn.fnameescape(env.SCULPT_FIXTURE))
local buf = vim.api.nvim_get_current_buf()
check(vim.bo[buf].fileformat == 'unix', 'a unix buffer', vim.bo[buf].fileformat)
check(vim.wait(10000, function() return sculpt.get_client(buf) ~= nil end, 50), 'attached')
check(vim.wait(60000, function() return sculpt.status ~= nil and sculpt.status.state == 'ready' end, 50),
      'model ready')
local client = sculpt.get_client(buf)

local function same(what)
  vim.wait(300)
  local d = client.request_sync('sculpt/test/document',
                                { textDocument = { uri = vim.uri_from_bufnr(buf) } }, 10000, buf)
  local text = d and d.result and d.result.text
  local want = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
  local at
  if text and text ~= want then
    for i = 1, math.min(#text, #want) + 1 do
      if text:sub(i, i) ~= want:sub(i, i) then at = i; break end
    end
  end
  check(text == want, what .. ': sculpt has the buffer\'s text',
        text and { bytes = #text, want = #want, first_difference = at,
                   server = at and text:sub(at - 20, at + 20), buffer = at and want:sub(at - 20, at + 20) })
end

same('opened')
vim.cmd('silent %s/foo/quux/g')
same('a substitution on every line')
vim.cmd('silent %s/quux(/q\\rz(/g')
same('a substitution that splits lines')
vim.cmd('normal! ggdd')
same('the first line deleted')
vim.cmd('normal! 5GAtyped')
same('typed after a ^M')
vim.cmd('normal! Gkk$itail')
same('typed before a lone ^M\'s line end')
vim.cmd(failures == 0 and 'qall!' or 'cquit! 1')
