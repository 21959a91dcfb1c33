"""Benchmark results as data: one JSON Lines file per benchmark run under
bench/results/, one record a figure. tools/bench/perf_tables.py makes
docs/performance.md (and the README's front-page figures) from them.

A benchmark run with --record writes through record():

    import results
    results.record(group="tokenizer", metric="encode speed", value=13.2, unit="MB/s",
                   better="higher", config={"threads": 1},
                   peer={"name": "JS encoder", "version": "1.0", "config": {...},
                         "value": 0.89})

and the date (UTC), the machine (CPU model and flags, cores, GPU, load
average at that moment), the commit (HEAD, and whether tracked files
differed from it) and the command line are filled in. All records of one
process go to one file, bench/results/<UTC date and time>-<benchmark>.jsonl
($SCULPT_RESULTS_DIR instead of bench/results when set).

A record's fields (validate() checks them):
  group    the table it belongs to (perf_tables.GROUPS names the known ones)
  metric   what was measured, in words; config tells apart the settings
  config   {setting: value}: model shape, threads, context, ... ({} if none)
  value    a number; unit its unit ("ms", "MB/s", "x" for a stated ratio)
  better   "lower" or "higher"
  peer     null, or {"name", "version", "config", "value"} measured in the
           same run (version, config or value null where unknown)
  ratio    only where the source stated sculpt's advantage over the peer
           without the peer's value (> 1: sculpt ahead)
  bound    null, or {"name", "value"}: a floor or ceiling the figure is
           set against (a roofline, a measured peak, a target)
  date     ISO date, or date and time (UTC) where known
  machine  {"label", "cpu", "flags", "cores", "gpu", "load_avg"}: flags,
           gpu, load_avg null where unknown; load_avg {"1m","5m","15m"} as
           measured, or {"min","max"} as a source stated a range
  commit   the full commit hash the figure was measured at (or first stated)
  command  the command that reproduces it
  source   where the figure came from (a script run, or the README text it
           was imported from); note: optional words
"""
import datetime
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import machine as _machine  # noqa: E402

REQUIRED = ("group", "metric", "config", "value", "unit", "better", "peer", "date", "machine",
            "commit", "command", "source")
MACHINE_REQUIRED = ("label", "cpu", "flags", "cores", "gpu", "load_avg")
OPTIONAL = ("ratio", "bound", "note", "rounds")


def results_dir(root=ROOT):
    return os.environ.get("SCULPT_RESULTS_DIR") or os.path.join(root, "bench", "results")


def machine_label(m):
    """The machine's name in the tables: CPU model and cores, GPU if any."""
    s = f"{m['cpu']}, {m['cores']} cores"
    return s + (f", {m['gpu']}" if m.get("gpu") else "")


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate(r):
    """The problems with record r, as a list of strings (empty: valid)."""
    if not isinstance(r, dict):
        return ["not a JSON object"]
    errs = [f"missing field {k!r}" for k in REQUIRED if k not in r]
    extra = set(r) - set(REQUIRED) - set(OPTIONAL)
    if extra:
        errs.append("unknown fields " + ", ".join(sorted(extra)))
    if errs:
        return errs
    for k in ("group", "metric", "unit", "command", "source", "date"):
        if not isinstance(r[k], str) or not r[k].strip():
            errs.append(f"{k} must be a non-empty string")
    if not _number(r["value"]):
        errs.append("value must be a number")
    if r["better"] not in ("lower", "higher"):
        errs.append("better must be 'lower' or 'higher'")
    if not isinstance(r["config"], dict):
        errs.append("config must be an object")
    if not re.fullmatch(r"[0-9a-f]{40}", str(r["commit"])):
        errs.append("commit must be a full 40-hex commit hash")
    if isinstance(r["date"], str) and not re.fullmatch(
            r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\dZ)?", r["date"]):
        errs.append("date must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")
    m = r["machine"]
    if not isinstance(m, dict):
        errs.append("machine must be an object")
    else:
        errs += [f"machine: missing {k!r}" for k in MACHINE_REQUIRED if k not in m]
        if not errs:
            if not isinstance(m["cores"], int) or m["cores"] < 1:
                errs.append("machine.cores must be a positive integer")
            if m["flags"] is not None and not isinstance(m["flags"], list):
                errs.append("machine.flags must be a list or null")
            la = m["load_avg"]
            if la is not None and not (isinstance(la, dict) and la and
                                       (set(la) <= {"1m", "5m", "15m"} or
                                        set(la) == {"min", "max"}) and
                                       all(_number(v) for v in la.values())):
                errs.append("machine.load_avg must be null, {1m,5m,15m} or {min,max}")
    p = r["peer"]
    if p is not None:
        if not isinstance(p, dict) or not {"name", "version", "config", "value"} <= set(p):
            errs.append("peer must be null or {name, version, config, value}")
        elif not isinstance(p["name"], str) or not (p["value"] is None or _number(p["value"])):
            errs.append("peer.name must be a string, peer.value a number or null")
        elif p["value"] is None and not _number(r.get("ratio")):
            errs.append("a peer without a value needs the stated ratio")
    if "ratio" in r and not _number(r["ratio"]):
        errs.append("ratio must be a number")
    if "ratio" in r and (p is None or (isinstance(p, dict) and p.get("value") is not None)):
        errs.append("ratio only where the peer's value is not known")
    b = r.get("bound")
    if b is not None and not (isinstance(b, dict) and isinstance(b.get("name"), str)
                              and _number(b.get("value"))):
        errs.append("bound must be null or {name, value}")
    return errs


def load(directory):
    """Every record under directory, as (file name, line number, record),
    files in name order. A line that is not JSON raises ValueError."""
    out = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if not name.endswith((".json", ".jsonl")):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if line.strip():
                    try:
                        out.append((name, i, json.loads(line)))
                    except json.JSONDecodeError as e:
                        raise ValueError(f"{name}:{i}: not JSON: {e}") from None
    return out


def _git(*args):
    try:
        r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


class Recorder:
    """One benchmark run: its records go to one file, written line by line
    (an interrupted run keeps what it measured)."""

    def __init__(self, bench, command=None, directory=None):
        self.bench = bench
        now = datetime.datetime.now(datetime.timezone.utc)
        self.date = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.directory = directory or results_dir()
        self.path = os.path.join(self.directory,
                                 now.strftime("%Y-%m-%dT%H%M%SZ") + f"-{bench}.jsonl")
        if command is None:
            script = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
            command = " ".join([script] + sys.argv[1:])
        self.command = command
        self.commit = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        self.dirty = bool(dirty)
        self.machine = _machine.info()
        self.machine["label"] = machine_label(self.machine)
        self.count = 0

    def record(self, group, metric, value, unit, better, config=None, peer=None, bound=None,
               note=None, rounds=None, command=None):
        la = os.getloadavg()
        m = dict(self.machine, load_avg={"1m": round(la[0], 2), "5m": round(la[1], 2),
                                         "15m": round(la[2], 2)})
        if peer is not None:
            peer = {"name": peer["name"], "version": peer.get("version"),
                    "config": peer.get("config"), "value": peer.get("value")}
        r = {"group": group, "metric": metric, "config": config or {}, "value": value,
             "unit": unit, "better": better, "peer": peer, "date": self.date, "machine": m,
             "commit": self.commit, "command": command or self.command,
             "source": f"a run of {self.bench}, recorded by tools/bench/results.py"}
        if bound is not None:
            r["bound"] = bound
        if rounds:
            r["rounds"] = rounds
        notes = [note] if note else []
        if self.dirty:
            notes.append("measured with local changes to tracked files beside this commit")
        if notes:
            r["note"] = "; ".join(notes)
        errs = validate(r)
        if errs:  # a benchmark's bug, not the user's input
            raise ValueError(f"bad result record for {metric!r}: {'; '.join(errs)}")
        os.makedirs(self.directory, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(r, sort_keys=True) + "\n")
        self.count += 1
        return r


_default = None


def record(**kw):
    """Append one record to this process's run file (see Recorder.record)."""
    global _default
    if _default is None:
        _default = Recorder(os.path.splitext(os.path.basename(sys.argv[0]))[0])
    return _default.record(**kw)


def recorded():
    """(how many records this process wrote, the file) for the script's
    last line; (0, None) when none."""
    return (_default.count, _default.path) if _default else (0, None)


def sig(x, digits=4):
    """x to so many significant digits: a record keeps what was measured,
    not the float's noise."""
    return float(f"{x:.{digits}g}")


def _json_object(text):
    import argparse
    try:
        v = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError("a JSON object, e.g. '{\"shape\": \"qwen2.5-0.5b\"}'")
    return v


def add_flag(ap):
    """The --record flag every benchmark takes, and --record-config for the
    settings the benchmark cannot see itself (a model folder's shape)."""
    ap.add_argument("--record", action="store_true",
                    help="also append the figures to bench/results/ (tools/bench/results.py; "
                         "then run tools/bench/perf_tables.py)")
    ap.add_argument("--record-config", type=_json_object, default={}, metavar="JSON",
                    help="with --record: settings added to each record's config")


def done():
    n, path = recorded()
    if n:
        rel = os.path.relpath(path, os.getcwd())
        print(f"recorded {n} figures in {path if rel.startswith('..') else rel}")
