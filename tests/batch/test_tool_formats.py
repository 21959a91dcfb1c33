"""`sculpt batch --diagnostics` on what real tools print (issue 43).

tests/batch/tools holds each tool's own output, captured on a broken copy
of vendored code (see its README.md: which tool, which version, which
break). This test makes the same broken copies from tests/data/real and
feeds each output to `sculpt batch --diagnostics --write` with the shipped
model:

  - gcc (display columns: a tab counts to the next multiple of 8) and clang
    (byte columns, "2 errors generated."), a missing `;` in jq's
    jv_unicode.c on a line indented with a tab: restored byte for byte;
    their warnings (jv_print.c, util.h) are not sites, and with --warnings
    they are tried but refused ("no error to fix there");
  - Python's traceback (py_compile), flake8 (E999, one column past), mypy
    (no column; --show-column-numbers), pyright (`path:line:col - error:`,
    type errors beside the syntax errors): a dropped `:` after a method's
    return annotation in click's testing.py and an unclosed `(` in
    core.py: both restored, nothing else changed;
  - go build and go vet (`vet: ./args.go:70:45:`): a dropped `)` in
    cobra's args.go: the site is on line 70, nothing else changes;
  - tsc (`Ky.ts(327,101): error TS1005: ')' expected.`, and --pretty's
    coloured `Ky.ts:327:101 - error TS1005:`): a dropped `)` in ky's
    Ky.ts, on a tab-indented line: restored;
  - rustc (`error: expected `;`` then ` --> main.rs:4:11`): the `;` is
    inserted, the warning is not a site;
  - javac (`Gson.java:369: error: ')' expected`, no column: the caret two
    lines on gives it): two dropped `)` in gson's Gson.java, restored
    (before, the `)` went to the statement's end and was refused);
  - Maven (`[ERROR] path:[369,50] ')' expected`, display columns, each
    error printed twice): the same two `)`, restored, two sites;
  - cargo check on anyhow's error.rs, rustc's choices (`expected one of
    `!`, `,`, ..., or an operator, found `#``, `expected one of `->`,
    `where`, or `{``): a dropped `,` and a dropped `->`, each the one token
    of the list that parses, restored byte for byte; the cascade's and
    the type checker's errors change nothing else;
  - an LSP Diagnostic of severity 2 (warning) is not a site.
Before issue 43 every one of these outputs but gcc's and clang's was "no
diagnostics recognised", and gcc's column led into the line's comment."""
import glob
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from batchlib import SRC, batch, check, finish, put, report, text  # noqa: E402

REAL = os.path.join(SRC, "tests", "data", "real")
TOOLS = os.path.join(HERE, "tools")
MODEL = os.path.join(SRC, "model", "default")
CLICK = os.path.join(REAL, "click", "src", "click")

# The breaks the outputs were captured on: (file, 1-based line, old, new).
JQ_BREAK = ("jv_unicode.c", 89, "return 2;", "return 2")
CLICK_BREAKS = [("testing.py", 184, "def close(self) -> None:", "def close(self) -> None"),
                ("core.py", 392, "get(info_name)", "get(info_name")]
GO_BREAK = ("args.go", 70, "len(args))", "len(args)")
TS_BREAK = ("source/core/Ky.ts", 327, "undefined));", "undefined);")
JAVA_BREAKS = [("Gson.java", 369, "factories) {", "factories {"),
               ("Gson.java", 1225, "(e);", "(e;")]
RUST_BREAKS = [("error.rs", 231, ">>,", ">>"),
               ("error.rs", 1024, "Error) -> Self", "Error)  Self")]


def broken(root, rel, line, old, new):
    """Applies one break to root/rel; returns the original text."""
    p = os.path.join(root, rel)
    t = text(p)
    lines = t.split("\n")
    check(old in lines[line - 1], f"{rel}:{line} holds {old!r} (the vendored copy changed?)")
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    put(p, "\n".join(lines))
    return t


def tree(kind):
    """A fresh copy for one capture: (root, {relative path: original text})."""
    root = tempfile.mkdtemp(prefix="sculpt-tools-")
    origs = {}
    if kind == "jq":
        for f in glob.glob(os.path.join(REAL, "jq", "src", "*.[ch]")):
            shutil.copy(f, root)
        origs[JQ_BREAK[0]] = broken(root, *JQ_BREAK)
    elif kind in ("click", "clickpkg"):
        d = root if kind == "click" else os.path.join(root, "clickpkg", "click")
        if kind == "click":
            for f, *_ in CLICK_BREAKS:
                shutil.copy(os.path.join(CLICK, f), d)
        else:
            shutil.copytree(CLICK, d)
        for b in CLICK_BREAKS:
            origs[os.path.relpath(os.path.join(d, b[0]), root)] = broken(d, *b)
    elif kind == "go":
        shutil.copy(os.path.join(REAL, "cobra", "args.go"), root)
        origs[GO_BREAK[0]] = broken(root, *GO_BREAK)
    elif kind == "ky":
        shutil.copytree(os.path.join(REAL, "ky", "source"), os.path.join(root, "source"))
        origs[TS_BREAK[0]] = broken(root, *TS_BREAK)
    elif kind in ("java", "maven", "cargo"):
        # One vendored file at rel in the copy, broken in several places.
        src, rel, breaks = {
            "java": (("gson", "Gson.java"), "Gson.java", JAVA_BREAKS),
            "maven": (("gson", "Gson.java"), "src/main/java/com/google/gson/Gson.java",
                      JAVA_BREAKS),
            "cargo": (("anyhow", "src", "error.rs"), "src/error.rs", RUST_BREAKS)}[kind]
        dst = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(os.path.join(REAL, *src), dst)
        origs[rel] = text(dst)
        for b in breaks:
            broken(os.path.dirname(dst), *b)
    elif kind == "rust":
        shutil.copy(os.path.join(TOOLS, "main.rs"), root)
        origs["main.rs"] = None  # already broken: there is no original
    return root, origs


def run(tool, kind, *extra):
    """batch --write with the tool's output; (root, originals, report, stderr)."""
    root, origs = tree(kind)
    out = text(os.path.join(TOOLS, tool + ".txt")).replace("@ROOT@", root)
    before = {p: text(p) for p in glob.glob(os.path.join(root, "**", "*"), recursive=True)
              if os.path.isfile(p)}
    rc, so, se = batch("--diagnostics", "-", "--write", "--json", "--model", MODEL, *extra, ".",
                       cwd=root, stdin=out)
    rep = report(so)
    check(rc in (0, 1), f"{tool}: batch ran ({rc}: {se[-300:]})")
    # Nothing but the broken files changes.
    for p, t in before.items():
        rel = os.path.relpath(p, root)
        if rel not in origs:
            check(text(p) == t, f"{tool}: {rel} unchanged")
    return root, origs, rep, se


def sites_on(rep, rel, line):
    return [s for s in rep["sites"] if s["file"].endswith(rel) and
            s["range"]["start"]["line"] + 1 <= line <= s["range"]["end"]["line"] + 1]


# gcc and clang: the `;` goes back; warnings are not sites.
for tool, warnings in (("gcc", 2), ("clang", 4)):
    root, origs, rep, err = run(tool, "jq")
    check(text(os.path.join(root, JQ_BREAK[0])) == origs[JQ_BREAK[0]],
          f"{tool}: jv_unicode.c restored ({[s.get('text') for s in rep['sites']]})")
    check(not [s for s in rep["sites"] if not s["file"].endswith("jv_unicode.c")],
          f"{tool}: warnings are not sites: {[s['file'] for s in rep['sites']]}")
    check(rep["summary"].get("diagnostics_left_out") == warnings,
          f"{tool}: {warnings} warnings left out: {rep['summary']}")
    shutil.rmtree(root, ignore_errors=True)
root, origs, rep, err = run("gcc", "jq", "--warnings")
warned = [s for s in rep["sites"] if not s["file"].endswith("jv_unicode.c")]
check(len(warned) == 2 and all(s["reason"] == "no error to fix there" for s in warned),
      f"--warnings: the warnings are sites, refused: {[(s['file'], s.get('reason')) for s in warned]}")
shutil.rmtree(root, ignore_errors=True)

# Python's tools: both breaks restored.
for tool, kind, fixed in (("py_compile", "click", 2), ("flake8", "click", 2), ("mypy", "click", 2),
                          ("mypy_columns", "click", 1), ("pyright", "clickpkg", 2)):
    root, origs, rep, err = run(tool, kind)
    restored = [rel for rel, t in origs.items() if text(os.path.join(root, rel)) == t]
    check(len(restored) == fixed, f"{tool}: {fixed} files restored, got {restored} "
          f"({[(s['file'], s['status'], s.get('reason')) for s in rep['sites']][:4]})")
    for rel, t in origs.items():
        if rel not in restored:
            check(text(os.path.join(root, rel)) != t, f"{tool}: {rel} left broken, not otherwise changed")
    if tool == "pyright":
        # Its type errors (`"Command" is not defined`) are no syntax error.
        typed = [s for s in rep["sites"] if "is not defined" in s.get("message", "")]
        check(typed and all(s["status"] != "done" for s in typed), "pyright: type errors not fixed")
    shutil.rmtree(root, ignore_errors=True)

# go build and go vet: the site is the broken line.
for tool in ("go_build", "go_vet"):
    root, origs, rep, err = run(tool, "go")
    check(len(sites_on(rep, "args.go", 70)) == 1, f"{tool}: a site on args.go:70 "
          f"({[(s['file'], s['range']) for s in rep['sites']]})")
    shutil.rmtree(root, ignore_errors=True)

# tsc, plain and --pretty (colours and all): the `)` goes back.
for tool in ("tsc", "tsc_pretty"):
    root, origs, rep, err = run(tool, "ky")
    check(text(os.path.join(root, TS_BREAK[0])) == origs[TS_BREAK[0]],
          f"{tool}: Ky.ts restored ({[(s['status'], s.get('text')) for s in rep['sites']]})")
    shutil.rmtree(root, ignore_errors=True)

# rustc: `;` inserted where it said; the warning left out.
root, origs, rep, err = run("rustc", "rust")
check(text(os.path.join(root, "main.rs")).split("\n")[3] == "\t\tsum += x;",
      f"rustc: the `;` inserted ({rep['sites']})")
check(len(rep["sites"]) == 1 and rep["summary"].get("diagnostics_left_out") == 1,
      f"rustc: the warning is not a site ({len(rep['sites'])}: {rep['summary']})")
shutil.rmtree(root, ignore_errors=True)

# javac, Maven and cargo: each file restored byte for byte.
for tool, kind, rel in (("javac", "java", "Gson.java"),
                        ("maven", "maven", "src/main/java/com/google/gson/Gson.java"),
                        ("cargo", "cargo", "src/error.rs")):
    root, origs, rep, err = run(tool, kind)
    check(text(os.path.join(root, rel)) == origs[rel],
          f"{tool}: {rel} restored ({[(s['range']['start']['line'] + 1, s['status'], s.get('reason'), s.get('text')) for s in rep['sites']]})")
    if tool == "maven":  # each error printed twice is one site
        check(len(rep["sites"]) == 2, f"maven: two sites ({len(rep['sites'])})")
    shutil.rmtree(root, ignore_errors=True)

# LSP JSON: a warning is not a site.
root, origs = tree("click")
warn = {"uri": "file://" + os.path.join(root, "testing.py"),
        "diagnostics": [{"range": {"start": {"line": 183, "character": 27},
                                   "end": {"line": 183, "character": 28}},
                         "severity": 2, "message": "expected ':'"}]}
rc, so, se = batch("--diagnostics", "-", "--json", "--model", MODEL, root, stdin=json.dumps(warn))
check(rc == 0 and report(so)["sites"] == [], f"an LSP warning is not a site ({rc}: {so[:200]})")
shutil.rmtree(root, ignore_errors=True)
finish()
