"""A real VS Code for the editor tests: code-server (pinned and installed by
tools/editor_tools.sh) with the sculpt .vsix built from editors/vscode and
installed as a user installs one, its own HOME, user data and extensions,
`sculpt` from PATH (the recording tap of common.tap_env), and Debian's
headless Chromium driven by vscode_e2e.js through puppeteer-core. The user
settings hold nothing of sculpt's but common.TEMP_SETTINGS (empty), and what keeps
the workspace files untouched and the window quiet.

    session = Session("sculpt-vscode-real-")   # skips (exit 77) without the tools
    results = session.run(windows)              # vscode_e2e.js's steps
    session.tap                                 # the recorded conversation
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from common import (SRC, TEMP_SETTINGS, closed_port, code_server, node_env, run,  # noqa: E402
                    sculpt_bin, skip, tap_env)

EXT = os.path.join(SRC, "editors", "vscode")


class Session:
    def __init__(self, prefix):
        self.env0, major = node_env()
        if major < 20:
            skip("node >= 20 is needed (tools/editor_tools.sh installs the pinned one; found %d)"
                 % major)
        self.entry = code_server()
        if not self.entry:
            skip("code-server is not installed: run tools/editor_tools.sh "
                 "(tools/bootstrap.sh test does)")
        self.chromium = shutil.which("chromium")
        if not self.chromium:
            skip("chromium is not installed (apt-get install chromium)")
        for mod in ("vscode-languageclient", "puppeteer-core", "@vscode/vsce"):
            if not os.path.isdir(os.path.join(EXT, "node_modules", mod)):
                skip("editors/vscode/node_modules lacks %s: run `npm ci` in editors/vscode" % mod)
        self.binary = sculpt_bin()
        self.node = shutil.which("node", path=self.env0["PATH"])
        self.build = (os.environ.get("SCULPT_BUILD_DIR")
                      or tempfile.mkdtemp(prefix="sculpt-vscode-shots-"))
        os.makedirs(self.build, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        self.user_data = os.path.join(self.tmp, "user-data")
        self.extensions = os.path.join(self.tmp, "extensions")
        self.env, self.tap = tap_env(self.tmp, self.binary, self.env0)
        self.env["HOME"] = self.home
        self.cs_args = [self.node, self.entry, "--user-data-dir", self.user_data,
                        "--extensions-dir", self.extensions]

    def shot(self, name):
        """Where a screenshot goes: the build folder."""
        return os.path.join(self.build, name)

    def install(self):
        """Packages the .vsix (npm run package, as a user would), writes the
        user settings and installs the .vsix into code-server."""
        vsix = os.path.join(self.tmp, "sculpt.vsix")
        rc = run([shutil.which("npm", path=self.env0["PATH"]), "run", "package", "--", "-o", vsix],
                 self.env0, timeout=300, cwd=EXT)
        if rc != 0 or not os.path.exists(vsix):
            print("FAIL: npm run package did not make the .vsix (exit %d)" % rc)
            sys.exit(1)
        os.makedirs(os.path.join(self.user_data, "User"))
        settings = {
            "files.autoSave": "off",
            "files.hotExit": "off",
            "telemetry.telemetryLevel": "off",
            "workbench.startupEditor": "none",
            "workbench.secondarySideBar.defaultVisibility": "hidden",
            "extensions.autoCheckUpdates": False,
            "extensions.autoUpdate": False,
            "update.mode": "none",
        }
        settings.update({"sculpt." + k: v for k, v in TEMP_SETTINGS.items()})
        with open(os.path.join(self.user_data, "User", "settings.json"), "w") as f:
            json.dump(settings, f, indent=1)
        rc = run(self.cs_args + ["--install-extension", vsix], self.env, timeout=120, cwd=self.tmp)
        if rc != 0 or not any(d.startswith("sculpt.sculpt-") for d in os.listdir(self.extensions)):
            print("FAIL: code-server did not install the .vsix (exit %d)" % rc)
            sys.exit(1)

    def run(self, windows, timeout=600):
        """Starts code-server, runs vscode_e2e.js over `windows`, stops
        code-server. Returns (the driver's exit code, its results)."""
        self.install()
        port = closed_port()
        config = os.path.join(self.tmp, "code-server.yaml")
        with open(config, "w") as f:
            f.write("bind-addr: 127.0.0.1:%d\nauth: none\ncert: false\n" % port)
        log = open(os.path.join(self.tmp, "code-server.log"), "w")
        # force-disable-user-env: the extension host keeps this environment
        # (PATH with the tap) instead of one read from a login shell; a short
        # reconnection grace lets a closed window's server go.
        server = subprocess.Popen(
            self.cs_args + ["--config", config, "--disable-telemetry", "--disable-update-check",
                            "--disable-workspace-trust", "--disable-getting-started-override",
                            "--reconnection-grace-time", "5",
                            "--vscode-option", "force-disable-user-env"],
            env=self.env, cwd=self.tmp, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            deadline = time.time() + 60
            while True:
                try:
                    urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=2)
                    break
                except OSError:
                    if time.time() > deadline or server.poll() is not None:
                        print("FAIL: code-server did not start")
                        print(open(log.name).read())
                        sys.exit(1)
                    time.sleep(0.3)
            spec = {"base": "http://127.0.0.1:%d" % port, "chromium": self.chromium,
                    "profile": os.path.join(self.tmp, "chromium", "profile"), "tap": self.tap,
                    "extension": EXT, "result": os.path.join(self.tmp, "e2e.json"),
                    "windows": windows, "failShot": self.shot("vscode-failure.png")}
            os.makedirs(os.path.dirname(spec["profile"]))
            spec_path = os.path.join(self.tmp, "e2e-spec.json")
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            rc = run([self.node, os.path.join(SRC, "tests", "editors", "vscode_e2e.js"), spec_path],
                     dict(self.env0, HOME=self.home), timeout=timeout, cwd=self.tmp)
            results = []
            if os.path.exists(spec["result"]):
                with open(spec["result"]) as f:
                    results = json.load(f)
            return rc, results
        finally:
            try:
                os.killpg(server.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)

    def done(self, fails):
        """Reports; on success removes the session's folder (kept on
        failure, to look into), then exits."""
        for f in fails:
            print("FAIL: " + f)
        if fails:
            print("kept for a look: %s" % self.tmp)
            sys.exit(1)
        shutil.rmtree(self.tmp, ignore_errors=True)
        print("PASS")
        sys.exit(0)

    def channel_log(self, want):
        """The sculpt output channel of the window whose server met `want`:
        the file VS Code keeps for it (user-data/logs/*/exthost*/sculpt.sculpt)."""
        import glob
        for path in glob.glob(os.path.join(self.user_data, "logs", "*", "exthost*",
                                           "sculpt.sculpt", "*.log")):
            with open(path, errors="replace") as f:
                text = f.read()
            if want in text:
                return text
        return ""
