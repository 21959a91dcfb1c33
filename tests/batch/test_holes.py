"""`sculpt batch --holes`: the dry run prints a git-style diff and leaves
every file byte-identical; --write changes only the sites, keeps the mode;
the diff applies with `git apply`; a site that cannot be filled is reported
(exit 1) and left alone; --json reports each site; a marker inside a string
or a docstring is not a hole."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batchlib import FILL, FILLED, FIXTURE, batch, check, finish, make_repo, model, read, report, snapshot  # noqa: E402

M = model()
root = make_repo()
before = snapshot(root)

# Dry run: a diff on stdout, nothing on disk changes.
rc, out, err = batch("--holes", "--model", M, ".", cwd=root)
check(rc == 0, f"dry run exit 0 (got {rc}: {err})")
check(snapshot(root) == before, "dry run leaves every file byte-identical")
for rel in ("c/alphabet.c", "py/letters.py", "js/letters.js"):
    check(f"diff --git a/{rel} b/{rel}\n--- a/{rel}\n+++ b/{rel}\n" in out, f"diff header for {rel}")
check(out.count("diff --git") == 3, f"three files in the diff: {out}")
check('-  return abcTODO(sculpt);\n+  return abc' + FILL + ';\n' in out, "C hunk")
check('+const letters = abc' + FILL + ';\n' in out, "JavaScript hunk")
check("README.md" not in out and "other.c" not in out, "files without holes are not in the diff")
check("strings.py" not in out, "markers in a string and a docstring are not holes")

# The diff applies to the tree as git would apply it (when git is here).
if shutil.which("git"):
    p = subprocess.run(["git", "apply", "--check", "-"], input=out.encode(), cwd=root,
                       capture_output=True)
    check(p.returncode == 0, f"git apply --check accepts the diff: {p.stderr.decode()}")

# --write: only the sites change; the file mode is kept; no temp file is left.
os.chmod(os.path.join(root, "c/alphabet.c"), 0o640)
before = snapshot(root)
rc, out, err = batch("--holes", "--write", "--model", M, ".", cwd=root)
check(rc == 0, f"--write exit 0 (got {rc}: {err})")
check(out == "", f"--write prints no diff: {out!r}")
after = snapshot(root)
check(set(after) == set(before), f"no file added or removed: {sorted(set(after) ^ set(before))}")
for rel, want in FILLED.items():
    check(read(root, rel) == want, f"{rel} after --write: {read(root, rel)!r}")
check(after["c/alphabet.c"][1] & 0o7777 == 0o640, "the file mode is kept")
# A second run finds nothing left to do.
rc, out, err = batch("--holes", "--model", M, ".", cwd=root)
check(rc == 0 and out == "", f"nothing left: rc {rc}, {out!r}")

# --json: one record per site, and a summary.
root2 = make_repo()
rc, out, err = batch("--holes", "--json", "--batch-sites", "--model", M, root2)
check(rc == 0, f"--json exit 0 ({err})")
rep = report(out)
sites = rep["sites"]
check(len(sites) == 3, f"three sites: {len(sites)}")
for s in sites:
    check(s["status"] == "done" and s["text"] == FILL and s["mode"] == "hole", f"site {s}")
    check(s["candidates_tried"] == 1 and s["check"] == "not run", "one greedy candidate, no check")
    check(0 < s["confidence"] <= 1 and s["ms"] >= 0, "confidence and timing")
    check(s["original"] == "TODO(sculpt)", "the original text of the site")
c = [s for s in sites if s["file"].endswith("alphabet.c")][0]
check(c["range"] == {"start": {"line": 3, "character": 12}, "end": {"line": 3, "character": 24}},
      f"C site range: {c['range']}")
summ = rep["summary"]
check(summ["sites"] == 3 and summ["done"] == 3 and summ["failed"] == 0 and not summ["write"],
      f"summary {summ}")
check(len(rep["diffs"]) == 3, "diffs in the report")
# The three holes' greedy candidates were decoded together: one batch of
# forward passes, fewer than one after another would take.
check(summ["batched_sites"] == 3 and 1 <= summ["batched_passes"] < 3 * 24,
      f"holes batched into shared forward passes: {summ}")

# A hole the model cannot fill (after "z" the planted model ends the middle
# at once, so the fill is empty) is reported, exit 1, and left unchanged;
# the other sites are still done.
files = dict(FIXTURE)
files["py/body.py"] = 'def later():\n    return xyzTODO(sculpt)\n'
root3 = make_repo(files)
rc, out, err = batch("--holes", "--write", "--model", M, root3)
check(rc == 1, f"a failed site gives exit 1 (got {rc})")
check(read(root3, "py/body.py") == files["py/body.py"], "the failed site's file is unchanged")
check("body.py:2:15: hole not done" in err, f"the failed site is reported: {err}")
check(read(root3, "js/letters.js") == FIXTURE["js/letters.js"].replace("TODO(sculpt)", FILL),
      "the other sites are written")

# --marker replaces the default markers.
root4 = make_repo({"m.py": 'A = abc@@\nB = abcTODO(sculpt)\n'})
rc, out, err = batch("--holes", "--marker", "@@", "--write", "--model", M, root4)
check(rc == 0 and read(root4, "m.py") == f'A = abc{FILL}\nB = abcTODO(sculpt)\n',
      f"--marker: {rc} {read(root4, 'm.py')!r}")
finish()
