"""Neovim: errors reach the user, once. The plugin is set up with no
options, `sculpt` from PATH (the recording tap):
1. $SCULPT_MODEL names a folder that does not exist: the server's status is
   "error" and every request fails; the user gets one vim.notify at WARN
   naming the path (also in :messages), however many requests fail.
2. The setting `backend` names a port nothing listens on: the status stays
   "ready" while every request fails; again one warning, naming the backend.
And :LspLog (the LSP log) files none of the server's info lines as errors
(Neovim files a server's stderr as ERROR; the plugin has the server write
only errors there)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import clients  # noqa: E402

clients.errors(clients.neovim())
