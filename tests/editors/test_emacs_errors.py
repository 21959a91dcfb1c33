"""Emacs + eglot: errors reach the user, once. sculpt.el with no settings,
`sculpt` from PATH (the recording tap):
1. $SCULPT_MODEL names a folder that does not exist: the server's status is
   "error" and every request fails; *Messages* gets one "sculpt: ..." line
   naming the path, however many requests fail.
2. The setting `backend` names a port nothing listens on: the status stays
   "ready" while every request fails; again one line, naming the backend."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import clients  # noqa: E402

clients.errors(clients.emacs())
