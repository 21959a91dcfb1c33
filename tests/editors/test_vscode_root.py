"""VS Code (vscode_session.py) opened on the parent folder of a checkout
(the parent is not a git work tree; it holds the checkout and other files):
opening a file of the checkout, the server should index the checkout, the
same files as when the root is the checkout itself (compared with a direct
run of the server).

VS Code sends the opened folder as the root; the server falls back to the
file's git work tree (issue 19, server side). EXPECTED_TO_FAIL marks a
check known to fail (reported as skipped, exit 77, with the reason); none
is now."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import indexed_files, parent_workspace, xfail_or_fail  # noqa: E402
from vscode_session import Session  # noqa: E402

# None: the server finds the root itself (it did not before issue 19's
# server side).
EXPECTED_TO_FAIL = None

session = Session("sculpt-vscode-root-")
parent, checkout = parent_workspace(session.tmp)
expected = indexed_files(session.binary, checkout)
rc, results = session.run([{"folder": parent, "steps": [{"kind": "root",
                                                          "file": "jq/src/builtin.c"}]}])
root = results[0] if results else {}
if rc != 0 or "failed" in root or not expected:
    print("FAIL: the driver exited with %d: %s; the checkout alone: %s files"
          % (rc, root.get("failed"), expected))
    sys.exit(1)
index = root.get("index") or {}
print("parent folder opened: rootUri %s; index %s; the checkout alone: %d files"
      % (root.get("rootUri"), index, expected))
ok = index.get("state") == "ready" and index.get("files") == expected
if EXPECTED_TO_FAIL:
    if not ok:
        shutil.rmtree(session.tmp, ignore_errors=True)
    xfail_or_fail(ok, "the root from a parent folder in VS Code", EXPECTED_TO_FAIL)
    sys.exit(1)  # it works now: drop EXPECTED_TO_FAIL
session.done([] if ok else ["the index is %s, expected %d files (the checkout)" % (index, expected)])
