#!/usr/bin/env python3
"""The training input the GPU session carries, compressed, and its
unpacking on the device (standard library + numpy; no torch).

What travels to the GPU machine is at most 64 MiB, the repository
included, so the corpus goes as xz (source code compresses 5-8x) and is
tokenized THERE by `sculpt tokenize --jsonl` on all its cores (seconds),
not here by a Python pass that would cost device time to undo:

    carry.py pack INPUT CARRY [--shards 8] [--sculpt BIN] [--level 9] [--jobs 2] [--reuse OLD]
        INPUT: corpus/ (corpus.py: train.jsonl, heldout.jsonl, manifest.json)
               and tokenizer.json (bpe.py)
        CARRY: corpus/train-NN.jsonl.xz (contiguous slices of train.jsonl,
               in order), corpus/heldout.jsonl.xz, corpus/repo.jsonl.xz (when
               the corpus has repository records), corpus/manifest.json
               (without its per-file list: train.py needs only the hash; the
               full manifest, the license record, stays here),
               tokenizer.json.xz, carry.json (what is here, and with --sculpt
               the token count and SHA-256 of each split's stream made here,
               which the device's must equal)

    carry.py size CARRY [--repo DIR] [--limit BYTES] [--record FILE]
        what travels to the GPU machine: the repository's files that git
        does not ignore plus CARRY, item by item; exit 1 past the limit
        (default 64 MiB, the device tool's). --record writes what the carry
        measured (its items, the corpus's source bytes and xz bytes) to FILE
        for `budget`

    carry.py budget --record FILE --caps "LANG=MB ..." [--repo-records N]
                    [--repo DIR] [--limit BYTES] [--margin BYTES]
        whether the next --prepare will fit, without making it: the
        repository as it is now, plus the recorded carry with its corpus
        scaled to the caps (at the recorded xz bytes a source byte); exit 1
        when that leaves less than the margin (default 1 MB) under the
        limit. The repository grows between GPU visits and the caps were
        chosen against its size then (tests/train/test_carry_budget.py)

    carry.py unpack CARRY DEST [--sculpt BIN] [--threads N]
        DEST: corpus/manifest.json, corpus/heldout.jsonl (and repo.jsonl),
              tokenizer.json and
              cache/<train.py's cache names>.npy, i.e. run_gpu.sh's INPUT.
              The shards are decompressed in parallel and tokenized by BIN;
              if BIN is missing or fails, by bpe.py in a process pool (slower,
              same stream).

Exit status: 0 done, 1 failure (the message says which step).
"""
import argparse
import hashlib
import json
import lzma
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tokcache  # noqa: E402

SPLITS = ("train", "heldout")


def splits_of(corpus_dir):
    """train and heldout, and repo when the corpus has repository records."""
    extra = ("repo",) if os.path.exists(os.path.join(corpus_dir, "repo.jsonl")) else ()
    return SPLITS + extra


def log(msg):
    print(f"[carry {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def stream_digest(npy_path):
    """(tokens, sha256 of the little-endian ids as int32): the same for a
    uint16 and an int32 file of the same stream."""
    import numpy as np
    a = np.load(npy_path)
    return int(a.size), hashlib.sha256(a.astype("<i4").tobytes()).hexdigest()


def split_lines(path, n):
    """Byte ranges [(start, end)] cutting the file into n slices at line ends,
    balanced by bytes."""
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, n):
            f.seek(max(cuts[-1], size * k // n))
            f.readline()
            pos = f.tell()
            if cuts[-1] < pos < size:
                cuts.append(pos)
    cuts.append(size)
    return list(zip(cuts[:-1], cuts[1:]))


def _xz(job):
    src, start, end, dst, level = job
    with open(src, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    with lzma.open(dst + ".tmp", "wb", preset=level) as o:
        o.write(data)
    os.replace(dst + ".tmp", dst)
    return dst, len(data), os.path.getsize(dst)


def reusable(carry, corpus_sha, n_files, level):
    """carry.json of an earlier pack of the same corpus at the same level
    with all its shards still there, else None."""
    try:
        with open(os.path.join(carry, "carry.json")) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    shards = info.get("shards", [])
    if (info.get("corpus_sha256") != corpus_sha or info.get("xz_level") != level
            or len(shards) != n_files):
        return None
    for sh in shards:
        p = os.path.join(carry, sh["file"])
        if not os.path.isfile(p) or os.path.getsize(p) != sh["xz_bytes"]:
            return None
    return info


def pack(a):
    cin, out = os.path.join(a.input, "corpus"), a.carry
    for f in ("train.jsonl", "heldout.jsonl", "manifest.json"):
        if not os.path.exists(os.path.join(cin, f)):
            sys.exit(f"carry.py pack: {cin}/{f} is missing (make it with corpus.py)")
    tok = os.path.join(a.input, "tokenizer.json")
    if not os.path.exists(tok):
        sys.exit(f"carry.py pack: {tok} is missing (make it with bpe.py)")
    os.makedirs(os.path.join(out, "corpus"), exist_ok=True)
    for f in os.listdir(os.path.join(out, "corpus")):  # an earlier pack's shards
        os.remove(os.path.join(out, "corpus", f))
    with open(os.path.join(cin, "manifest.json")) as f:
        man = json.load(f)
    slim = {k: v for k, v in man.items() if k != "files"}
    slim["files_omitted"] = len(man.get("files", []))
    slim["note"] = "carried copy: the per-file list stays with the full manifest"
    with open(os.path.join(out, "corpus", "manifest.json"), "w") as f:
        json.dump(slim, f, indent=1)
    for stale in ("tokenizer.json", "tokenizer.json.xz"):
        if os.path.exists(os.path.join(out, stale)):
            os.remove(os.path.join(out, stale))
    with open(tok, "rb") as i, lzma.open(os.path.join(out, "tokenizer.json.xz"), "wb", preset=9) as o:
        o.write(i.read())

    jobs = []
    train = os.path.join(cin, "train.jsonl")
    for i, (s, e) in enumerate(split_lines(train, a.shards)):
        jobs.append((train, s, e, os.path.join(out, "corpus", f"train-{i:02d}.jsonl.xz"), a.level))
    held = os.path.join(cin, "heldout.jsonl")
    jobs.append((held, 0, os.path.getsize(held), os.path.join(out, "corpus", "heldout.jsonl.xz"),
                 a.level))
    repo = os.path.join(cin, "repo.jsonl")  # optional: corpus.py --repo-records
    if os.path.exists(repo):
        jobs.append((repo, 0, os.path.getsize(repo), os.path.join(out, "corpus", "repo.jsonl.xz"),
                     a.level))
    t0 = time.time()
    same_dir = a.reuse and os.path.realpath(a.reuse) == os.path.realpath(out)
    old = (reusable(a.reuse, man["corpus_sha256"], len(jobs), a.level)
           if a.reuse and not same_dir else None)
    if old:
        # The same corpus packed before: its shards are copied, not
        # compressed again (~25 minutes on this machine's 2 busy cores).
        done = []
        for j, sh in zip(jobs, old["shards"]):
            shutil.copyfile(os.path.join(a.reuse, sh["file"]), j[3])
            done.append((j[3], sh["raw_bytes"], sh["xz_bytes"]))
        log(f"reused the shards of {a.reuse} (same corpus {man['corpus_sha256'][:16]})")
    else:
        from multiprocessing import Pool
        with Pool(a.jobs) as pool:
            done = pool.map(_xz, jobs)
    raw = sum(d[1] for d in done)
    packed = sum(d[2] for d in done)
    log(f"compressed {raw / 1e6:.1f} MB of JSON Lines to {packed / 1e6:.1f} MB "
        f"({raw / max(packed, 1):.1f}x) in {time.time() - t0:.0f}s")
    info = dict(corpus_sha256=man["corpus_sha256"], xz_level=a.level,
                bytes_per_lang=man.get("bytes_per_lang"),
                counts=man.get("counts"), tokenizer_sha256=sha256_file(tok),
                shards=[dict(file=os.path.relpath(d[0], out), raw_bytes=d[1], xz_bytes=d[2])
                        for d in done])
    if a.sculpt:
        # The streams as sculpt makes them here: the device's must match.
        info["expect"] = {}
        tmp = os.path.join(out, ".check")
        os.makedirs(tmp, exist_ok=True)
        for split in splits_of(cin):
            npy = os.path.join(tmp, split + ".npy")
            ok, err = tokcache.sculpt(a.sculpt, tok, [os.path.join(cin, f"{split}.jsonl")], npy,
                                      log=log)
            if not ok:
                sys.exit(f"carry.py pack: sculpt tokenize failed: {err.strip()}")
            n, digest = stream_digest(npy)
            info["expect"][split] = dict(tokens=n, sha256=digest)
            log(f"{split}: {n} tokens")
        shutil.rmtree(tmp)
    with open(os.path.join(out, "carry.json"), "w") as f:
        json.dump(info, f, indent=1)
    return 0


def repo_bytes(repo):
    """The bytes of the repository's files that git does not ignore: what
    the device tool sends besides the carried paths."""
    import subprocess
    names = subprocess.run(["git", "-C", repo, "ls-files", "-z", "-co", "--exclude-standard"],
                           capture_output=True, check=True).stdout.decode().split("\0")
    paths = [os.path.join(repo, n) for n in names if n]
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p) and not os.path.islink(p))


def size(a):
    tree = repo_bytes(a.repo)
    sizes = {}
    for dp, _, fns in os.walk(a.carry):
        for f in fns:
            rel = os.path.relpath(os.path.join(dp, f), a.carry)
            key = "corpus/*.jsonl.xz (the corpus)" if rel.endswith(".jsonl.xz") else rel
            sizes[key] = sizes.get(key, 0) + os.path.getsize(os.path.join(dp, f))
    with open(os.path.join(a.carry, "carry.json")) as f:
        info = json.load(f)
    raw = sum(x["raw_bytes"] for x in info["shards"])
    xz = sum(x["xz_bytes"] for x in info["shards"])
    total = tree + sum(sizes.values())
    print("what travels to the GPU machine:")
    print(f"  {'the repository (git ls-files -co --exclude-standard)':55s} {tree / 1e6:7.2f} MB")
    for k in sorted(sizes, key=lambda k: -sizes[k]):
        extra = (f"  {raw / 1e6:.0f} MB of JSON Lines, {raw / max(xz, 1):.1f}x"
                 if "corpus)" in k else "")
        print(f"  {os.path.basename(a.carry) + '/' + k:55s} {sizes[k] / 1e6:7.2f} MB{extra}")
    src = sum((info.get("bytes_per_lang") or {}).values())
    langs = ", ".join(f"{k} {v / 1e6:.0f}" for k, v in sorted((info.get("bytes_per_lang") or {}).items()))
    print(f"  {'total':55s} {total / 1e6:7.2f} MB of {a.limit / 1e6:.2f} MB "
          f"({100 * total / a.limit:.1f}%)")
    print(f"corpus: {src / 1e6:.1f} MB of source ({langs}); "
          f"{info.get('expect', {}).get('train', {}).get('tokens', '?')} training tokens")
    if a.record:
        # Source bytes as the caps count them (corpus.py's per-language
        # bytes) and what the repository records add to them, so that
        # `budget` can scale the corpus to other caps.
        repo_rec = [x for x in info["shards"] if x["file"].endswith("repo.jsonl.xz")]
        rec = {"measured": time.strftime("%Y-%m-%d", time.gmtime()),
               "corpus_source_bytes": src,
               "corpus_xz_bytes": xz - sum(x["xz_bytes"] for x in repo_rec),
               "repo_records_raw_bytes": sum(x["raw_bytes"] for x in repo_rec),
               "repo_records_xz_bytes": sum(x["xz_bytes"] for x in repo_rec),
               "repo_records": repo_count(a.carry),
               "items": {k: v for k, v in sorted(sizes.items())
                         if k != "corpus/*.jsonl.xz (the corpus)"},
               "repository_bytes": tree}
        with open(a.record, "w") as f:
            json.dump(rec, f, indent=1)
            f.write("\n")
    if total > a.limit:
        print(f"carry.py size: {total} bytes would travel, over the {a.limit} limit", file=sys.stderr)
        return 1
    return 0


def repo_count(carry):
    """How many repository records the carry's corpus has (its manifest's)."""
    try:
        with open(os.path.join(carry, "corpus", "manifest.json")) as f:
            return int((json.load(f).get("repo") or {}).get("records", 0))
    except (OSError, ValueError):
        return 0


def parse_caps(text):
    """{"python": 80.0, ...} from corpus.py's --max-mb values, "LANG=MB ...". """
    caps = {}
    for item in text.split():
        lang, _, mb = item.partition("=")
        try:
            caps[lang] = float(mb)
        except ValueError:
            sys.exit(f"carry.py budget: --caps: {item!r} is not LANG=MB")
    return caps


def budget(a):
    with open(a.record) as f:
        rec = json.load(f)
    caps_mb = sum(parse_caps(a.caps).values())
    # The corpus's xz scales with its source (every language's pool is
    # larger than its cap, so the caps are what it holds), the repository
    # records' with theirs.
    per_byte = rec["corpus_xz_bytes"] / max(rec["corpus_source_bytes"], 1)
    records = rec["repo_records_xz_bytes"]
    if a.repo_records is not None and rec.get("repo_records"):
        records *= a.repo_records / rec["repo_records"]
    corpus = per_byte * caps_mb * 1e6 + records
    tree = repo_bytes(a.repo)
    rest = sum(rec["items"].values())
    total = tree + corpus + rest
    print(f"the next GPU carry, estimated from the one measured {rec['measured']}:")
    print(f"  the repository now {tree / 1e6:.2f} MB (then {rec['repository_bytes'] / 1e6:.2f}), "
          f"the corpus at these caps ({caps_mb:.0f} MB of source) {corpus / 1e6:.2f} MB, "
          f"the rest {rest / 1e6:.2f} MB")
    print(f"  total {total / 1e6:.2f} MB of {a.limit / 1e6:.2f} MB ({100 * total / a.limit:.1f}%)")
    if total > a.limit - a.margin:
        over = total - (a.limit - a.margin)
        print(f"carry.py budget: {over / 1e6:.2f} MB too many to keep {a.margin / 1e6:.1f} MB free "
              f"under the limit: lower CORPUS_CAPS in tools/gpu_session.sh by about "
              f"{over / per_byte / 1e6:.0f} MB of source, or make the repository smaller",
              file=sys.stderr)
        return 1
    return 0


def _unxz(job):
    src, dst = job
    with lzma.open(src, "rb") as i, open(dst, "wb") as o:
        shutil.copyfileobj(i, o, 1 << 20)
    return dst


def unpack(a):
    t0 = time.time()
    src = os.path.join(a.carry, "corpus")
    with open(os.path.join(a.carry, "carry.json")) as f:
        info = json.load(f)
    dest_c = os.path.join(a.dest, "corpus")
    work = os.path.join(a.dest, "jsonl")
    os.makedirs(dest_c, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    shutil.copyfile(os.path.join(src, "manifest.json"), os.path.join(dest_c, "manifest.json"))
    tok = os.path.join(a.dest, "tokenizer.json")
    _unxz((os.path.join(a.carry, "tokenizer.json.xz"), tok))
    if sha256_file(tok) != info["tokenizer_sha256"]:
        sys.exit("carry.py unpack: tokenizer.json is not the one packed")
    shards = sorted(f for f in os.listdir(src) if f.startswith("train-") and f.endswith(".xz"))
    has_repo = any(sh["file"].endswith("repo.jsonl.xz") for sh in info["shards"])
    if len(shards) != len(info["shards"]) - 1 - has_repo:
        sys.exit(f"carry.py unpack: {len(shards)} train shards, carry.json lists "
                 f"{len(info['shards']) - 1 - has_repo}")
    jobs = [(os.path.join(src, f), os.path.join(work, f[:-3])) for f in shards]
    # The held-out and repo splits stay as JSON Lines beside the manifest
    # (evaluate.py reads the first, train.py the second's prompt lengths).
    extra = [(os.path.join(src, f"{k}.jsonl.xz"), os.path.join(dest_c, f"{k}.jsonl"))
             for k in (("heldout", "repo") if has_repo else ("heldout",))]
    # lzma releases the GIL while it decompresses: threads run in parallel.
    with ThreadPoolExecutor(max_workers=min(len(jobs) + len(extra), os.cpu_count() or 1)) as ex:
        list(ex.map(_unxz, jobs + extra))
    log(f"decompressed {len(jobs) + len(extra)} files in {time.time() - t0:.1f}s")
    parts = {"train": [j[1] for j in jobs]}
    parts.update({os.path.basename(d)[:-6]: [d] for _, d in extra})
    cache = os.path.join(a.dest, "cache")
    os.makedirs(cache, exist_ok=True)
    status = 0
    for split in SPLITS + (("repo",) if has_repo else ()):
        npy = os.path.join(cache, tokcache.cache_name(dest_c, split, tok))
        t1 = time.time()
        ok = False
        if a.sculpt:
            ok, err = tokcache.sculpt(a.sculpt, tok, parts[split], npy, a.threads, log=log)
            if not ok:
                log(f"sculpt tokenize failed ({err.strip()[-300:]}); bpe.py in a process pool")
        if not ok:
            tokcache.python_pool(tok, parts[split], npy, a.threads, log=log)
        n, digest = stream_digest(npy)
        want = info.get("expect", {}).get(split)
        same = want is None or (want["tokens"] == n and want["sha256"] == digest)
        log(f"{split}: {n} tokens in {time.time() - t1:.1f}s"
            + ("" if want is None else " (as packed)" if same else
               f" MISMATCH: packed {want['tokens']} tokens, sha {want['sha256'][:12]}"
               f" vs {digest[:12]}"))
        if not same:
            status = 1
    shutil.rmtree(work)
    log(f"unpacked into {a.dest} in {time.time() - t0:.1f}s")
    return status


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("input")
    p.add_argument("carry")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--level", type=int, default=9, help="xz preset (0-9)")
    p.add_argument("--jobs", type=int, default=2, help="processes compressing")
    p.add_argument("--sculpt", help="record the token streams sculpt makes here")
    p.add_argument("--reuse", help="an earlier carry: its shards are copied when they hold "
                                   "this corpus")
    u = sub.add_parser("unpack")
    u.add_argument("carry")
    u.add_argument("dest")
    u.add_argument("--sculpt", help="the sculpt binary to tokenize with")
    u.add_argument("--threads", type=int, default=0)
    z = sub.add_parser("size")
    z.add_argument("carry")
    z.add_argument("--repo", default=os.path.dirname(os.path.dirname(HERE)))
    z.add_argument("--limit", type=int, default=64 * 1024 * 1024)
    z.add_argument("--record", help="write what the carry measured here, for `budget`")
    b = sub.add_parser("budget")
    b.add_argument("--record", required=True)
    b.add_argument("--caps", required=True, help='corpus.py\'s caps, "LANG=MB ..."')
    b.add_argument("--repo-records", type=int,
                   help="corpus.py's --repo-records (default: as many as recorded)")
    b.add_argument("--repo", default=os.path.dirname(os.path.dirname(HERE)))
    b.add_argument("--limit", type=int, default=64 * 1024 * 1024)
    b.add_argument("--margin", type=int, default=1000000)
    a = ap.parse_args(argv)
    return {"pack": pack, "unpack": unpack, "size": size, "budget": budget}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
