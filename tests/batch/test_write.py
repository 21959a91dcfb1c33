"""`sculpt batch --write` loses no byte (issue 21): a symlink is written
through to its target inside the roots (and stays a link); a read-only file
is refused (exit 1) unless --force, which keeps its mode; a file with hard
links is refused, the links kept; a writer that appends to a file while it
is being replaced keeps every line, and one that replaces it meanwhile wins;
the temp files a killed run left are removed by the next writing run (ours
only, and never one a live writer holds); --json lists the files written
and those that were not, with why. Each file is all or nothing.

Candidates come from a mock FIM endpoint (tests/remote/mockfim.py): the
test is about writing, not decoding."""
import fcntl
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "remote"))
from batchlib import BIN, FILL, check, cleanup, finish, make_repo, read  # noqa: E402
from mockfim import Mock, clean_env  # noqa: E402

mock = Mock()
mock.default = {"text": FILL}
HOLE = "A = abcTODO(sculpt)\n"
DONE = f"A = abc{FILL}\n"


def batch(*args, env=None):
    # The test is about writing: no compiler's check of C candidates.
    e = clean_env(dict(env or {}, SCULPT_CC=""))
    p = subprocess.Popen([BIN, "batch", "--holes", "--backend", mock.url, "--no-progress", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    return p


def run(*args, env=None):
    p = batch(*args, env=env)
    out, err = p.communicate(timeout=120)
    return p.returncode, out.decode(), err.decode()


def summary(out):
    try:
        return json.loads(out)["summary"]
    except (ValueError, KeyError):
        check(False, f"--json output: {out[:300]!r}")
        return {}


# 1. Symlinks: one inside the roots is written through to its target and
#    stays a link; the target, found again by the walk, is one file.
root = make_repo({"real/a.py": HOLE, "b.py": HOLE})
os.symlink("real/a.py", os.path.join(root, "link.py"))
rc, out, err = run("--write", "--json", root)
s = summary(out)
check(rc == 0, f"symlink run exit 0 ({rc}: {err})")
check(os.path.islink(os.path.join(root, "link.py")) and
      os.readlink(os.path.join(root, "link.py")) == "real/a.py", "the symlink is still a link")
check(read(root, "real/a.py") == DONE, "its target got the new text")
check(sorted(os.path.basename(p) for p in s.get("written_files", [])) == ["b.py", "link.py"],
      f"written_files: {s.get('written_files')}")
check(s.get("sites") == 2, f"the target is one file, one site: {s}")
cleanup(root)

# 2. Read-only: refused and reported, exit 1, the other file still written;
#    --force writes it and keeps its mode.
root = make_repo({"ro.py": HOLE, "rw.py": HOLE})
ro = os.path.join(root, "ro.py")
os.chmod(ro, 0o444)
rc, out, err = run("--write", "--json", root)
s = summary(out)
check(rc == 1, f"a read-only file gives exit 1 ({rc})")
check("read-only" in err and "ro.py" in err, f"the refusal is said: {err!r}")
check(read(root, "ro.py") == HOLE and os.stat(ro).st_mode & 0o777 == 0o444,
      "the read-only file is untouched")
check(read(root, "rw.py") == DONE, "the writable file is written (each file on its own)")
fails = {os.path.basename(f["path"]): f["reason"] for f in s.get("write_failures", [])}
check("read-only" in fails.get("ro.py", ""), f"write_failures: {fails}")
check([os.path.basename(p) for p in s.get("written_files", [])] == ["rw.py"],
      f"written_files: {s.get('written_files')}")
rc, out, err = run("--write", "--force", root)
check(rc == 0 and read(root, "ro.py") == DONE, f"--force writes it ({rc}: {err})")
check(os.stat(ro).st_mode & 0o777 == 0o444, "and keeps its mode")
cleanup(root)

# 3. Hard links: refused, both names keep the old text and the one inode.
root = make_repo({"h.py": HOLE})
h, h2 = os.path.join(root, "h.py"), os.path.join(root, "sub_h2.txt")
os.link(h, h2)
rc, out, err = run("--write", root)
check(rc == 1 and "hard links" in err, f"a hard-linked file is refused ({rc}: {err!r})")
check(os.stat(h).st_ino == os.stat(h2).st_ino and os.stat(h).st_nlink == 2,
      "the link is kept")
check(read(root, "h.py") == HOLE and read(root, "sub_h2.txt") == HOLE, "neither name changed")
cleanup(root)

# 4. Stale temp files: ours, unlocked, go at the next writing run; a live
#    one (locked), a name that is not exactly ours, and everything in a
#    dry run stay.
root = make_repo({"a.py": HOLE, "sub/b.py": HOLE})
stale = [".a.py.sculpt-Ab3x9Z", "sub/.b.py.sculpt-000000"]
keep = [".a.py.sculpt-live00", ".a.py.sculpt-short", "a.py.sculpt-ABCDEF", ".x.sculpt-ABCDE!"]
for n in stale + keep:
    with open(os.path.join(root, n), "w") as f:
        f.write("half a file")
live = open(os.path.join(root, ".a.py.sculpt-live00"))
fcntl.flock(live, fcntl.LOCK_EX)
rc, out, err = run(root)  # a dry run removes nothing
check(all(os.path.exists(os.path.join(root, n)) for n in stale + keep), "a dry run removes nothing")
rc, out, err = run("--write", root)
check(rc == 0, f"the writing run completes ({rc}: {err})")
check(not any(os.path.exists(os.path.join(root, n)) for n in stale), "stale temp files removed")
check(all(os.path.exists(os.path.join(root, n)) for n in keep),
      "a locked temp file and names not exactly ours are kept")
check("removed a stale temp file" in err, f"the removal is said: {err!r}")
live.close()
cleanup(root)

# 5. A writer appending lines while the file is replaced (one open and one
#    write per line, as `echo >>` does). The test hook holds the run between
#    its last look and the rename, so that appends land in that window too.
#    Every line must be in the file afterwards; the hole filled or refused.
lost_total = runs_written = 0
for attempt in range(3):
    root = make_repo({"log.py": HOLE})
    path = os.path.join(root, "log.py")
    lines, stop = [], threading.Event()

    def appender():
        i = 0
        while not stop.is_set():
            line = f"# appended {attempt} {i}\n"
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.write(fd, line.encode())
            os.close(fd)
            lines.append(line)
            i += 1
            time.sleep(0.002)

    p = batch("--write", root, env={"SCULPT_TEST_PAUSE_BEFORE_RENAME_MS": "300"})
    # Start appending once the run holds its complete temp file (after its
    # read): the appends race the last look and the rename.
    deadline = time.monotonic() + 60
    while (not any(".sculpt-" in n for n in os.listdir(root)) and p.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.001)
    t = threading.Thread(target=appender)
    t.start()
    out, err = p.communicate(timeout=120)
    time.sleep(0.05)
    stop.set()
    t.join()
    final = read(root, "log.py")
    lost = [ln for ln in lines if ln not in final]
    lost_total += len(lost)
    runs_written += final.startswith(DONE)
    check(not lost, f"run {attempt}: {len(lost)} of {len(lines)} appended lines lost "
          f"(rc {p.returncode}: {err.decode()!r})")
    check(final.startswith(DONE) or final.startswith(HOLE), f"run {attempt}: whole: {final[:80]!r}")
    cleanup(root)
print(f"appends: {lost_total} lost; the edit was written in {runs_written} of 3 runs")

# 6. A writer that replaces the file (an editor's save: write, rename) in
#    the window between the last look and the rename wins: its text stays.
root = make_repo({"e.py": HOLE})
path = os.path.join(root, "e.py")
p = batch("--write", root, env={"SCULPT_TEST_PAUSE_BEFORE_RENAME_MS": "500"})
deadline = time.monotonic() + 60
while (not any(".sculpt-" in n for n in os.listdir(root)) and p.poll() is None
       and time.monotonic() < deadline):
    time.sleep(0.001)
time.sleep(0.1)
with open(path + ".new", "w") as f:
    f.write("A = 'the editor saved this'\n")
os.replace(path + ".new", path)
out, err = p.communicate(timeout=120)
check(p.returncode == 1 and b"changed on disk" in err,
      f"the run refuses ({p.returncode}: {err.decode()!r})")
check(read(root, "e.py") == "A = 'the editor saved this'\n", f"the editor's text stays: "
      f"{read(root, 'e.py')!r}")
check(not [n for n in os.listdir(root) if ".sculpt-" in n], "no temp file left")
cleanup(root)

mock.stop()
finish()
