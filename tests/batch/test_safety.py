"""Safety of `sculpt batch`: a run killed mid-write leaves no partial file;
files changed on disk after they were read are refused; symlinks leading
out of the roots and binary files are skipped; Ctrl-C (SIGINT) stops after
the current site with the files whole and a report of what was done."""
import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batchlib import FILL, FIXTURE, batch, check, finish, make_repo, model, read, report, snapshot  # noqa: E402

M = model()

# 1. Killed between the complete temp file and the rename (the test-only
#    hook SCULPT_TEST_KILL_BEFORE_RENAME=1 raises SIGKILL there): every
#    source file keeps its old bytes, and nothing else is left: the temp
#    file has no name until just before the rename (O_TMPFILE); a later run
#    completes.
root = make_repo()
before = snapshot(root)
rc, out, err = batch("--holes", "--write", "--model", M, root,
                     env={"SCULPT_TEST_KILL_BEFORE_RENAME": "1"})
check(rc == -9, f"the hook killed the run (rc {rc})")
after = snapshot(root)
for rel in before:
    check(after.get(rel) == before[rel], f"{rel} is whole and unchanged after the kill")
extra = sorted(set(after) - set(before))
check(not extra, f"no temp file remains: {extra}")
rc, out, err = batch("--holes", "--write", "--model", M, root)
check(rc == 0, f"a rerun completes ({rc}: {err})")
check(read(root, "c/alphabet.c") == FIXTURE["c/alphabet.c"].replace("TODO(sculpt)", FILL),
      "the rerun writes the whole new file")

# 2. A file changed on disk after it was read is refused, not overwritten:
#    the check command edits the file it checks, so the dry run's restore
#    finds someone else's bytes there and keeps them.
root = make_repo({"a.py": 'A = abcTODO(sculpt)\n'})
cmd = 'printf "# edited elsewhere\\n" >> "$SCULPT_BATCH_FILE"'
rc, out, err = batch("--holes", "--check", cmd, "--model", M, root)
check(rc == 1, f"a stale file gives exit 1 (got {rc})")
check("changed on disk" in err, f"the refusal is reported: {err}")
check(read(root, "a.py").endswith("# edited elsewhere\n"), "the other writer's bytes are kept")

# 3. Symlinks out of the roots are refused; inside ones are fine; binary
#    files are skipped; nothing outside is touched.
outside = tempfile.mkdtemp(prefix="sculpt-batch-outside-")
atexit.register(shutil.rmtree, outside, True)
with open(os.path.join(outside, "victim.py"), "w") as f:
    f.write('V = abcTODO(sculpt)\n')
root = make_repo({"in.py": 'I = abcTODO(sculpt)\n'})
os.symlink(os.path.join(outside, "victim.py"), os.path.join(root, "link.py"))
os.symlink(outside, os.path.join(root, "linkdir"))
with open(os.path.join(root, "blob.c"), "wb") as f:
    f.write(b'char *s = abcTODO(sculpt);\0\x01\x02')
rc, out, err = batch("--holes", "--write", "--json", "--model", M, root)
rep = report(out)
check(rc == 0, f"exit 0 with refused files skipped ({rc}: {err})")
skipped = {os.path.basename(s["path"]): s["reason"] for s in rep["summary"].get("skipped_files", [])}
check("outside" in skipped.get("link.py", ""), f"symlink out refused: {skipped}")
check("binary" in skipped.get("blob.c", ""), f"binary skipped: {skipped}")
check(read(outside, "victim.py") == 'V = abcTODO(sculpt)\n', "the file outside is untouched")
check(read(root, "in.py") == f'I = abc{FILL}\n', "the file inside is written")
# A root given directly that is a symlink's target outside: diagnostics for
# a file outside the roots are refused too.
rc, out, err = batch("--diagnostics", "-", "--model", M, root,
                     stdin=os.path.join(outside, "victim.py") + ":1:9: error: x\n")
check("outside the given roots" in err, f"a diagnostic outside the roots is refused: {err}")
check(read(outside, "victim.py") == 'V = abcTODO(sculpt)\n', "still untouched")

# 4. SIGINT mid-run (sent by the check command to sculpt, its parent):
#    the current site finishes, the rest are reported as interrupted, the
#    files written so far are whole, exit 1.
files = {f"f{i}.py": f'V{i} = abcTODO(sculpt)\n' for i in range(4)}
root = make_repo(files)
rc, out, err = batch("--holes", "--write", "--json", "--check", "kill -INT $PPID; true",
                     "--model", M, root)
rep = report(out)
summ = rep.get("summary", {})
check(rc == 1, f"interrupted run exits 1 (got {rc}: {err})")
check(summ.get("interrupted") is True, f"the report says interrupted: {summ}")
check(summ.get("done") == 1 and summ.get("sites") == 4, f"one site done before stopping: {summ}")
for rel, text in files.items():
    now = read(root, rel)
    check(now in (text, text.replace("TODO(sculpt)", FILL)), f"{rel} is whole: {now!r}")
check(sum(read(root, r) != t for r, t in files.items()) == 1, "exactly the done site is written")
check(not [n for n in os.listdir(root) if n.startswith(".")], "no temp file left")
finish()
