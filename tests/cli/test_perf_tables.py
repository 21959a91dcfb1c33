"""docs/performance.md (and the README's front-page block, where the README
has its markers) is what tools/bench/perf_tables.py makes from
bench/results/, and every record there holds the fields a figure needs
(tools/bench/results.py validate()). On a temporary copy: a changed value
changes the table and --check catches it, a hand edit is caught, the newest
record of a metric is the one shown, a bad record is refused naming its
line, the README's block is rewritten and the text around it kept, and a
README without the markers is left alone. Nothing here is timed."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("SCULPT_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(SRC, "tools", "bench", "perf_tables.py")
sys.path.insert(0, os.path.join(SRC, "tools", "bench"))
import perf_tables  # noqa: E402
import results  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def tables(root, *extra):
    p = subprocess.run([sys.executable, TOOL, "--root", root, *extra], capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def copy(root):
    os.makedirs(os.path.join(root, "bench"))
    os.makedirs(os.path.join(root, "docs"))
    shutil.copytree(os.path.join(SRC, "bench", "results"), os.path.join(root, "bench", "results"))
    shutil.copy(os.path.join(SRC, "docs", "performance.md"), os.path.join(root, "docs"))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def main():
    # The repository as it is.
    rc, out, err = tables(SRC, "--check")
    check(rc == 0, "perf_tables.py --check passes on the repository (a hand edit of "
                   "docs/performance.md or a record added without regenerating fails here)"
          + ("" if rc == 0 else f": rc {rc}\n{out[-3000:]}{err}"))
    recs = results.load(os.path.join(SRC, "bench", "results"))
    check(len(recs) > 0, f"bench/results holds records ({len(recs)})")
    bad = [f"{n}:{i}: {e}" for n, i, r in recs for e in results.validate(r)]
    check(not bad, "every record has its fields (metric, unit, value, date, machine, commit, "
                   "peer, command, ...)" + ("" if not bad else ": " + "; ".join(bad[:5])))
    shallow = subprocess.run(["git", "-C", SRC, "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True)
    if shallow.returncode == 0 and shallow.stdout.strip() == "false":
        missing = sorted({r["commit"] for _n, _i, r in recs
                          if subprocess.run(["git", "-C", SRC, "cat-file", "-e",
                                             r["commit"] + "^{commit}"],
                                            capture_output=True).returncode != 0})
        check(not missing, "every record's commit is in the history"
              + ("" if not missing else ": " + ", ".join(missing)))
    else:
        print("skip the commits' check: not a full git checkout")
    for group, metric, _t in (p[1:] for _w, parts in perf_tables.FRONT for p in parts):
        check(any(r["group"] == group and r["metric"] == metric for _n, _i, r in recs),
              f"a record feeds the front page's {group!r} / {metric!r}")

    tmp = tempfile.mkdtemp(prefix="sculpt-perf-tables-")
    try:
        # A changed value changes the table, and --check says so.
        root = os.path.join(tmp, "a")
        copy(root)
        rc, _o, _e = tables(root, "--check")
        check(rc == 0, "the copy checks clean")
        gpu = os.path.join(root, "bench", "results", "2026-12-04-gpu-h200.jsonl")
        lines = read(gpu).splitlines()
        rec = json.loads(lines[0])
        old = perf_tables.with_unit(rec["value"], rec["unit"])
        rec["value"] = 4321.5
        lines[0] = json.dumps(rec, sort_keys=True)
        with open(gpu, "w") as f:
            f.write("\n".join(lines) + "\n")
        rc, out, _e = tables(root, "--check")
        check(rc == 1 and "+" in out and "4,321.5 ms" in out,
              "a changed value: --check exits 1 with a diff showing the new figure")
        check(read(os.path.join(root, "docs", "performance.md")) ==
              read(os.path.join(SRC, "docs", "performance.md")), "--check writes nothing")
        rc, _o, _e = tables(root)
        doc = read(os.path.join(root, "docs", "performance.md"))
        row = [ln for ln in doc.splitlines() if ln.startswith("| " + rec["metric"])
               and perf_tables.config_text(rec["config"]) in ln]
        check(rc == 0 and len(row) == 1 and "| 4,321.5 ms |" in row[0] and old not in row[0],
              "regenerated, the table's row holds the new value")
        rc, _o, _e = tables(root, "--check")
        check(rc == 0, "and then checks clean")

        # A hand edit of the generated file is caught.
        path = os.path.join(root, "docs", "performance.md")
        with open(path, "a") as f:
            f.write("\nA figure typed in by hand: 1 ms.\n")
        rc, out, _e = tables(root, "--check")
        check(rc == 1 and "typed in by hand" in out, "a hand edit of docs/performance.md fails "
                                                     "--check")

        # The newest record of a metric (same config, same machine) is shown.
        root = os.path.join(tmp, "b")
        copy(root)
        cur = perf_tables.current(results.load(os.path.join(root, "bench", "results")))
        key, r = next((k, v) for k, v in cur.items() if k[0] == "tokenizer")
        newer = dict(r, value=98.7, date="2099-01-01")
        older = dict(r, value=12.3, date="2000-01-01")
        with open(os.path.join(root, "bench", "results", "2000-01-01-x.jsonl"), "w") as f:
            f.write(json.dumps(older) + "\n" + json.dumps(newer) + "\n")
        tables(root)
        doc = read(os.path.join(root, "docs", "performance.md"))
        tok = doc.split("## Tokenizer")[1].split("\n## ")[0]
        check("98.7 MB/s" in tok and "12.3 MB/s" not in tok
              and f"{perf_tables.fmt(r['value'])} MB/s" not in tok,
              "the newest record of a metric replaces the older ones in its table")

        # A malformed record is refused, naming its file and line.
        bad = dict(r)
        del bad["machine"]
        with open(os.path.join(root, "bench", "results", "2000-01-02-bad.jsonl"), "w") as f:
            f.write(json.dumps(bad) + "\n")
        rc, _o, err = tables(root, "--check")
        check(rc == 2 and "2000-01-02-bad.jsonl:1" in err and "machine" in err,
              "a record without its machine: exit 2, the file, line and field named")
        with open(os.path.join(root, "bench", "results", "2000-01-02-bad.jsonl"), "w") as f:
            f.write("{not json\n")
        rc, _o, err = tables(root, "--check")
        check(rc == 2 and "not JSON" in err, "a line that is not JSON: exit 2")

        # The README: the block between the markers is rewritten, the rest kept.
        root = os.path.join(tmp, "c")
        copy(root)
        readme = os.path.join(root, "README.md")
        before = "# sculpt\n\nIntro.\n\n" + perf_tables.BEGIN + "\n"
        after = perf_tables.END + "\n\n## Set up\n\nText.\n"
        with open(readme, "w") as f:
            f.write(before + "- a figure typed in by hand\n" + after)
        rc, out, _e = tables(root, "--check")
        check(rc == 1 and "README.md" in out and "typed in by hand" in out,
              "a stale README block fails --check")
        tables(root)
        text = read(readme)
        check(text.startswith(before) and text.endswith(after)
              and "typed in by hand" not in text and "HBM roofline" in text
              and "pause to ghost text" in text and "LSP overhead" in text,
              "the README block is rewritten with the front-page figures, the text around it "
              "kept")
        rc, _o, _e = tables(root, "--check")
        check(rc == 0, "and then checks clean")
        plain = "# sculpt\n\nNo markers here.\n"
        with open(readme, "w") as f:
            f.write(plain)
        rc, _o, _e = tables(root)
        check(rc == 0 and read(readme) == plain, "a README without the markers is left alone")
        with open(readme, "w") as f:
            f.write(plain + perf_tables.BEGIN + "\n")
        rc, _o, err = tables(root, "--check")
        check(rc == 2 and "perf:end" in err, "a README with one marker only: exit 2, one line")

        # The writer fills in the machine, date, commit and command.
        if results._git("rev-parse", "HEAD") is None:
            print("skip the writer's check: not a git checkout (a record needs its commit)")
            return
        rdir = os.path.join(tmp, "records")
        os.environ["SCULPT_RESULTS_DIR"] = rdir
        w = results.Recorder("selftest", command="tools/bench/x.py --record")
        got = w.record(group="tokenizer", metric="m", value=1.5, unit="MB/s", better="higher",
                       peer={"name": "p", "value": 1.0})
        (name, _i, on_disk), = results.load(rdir)
        check(on_disk == got and not results.validate(on_disk) and name.endswith("-selftest.jsonl")
              and on_disk["machine"]["cores"] == os.cpu_count()
              and set(on_disk["machine"]["load_avg"]) == {"1m", "5m", "15m"}
              and on_disk["command"] == "tools/bench/x.py --record",
              "results.Recorder writes a valid record with the machine and load filled in")
        try:
            w.record(group="tokenizer", metric="m", value="fast", unit="MB/s", better="higher")
            check(False, "a record whose value is not a number is refused")
        except ValueError:
            check(True, "a record whose value is not a number is refused")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
