"""`sculpt batch --diagnostics FILE|-`: gcc/clang lines and LSP Diagnostic
JSON re-infill the statement around each diagnostic; planted errors
(`abc$`, `abc@` in JavaScript) are fixed by the planted model's fill; a C error the model cannot
fix (it never writes `;`) is reported and left unchanged; bad diagnostics
input is a clear error with exit 2 and touches nothing."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batchlib import ERRORS, FILL, batch, check, finish, make_repo, model, read, report, snapshot  # noqa: E402

M = model()
root = make_repo(ERRORS)
before = snapshot(root)
GCC = ("py/broken.py:1:8: error: invalid syntax\n"
       "In file included from somewhere.c:1:\n"
       "c/broken.c:3:13: error: stray '$' in program\n"
       "    3 |   return abc$;\n"
       "      |             ^\n"
       "c/broken.c:1:5: note: declared here\n"
       "js/broken.js:1:12: error: Invalid character\n")

# gcc/clang form on stdin, dry run.
rc, out, err = batch("--diagnostics", "-", "--json", "--model", M, ".", cwd=root, stdin=GCC)
check(rc == 1, f"one site cannot be fixed: exit 1 (got {rc}: {err})")
check(snapshot(root) == before, "dry run leaves every file byte-identical")
rep = report(out)
by = {s["file"]: s for s in rep["sites"]}
check(sorted(by) == ["c/broken.c", "js/broken.js", "py/broken.py"], f"three sites: {sorted(by)}")
py = by.get("py/broken.py", {})
check(py.get("status") == "done" and py.get("mode") == "diagnostic", f"python fixed: {py}")
check(py.get("message") == "invalid syntax", "the diagnostic's message is reported")
check(py.get("original") == "$" and py.get("text") == FILL, f"python span and fill: {py}")
check(by.get("js/broken.js", {}).get("status") == "done", "javascript fixed")
cs = by.get("c/broken.c", {})
check(cs.get("status") == "failed" and cs.get("reason") == "no candidate parsed",
      f"the C error is not fixed by text without `;`: {cs}")
diff = "".join(rep["diffs"].values())
check("-x = abc$\n+x = abc" + FILL + "\n" in diff, "python hunk")
check("c/broken.c" not in rep["diffs"], "the failed file has no diff")

# The same from a file, with --write: only the fixed sites change.
dpath = os.path.join(root, ".diags.txt")
with open(dpath, "w") as f:
    f.write(GCC)
rc, out, err = batch("--diagnostics", dpath, "--write", "--model", M, ".", cwd=root)
check(rc == 1, f"--write exit 1 ({rc})")
check(read(root, "py/broken.py") == f"x = abc{FILL}\nprint(x)\n", "python file fixed on disk")
check(read(root, "js/broken.js") == f"let v = abc{FILL}\nconsole.log(v);\n", "js fixed on disk")
check(read(root, "c/broken.c") == ERRORS["c/broken.c"], "the C file is unchanged")

# LSP Diagnostic JSON: PublishDiagnosticsParams with a file:// uri, and a
# bare Diagnostic array when one FILE is given.
root = make_repo(ERRORS)
uri = "file://" + os.path.join(root, "py/broken.py")
pub = {"uri": uri, "diagnostics": [{"range": {"start": {"line": 0, "character": 7},
                                              "end": {"line": 0, "character": 8}},
                                    "message": "bad token", "severity": 1}]}
rc, out, err = batch("--diagnostics", "-", "--json", "--model", M, root, stdin=json.dumps(pub))
rep = report(out)
check(rc == 0 and len(rep["sites"]) == 1 and rep["sites"][0]["text"] == FILL,
      f"LSP PublishDiagnosticsParams ({rc}: {err})")
# A file URI is percent-decoded: a folder with a space in its name.
spaced = make_repo({"my dir/broken.py": ERRORS["py/broken.py"]})
uri = "file://" + os.path.join(spaced, "my%20dir/broken.py")
rc, out, err = batch("--diagnostics", "-", "--json", "--model", M, spaced,
                     stdin=json.dumps(dict(pub, uri=uri)))
rep = report(out) if rc == 0 else {"sites": []}
check(rc == 0 and len(rep["sites"]) == 1 and rep["sites"][0]["text"] == FILL,
      f"a %20 in the uri names the folder with a space ({rc}: {err})")
bare = [{"range": {"start": {"line": 0, "character": 11}, "end": {"line": 0, "character": 12}},
         "message": "x"}]
rc, out, err = batch("--diagnostics", "-", "--model", M, os.path.join(root, "js/broken.js"),
                     stdin=json.dumps(bare))
check(rc == 0 and f"+let v = abc{FILL}" in out, f"bare Diagnostic array for one FILE ({rc}: {err})")

# Bad input: exit 2, a message naming the problem, nothing touched.
before = snapshot(root)
bad = [
    ("this is not a diagnostic\n", "no diagnostics recognised"),
    ("", "empty"),
    ('[{"range": {"start": {"line": 0', "malformed"),
    ('[{"range": {"start": {"line": -1, "character": 0}}}]', "range.start"),
    ('[{"message": "no range"}]', "range.start"),
    (json.dumps(bare), "names no file"),
    ("py/broken.py:99:1: error: past the end\n", "outside the file"),
]
for text, want in bad:
    rc, out, err = batch("--diagnostics", "-", "--model", M, ".", cwd=root, stdin=text)
    check(rc == 2, f"bad input {text[:30]!r}: exit 2 (got {rc})")
    check(want in err and err.startswith("sculpt batch: "), f"clear error for {text[:30]!r}: {err!r}")
    check(out == "", "nothing on stdout")
rc, out, err = batch("--diagnostics", os.path.join(root, "missing.txt"), "--model", M, root)
check(rc == 2 and "cannot read diagnostics" in err, f"missing diagnostics file: {err!r}")
check(snapshot(root) == before, "bad input touches nothing")

# Usage errors: exit 2.
for args in ([], ["--holes"], ["--holes", "--diagnostics", "-", "."], ["--query", "(x)", "."],
             ["--holes", "--candidates", "0", "."], ["--holes", "--bogus", "."]):
    rc, out, err = batch(*args, cwd=root)
    check(rc == 2 and err.startswith("sculpt batch: "), f"usage error {args}: {rc} {err!r}")
finish()
