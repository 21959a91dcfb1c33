"""hubserver.py — a Hugging Face hub for the tests: the two hosts a model
download meets, with the shapes and headers huggingface_hub reads
(src/huggingface_hub/ in huggingface/huggingface_hub):

- the hub ("localhost"): GET /api/models/{id}/revision/{rev}?blobs=true
  answers {"id", "sha", "siblings": [{"rfilename", "size", "blobId",
  "lfs": {"sha256", "size", "pointerSize"}}]} (hf_api.py model_info,
  RepoSibling, BlobLfsInfo); /{id}/resolve/{rev}/{file} serves a small file
  itself (ETag: the git blob id, X-Repo-Commit) and redirects an LFS file
  to the storage host with X-Linked-Etag (its sha256), X-Linked-Size and
  X-Repo-Commit (file_download.py get_hf_file_metadata); errors carry
  X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo)
  and X-Error-Message (utils/_http.py hf_raise_for_status), 401 for an
  unknown or private repository without a token (as the hub does);
- the storage host ("127.0.0.1", another port: another host to libcurl,
  which must not get the token): /blobs/{sha256}, with Range (206).

Faults a test sets on a blob (by its sha256): "cut" (the connection closes
after half the bytes, that many times), "corrupt" (one byte changed), "slow"
(seconds per 64 KiB). Every request is logged: (host, method, path, range,
authorization)."""

import hashlib
import json
import os
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")
CHUNK = 64 * 1024


def git_blob_id(data):
    """git's object id of a blob: sha1 of "blob SIZE\\0" + data."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, files, commit=None, private=False, gated=False, branches=("main",)):
        self.files = dict(files)  # path -> bytes
        self.commit = commit or hashlib.sha1(repr(sorted(self.files)).encode()).hexdigest()
        self.private = private
        self.gated = gated
        self.branches = set(branches)

    def lfs(self, path):
        return path.endswith(LFS_SUFFIXES)

    def sibling(self, path):
        data = self.files[path]
        s = {"rfilename": path, "size": len(data), "blobId": git_blob_id(data)}
        if self.lfs(path):
            pointer = ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
                       % (hashlib.sha256(data).hexdigest(), len(data))).encode()
            s["blobId"] = git_blob_id(pointer)
            s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                        "pointerSize": len(pointer)}
        return s


class Hub:
    def __init__(self, repos, token="hf_testtoken"):
        self.repos = dict(repos)  # "org/name" -> Repo
        self.token = token
        self.faults = {}  # sha256 -> {"cut": n, "corrupt": bool, "slow": s}
        self.log = []
        self.lock = threading.Lock()
        self.blobs = {}
        for r in self.repos.values():
            for p, d in r.files.items():
                self.blobs[hashlib.sha256(d).hexdigest()] = d
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                hub._handle(self, self.server.role)

            def do_HEAD(self):
                hub._handle(self, self.server.role, head=True)

        self.hub_srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.hub_srv.role = "hub"
        self.cdn_srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.cdn_srv.role = "cdn"
        for srv in (self.hub_srv, self.cdn_srv):
            srv.daemon_threads = True
            threading.Thread(target=srv.serve_forever, daemon=True).start()
        # Two names, so that libcurl sees two hosts.
        self.endpoint = "http://localhost:%d" % self.hub_srv.server_address[1]
        self.cdn = "http://127.0.0.1:%d" % self.cdn_srv.server_address[1]

    def close(self):
        for srv in (self.hub_srv, self.cdn_srv):
            srv.shutdown()
            srv.server_close()

    def requests(self, role=None, path_part=None):
        with self.lock:
            return [r for r in self.log if (role is None or r[0] == role) and
                    (path_part is None or path_part in r[2])]

    def clear_log(self):
        with self.lock:
            self.log.clear()

    # ---- answers ---------------------------------------------------------------

    def _send(self, h, code, body=b"", headers=None, head=False):
        h.send_response(code)
        hdrs = dict(headers or {})
        hdrs.setdefault("Content-Length", str(len(body)))
        for k, v in hdrs.items():
            h.send_header(k, v)
        h.end_headers()
        if not head and body:
            h.wfile.write(body)

    def _error(self, h, code, error_code, message, head=False):
        body = json.dumps({"error": message}).encode()
        hdrs = {"Content-Type": "application/json", "X-Error-Message": message}
        if error_code:
            hdrs["X-Error-Code"] = error_code
        self._send(h, code, body, hdrs, head)

    def _authorized(self, h):
        return h.headers.get("Authorization") == "Bearer " + self.token

    def _repo(self, h, repo_id, head):
        """The repository, or None after answering why not."""
        r = self.repos.get(repo_id)
        if r is None or (r.private and not self._authorized(h)):
            # Unknown, or private to an anonymous caller: 401 without a
            # token, 404 with one (the hub's behaviour, utils/_http.py).
            if h.headers.get("Authorization"):
                self._error(h, 404, "RepoNotFound", "Repository not found", head)
            else:
                self._error(h, 401, "RepoNotFound",
                            "Repository not found", head)
            return None
        return r

    def _handle(self, h, role, head=False):
        url = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(url.path)
        with self.lock:
            self.log.append((role, h.command, path, h.headers.get("Range"),
                             h.headers.get("Authorization")))
        if role == "cdn":
            return self._blob(h, path, head)
        parts = path.strip("/").split("/")
        if len(parts) >= 6 and parts[0] == "api" and parts[1] == "models" and \
                parts[4] == "revision":
            repo_id = parts[2] + "/" + parts[3]
            rev = "/".join(parts[5:])
            r = self._repo(h, repo_id, head)
            if r is None:
                return
            if rev not in r.branches and rev != r.commit:
                return self._error(h, 404, "RevisionNotFound", "Invalid rev id: " + rev, head)
            blobs = "blobs=true" in (url.query or "")
            sib = [r.sibling(p) if blobs else {"rfilename": p} for p in sorted(r.files)]
            body = json.dumps({"_id": "x", "id": repo_id, "modelId": repo_id, "sha": r.commit,
                               "private": r.private, "gated": "manual" if r.gated else False,
                               "siblings": sib}).encode()
            return self._send(h, 200, body, {"Content-Type": "application/json"}, head)
        if len(parts) >= 5 and parts[2] == "resolve":
            repo_id = parts[0] + "/" + parts[1]
            rev, fname = parts[3], "/".join(parts[4:])
            r = self._repo(h, repo_id, head)
            if r is None:
                return
            if r.gated and not self._authorized(h):
                return self._error(h, 401, "GatedRepo",
                                   "Access to model %s is restricted. You must have access to it "
                                   "and be authenticated to access it. Please log in." % repo_id,
                                   head)
            if rev not in r.branches and rev != r.commit:
                return self._error(h, 404, "RevisionNotFound", "Invalid rev id: " + rev, head)
            if fname not in r.files:
                return self._error(h, 404, "EntryNotFound", "Entry not found", head)
            data = r.files[fname]
            common = {"X-Repo-Commit": r.commit, "Accept-Ranges": "bytes"}
            if r.lfs(fname):
                sha = hashlib.sha256(data).hexdigest()
                sib = r.sibling(fname)
                hdrs = dict(common)
                hdrs.update({"Location": "%s/blobs/%s?expires=1" % (self.cdn, sha),
                             "X-Linked-Etag": '"%s"' % sha, "X-Linked-Size": str(len(data)),
                             "ETag": '"%s"' % sib["blobId"]})
                return self._send(h, 302, b"", hdrs, head)
            hdrs = dict(common)
            hdrs["ETag"] = '"%s"' % git_blob_id(data)
            return self._ranged(h, data, hdrs, head, None)
        return self._error(h, 404, None, "Not found", head)

    def _blob(self, h, path, head):
        sha = path.rsplit("/", 1)[-1]
        data = self.blobs.get(sha)
        if data is None:
            return self._error(h, 404, None, "NoSuchKey", head)
        return self._ranged(h, data, {"ETag": '"%s"' % hashlib.md5(data).hexdigest()}, head,
                            sha)

    def _ranged(self, h, data, hdrs, head, sha):
        fault = self.faults.get(sha, {}) if sha else {}
        start = 0
        rng = h.headers.get("Range")
        code = 200
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            if start >= len(data):
                return self._send(h, 416, b"", {"Content-Range": "bytes */%d" % len(data)}, head)
            code = 206
            hdrs["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        body = data[start:]
        if fault.get("corrupt") and body:
            body = bytes([body[0] ^ 0xFF]) + body[1:]
        h.send_response(code)
        for k, v in hdrs.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if head:
            return
        cut = None
        with self.lock:
            if fault.get("cut", 0) > 0:
                fault["cut"] -= 1
                cut = len(body) // 2
        sent = 0
        try:
            while sent < len(body):
                if cut is not None and sent >= cut:
                    # The connection drops mid-transfer.
                    h.wfile.flush()
                    h.close_connection = True
                    h.connection.shutdown(2)
                    return
                n = min(CHUNK, len(body) - sent, (cut - sent) if cut is not None else CHUNK)
                h.wfile.write(body[sent:sent + n])
                sent += n
                if fault.get("slow"):
                    time.sleep(fault["slow"])
        except (BrokenPipeError, ConnectionResetError):
            pass


def planted_repo_files(src_dir):
    """The planted model's files (tools/planted_checkpoints.py), plus files a
    pull must leave alone: a README and a GGUF."""
    files = {}
    for name in sorted(os.listdir(src_dir)):
        with open(os.path.join(src_dir, name), "rb") as f:
            files[name] = f.read()
    files["README.md"] = b"# a planted model\n"
    files["planted.Q8_0.gguf"] = b"GGUF" + b"\0" * 60
    return files


def make_snapshot(home, repo_id, files, commit="0123456789abcdef0123456789abcdef01234567"):
    """A snapshot as huggingface_hub's hf_hub_download leaves it under
    HF_HOME (file_download.py): blobs named by sha256 (LFS files) or git blob
    id, relative links from snapshots/COMMIT, refs/main holding the commit
    without a newline, the lock folder. Returns the snapshot's folder."""
    org, name = repo_id.split("/")
    root = os.path.join(home, "hub", "models--%s--%s" % (org, name))
    snap = os.path.join(root, "snapshots", commit)
    for d in (os.path.join(root, "blobs"), snap, os.path.join(root, "refs"),
              os.path.join(home, "hub", ".locks", "models--%s--%s" % (org, name))):
        os.makedirs(d, exist_ok=True)
    for path, data in files.items():
        etag = hashlib.sha256(data).hexdigest() if path.endswith(LFS_SUFFIXES) else \
            git_blob_id(data)
        with open(os.path.join(root, "blobs", etag), "wb") as f:
            f.write(data)
        os.symlink("../../blobs/" + etag, os.path.join(snap, path))
    with open(os.path.join(root, "refs", "main"), "w") as f:
        f.write(commit)
    return snap
