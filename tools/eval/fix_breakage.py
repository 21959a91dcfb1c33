#!/usr/bin/env python3
"""What `sculpt batch --diagnostics --write` does to real code broken in one
place: the user's measure of the quick-fix engine (a fix written that is
wrong is harm; one refused is only no help).

Each trial takes a vendored file (tests/data/real), deletes one thing from
one line, chosen by a seeded random generator: a `;`, the last `)`, an
operator (`=`, `==`, `!=`, `:=`, `,`, `&&`, ...) or a word after the line's
first. When the language's own syntax check then fails (gcc -fsyntax-only,
python3 -m py_compile, gofmt -e), its messages go to `sculpt batch
--diagnostics - --write` on a copy, and the file is compared again:

  restored    byte for byte the original
  refused     left as it was broken (nothing written)
  wrong       written and not the original (the harm); "clean" of those:
              the syntax check passes, so nothing tells the user

    tools/eval/fix_breakage.py [--sculpt build/sculpt] [--model DIR]
        [--trials 40] [--seed 1] [--lang c|python|go ...] [--show]
    tools/eval/fix_breakage.py --root DIR --file REL --check CMD [--comment //]

Defaults: jq's src/jv.c, click's core.py, cobra's command.go, the shipped
model. Not a test: it needs gcc, python3 and gofmt, and takes about a
second a trial.

Any other project: --root names its folder (copied once), --file the file
to break inside it, --check the project's own check, a shell command run
in the copy's root, {} standing for the file's path there (javac against
the project's classes, `cargo check --offline --lib`, tsc --noEmit); it
passes when it exits 0, and its output goes to the batch as diagnostics;
with --batch-check the batch runs it on each candidate as well (`sculpt
batch --check`), as a user with a build would.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REAL = os.path.join(ROOT, "tests", "data", "real")

LANGS = {
    # name: (file under tests/data/real, comment prefix, syntax check argv before the file)
    "c": ("jq/src/jv.c", "//", ["gcc", "-fsyntax-only"]),
    "python": ("click/src/click/core.py", "#", [sys.executable, "-m", "py_compile"]),
    "go": ("cobra/command.go", "//", ["gofmt", "-e", "-l"]),
}
OPS = re.compile(r"(:=|==|!=|&&|\|\||->|[=,<>+*])")
WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def check(argv, path, root=None):
    """(passes, messages): the tool's verdict on path, run beside it; with
    root, argv is a shell command run there ({} the path)."""
    if root:
        r = subprocess.run(argv.replace("{}", path), shell=True, capture_output=True,
                           text=True, cwd=root)
        return r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(argv + [os.path.basename(path)], capture_output=True, text=True,
                       cwd=os.path.dirname(path))
    return r.returncode == 0 and not r.stderr.strip(), r.stderr


def break_line(line, rng):
    """(kind, the line with one thing deleted) or None."""
    kinds = ["semi", "paren", "op", "word"]
    rng.shuffle(kinds)
    for kind in kinds:
        if kind == "semi" and line.rstrip().endswith(";"):
            return kind, line.rstrip()[:-1]
        if kind == "paren" and ")" in line:
            k = line.rindex(")")
            return kind, line[:k] + line[k + 1:]
        if kind == "op":
            ops = list(OPS.finditer(line))
            if ops:
                m = rng.choice(ops)
                return kind, line[:m.start()] + line[m.end():]
        if kind == "word":
            words = list(WORD.finditer(line))
            if len(words) > 1:
                m = rng.choice(words[1:])
                return kind, line[:m.start()] + line[m.end():]
    return None


def run_lang(args, lang, rng, tmp):
    rel, comment, argv = LANGS[lang]
    src = os.path.join(args.root or REAL, rel)
    with open(src) as f:
        orig = f.read()
    lines = orig.split("\n")
    cands = [i for i, l in enumerate(lines)
             if len(l.strip()) >= 8 and not l.strip().startswith((comment, "*", "/*", "#", '"'))]
    counts = dict(trials=0, restored=0, refused=0, wrong=0, wrong_clean=0, errors=0)
    # The file's folder as it is (its headers), copied once; only the file
    # is written again for each trial (the batch writes nothing else).
    folder = os.path.join(tmp, lang)
    if args.root:
        shutil.copytree(args.root, folder, symlinks=True)
        path = os.path.join(folder, rel)
    else:
        shutil.copytree(os.path.dirname(src), folder)
        path = os.path.join(folder, os.path.basename(src))
    root = folder if args.root else None
    attempts = 0
    while counts["trials"] < args.trials and attempts < args.trials * 20:
        attempts += 1
        i = rng.choice(cands)
        b = break_line(lines[i], rng)
        if b is None:
            continue
        kind, bad_line = b
        broken = "\n".join(lines[:i] + [bad_line] + lines[i + 1:])
        with open(path, "w") as f:
            f.write(broken)
        ok, messages = check(argv, path, root)
        if ok:
            continue  # still valid code: nothing to fix
        counts["trials"] += 1
        cmd = [args.sculpt, "batch", "--diagnostics", "-", "--write", "--no-progress"]
        if args.model:
            cmd += ["--model", args.model]
        if args.batch_check:  # the build decides: batch --check runs the same check
            cmd += ["--check", argv.replace("{}", '"$SCULPT_BATCH_FILE"')]
        r = subprocess.run(cmd + [path], input=messages, capture_output=True, text=True,
                           cwd=root or os.path.dirname(path))
        if r.returncode not in (0, 1):
            counts["errors"] += 1
            print(f"{lang}: batch exited {r.returncode}: {r.stderr.strip()[-300:]}",
                  file=sys.stderr)
        with open(path) as f:
            after = f.read()
        if after == orig:
            counts["restored"] += 1
        elif after == broken:
            counts["refused"] += 1
            if args.show_refused:
                print(f"  refused {rel}:{i + 1} {kind}: {lines[i].strip()!r} -> "
                      f"{bad_line.strip()!r}")
        else:
            clean, _ = check(argv, path, root)
            counts["wrong"] += 1
            counts["wrong_clean"] += clean
            if args.show:
                now = after.split("\n")
                got = now[i] if len(now) == len(lines) else "(lines added or removed)"
                print(f"  {lang} {rel}:{i + 1} {kind}: {lines[i].strip()!r} -> {got.strip()!r}"
                      f"{' (passes the check)' if clean else ''}")
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sculpt", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--model")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lang", action="append", choices=sorted(LANGS))
    ap.add_argument("--show", action="store_true", help="print each wrong edit")
    ap.add_argument("--show-refused", action="store_true", help="print each refusal")
    ap.add_argument("--root", help="another project's folder (with --file and --check)")
    ap.add_argument("--file", help="the file to break, relative to --root")
    ap.add_argument("--check", help="the project's check, a shell command ({}: the file)")
    ap.add_argument("--comment", default="//", help="the file's line comment (default //)")
    ap.add_argument("--batch-check", action="store_true",
                    help="with --check: the batch runs it too (batch --check), as a user "
                         "with a build would")
    args = ap.parse_args()
    if args.batch_check and not args.root:
        ap.error("--batch-check needs --root and --check")
    if args.root:
        if not args.file or not args.check:
            ap.error("--root needs --file and --check")
        args.root = os.path.abspath(args.root)
        LANGS.clear()
        LANGS[os.path.splitext(args.file)[1].lstrip(".") or "file"] = (
            args.file, args.comment, args.check)
        args.lang = None
    print("| language | file | trials | restored | refused | wrong written | of those, pass the check |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="sculpt-fix-breakage-") as tmp:
        for lang in args.lang or sorted(LANGS):
            rng = random.Random(f"{args.seed}:{lang}")
            c = run_lang(args, lang, rng, tmp)
            print(f"| {lang} | {LANGS[lang][0]} | {c['trials']} | {c['restored']} | "
                  f"{c['refused']} | {c['wrong']} | {c['wrong_clean']} |"
                  + (f" ({c['errors']} batch errors)" if c["errors"] else ""), flush=True)


if __name__ == "__main__":
    main()
