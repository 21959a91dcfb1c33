"""`sculpt batch --query Q --capture NAME` re-infills every node the
capture matches (here the interpolations of Python f-strings and JavaScript
template strings that follow "abc"); a query that does not compile, or
lacks the capture, is a usage error (exit 2)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batchlib import FILL, batch, check, finish, make_repo, model, read, report, snapshot  # noqa: E402

M = model()
files = {
    "a.py": 'name = "x"\nS = f"abc{name}"\nT = f"xyz{name}"\n',
    "b.js": "const name = 1;\nconst s = `abc${name}`;\n",
}
root = make_repo(files)
before = snapshot(root)
rc, out, err = batch("--query", "(interpolation) @hole", "--capture", "hole", "--json",
                     "--model", M, os.path.join(root, "a.py"))
rep = report(out)
check(snapshot(root) == before, "dry run leaves the files byte-identical")
sites = rep["sites"]
check(len(sites) == 2, f"two interpolations matched: {len(sites)}")
first = [s for s in sites if s["range"]["start"]["line"] == 1]
check(first and first[0]["original"] == "{name}" and first[0]["mode"] == "query",
      f"the first match: {first}")
check(first and first[0]["status"] == "done" and first[0]["text"] == FILL, f"filled: {first}")
check(rc == 1, f"the second match follows 'z', after which the planted model ends the middle:"
      f" nothing to put there, exit 1 (got {rc})")

rc, out, err = batch("--query", "(template_substitution) @sub", "--capture", "sub", "--write",
                     "--model", M, os.path.join(root, "b.js"))
check(rc == 0, f"javascript query exit 0 ({rc}: {err})")
check(read(root, "b.js") == f"const name = 1;\nconst s = `abc{FILL}`;\n", read(root, "b.js"))

for q, cap, want in (("(interpolation @x", "x", "does not compile"),
                     ("(interpolation) @x", "y", "no capture @y")):
    rc, out, err = batch("--query", q, "--capture", cap, "--model", M, os.path.join(root, "a.py"))
    check(rc == 2 and want in err, f"bad query {q!r} @{cap}: {rc} {err!r}")
finish()
