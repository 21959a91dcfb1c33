"""Helpers for the `sculpt serve` tests: a planted model, a server on an
ephemeral loopback port, and small HTTP clients (http.client and raw
sockets, so that broken requests can be sent as they are)."""
import atexit
import http.client
import json
import os
import re
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def finish():
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("ok")
    sys.exit(0)


def planted_model():
    """The byte-level planted model: after "...abc" it writes "d..z", then EOS."""
    tmp = tempfile.mkdtemp(prefix="sculpt-serve-")
    atexit.register(shutil.rmtree, tmp, True)
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"),
                    tmp], check=True, capture_output=True)
    return tmp, os.path.join(tmp, "planted-successor-shifted-bytes")


class Server:
    def __init__(self, model, *args, env=None):
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([BIN, "serve", "--model", model, "--listen", "127.0.0.1:0",
                                      *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=e)
        self.log = []
        deadline = time.time() + 60
        self.port = None
        while time.time() < deadline:
            line = self.proc.stderr.readline().decode(errors="replace")
            if not line:
                break
            self.log.append(line)
            m = re.match(r"sculpt serve: listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if not self.port:
            self.proc.kill()
            raise RuntimeError("the server did not start: " + "".join(self.log))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line.decode(errors="replace"))

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -999

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        """(status, headers dict lower-cased, body bytes)."""
        c = conn or self.conn()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hd = {k.lower(): v for k, v in r.getheaders()}
        if conn is None:
            c.close()
        return r.status, hd, data

    def complete(self, body, headers=None):
        st, hd, data = self.request("POST", "/v1/fim/completions", body, headers)
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        return st, hd, obj

    def stream(self, body, headers=None):
        """(status, list of event payload strings) for a streamed completion."""
        c = self.conn()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", "/v1/fim/completions", body=json.dumps(dict(body, stream=True)),
                  headers=h)
        r = c.getresponse()
        events = []
        if r.status == 200:
            for raw in r:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    events.append(line[6:])
        else:
            r.read()
        c.close()
        return r.status, r.getheader("Content-Type"), events

    def health(self):
        st, _, data = self.request("GET", "/health")
        return json.loads(data) if st == 200 else None

    def metrics(self, headers=None):
        st, _, data = self.request("GET", "/metrics", headers=headers)
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def raw(self, data, wait=5.0, shut=False):
        """Sends bytes on a fresh socket; returns everything read until the
        server closes or `wait` seconds pass."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=wait)
        got = b""
        try:
            if data:
                s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
            end = time.time() + wait
            while time.time() < end:
                s.settimeout(max(0.05, end - time.time()))
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    break
                except (ConnectionResetError, BrokenPipeError):
                    break
                if not chunk:
                    break
                got += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass
        finally:
            s.close()
        return got


def recv_all(sock):
    """Everything sock receives until the peer closes (or a timeout or reset
    ends it early)."""
    got = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    return got


def wait_until(pred, timeout=10.0, step=0.02):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return False


def status_of(raw):
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", raw)
    return int(m.group(1)) if m else None


def body_of(raw):
    i = raw.find(b"\r\n\r\n")
    return raw[i + 4:] if i >= 0 else b""
