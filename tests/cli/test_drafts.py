"""Drafts through `sculpt complete` (model.h, sc_draft; context/draft.c) on
the planted byte-level model, which after "...abc" writes
"defghijklmnopqrstuvwxyz" one letter a pass (only the leftmost mask is ever
confident), so what a draft saves is counted in passes:

  - a right draft, found in the file's own text, is accepted in one pass;
  - a wrong one is rejected and the model's own letters are written;
  - a draft that runs into the text after the cursor ends the middle there
    and sets the canvas length (the model alone would write on to z).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from clitest import check, failures

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]

tmp = tempfile.mkdtemp(prefix="sculpt-drafts-")
subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), tmp],
               check=True, capture_output=True)
model = os.path.join(tmp, "planted-successor-shifted-bytes")


def complete(text, where, *args):
    path = os.path.join(tmp, "t.py")
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run([BIN, "complete", f"{path}:{where}", "--model", model, "--max-tokens",
                        "40", "--json", *args], capture_output=True, timeout=120)
    if p.returncode != 0:
        return p.returncode, None, p.stderr.decode()
    return 0, json.loads(p.stdout), p.stderr.decode()


CHAIN = "defghijklmnopqrstuvwxyz"

# A right draft: "x = abc" occurs above with "defghij" after it.
right = "x = abcdefghij\nx = abc\n"
rc, off, err = complete(right, "2:8", "--drafts", "off")
check(rc == 0 and off["text"] == CHAIN, f"no drafts: {off and off['text']!r} {err}")
check(off["drafts"]["drafted"] == 0 and off["steps"] == 24, f"no drafts: {off['drafts']}")
rc, on, err = complete(right, "2:8")
check(rc == 0 and on["text"] == CHAIN, f"right draft: the same middle ({on and on['text']!r})")
d = on["drafts"]
check(d["on"] and d["offered"] >= 1 and d["sources"][0] == "prompt", f"right draft offered: {d}")
# "defghij" accepted in the first pass, then "\n" rejected (the model wants
# 'k', which it writes in the same pass): 8 letters in one pass, 7 passes saved.
check(d["accepted"] == 7 and d["rejected"] == d["drafted"] - 7, f"right draft counts: {d}")
check(on["steps"] == off["steps"] - 7, f"right draft: {on['steps']} passes against {off['steps']}")
check(on["tokens_per_pass"] > off["tokens_per_pass"] == 1.0,
      f"tokens per pass {on['tokens_per_pass']} against {off['tokens_per_pass']}")
check(min(on["confidence"]) > 0.99, "drafted letters carry the model's confidence")

# A wrong draft: "xyz" follows "x = abc" above; the model rejects it at once
# and writes its own "d" (and the rest), one a pass, as without drafts.
rc, on, err = complete("x = abcxyz\nx = abc\n", "2:8")
d = on["drafts"] if on else {}
check(rc == 0 and on["text"] == CHAIN, f"wrong draft: the model's middle ({on and on['text']!r})")
check(d.get("drafted", 0) >= 3 and d["accepted"] == 0 and d["rejected"] == d["drafted"],
      f"wrong draft counts: {d}")
check(on["steps"] == 24, f"wrong draft: {on['steps']} passes")

# A draft that ends the middle: after the cursor comes "hij", and above,
# "abc" is followed by "defg" then "hij": the draft is "defg", it ends the
# middle, and once accepted (one pass) the canvas is its four letters.
rc, on, err = complete("x = abcdefghij\nx = abchij\n", "2:8")
check(rc == 0 and on["text"] == "defg", f"ending draft: {on and on['text']!r} {err}")
check(on and on["canvas"] == 4 and on["steps"] == 1 and on["ended"],
      f"ending draft: canvas {on and on['canvas']}, {on and on['steps']} passes")
rc, off, _ = complete("x = abcdefghij\nx = abchij\n", "2:8", "--drafts", "off")
check(off["text"] == CHAIN and off["canvas"] == 40, f"without drafts: {off['text']!r}")

# The threshold is the draft's own setting: at 0 every drafted token
# passes, the wrong draft's too (the planted model's p are 0 or 1, so
# nothing between tells thresholds apart; tests/unit/test_drafts.c does).
rc, on, _ = complete("x = abcxyz\nx = abc\n", "2:8", "--draft-threshold", "0")
check(rc == 0 and on["text"].startswith("xyz") and on["drafts"]["rejected"] == 0,
      f"threshold 0: {on and on['text']!r} {on and on['drafts']}")
check(on["drafts"]["threshold"] == 0.0, "the threshold is reported")

# The upstream preset runs the authors' loop as it is unless asked.
rc, up, _ = complete(right, "2:8", "--preset", "upstream")
check(rc == 0 and not up["drafts"]["on"] and up["drafts"]["drafted"] == 0, "upstream: off")
rc, up2, _ = complete(right, "2:8", "--preset", "upstream", "--drafts", "on")
check(rc == 0 and up2["drafts"]["accepted"] == 7 and up2["steps"] < up["steps"],
      f"upstream with drafts: {up2['drafts']} {up2['steps']} against {up['steps']}")

# Bad values are one line and exit 2.
for bad in (["--drafts", "maybe"], ["--draft-threshold", "2"], ["--draft-threshold", "x"]):
    rc, _, err = complete(right, "2:8", *bad)
    check(rc == 2 and err.count("\n") == 1 and "draft" in err, f"{bad}: {rc} {err!r}")

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures else 0)
