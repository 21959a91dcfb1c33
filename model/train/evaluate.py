#!/usr/bin/env python3
"""Evaluate infilling on held-out files, with baselines, in one run.

Tasks (deterministic, from the corpus' heldout.jsonl): the cursor is put at
the start of a line and the middle to recover is that line ("single") or the
next 3 lines ("multi"), newline included. Python files are used only if they
parse, so the parse rate of the file with the infill inserted is meaningful.

Systems, all on the same tasks:
  * model      — the checkpoint, through `sculpt complete --json` (engine
                 "sculpt") or a PyTorch re-implementation of the same
                 fixed-k confidence sampler (engine "torch", for GPU boxes
                 without the binary);
  * random     — the same architecture with random weights (seeded);
  * line-ngram — the most frequent next line after the previous line in the
                 training corpus, falling back to the language's most
                 frequent line (chained for multi-line).
Decoding: greedy, fixed-k with steps = canvas (one token per step), canvas
32 tokens (single) / 64 (multi), semi-AR blocks of 32 (sculpt's default).
Metrics: exact match (trailing whitespace of each line ignored; a
missing final newline is added), mean character similarity (difflib
ratio), Python parse rate (non-empty middle and the file parses), and sculpt's CPU
latency (median "model_ms" and process wall time) for a single-line infill.

    evaluate.py --model DIR --corpus DIR [--sculpt BIN] [--engine sculpt|torch]
                [--n 100] [--out metrics.json]
"""
import argparse
import ast
import difflib
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def norm(s):
    return "\n".join(l.rstrip() for l in s.rstrip("\n").split("\n"))


def with_newline(s):
    return s if s.endswith("\n") else s + "\n"


def h(s):
    return int(hashlib.sha256(s.encode()).hexdigest()[:12], 16)


def make_tasks(heldout, n, kind, k_lines):
    """[(rec, line_index, prefix, middle, suffix)] — at most 2 per file,
    spread over languages round-robin, chosen by content hash."""
    by_lang = defaultdict(list)
    for r in sorted(heldout, key=lambda r: r["sha256"]):
        text = r["text"]
        if r["lang"] == "python":
            try:
                ast.parse(text)
            except (SyntaxError, ValueError):
                continue
        lines = text.split("\n")
        if len(lines) < 12:
            continue
        lines = [l + "\n" for l in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        cands = [i for i in range(3, len(lines) - k_lines)
                 if all(4 <= len(lines[j].strip()) <= 80 for j in range(i, i + k_lines))]
        picked = sorted(cands, key=lambda i: h(f"{kind}:{r['sha256']}:{i}"))[:2]
        for i in picked:
            pre = "".join(lines[:i])
            mid = "".join(lines[i:i + k_lines])
            suf = "".join(lines[i + k_lines:])
            by_lang[r["lang"]].append((r, i, pre, mid, suf))
    out, langs = [], sorted(by_lang)
    while len(out) < n and any(by_lang[l] for l in langs):
        for l in langs:
            if by_lang[l] and len(out) < n:
                out.append(by_lang[l].pop(0))
    return out


class LineNgram:
    def __init__(self, train_path, max_files=4000):
        self.next = defaultdict(Counter)
        self.freq = defaultdict(Counter)
        with open(train_path, encoding="utf-8") as f:
            for n, line in enumerate(f):
                if n >= max_files:
                    break
                r = json.loads(line)
                prev = ""
                for l in r["text"].split("\n"):
                    if l.strip():
                        self.next[(r["lang"], prev)][l] += 1
                        self.freq[r["lang"]][l] += 1
                        prev = l.strip()

    def predict(self, lang, prefix, k):
        prev_lines = [l for l in prefix.split("\n") if l.strip()]
        prev = prev_lines[-1].strip() if prev_lines else ""
        out = []
        for _ in range(k):
            c = self.next.get((lang, prev))
            line = (c.most_common(1)[0][0] if c else
                    (self.freq[lang].most_common(1)[0][0] if self.freq[lang] else ""))
            out.append(line + "\n")
            prev = line.strip()
        return "".join(out)


def sculpt_infill(bin_, model, pre, suf, canvas, tmpdir, eos_penalty=0.0):
    path = os.path.join(tmpdir, "task.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(pre + suf)
    line = pre.count("\n") + 1
    t0 = time.time()
    p = subprocess.run([bin_, "complete", f"{path}:{line}:1", "--model", model,
                        "--max-tokens", str(canvas), "--steps", str(canvas), "--json",
                        "--eos-penalty", str(eos_penalty)],
                       capture_output=True, timeout=300)
    wall = (time.time() - t0) * 1000
    if p.returncode != 0:
        raise RuntimeError(f"sculpt complete failed: {p.stderr.decode()[:300]}")
    res = json.loads(p.stdout)
    return res["text"], res["timings"]["model_ms"], wall


class TorchInfill:
    """The fixed-k confidence sampler (one token per step, blocks of 32,
    greedy, shifted logits), mirroring sculpt's layout and truncation."""

    def __init__(self, model_dir, device, eos_penalty=0.0):
        self.eos_penalty = eos_penalty
        import torch
        import bpe
        import export
        self.torch = torch
        self.model, self.cfg = export.load(model_dir)
        self.model.to(device)
        self.device = device
        self.tok = bpe.Tokenizer(os.path.join(model_dir, "tokenizer.json"))

    def __call__(self, pre, suf, canvas, block=32):
        torch, c = self.torch, self.cfg
        p, s = self.tok.encode(pre), self.tok.encode(suf)
        room = c["max_position_embeddings"] - canvas - 2
        if len(p) + len(s) > room:  # as cmd_complete.c: suffix gets at most a quarter
            ks = min(len(s), room // 4)
            kp = min(len(p), room - ks)
            ks = min(room - kp, len(s))
            p, s = p[len(p) - kp:], s[:ks]
        eos, mask, bos = c["eos_token_id"], c["mask_token_id"], c["bos_token_id"]
        x = [bos] + p + [mask] * canvas + s + [eos]
        c0 = 1 + len(p)
        x = torch.tensor([x], device=self.device)
        t0 = time.time()
        with torch.no_grad():
            for b0 in range(0, canvas, block):
                b1 = min(canvas, b0 + block)
                while True:
                    cm = (x[0, c0 + b0:c0 + b1] == mask).nonzero().flatten()
                    if len(cm) == 0:
                        break
                    lg = self.model(x)[0].float()
                    rows = lg[c0 + b0 - 1 + cm]  # shifted: row i-1 predicts i
                    rows[:, mask] = -float("inf")  # never "predict" a mask
                    rows[:, eos] -= self.eos_penalty  # as sculpt's --eos-penalty
                    pr = torch.softmax(rows, -1)
                    conf, tok = pr.max(-1)
                    j = int(conf.argmax())
                    pos = c0 + b0 + int(cm[j])
                    x[0, pos] = tok[j]
                    if int(tok[j]) == eos:  # the middle ends: EOS to the right
                        x[0, pos:c0 + canvas] = eos
                        break
                if (x[0, c0:c0 + canvas] == eos).any():
                    break
        mid = x[0, c0:c0 + canvas].tolist()
        if eos in mid:
            mid = mid[:mid.index(eos)]
        mid = [t for t in mid if t != mask]
        return self.tok.decode(mid), (time.time() - t0) * 1000, None


def score(tasks, preds):
    em = sim = 0
    py_ok = py_n = 0
    for (r, _, pre, mid, suf), pred in zip(tasks, preds):
        pred = with_newline(pred) if pred.strip() else pred
        em += norm(pred) == norm(mid)
        sim += difflib.SequenceMatcher(None, norm(pred), norm(mid)).ratio()
        if r["lang"] == "python":
            py_n += 1
            try:  # an empty middle is not a completion, even if the file parses
                ast.parse(pre + pred + suf)
                py_ok += bool(pred.strip())
            except (SyntaxError, ValueError):
                pass
    n = max(1, len(tasks))
    return dict(n=len(tasks), exact_match=round(em / n, 4), char_similarity=round(sim / n, 4),
                python_n=py_n, python_parse_rate=round(py_ok / py_n, 4) if py_n else None)


def random_checkpoint(model_dir, out_dir, seed=7):
    import export
    from model import DiffusionLM
    m, cfg = export.load(model_dir)
    r = DiffusionLM(m.config, seed=seed)
    export.export(r, os.path.join(model_dir, "tokenizer.json"), out_dir)
    return out_dir


def evaluate(model_dir, corpus_dir, sculpt_bin=None, engine=None, n=100, device="cpu",
             eos_penalty=0.0, log=print):
    # The random-weights checkpoint and the infill files live in a folder
    # removed on the way out, whatever happens.
    with tempfile.TemporaryDirectory(prefix="sculpt-eval-") as tmp:
        return _evaluate_in(tmp, model_dir, corpus_dir, sculpt_bin, engine, n, device,
                            eos_penalty, log)


def _evaluate_in(tmp, model_dir, corpus_dir, sculpt_bin, engine, n, device, eos_penalty, log):
    with open(os.path.join(corpus_dir, "heldout.jsonl"), encoding="utf-8") as f:
        heldout = [json.loads(l) for l in f if l.strip()]
    engine = engine or ("sculpt" if sculpt_bin else "torch")
    rnd_dir = random_checkpoint(model_dir, os.path.join(tmp, "random"))
    ngram = LineNgram(os.path.join(corpus_dir, "train.jsonl"))
    results = dict(engine=engine, eos_penalty=eos_penalty,
                   decoding="greedy, fixed-k, steps = canvas, blocks of 32",
                   tasks={})
    lat = []
    for kind, k, canvas in (("single", 1, 32), ("multi", 3, 64)):
        tasks = make_tasks(heldout, n, kind, k)
        res = {"n": len(tasks), "canvas": canvas,
               "languages": dict(Counter(t[0]["lang"] for t in tasks))}
        for name, mdir in (("model", model_dir), ("random_weights", rnd_dir)):
            if engine == "sculpt":
                fn = lambda pre, suf, m=mdir: sculpt_infill(sculpt_bin, m, pre, suf, canvas, tmp,
                                                            eos_penalty)
            else:
                ti = TorchInfill(mdir, device, eos_penalty)
                fn = lambda pre, suf, ti=ti: ti(pre, suf, canvas)
            preds = []
            for _, _, pre, _, suf in tasks:
                text, model_ms, wall = fn(pre, suf)
                preds.append(text)
                if kind == "single" and name == "model" and engine == "sculpt":
                    lat.append((model_ms, wall))
            res[name] = score(tasks, preds)
            if name == "model":
                res["examples"] = [dict(path=t[0]["path"], line=t[1] + 1, expected=t[3],
                                        predicted=p) for t, p in list(zip(tasks, preds))[:8]]
        res["line_ngram"] = score(tasks, [ngram.predict(t[0]["lang"], t[2], k) for t in tasks])
        res["ground_truth_parse_rate"] = score(tasks, [t[3] for t in tasks])["python_parse_rate"]
        results["tasks"][kind] = res
        log(f"{kind}: model {res['model']} | random {res['random_weights']} | "
            f"ngram {res['line_ngram']}")
    if lat:
        results["sculpt_cpu_latency_single_line"] = dict(
            canvas=32, steps=32, median_model_ms=round(statistics.median(x[0] for x in lat), 2),
            median_process_wall_ms=round(statistics.median(x[1] for x in lat), 2),
            n=len(lat))
        log(f"latency: {results['sculpt_cpu_latency_single_line']}")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--sculpt", default=os.environ.get("SCULPT_BIN"))
    ap.add_argument("--engine", choices=["sculpt", "torch"], default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=100, help="tasks per kind")
    ap.add_argument("--eos-penalty", type=float, default=0.0,
                    help="subtracted from the EOS logit (Dream-Coder demos use 3)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.engine == "sculpt" and not a.sculpt:
        sys.exit("--engine sculpt needs --sculpt BIN or SCULPT_BIN")
    r = evaluate(a.model, a.corpus, a.sculpt, a.engine, a.n, a.device, a.eos_penalty)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
