"""Only regular files are opened as checkpoint parts.

Each file a checkpoint load opens (config.json, tokenizer.json,
tokenizer_config.json, special_tokens_map.json, generation_config.json,
vocab.json and merges.txt, model.safetensors, model.safetensors.index.json
and a shard) is replaced in turn by a FIFO, a directory, a symlink to a
FIFO and a device node (a symlink to /dev/zero, and a character device of
our own where mknod is allowed). `sculpt model info` and `sculpt complete`
must then fail at once with a message naming the file, never block (a
FIFO's open waits for a writer forever) or read without end (/dev/zero).
A clean copy of each checkpoint is checked to load first."""
import os
import shutil
import subprocess
import sys

from common import run, sculpt_bin, tempdir, tiny_checkpoints

failures = []
TIMEOUT = 60  # a hang is the failure this test is about; far above a load


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run_bounded(*args):
    try:
        return subprocess.run([sculpt_bin(), *args], capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None


def make_fifo(path, tmp):
    os.mkfifo(path)


def make_dir(path, tmp):
    os.mkdir(path)


def make_link_to_fifo(path, tmp):
    target = os.path.join(tmp, "fifo-%d" % len(os.listdir(tmp)))
    os.mkfifo(target)
    os.symlink(target, path)


def make_link_to_dev_zero(path, tmp):
    os.symlink("/dev/zero", path)


def make_char_device(path, tmp):
    os.mknod(path, 0o600 | 0o020000, os.makedev(1, 5))  # S_IFCHR, /dev/zero's numbers


KINDS = [("FIFO", make_fifo), ("directory", make_dir), ("symlink to a FIFO", make_link_to_fifo),
         ("symlink to /dev/zero", make_link_to_dev_zero)]
try:
    with tempdir() as t:
        make_char_device(os.path.join(t, "dev"), t)
    KINDS.append(("character device", make_char_device))
except (PermissionError, OSError) as e:
    print("no character device case here (mknod: %s)" % e)


def attempt(model, src, part, kind, commands):
    for cmd in commands:
        args = (["model", "info", "--model", model] if cmd == "info" else
                ["complete", src + ":1:6", "--model", model, "--max-tokens", "4"])
        r = run_bounded(*args)
        what = "%s as a %s: sculpt %s" % (part, kind, " ".join(args[:2]))
        if r is None:
            check(False, what + " returns (it hung for %d s)" % TIMEOUT)
            continue
        check(r.returncode != 0 and part in r.stderr and "not a regular file" in r.stderr,
              what + " fails naming the file (%d: %s)" % (r.returncode,
                                                       r.stderr.strip()[-200:]))


with tempdir() as tmp:
    src = os.path.join(tmp, "f.py")
    with open(src, "w") as f:
        f.write("x = 1\n")
    scratch = os.path.join(tmp, "scratch")
    os.mkdir(scratch)
    base = {}
    for name in ("dream-bf16", "coda-f32-sharded"):
        base[name] = tiny_checkpoints.generate(name, tiny_checkpoints.SPECS[name],
                                               os.path.join(tmp, "base"))
        r = run("model", "info", "--model", base[name])
        check(r.returncode == 0, "%s loads as generated (%s)" % (name, r.stderr.strip()))
    shard = "model-00001-of-00003.safetensors"
    # (checkpoint, part, commands that open it, prepare(dir) for a variant)
    both = ("info", "complete")
    parts = [("dream-bf16", "config.json", both, None),
             ("dream-bf16", "tokenizer.json", both, None),
             ("dream-bf16", "tokenizer_config.json", both, None),
             ("dream-bf16", "special_tokens_map.json", both, None),
             ("dream-bf16", "generation_config.json", both, None),
             ("dream-bf16", "model.safetensors", both, None),
             ("coda-f32-sharded", "model.safetensors.index.json", both, None),
             ("coda-f32-sharded", shard, both, None)]

    # The slow tokenizer form: vocab.json + merges.txt instead of
    # tokenizer.json (only the tokenizer reads them: `complete`).
    def slow_form(d):
        os.remove(os.path.join(d, "tokenizer.json"))
        with open(os.path.join(d, "vocab.json"), "w") as f:
            f.write('{"a": 0, "b": 1}')
        with open(os.path.join(d, "merges.txt"), "w") as f:
            f.write("#version: 0.2\n")
    parts += [("dream-bf16", "vocab.json", ("complete",), slow_form),
              ("dream-bf16", "merges.txt", ("complete",), slow_form)]

    n = 0
    for ckpt, part, commands, prepare in parts:
        for kind, make in KINDS:
            n += 1
            d = os.path.join(tmp, "case-%d" % n)
            shutil.copytree(base[ckpt], d)
            if prepare:
                prepare(d)
            p = os.path.join(d, part)
            if os.path.exists(p):
                os.remove(p)
            make(p, scratch)
            attempt(d, src, part, kind, commands)
            shutil.rmtree(d, ignore_errors=True)

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
