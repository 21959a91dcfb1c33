"""Neovim 0.7.2+ on real code, as a user meets it: the plugin set up with no
options (common.TEMP_SETTINGS is empty), `sculpt` from PATH, the shipped
model, files of the four vendored
repositories (C, Python, Go, TypeScript) opened in a workspace that is a
git work tree. At each of common.POSITIONS (the last lines of two files of
over 2,000 lines among them) the plugin asks as <M-\\> does. Every request
must get an answer that is not an error (read from the recorded
conversation), and ghost text must show for at least one position."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import clients  # noqa: E402

clients.real(clients.neovim())
