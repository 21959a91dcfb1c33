"""`sculpt model pull` against a test hub (hubserver.py: the real API's
shapes and headers, the redirect to a storage host), and the shared cache
it fills (huggingface_hub's layout): a pull and a pull that downloads
nothing; a transfer cut and resumed, within the pull and by the next one; a
wrong sha256 refused; two pulls at once; 401 (private, gated) and 404 (no
model, no revision); a full disk (a small tmpfs, when a mount namespace can
be made); a snapshot built by hand in huggingface_hub's layout, read without
the network; `sculpt model list`. After every failure the cache holds no
half-written blob, no link to a missing blob and no ref to an unfinished
snapshot."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import check, failures  # noqa: E402
import hubserver  # noqa: E402

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
ID = "acme/planted"
ALPHABET = "defghijklmnopqrstuvwxyz"

TMP = tempfile.mkdtemp(prefix="sculpt-pull-")
subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), TMP],
               check=True, capture_output=True)
FILES = hubserver.planted_repo_files(os.path.join(TMP, "planted-successor-shifted-bytes"))
WANTED = ("config.json", "model.safetensors", "tokenizer.json")
SAFETENSORS_SHA = hashlib.sha256(FILES["model.safetensors"]).hexdigest()
SAMPLE = os.path.join(TMP, "sample.py")
with open(SAMPLE, "w") as f:
    f.write("x = 'abc'\n")


def make_hub():
    return hubserver.Hub({
        ID: hubserver.Repo(FILES),
        "acme/private": hubserver.Repo(FILES, private=True),
        "acme/gated": hubserver.Repo(FILES, gated=True),
    })


def env_for(home, hub=None, **extra):
    e = dict(os.environ)
    for k in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
              "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN_PATH", "SCULPT_MODEL",
              "XDG_CACHE_HOME"):
        e.pop(k, None)
    e["HF_HOME"] = home
    # Nothing leaves the machine: a hub that is not the test's is unreachable.
    e["HF_ENDPOINT"] = hub.endpoint if hub else "http://127.0.0.1:9"
    e["no_proxy"] = e["NO_PROXY"] = "*"
    e.update(extra)
    return e


def run(args, env, timeout=30):
    p = subprocess.run([BIN, *args], capture_output=True, timeout=timeout, env=env)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def repo_dir(home, repo_id=ID):
    org, name = repo_id.split("/")
    return os.path.join(home, "hub", "models--%s--%s" % (org, name))


def cache_problems(home, repo_id=ID):
    """What would make the cache wrong: a blob whose name is not its hash,
    a link to a missing blob, a ref to a missing snapshot."""
    out = []
    root = repo_dir(home, repo_id)
    blobs = os.path.join(root, "blobs")
    for b in os.listdir(blobs) if os.path.isdir(blobs) else []:
        if b.endswith(".incomplete"):
            continue
        data = open(os.path.join(blobs, b), "rb").read()
        if b not in (hashlib.sha256(data).hexdigest(), hubserver.git_blob_id(data)):
            out.append("blob %s is not its content's hash" % b)
    snaps = os.path.join(root, "snapshots")
    for c in os.listdir(snaps) if os.path.isdir(snaps) else []:
        for f in os.listdir(os.path.join(snaps, c)):
            p = os.path.join(snaps, c, f)
            if not os.path.islink(p) or not os.path.exists(p):
                out.append("snapshot file %s/%s is not a link to a blob" % (c, f))
            elif os.readlink(p).startswith("/"):
                out.append("snapshot link %s is absolute" % p)
            if f.endswith(".tmp"):
                out.append("a temporary link is left: %s" % p)
    refs = os.path.join(root, "refs")
    for r in os.listdir(refs) if os.path.isdir(refs) else []:
        commit = open(os.path.join(refs, r)).read()
        if not os.path.isdir(os.path.join(snaps, commit)):
            out.append("ref %s names a snapshot that is not there" % r)
    return out


def left_behind(home, repo_id=ID):
    """Files in the repository's folder (no folders, no lock files)."""
    out = []
    for d, _, fs in os.walk(repo_dir(home, repo_id)):
        out += [os.path.relpath(os.path.join(d, f), repo_dir(home, repo_id)) for f in fs]
    return out


def fresh_home():
    return tempfile.mkdtemp(prefix="hf-home-", dir=TMP)


# ---- a pull, then a pull that downloads nothing ----------------------------------------

hub = make_hub()
home = fresh_home()
env = env_for(home, hub, HF_TOKEN=hub.token)
rc, out, err = run(["model", "pull", ID], env)
check(rc == 0, "pull: exit 0 (%d: %s)" % (rc, err))
repo = hub.repos[ID]
root = repo_dir(home)
snap = os.path.join(root, "snapshots", repo.commit)
check(open(os.path.join(root, "refs", "main")).read() == repo.commit,
      "refs/main holds the commit, nothing else")
check(sorted(os.listdir(snap)) == sorted(WANTED),
      "the snapshot has what sculpt loads, no README or GGUF: %s" % sorted(os.listdir(snap)))
for name in WANTED:
    link = os.path.join(snap, name)
    sib = repo.sibling(name)
    etag = sib["lfs"]["sha256"] if "lfs" in sib else sib["blobId"]
    check(os.readlink(link) == "../../blobs/" + etag,
          "%s -> ../../blobs/ETAG (relative, named as huggingface_hub names it)" % name)
    check(open(link, "rb").read() == FILES[name], "%s: the bytes served" % name)
check(os.path.exists(os.path.join(home, "hub", ".locks", "models--acme--planted",
                                  SAFETENSORS_SHA + ".lock")),
      "the blob's lock where huggingface_hub keeps it")
check(cache_problems(home) == [], "a consistent cache: %s" % cache_problems(home))
check(snap in out and "--model " + ID in out, "the pull says where and how to use it: " + out)
cdn = hub.requests("cdn")
check(len(cdn) == 1 and cdn[0][3] is None, "the safetensors came from the storage host, whole")
check(all(r[4] is None for r in cdn), "the token never reached the storage host")
check(all(r[4] == "Bearer " + hub.token for r in hub.requests("hub")),
      "the token went to the hub with every request")
check(not hub.requests("hub", "README") and not hub.requests("hub", ".gguf"),
      "the README and the GGUF were not asked for")

hub.clear_log()
rc, out, err = run(["model", "pull", ID, "--json"], env)
j = json.loads(out) if rc == 0 else {}
check(rc == 0 and j.get("downloaded") == 0 and j.get("transferred") == 0 and
      j.get("commit") == repo.commit and j.get("dir") == snap,
      "a second pull downloads nothing: %s %s" % (out, err))
check([r[2] for r in hub.requests()] == ["/api/models/%s/revision/main" % ID],
      "a second pull asks only for the listing: %s" % hub.requests())

# The id works where a folder does, offline: complete reads the snapshot.
rc, out, err = run(["complete", SAMPLE + ":1:9", "--model", ID],
                   env_for(home, None))
check(rc == 0 and out.startswith(ALPHABET), "complete --model %s: %r %s" % (ID, out, err))
rc, out, err = run(["complete", SAMPLE + ":1:9"], env_for(home, None, SCULPT_MODEL=ID))
check(rc == 0 and out.startswith(ALPHABET), "SCULPT_MODEL=%s: %r %s" % (ID, out, err))
rc, out, err = run(["complete", SAMPLE + ":1:9", "--model", "acme/absent"], env_for(home))
check(rc == 1 and len(err.strip().splitlines()) == 1 and
      "sculpt model pull acme/absent" in err, "a missing id names the pull command: " + err)

# sculpt model list shows it: family, profile, size, and that it fits.
rc, out, err = run(["model", "list", "--json"], env_for(home))
lst = json.loads(out) if rc == 0 else []
check(len(lst) == 1 and lst[0]["id"] == ID and lst[0]["refs"] == "main" and
      lst[0]["family"] and lst[0]["profile"] and lst[0]["fits"] is True and
      lst[0]["bytes"] == sum(len(FILES[n]) for n in WANTED),
      "model list: %s %s" % (out, err))
rc, out, err = run(["model", "list"], env_for(home))
check(rc == 0 and ID in out and "main" in out, "model list (text): " + out)

# HF_HUB_OFFLINE: the cache answers, the hub is not asked.
hub.clear_log()
rc, out, err = run(["model", "pull", ID], env_for(home, hub, HF_HUB_OFFLINE="1"))
check(rc == 0 and "HF_HUB_OFFLINE" in out and hub.requests() == [],
      "HF_HUB_OFFLINE: from the cache, no request: %s %s" % (out, err))
rc, out, err = run(["model", "pull", "acme/absent"], env_for(home, hub, HF_HUB_OFFLINE="1"))
check(rc == 1 and "HF_HUB_OFFLINE" in err and hub.requests() == [],
      "HF_HUB_OFFLINE and not cached: one line, no request: " + err)

# --include picks a GGUF alone (it carries its own config and tokenizer).
h2 = fresh_home()
rc, out, err = run(["model", "pull", ID, "--include", "*.gguf"], env_for(h2, hub))
snap2 = os.path.join(repo_dir(h2), "snapshots", repo.commit)
check(rc == 0 and os.listdir(snap2) == ["planted.Q8_0.gguf"],
      "--include '*.gguf' takes the GGUF alone: %s" % (os.listdir(snap2) if rc == 0 else err))
rc, out, err = run(["model", "pull", ID, "--include", "*.onnx"], env_for(fresh_home(), hub))
check(rc == 2 and "no file matches" in err, "--include matching nothing: " + err)

# ---- a transfer cut in the middle ----------------------------------------------------

# Cut once: the pull resumes it itself, from where it stopped.
home = fresh_home()
hub.clear_log()
hub.faults[SAFETENSORS_SHA] = {"cut": 1}
rc, out, err = run(["model", "pull", ID], env_for(home, hub))
ranges = [r[3] for r in hub.requests("cdn")]
half = len(FILES["model.safetensors"]) // 2
check(rc == 0 and ranges == [None, "bytes=%d-" % half],
      "a cut transfer resumes with Range from the cut: %s %s" % (ranges, err))
check(cache_problems(home) == [] and not [f for f in left_behind(home) if "incomplete" in f],
      "resumed: a whole, checked blob")

# Cut every time: the pull gives up with one line and keeps the partial
# blob; the next pull resumes it.
home = fresh_home()
hub.clear_log()
hub.faults[SAFETENSORS_SHA] = {"cut": 3}
rc, out, err = run(["model", "pull", ID], env_for(home, hub))
inc = os.path.join(repo_dir(home), "blobs", SAFETENSORS_SHA + ".incomplete")
errors = [l for l in err.splitlines() if l.startswith("sculpt model:")]
check(rc == 1 and len(errors) == 1 and "interrupted" in errors[0] and "resume" in errors[0],
      "an interrupted pull says so in one line (after its own retries): " + err)
partial = os.path.getsize(inc) if os.path.exists(inc) else 0
check(partial > 0, "the partial blob is kept as .incomplete")
check(not os.path.exists(os.path.join(repo_dir(home), "blobs", SAFETENSORS_SHA)) and
      not os.path.exists(os.path.join(repo_dir(home), "refs")) and
      not os.path.exists(os.path.join(repo_dir(home), "snapshots")),
      "no blob, no snapshot and no ref after an interrupted pull: %s" % left_behind(home))
hub.clear_log()
hub.faults.clear()
rc, out, err = run(["model", "pull", ID], env_for(home, hub))
ranges = [r[3] for r in hub.requests("cdn")]
check(rc == 0 and ranges == ["bytes=%d-" % partial],
      "the next pull resumes at the partial blob's end: %s %s" % (ranges, err))
check(cache_problems(home) == [] and not os.path.exists(inc), "resumed by the next pull: whole")

# ---- a blob whose sha256 is wrong ---------------------------------------------------------

home = fresh_home()
hub.faults[SAFETENSORS_SHA] = {"corrupt": True}
rc, out, err = run(["model", "pull", ID], env_for(home, hub))
check(rc == 1 and "does not match its sha256" in err and len(err.strip().splitlines()) == 1,
      "a wrong sha256 is refused in one line: " + err)
check([f for f in left_behind(home) if "blobs/" + SAFETENSORS_SHA in f] == [] and
      not os.path.exists(os.path.join(repo_dir(home), "snapshots")) and
      not os.path.exists(os.path.join(repo_dir(home), "refs")),
      "nothing of the wrong blob is kept: %s" % left_behind(home))
hub.faults.clear()

# ---- two pulls at once -----------------------------------------------------------------

home = fresh_home()
hub.clear_log()
hub.faults[SAFETENSORS_SHA] = {"slow": 0.02}  # ~2 s for the blob: the pulls overlap
procs = [subprocess.Popen([BIN, "model", "pull", ID], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env_for(home, hub)) for _ in range(2)]
results = [(p.wait(60), p.stderr.read().decode()) for p in procs]
hub.faults.clear()
check(all(rc == 0 for rc, _ in results), "two pulls at once both succeed: %s" % results)
gets = [r for r in hub.requests("cdn") if SAFETENSORS_SHA in r[2]]
check(len(gets) == 1, "the blob was transferred once, the other pull waited on its lock: %d" %
      len(gets))
check(cache_problems(home) == [] and sorted(os.listdir(os.path.join(
    repo_dir(home), "snapshots", repo.commit))) == sorted(WANTED), "two pulls: one good cache")

# ---- 401 and 404 -------------------------------------------------------------------------

for repo_id, token, code, words in (
        ("acme/private", None, 401, ["no access (HTTP 401", "HF_TOKEN"]),
        ("acme/gated", None, 401, ["gated (HTTP 401", hub.endpoint + "/acme/gated", "HF_TOKEN"]),
        ("acme/nothing", hub.token, 404, ["no such model", "HTTP 404"]),
        (ID + "@v9", None, 404, ["no revision 'v9'", "HTTP 404"])):
    home = fresh_home()
    extra = {"HF_TOKEN": token} if token else {}
    rc, out, err = run(["model", "pull", repo_id], env_for(home, hub, **extra))
    check(rc == 1 and len(err.strip().splitlines()) == 1 and all(w in err for w in words),
          "%s: one line naming the cause (%s): %s" % (repo_id, words, err))
    check(left_behind(home, repo_id.split("@")[0]) == [], "%s: nothing written: %s" %
          (repo_id, left_behind(home, repo_id.split("@")[0])))
# The token from the token file opens the private one.
home = fresh_home()
with open(os.path.join(home, "token"), "w") as f:
    f.write(hub.token + "\n")
rc, out, err = run(["model", "pull", "acme/private"], env_for(home, hub))
check(rc == 0, "HF_HOME/token is read: " + err)

# ---- a full disk ------------------------------------------------------------------------

NEED = sum(len(FILES[n]) for n in WANTED)
PAGE = 4096


def in_tmpfs(size, args, env):
    """Runs sculpt ARGS with HF_HOME on a tmpfs of size bytes, in a private
    mount namespace (unshare -rm: no trace on the machine's mounts)."""
    mnt = tempfile.mkdtemp(prefix="tmpfs-", dir=TMP)
    e = dict(env, HF_HOME=mnt)
    script = ('mount -t tmpfs -o size=%d tmpfs "$1" || exit 99; shift; "$@"; rc=$?; '
              'find "$HF_HOME" -type f -o -type l | sed "s|^$HF_HOME/||"; exit $rc') % size
    p = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", mnt, BIN, *args],
                       capture_output=True, timeout=60, env=e)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                        "mount -t tmpfs -o size=64k tmpfs /mnt"],
                       capture_output=True) if shutil.which("unshare") else None
if probe is None or probe.returncode != 0:
    print("SKIP the full-disk cases: no mount namespace with a tmpfs can be made here (%s)"
          % (probe.stderr.decode().strip() if probe else "no unshare"))
else:
    # Too small from the start: refused before the first byte.
    rc, out, err = in_tmpfs(NEED // 2 // PAGE * PAGE, ["model", "pull", ID], env_for("", hub))
    check(rc == 1 and "not enough disk space" in err and "nothing was written" in err,
          "a disk too small is refused before a byte: " + err)
    check(not [l for l in out.splitlines() if "models--" in l],
          "nothing written on the small disk: " + out)
    # Room for the bytes but not for the pages they take: the disk fills in
    # the middle of the pull (ENOSPC on a write).
    size = (NEED + PAGE - 1) // PAGE * PAGE
    pages = sum((len(FILES[n]) + PAGE - 1) // PAGE for n in WANTED) * PAGE
    check(pages > size, "the pages the files take pass the tmpfs's size")
    rc, out, err = in_tmpfs(size, ["model", "pull", ID], env_for("", hub))
    files = [l for l in out.splitlines() if "models--" in l]
    check(rc == 1 and "disk is full" in err and len(err.strip().splitlines()) == 1,
          "a disk that fills during the pull: one line: " + err)
    check(not [f for f in files if f.endswith(".incomplete") or "/snapshots/" in f or
               "/refs/" in f], "no partial blob, no snapshot, no ref on a full disk: %s" % files)

hub.close()

# ---- a snapshot made by huggingface_hub, read without downloading ---------------------

# The layout of file_download.py (hubserver.make_snapshot): blobs named by
# sha256 (LFS) or git blob id, relative links, refs/main, .locks, as
# `hf download` leaves it.
home = fresh_home()
commit = "0123456789abcdef0123456789abcdef01234567"
hubserver.make_snapshot(home, "someone/handmade", {n: FILES[n] for n in WANTED}, commit)
env = env_for(home, None)  # the hub is unreachable
rc, out, err = run(["complete", SAMPLE + ":1:9", "--model", "someone/handmade"], env)
check(rc == 0 and out.startswith(ALPHABET), "a hand-built snapshot completes: %r %s" % (out, err))
rc, out, err = run(["complete", SAMPLE + ":1:9", "--model", "someone/handmade@" + commit], env)
check(rc == 0 and out.startswith(ALPHABET), "@COMMIT resolves without a ref: %s" % err)
rc, out, err = run(["model", "pull", "someone/handmade"], env_for(home, None, HF_HUB_OFFLINE="1"))
check(rc == 0 and commit[:12] in out, "pull with HF_HUB_OFFLINE finds it: " + out + err)
# HF_HUB_CACHE wins over HF_HOME.
rc, out, err = run(["complete", SAMPLE + ":1:9", "--model", "someone/handmade"],
                   env_for(fresh_home(), None, HF_HUB_CACHE=os.path.join(home, "hub")))
check(rc == 0 and out.startswith(ALPHABET), "HF_HUB_CACHE names the cache: %s" % err)
# A folder that exists wins over an id of the same spelling.
os.makedirs(os.path.join(TMP, "someone"), exist_ok=True)
shutil.copytree(os.path.join(TMP, "planted-successor-shifted-bytes"),
                os.path.join(TMP, "someone", "handmade"))
p = subprocess.run([BIN, "complete", SAMPLE + ":1:9", "--model", "someone/handmade"], cwd=TMP,
                   capture_output=True, env=env_for(fresh_home(), None), timeout=30)
check(p.returncode == 0, "a relative folder someone/handmade is read as a folder: %s" %
      p.stderr.decode())

shutil.rmtree(TMP, ignore_errors=True)
if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("ok")
