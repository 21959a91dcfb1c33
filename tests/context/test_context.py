"""`sculpt context FILE:LINE:COL --json` on fixture repositories: retrieval
finds the definition of a function used at the cursor when it lives in
another file (Python import, C include, JS workspace), in the same file
outside the windows, and never from gitignored, binary or out-of-root
files; budgets are respected and no snippet repeats the windows."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ["SCULPT_BIN"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def write(root, rel, text, mode="w"):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, mode) as f:
        f.write(text)


def context(root, target, *extra):
    p = subprocess.run([BIN, "context", target, "--json", *extra], cwd=root,
                       capture_output=True, timeout=60)
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

# Errors: exit 2 with one line.
for args in (["app.py:999:1"], ["nope.py:1:1"], ["app.py"], ["app.py:1:1", "--budget", "3"]):
    rc, out, err = context(root, *args)
    check(rc == 2 and out == "" and err.count("sculpt context:") == 1, "%s: exit 2" % args)

shutil.rmtree(root, ignore_errors=True)
shutil.rmtree(outside, ignore_errors=True)
if failures:
    sys.exit(1)
print("ok")
