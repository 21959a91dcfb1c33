"""Emacs 28 + eglot on real code, as a user meets it: sculpt.el set up as
its README says with no settings (common.TEMP_SETTINGS is empty), `sculpt`
from PATH, the shipped model, files of the four vendored repositories (C in
c-mode, Python in python-mode, Go in go-mode from elpa-go-mode, TypeScript
in sculpt's fallback mode), each repository a git work tree, so eglot
starts one server per project. At each of common.POSITIONS (the last lines
of two files of over 2,000 lines among them) it asks as M-x sculpt-complete
does. Every request must get an answer that is not an error (read from
the recorded conversation), and the overlay must show for at least one
position."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import clients  # noqa: E402

clients.real(clients.emacs())
