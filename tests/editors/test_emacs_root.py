"""Emacs started in a parent folder of a checkout (the parent is not a git
work tree; it holds the checkout and other files): opening a file of the
checkout, eglot starts sculpt and the server must index the checkout, the
same files as when the root is the checkout itself (compared with a direct
run of the server). eglot takes the root from project.el (the git work
tree)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import clients  # noqa: E402

clients.root(clients.emacs())
