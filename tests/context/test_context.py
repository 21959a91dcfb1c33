"""`sculpt context FILE:LINE:COL --json` on fixture repositories: retrieval
finds the definition of a function used at the cursor when it lives in
another file (Python import, C include, JS workspace), in the same file
outside the windows, and never from gitignored, binary or out-of-root
files; budgets are respected and no snippet repeats the windows. The index
kept on disk makes the second call warm, and a corrupt one costs one log
line and a rebuild; --positions and --cut."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from ctxtest import check, failures, write

BIN = os.environ["SCULPT_BIN"]


CACHE = tempfile.mkdtemp(prefix="sculpt-context-cache-")
ENV = dict(os.environ, XDG_CACHE_HOME=CACHE)


def context(root, target, *extra):
    p = subprocess.run([BIN, "context", target, "--json", *extra], cwd=root,
                       capture_output=True, timeout=60, env=ENV)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


if not shutil.which("git"):
    print("skip: git is needed to list the workspace")
    sys.exit(77)

root = tempfile.mkdtemp(prefix="sculpt-context-")
outside = tempfile.mkdtemp(prefix="sculpt-outside-")
subprocess.run(["git", "init", "-q", root], check=True)
write(root, "pkg/calc.py", "def compute_total(items):\n    return sum(items)\n")
write(root, "ignored.py", "def secret_helper():\n    return 42\n")
write(root, ".gitignore", "ignored.py\nbuild/\n")
write(root, "build/gen.py", "def built_helper():\n    return 1\n")
write(root, "blob.py", "def blob_fn():\n    pass\n\0\0\0", "w")
write(outside, "far.py", "def far_away():\n    return 0\n")
os.symlink(os.path.join(outside, "far.py"), os.path.join(root, "far.py"))
filler = "".join("# line %d of padding\n" % i for i in range(300))
write(root, "app.py",
      "from pkg.calc import compute_total\n\n\ndef local_helper(x):\n    return x * 2\n\n" +
      filler + "\ndef main():\n    a = secret_helper() + built_helper() + far_away() + blob_fn()\n"
      "    b = local_helper(3)\n    print(compute_total([1, 2]))\n")
write(root, "src/util.h", "int clamp(int v, int lo, int hi);\n\nstatic inline int twice(int v) {\n  return 2 * v;\n}\n")
write(root, "src/main.c", '#include "util.h"\n\nint main(void) {\n  return twice(4);\n}\n')
write(root, "web/format.js", "function formatPrice(cents) {\n  return '$' + (cents / 100).toFixed(2);\n}\n")
write(root, "web/cart.js", "const total = 1234;\nconsole.log(formatPrice(total));\n")

# Python: the cursor is inside print(...) on the last line.
lines = open(os.path.join(root, "app.py")).read().split("\n")
last = len(lines) - 1  # 1-based index of the print line
rc, out, err = context(root, "app.py:%d:11" % last, "--budget", "256")
check(rc == 0, "exit 0 (%s)" % err)
res = json.loads(out) if rc == 0 else {"snippets": [], "tokens": {}, "workspace": {"skipped": {}}}
by_name = {s["name"]: s for s in res["snippets"]}
check("compute_total" in by_name and by_name["compute_total"]["path"] == "pkg/calc.py" and
      by_name["compute_total"]["reason"] == "imported file",
      "the imported definition is found: %s" % by_name.get("compute_total"))
check("def compute_total" in by_name.get("compute_total", {}).get("text", ""), "its text")
check(by_name.get("compute_total", {}).get("text", "").startswith("# pkg/calc.py:1"),
      "headed by its path in a Python comment")
check("local_helper" in by_name and by_name["local_helper"]["reason"] == "same file",
      "a same-file definition outside the window: %s" % sorted(by_name))
for name in ("secret_helper", "built_helper", "far_away", "blob_fn"):
    check(name not in by_name, "%s (ignored, ignored dir, out of root, binary) is not used" % name)
sk = res["workspace"]["skipped"]
check(sk.get("binary", 0) >= 1 and sk.get("outside", 0) >= 1, "skips counted: %s" % sk)
t = res["tokens"]
check(t.get("prefix", 0) + t.get("suffix", 0) + t.get("snippets", 0) <= 256, "within the budget")
check(t.get("snippets", 0) <= 64, "snippets within a quarter of the budget")
for s in res["snippets"]:
    body = s["text"].split("\n", 1)[1]
    check(body not in res["prefix"] and body not in res["suffix"], "no snippet repeats a window")

# --repeat times the retrieval at other cursors.
rc, out, _ = context(root, "app.py:%d:11" % last, "--repeat", "5")
b = json.loads(out).get("bench", {}) if rc == 0 else {}
check(b.get("retrievals") == 5 and 0 <= b.get("p50_ms", -1) <= b.get("max_ms", -1) and
      b.get("peak_rss_kb", 0) > 0, "--repeat reports the retrieval latency: %s" % b)

# A cursor deep in a long function: its header, cut off by the window, comes
# back as an "enclosing scope" snippet.
body = "".join("    v%d = %d\n" % (i, i) for i in range(300))
write(root, "deep.py", "class Outer:\n    def long_method(self, arg):\n" +
      body.replace("    ", "        ") + "        return arg\n")
rc, out, err = context(root, "deep.py:250:9", "--budget", "128")
res = json.loads(out) if rc == 0 else {"snippets": []}
scopes = [s for s in res["snippets"] if s["reason"] == "enclosing scope"]
check([s["text"].split("\n")[1] for s in scopes] ==
      ["class Outer:", "    def long_method(self, arg):"],
      "enclosing scopes, outermost first: %s" % [s["text"] for s in scopes])

# A big budget takes local_helper into the window: then it is not a snippet.
rc, out, _ = context(root, "app.py:%d:11" % last, "--budget", "8192")
res = json.loads(out)
check("local_helper" not in [s["name"] for s in res["snippets"]],
      "a definition inside the window is not repeated")

# C: the include's header.
rc, out, err = context(root, "src/main.c:4:10")
res = json.loads(out) if rc == 0 else {"snippets": []}
tw = [s for s in res["snippets"] if s["name"] == "twice"]
check(tw and tw[0]["path"] == "src/util.h" and tw[0]["reason"] == "imported file" and
      tw[0]["text"].startswith("// src/util.h:3"), "C include: %s" % tw)

# JS: no import, found in the workspace.
rc, out, err = context(root, "web/cart.js:2:13")
res = json.loads(out) if rc == 0 else {"snippets": []}
fp = [s for s in res["snippets"] if s["name"] == "formatPrice"]
check(fp and fp[0]["reason"] == "workspace", "JS workspace definition: %s" % fp)

# Similar chunks and recent edits. The cursor sits in a block whose names
# (ledger_entries, post_balance, audit_trail) appear together nowhere else
# but in a near-duplicate block of sim/other.py, far from its definitions.
def pad(tag, n):  # filler without identifiers: numbers (tag is only a label)
    return "".join("%d\n" % i for i in range(n))


block = ("def reconcile(ledger_entries, audit_trail):\n"
         "    for entry in ledger_entries:\n"
         "        post_balance(entry.account, entry.amount, audit_trail)\n"
         "        audit_trail.append(entry.account)\n"
         "    return audit_trail\n")
write(root, "sim/other.py", pad("a", 40) + block.replace("reconcile", "reconcile_old") +
      pad("b", 40))
write(root, "sim/cur.py", pad("c", 5) + "\n" +
      "def settle(ledger_entries, audit_trail):\n"
      "    for entry in ledger_entries:\n"
      "        post_balance(entry.account, entry.amount, audit_trail)\n"
      "        \n")
write(root, "sim/notes.py", "".join("n%d = %d\n" % (i, i) for i in range(20)) +
      "edited_marker = compute_edit(1)\n" + pad("z", 10))
cur_line = 10  # the blank line in settle()
cur = "sim/cur.py:%d:9" % cur_line

# Without --open the workspace chunk is found through the MinHash sketches.
rc, out, err = context(root, cur, "--budget", "1024")
res = json.loads(out) if rc == 0 else {"snippets": []}
ws_sim = [s for s in res["snippets"] if s["reason"] == "similar chunk"]
check(ws_sim and ws_sim[0]["path"] == "sim/other.py" and "reconcile_old" in ws_sim[0]["text"],
      "workspace similar chunk for a near-duplicate block: %s" % [
          (s["path"], s.get("score")) for s in res["snippets"]])
check(all(0.2 <= s.get("score", -1) <= 1.0 for s in ws_sim), "scores recorded: %s" % ws_sim)
check(res.get("workspace", {}).get("chunks", 0) >= 8, "chunks counted: %s" % res.get("workspace"))

# --open: the same file as an editor buffer whose unsaved text differs from
# the disk; the chunk comes from the buffer's text (here: the disk file is
# overwritten with filler, the "buffer" is a copy elsewhere).
buf_dir = tempfile.mkdtemp(prefix="sculpt-buffer-")
write(buf_dir, "scratch.py", pad("q", 30) + block.replace("reconcile", "reconcile_buffer"))
rc, out, err = context(root, cur, "--budget", "1024", "--open",
                       os.path.join(buf_dir, "scratch.py"))
res = json.loads(out) if rc == 0 else {"snippets": []}
opened = [s for s in res["snippets"] if s["reason"] == "similar chunk" and
          "reconcile_buffer" in s["text"]]
check(opened and opened[0]["path"].endswith("scratch.py") and opened[0]["score"] >= 0.5,
      "--open: a similar chunk from the open file: %s" % [
          (s["path"], s["reason"], s.get("score")) for s in res["snippets"]])
reasons = [s["reason"] for s in res["snippets"]]
check(reasons.index("similar chunk") == min(i for i, r in enumerate(reasons)
                                            if r == "similar chunk"), "ordering sanity")
first_open = min(i for i, s in enumerate(res["snippets"]) if "reconcile_buffer" in s["text"])
ws_idx = [i for i, s in enumerate(res["snippets"]) if s["path"] == "sim/other.py"]
check(all(first_open < i for i in ws_idx), "open documents are searched before the workspace")

# --edited: the range (with two lines around it) comes back as "recent edit".
rc, out, err = context(root, cur, "--budget", "1024", "--edited", "sim/notes.py:21")
res = json.loads(out) if rc == 0 else {"snippets": []}
ed = [s for s in res["snippets"] if s["reason"] == "recent edit"]
check(ed and ed[0]["path"] == "sim/notes.py" and "edited_marker" in ed[0]["text"] and
      ed[0]["range"] == {"start_line": 19, "end_line": 23},
      "--edited adds the recent edit: %s" % ed)
# Two edits: the first given is the most recent and comes first.
rc, out, err = context(root, cur, "--budget", "2048", "--edited", "sim/other.py:3-4",
                       "--edited", "sim/notes.py:21")
res = json.loads(out) if rc == 0 else {"snippets": []}
ed = [s["path"] for s in res["snippets"] if s["reason"] == "recent edit"]
check(ed == ["sim/other.py", "sim/notes.py"], "recent edits, most recent first: %s" % ed)
# An edit inside the windows is not repeated.
rc, out, err = context(root, cur, "--budget", "1024", "--edited", "sim/cur.py:8")
res = json.loads(out) if rc == 0 else {"snippets": []}
check(not [s for s in res["snippets"] if s["reason"] == "recent edit"],
      "an edit inside the window is not a snippet")
for bad in (["--edited", "sim/notes.py"], ["--edited", "sim/notes.py:0"],
            ["--edited", "sim/notes.py:5-2"], ["--open", "/nonexistent/x.py"]):
    rc, out, err = context(root, cur, *bad)
    check(rc == 2 and out == "" and err.count("sculpt context:") == 1, "%s: exit 2" % bad)
shutil.rmtree(buf_dir, ignore_errors=True)

# Errors: exit 2 with one line.
for args in (["app.py:999:1"], ["nope.py:1:1"], ["app.py"], ["app.py:1:1", "--budget", "3"]):
    rc, out, err = context(root, *args)
    check(rc == 2 and out == "" and err.count("sculpt context:") == 1, "%s: exit 2" % args)

# The index kept on disk: the calls above left it warm; a corrupt one is one
# log line and a rebuild, then warm again.
rc, out, err = context(root, "app.py:1:1")
ws = json.loads(out)["workspace"] if rc == 0 else {}
check(ws.get("files", 0) > 0 and ws.get("cached") == ws.get("files") and err == "",
      "a second call starts warm: %s %s" % (ws, err))
idx = [os.path.join(CACHE, "sculpt", "index", f)
       for f in os.listdir(os.path.join(CACHE, "sculpt", "index")) if f.endswith(".idx")]
check(len(idx) == 1, "one index file in the cache folder: %s" % idx)
for f in idx:
    with open(f, "r+b") as h:
        h.seek(100)
        h.write(b"\xff\xfe\xfd")
rc, out, err = context(root, "app.py:1:1")
ws = json.loads(out)["workspace"] if rc == 0 else {}
check(rc == 0 and ws.get("cached") == 0 and ws.get("files", 0) > 0 and
      err.count("\n") == 1 and "not used" in err, "corrupt: rebuilt, one log line: %r" % err)
rc, out, err = context(root, "app.py:1:1")
check(rc == 0 and json.loads(out)["workspace"]["cached"] > 0, "rewritten after the rebuild")
check(json.loads(out).get("partial_index") is False, "a complete index: not partial")

# --positions: one JSON line per position, a bad one reported in place;
# --cut drops the rest of the cursor's line.
lst = os.path.join(CACHE, "positions.txt")
with open(lst, "w") as f:
    f.write("src/main.c:4:10\napp.py:999:1\nweb/cart.js:2:13\n")
p = subprocess.run([BIN, "context", "--json", "--positions", lst, "--cut"], cwd=root,
                   capture_output=True, text=True, timeout=60, env=ENV)
rows = [json.loads(x) for x in p.stdout.splitlines()]
check(p.returncode == 1 and len(rows) == 3 and "error" in rows[1] and
      rows[0]["file"] == "src/main.c" and rows[2]["file"] == "web/cart.js",
      "--positions: %d rows, rc %d" % (len(rows), p.returncode))
check(rows and rows[0].get("suffix", "x").startswith("\n"),
      "--cut: nothing after the cursor on its line: %r" % rows[0].get("suffix", "")[:20])

shutil.rmtree(root, ignore_errors=True)
shutil.rmtree(outside, ignore_errors=True)
shutil.rmtree(CACHE, ignore_errors=True)
if failures:
    sys.exit(1)
print("ok")
