"""`sculpt batch --check CMD --candidates N`: candidates come from different
seeds; a candidate that parses is applied and CMD runs; the first that
passes is kept. The check here passes for one specific sampled candidate
only (the file must equal the fixture with that fill), so keeping it shows
the loop tries candidates in order and keeps the one that passed. A site
whose candidates all fail is reported and left unchanged."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batchlib import FILL, batch, check, finish, make_repo, model, read, report, snapshot  # noqa: E402

M = model()
C = ('#include <stdio.h>\n#define STR(x) #x\n\nint main(void) {\n  puts(STR(abcTODO(sculpt)));\n'
     '  return 0;\n}\n')
# A hole in code takes only candidates that parse there; with a 3-token
# canvas the planted model's hot samples ("de" + a random byte) often do.
SAMPLING = ["--candidates", "16", "--temperature", "8", "--max-tokens", "3"]

# 1. A check that always fails: every parsed candidate is tried, none kept;
#    the file is back to its original bytes, exit 1.
root = make_repo({"a.c": C})
before = snapshot(root)
rc, out, err = batch("--holes", "--json", "--check", "false", *SAMPLING, "--model", M, root)
check(rc == 1, f"all candidates fail: exit 1 (got {rc}: {err})")
check(snapshot(root) == before, "a failed site leaves the file byte-identical")
rep = report(out)
site = rep["sites"][0] if rep["sites"] else {}
check(site.get("status") == "failed" and site.get("text") is None, f"site failed: {site}")
cands = site.get("candidates", [])
check([c["seed"] for c in cands] == list(range(16)), "sixteen candidates, seeds 0..15")
check(cands and cands[0]["text"] == FILL[:3], "seed 0 is the greedy fill")
tried = [c for c in cands if c["parsed"]]
check(all(c.get("check") == "failed" for c in tried), "each parsed candidate ran the check")

# Pick a parsed, printable candidate other than the greedy one.
def printable(t):
    return t and all(32 <= ord(ch) < 127 and ch not in '"\\' for ch in t)

pick = [c for c in tried if c["seed"] > 0 and c["text"] != FILL[:3] and printable(c["text"])]
check(len(pick) >= 1, f"sampling gives a second distinct candidate: {[c['text'] for c in cands]}")

if pick:
    want = pick[-1]
    # 2. The check passes only when the file is exactly the fixture with
    #    that candidate's fill: --check must keep that candidate.
    expected = C.replace("TODO(sculpt)", want["text"])
    exp_path = os.path.join(root, ".expected")
    with open(exp_path, "w") as f:
        f.write(expected)
    cmd = f'cmp -s "{exp_path}" "$SCULPT_BATCH_FILE"'
    rc, out, err = batch("--holes", "--json", "--check", cmd, *SAMPLING, "--model", M, root)
    check(rc == 0, f"the passing candidate is found: exit 0 (got {rc}: {err})")
    check(read(root, "a.c") == C, "a dry run with --check leaves the file as it was")
    rep = report(out)
    s = rep["sites"][0]
    check(s["status"] == "done" and s["check"] == "passed", f"site done: {s.get('status')}")
    check(s["seed"] == want["seed"] and s["text"] == want["text"],
          f"kept seed {s['seed']} {s['text']!r}, wanted seed {want['seed']} {want['text']!r}")
    check(s["candidates_tried"] == want["seed"] + 1, "stops at the first candidate that passes")
    check(f'+  puts(STR(abc{want["text"]}));' in rep["diffs"].get(s["file"], ""), "the diff has it")

    # 3. The same with --write: the kept candidate is on disk.
    rc, out, err = batch("--holes", "--write", "--check", cmd, *SAMPLING, "--model", M, root)
    check(rc == 0 and read(root, "a.c") == expected, f"--write keeps that candidate ({rc}: {err})")

# 4. A real check: compile and run the program (when a C compiler is here).
import shutil  # noqa: E402
cc = shutil.which("cc") or shutil.which("gcc")
if cc:
    root2 = make_repo({"a.c": C})
    cmd = f'{cc} -o prog "$SCULPT_BATCH_FILE" && ./prog | grep -qx abcdefghijkwxyz'
    rc, out, err = batch("--holes", "--json", "--check", cmd, *SAMPLING[:4], "--model", M, root2,
                         cwd=root2)
    rep = report(out)
    texts = [c["text"] for c in rep["sites"][0]["candidates"]] if rep["sites"] else []
    if "defghijkwxyz" in texts:
        check(rc == 0 and rep["sites"][0]["text"] == "defghijkwxyz",
              f"compile-and-run check keeps the matching candidate ({rc}: {err})")
    else:
        check(rc == 1, "no candidate prints that alphabet: the site fails")
    check(read(root2, "a.c") == C, "dry run: the source is unchanged after the checks")
finish()
