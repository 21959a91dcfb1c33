"""The LSP's modelPath as a Hugging Face model id (model.h, "model names"):
found offline in the shared cache (a snapshot in huggingface_hub's layout),
a missing one named in sculpt/status and in the completion's error with the
`sculpt model pull` command, nothing downloaded unless autoPull is true, and
with autoPull the download's bytes in $/progress while it runs (off the
loop: the server keeps answering), then the model loads; a snapshot in the
cache that is not whole (no weights, a blob cut short) is pulled again with
autoPull. The hub is tests/cli/hubserver.py."""

import atexit
import contextlib
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cli"))
from lspclient import check, eq, planted_model, run_tests, spawn  # noqa: E402
import hubserver  # noqa: E402

MODEL = planted_model()
FILES = hubserver.planted_repo_files(MODEL)
WANTED = {n: FILES[n] for n in ("config.json", "model.safetensors", "tokenizer.json")}
ALPHABET = "defghijklmnopqrstuvwxyz"
URI = "file:///w/main.c"


def env_for(home, hub=None):
    e = {"HF_HOME": home, "HF_ENDPOINT": hub.endpoint if hub else "http://127.0.0.1:9",
         "HF_HUB_CACHE": "", "HUGGINGFACE_HUB_CACHE": "", "HF_TOKEN": "", "HF_HUB_OFFLINE": "",
         "SCULPT_MODEL": "", "no_proxy": "*", "NO_PROXY": "*"}
    return e


@contextlib.contextmanager
def hub_and_home(**faults):
    """An empty HF_HOME and a hub serving the planted model as acme/planted."""
    hub = hubserver.Hub({"acme/planted": hubserver.Repo(FILES)})
    hub.faults.update(faults)
    try:
        home = tempfile.mkdtemp(prefix="hf-home-")
        atexit.register(shutil.rmtree, home, True)
        yield home, hub
    finally:
        hub.close()


def start(home, model, hub=None, progress=False, **settings):
    s = spawn(env=env_for(home, hub))
    caps = {"window": {"workDoneProgress": True}} if progress else {}
    s.start(caps, initializationOptions=dict({"modelPath": model, "lengthCandidates": 4},
                                             **settings))
    return s


def status(s, state, start=0):
    m = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                       m["params"]["state"] == state, timeout=30,
                       what="sculpt/status " + state, start=start)
    return m["params"]


def inline(s):
    s.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "c",
                                                       "version": 1, "text": "int abc;\n"}})
    return s.request("textDocument/inlineCompletion",
                     {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 7},
                      "context": {"triggerKind": 1}}, 30)


def test_model_path_is_an_id():
    home = tempfile.mkdtemp(prefix="hf-home-")
    atexit.register(shutil.rmtree, home, True)
    hubserver.make_snapshot(home, "acme/planted", WANTED)
    s = start(home, "acme/planted")
    st = status(s, "ready")
    check(st["model"].startswith("planted"), "the model is named after the id", st)
    eq(inline(s)["result"]["items"][0]["insertText"], ALPHABET, "it completes")
    s.shutdown_and_exit()


def test_missing_id_is_not_downloaded():
    with hub_and_home() as (home, hub):
        s = start(home, "acme/planted", hub)
        st = status(s, "error")
        msg = st.get("message", "")
        check("sculpt model pull acme/planted" in msg and "autoPull" in msg,
              "the status names the pull command and autoPull", st)
        r = inline(s)
        check("error" in r and "sculpt model pull acme/planted" in r["error"]["message"],
              "an invoked completion answers with the same reason", r)
        eq(hub.requests(), [], "nothing was asked of the hub without autoPull")
        s.shutdown_and_exit()


def test_auto_pull_reports_bytes():
    sha = hubserver.hashlib.sha256(FILES["model.safetensors"]).hexdigest()
    # About two seconds for the blob: reports while it runs.
    with hub_and_home(**{sha: {"slow": 0.02}}) as (home, hub):
        s = start(home, "acme/planted", hub, progress=True, autoPull=True)
        create = s.wait_for(lambda: next((m for m in s.messages
                                          if m.get("method") == "window/workDoneProgress/create"),
                                         None), what="progress create")
        s.respond(create["id"], None)
        token = create["params"]["token"]
        # The loop answers while the download runs on the model lane: a
        # request sent after the first report is answered before the model
        # is ready.
        s.wait_message(lambda m: m.get("method") == "$/progress" and
                       m["params"]["value"]["kind"] == "report", what="a download report")
        at = s.sync()
        check(not any(m.get("method") == "sculpt/status" and m["params"]["state"] == "ready"
                      for m in s.messages[:at]), "answered during the download, not after it")
        st = status(s, "ready")
        check(st["model"].startswith("planted"), "the pulled model is loaded", st)
        reports = [m["params"]["value"] for m in s.messages if m.get("method") == "$/progress" and
                   m["params"]["token"] == token and m["params"]["value"]["kind"] == "report"]
        check(reports and all("downloading acme/planted" in r["message"] for r in reports),
              "the download's bytes in $/progress reports", reports)
        pcts = [r.get("percentage", -1) for r in reports]
        check(pcts == sorted(pcts) and pcts[-1] == 100 and len(set(pcts)) > 1,
              "the percentage rises to 100", pcts)
        # A client that shows sculpt/status rather than $/progress (the VS
        # Code status bar) sees the download move too.
        loading = [m["params"] for m in s.messages if m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "loading"]
        spct = [st["progress"] for st in loading if "downloading acme/planted" in
                st.get("message", "")]
        check(len(set(spct)) > 1 and spct == sorted(spct) and 0 < spct[-1] <= 100,
              "sculpt/status carries the download's rising percentage and line", loading[-5:])
        eq(status(s, "ready")["progress"], 100, "ready is 100%")
        eq(inline(s)["result"]["items"][0]["insertText"], ALPHABET, "it completes")
        snap = os.path.join(home, "hub", "models--acme--planted", "snapshots",
                            hub.repos["acme/planted"].commit)
        eq(sorted(os.listdir(snap)), sorted(WANTED), "the shared cache has the snapshot")
        s.shutdown_and_exit()


def test_auto_pull_turned_on_later():
    with hub_and_home() as (home, hub):
        s = start(home, "acme/planted", hub)
        status(s, "error")
        n = len(s.messages)
        s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"autoPull": True}}})
        status(s, "ready", start=n)
        check(hub.requests("cdn"), "turning autoPull on downloads the missing model")
        s.shutdown_and_exit()


def partial_snapshot(home, hub, cut):
    """What another tool leaves: hf_hub_download of config.json and
    tokenizer.json only (cut False), or every file with the weights' blob
    cut short (cut True), at the hub's own commit."""
    commit = hub.repos["acme/planted"].commit
    files = WANTED if cut else {n: WANTED[n] for n in ("config.json", "tokenizer.json")}
    snap = hubserver.make_snapshot(home, "acme/planted", files, commit=commit)
    if cut:
        blob = os.path.realpath(os.path.join(snap, "model.safetensors"))
        with open(blob, "r+b") as f:
            f.truncate(len(WANTED["model.safetensors"]) // 2)
    return snap


def test_partial_snapshot_is_pulled_again():
    for cut in (False, True):
        with hub_and_home() as (home, hub):
            snap = partial_snapshot(home, hub, cut)
            s = start(home, "acme/planted", hub, autoPull=True)
            st = status(s, "ready")
            check(st["model"].startswith("planted"), "the model loads (cut %s)" % cut, st)
            eq(inline(s)["result"]["items"][0]["insertText"], ALPHABET, "it completes")
            check(hub.requests("cdn"), "the missing weights were downloaded")
            with open(os.path.join(snap, "model.safetensors"), "rb") as f:
                eq(f.read() == WANTED["model.safetensors"], True, "the snapshot's weights are whole")
            s.shutdown_and_exit()


def test_partial_snapshot_without_auto_pull():
    with hub_and_home() as (home, hub):
        partial_snapshot(home, hub, False)
        s = start(home, "acme/planted", hub)
        st = status(s, "error")
        check(st.get("message"), "the status says why", st)
        eq(hub.requests(), [], "nothing was asked of the hub without autoPull")
        s.shutdown_and_exit()


if __name__ == "__main__":
    run_tests([test_model_path_is_an_id, test_missing_id_is_not_downloaded,
               test_auto_pull_reports_bytes, test_auto_pull_turned_on_later,
               test_partial_snapshot_is_pulled_again, test_partial_snapshot_without_auto_pull])
