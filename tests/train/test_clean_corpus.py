"""model/train/corpus.py keeps the evaluation's code out of the training
corpus (issue 41): a package named as one of `sculpt eval`'s repositories
(python3-click, npm ky) is dropped by name; a copy of a vendored file under
another name by its bytes; another version of one (a few lines changed) and
a file holding a HumanEval problem by the lines they share; an unrelated
file, and one that shares only a licence header or a common import, stay.
`corpus.py --check` finds the same in a built corpus and in a manifest (the
shipped model's names python3-click). The held-out split is by package,
and repository records carry snippets in the text the LSP puts in a prompt
(checked against `sculpt context` on a small workspace). Standard library
(+ the sculpt binary for the last check)."""
import atexit
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "model", "train"))
import corpus  # noqa: E402

CORPUS = os.path.join(SRC, "model", "train", "corpus.py")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def dep5(lic="Expat"):
    return ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
            f"Files: *\nCopyright: someone\nLicense: {lic}\n\n")


def code(name, n=14):
    return "".join(f"def {name}_{i}(value, scale):\n    total = value * {i} + scale\n"
                   f"    return total - len('{name}_{i}')\n\n" for i in range(n))


t = tempfile.mkdtemp(prefix="sculpt-clean-")
atexit.register(shutil.rmtree, t, True)
deb = os.path.join(t, "deb")
py = "usr/lib/python3/dist-packages"
core = open(os.path.join(SRC, "tests", "data", "real", "click", "src", "click", "core.py")).read()
parser = open(os.path.join(SRC, "tests", "data", "real", "click", "src", "click", "parser.py")).read()
with gzip.open(os.path.join(SRC, "tests", "data", "human-eval-infilling",
                            "HumanEval-SingleLineInfilling.jsonl.gz"), "rt") as f:
    he = json.loads(f.readline())
problem = he["prompt"] + he["canonical_solution"] + he["suffix"]

# Debian's click, by its binary package's name (any content).
write(f"{deb}/python3-click/usr/share/doc/python3-click/copyright", dep5("BSD-3-clause"))
write(f"{deb}/python3-click/{py}/click/core.py", code("click_pkg"))
# Copies under other names: the same bytes; another version; a HumanEval problem.
write(f"{deb}/python3-vendor/usr/share/doc/python3-vendor/copyright", dep5())
write(f"{deb}/python3-vendor/{py}/vendor/_click_core.py", core)
lines = parser.split("\n")
for i in range(0, len(lines), 40):  # another version: every 40th line edited
    lines[i] = lines[i] + "  # changed"
write(f"{deb}/python3-vendor/{py}/vendor/_parser.py", "\n".join(lines))
write(f"{deb}/python3-vendor/{py}/vendor/puzzles.py",
      "# exercises\nimport math\n\n\n" + problem + "\n\n" + code("puzzle_helpers", 4))
# Kept: unrelated code; code sharing a licence header and an import with click.
write(f"{deb}/python3-good/usr/share/doc/python3-good/copyright", dep5())
write(f"{deb}/python3-good/{py}/good/core.py", code("good_core"))
write(f"{deb}/python3-good/{py}/good/util.py",
      "\n".join(core.split("\n")[:3]) + "\nimport typing as t\nimport enum\n\n" + code("good_util"))
write(f"{deb}/python3-other/usr/share/doc/python3-other/copyright", dep5())
write(f"{deb}/python3-other/{py}/other/a.py", code("other_a", 30))
write(f"{deb}/python3-other/{py}/other/b.py", "from other.a import other_a_3\n\n\n" + "".join(
    f"def use_{i}(v):\n    w = other_a_3(v, {i})\n    return w + {i}\n\n" for i in range(12)))
npm = os.path.join(t, "npm")
write(f"{npm}/ky/package/package.json", json.dumps({"name": "ky", "version": "1.0.0", "license": "MIT"}))
write(f"{npm}/ky/package/source/index.ts", "export const kyThing = (x: number) => x * 2;\n" * 10)

out = os.path.join(t, "corpus")
p = subprocess.run([sys.executable, CORPUS, out, "--no-system", "--deb-root", deb, "--npm-root", npm,
                    "--heldout-pct", "30"], capture_output=True, text=True, timeout=120)
print(p.stdout, p.stderr[-2000:])
check(p.returncode == 0, "corpus.py exits 0")
recs = corpus.read_jsonl(os.path.join(out, "train.jsonl")) + \
    corpus.read_jsonl(os.path.join(out, "heldout.jsonl"))
paths = {os.path.relpath(r["path"], deb) for r in recs}
print(sorted(paths))
for gone in (f"python3-click/{py}/click/core.py", f"python3-vendor/{py}/vendor/_click_core.py",
             f"python3-vendor/{py}/vendor/_parser.py", f"python3-vendor/{py}/vendor/puzzles.py"):
    check(gone not in paths, f"left out: {gone.split('/')[-1]} of {gone.split('/')[0]}")
check(not any("ky" in r["source"] for r in recs), "npm ky left out by name")
for kept in (f"python3-good/{py}/good/core.py", f"python3-good/{py}/good/util.py",
             f"python3-other/{py}/other/a.py"):
    check(kept in paths, f"kept: {kept.split('/')[-1]} of {kept.split('/')[0]}")
m = json.load(open(os.path.join(out, "manifest.json")))
why = {d.get("path", d["source"]).split("/")[-1]: d["reason"] for d in m["decontamination"]["dropped"]}
print(why)
check("same bytes" in why.get("_click_core.py", ""), "the copy: by its bytes")
check("shares" in why.get("_parser.py", "") and "parser.py" in why.get("_parser.py", ""),
      "another version: by the lines it shares with click/src/click/parser.py")
check("HumanEval/0" in why.get("puzzles.py", ""), "the HumanEval problem: by its lines")
check("evaluation package" in why.get("debian:python3-click", ""), "python3-click: by name")

# Held out by package: each package on one side only.
sides = {}
for split in ("train", "heldout"):
    for r in corpus.read_jsonl(os.path.join(out, f"{split}.jsonl")):
        sides.setdefault(corpus.package_of(r["source"]), set()).add(split)
check(all(len(v) == 1 for v in sides.values()) and
      any(v == {"heldout"} for v in sides.values()) and any(v == {"train"} for v in sides.values()),
      f"held out by package: {sides}")
check(m["heldout_packages"] == sorted(k for k, v in sides.items() if v == {"heldout"}),
      "the manifest names the held-out packages")

# --check over a corpus that has them, and over the shipped model's manifest.
bad = os.path.join(t, "bad")
os.makedirs(bad)
with open(os.path.join(bad, "train.jsonl"), "w") as f:
    for name, text in (("x/ok.py", code("fine")), ("y/copy.py", core), ("z/he.py", problem)):
        f.write(json.dumps({"path": name, "source": "debian:python3-x", "text": text}) + "\n")
p = subprocess.run([sys.executable, CORPUS, "--check", bad], capture_output=True, text=True, timeout=60)
print(p.stdout)
check(p.returncode == 1 and "y/copy.py" in p.stdout and "z/he.py" in p.stdout
      and "x/ok.py" not in p.stdout, "--check names the copy and the problem, exit 1")
p = subprocess.run([sys.executable, CORPUS, "--check", out], capture_output=True, text=True, timeout=60)
check(p.returncode == 0, f"--check passes the corpus corpus.py built ({p.stdout.strip()[-80:]})")
p = subprocess.run([sys.executable, CORPUS, "--check",
                    os.path.join(SRC, "model", "default", "corpus_manifest.json")],
                   capture_output=True, text=True, timeout=120)
check(p.returncode == 1 and "debian:python3-click" in p.stdout,
      "--check finds python3-click in the shipped model's manifest")

# Repository records: the LSP's snippet text, the window after it.
check(corpus.snippet_text("python", "pkg/util.py", 0, "def f():\n    pass") ==
      "# pkg/util.py:1\ndef f():\n    pass\n", "snippet_text: header, body, final newline")
repo = corpus.repo_records([r for r in recs if "other" in r["path"]], 5)
rb = [r for r in repo if r["path"].endswith("other/b.py")]
a_line = code("other_a", 30).split("\n").index("def other_a_3(value, scale):")
want = corpus.snippet_text("python", "other/a.py", a_line,
                           "\n".join(code("other_a", 30).split("\n")[a_line:a_line + 3]))
print(rb[0]["text"][:400] if rb else repo)
check(len(rb) == 1 and rb[0]["text"].startswith(want) and
      rb[0]["text"][rb[0]["prompt_chars"]:] in open(rb[0]["path"]).read() and
      rb[0]["text"][rb[0]["prompt_chars"]:].split("\n")[0].strip(),
      "a record of b.py: a.py's definition of the name it uses, then a window of b.py "
      "starting at a non-blank line")
BIN = os.environ.get("SCULPT_BIN")
if BIN and os.path.exists(BIN):
    ws = os.path.join(t, "ws")
    write(f"{ws}/util.py", "def helper_total(items, scale):\n    s = 0\n    for x in items:\n"
                           "        s += x * scale\n    return s\n")
    write(f"{ws}/app.py", "from util import helper_total\n\n\ndef main():\n"
                          "    v = helper_total([1, 2], 3)\n    print(v)\n")
    subprocess.run(["git", "init", "-q", ws], check=True)
    q = subprocess.run([BIN, "context", "app.py:6:5", "--root", ws, "--json"], cwd=ws,
                       capture_output=True, text=True, timeout=60)
    sn = [s for s in json.loads(q.stdout)["snippets"] if s["name"] == "helper_total"] \
        if q.returncode == 0 else []
    body = "".join(s["text"].split("\n", 1)[1] for s in sn)
    check(sn and sn[0]["text"] == corpus.snippet_text("python", "util.py",
                                                      sn[0]["range"]["start_line"] - 1, body),
          f"the LSP's snippet text is corpus.snippet_text's: {sn[0]['text']!r}" if sn else
          f"sculpt context gave the snippet ({q.stderr[-200:]})")
else:
    print("SCULPT_BIN not set: the comparison with sculpt context is skipped")
finish()
