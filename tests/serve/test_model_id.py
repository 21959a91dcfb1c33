"""`sculpt serve --model ORG/NAME`: a Hugging Face model id found offline in
the shared cache (a snapshot in huggingface_hub's layout, made as
tests/cli/hubserver.py makes it) serves like its folder, and the answers
name the model by its id, not by the snapshot's commit folder; an id that
is not in the cache stops the server at once with one line naming
`sculpt model pull`."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cli"))
from servelib import BIN, Server, check, finish, planted_model  # noqa: E402
import hubserver  # noqa: E402

tmp, model = planted_model()
files = hubserver.planted_repo_files(model)
home = tempfile.mkdtemp(prefix="hf-home-", dir=tmp)
hubserver.make_snapshot(home, "acme/planted",
                        {n: files[n] for n in ("config.json", "model.safetensors",
                                               "tokenizer.json")})
env = {"HF_HOME": home, "HF_HUB_CACHE": "", "HUGGINGFACE_HUB_CACHE": "", "SCULPT_MODEL": "",
       "HF_ENDPOINT": "http://127.0.0.1:9"}

srv = Server("acme/planted", env=env)
st, _, res = srv.complete({"prompt": "int abc", "suffix": " = 1;\n", "max_tokens": 40})
check(st == 200 and res and res["choices"][0]["text"] == "defghijklmnopqrstuvwxyz",
      f"serve --model acme/planted completes: {st} {res}")
check(res and res["model"] == "acme/planted", f"the answer names the id: {res and res['model']}")
st, _, body = srv.request("GET", "/v1/models")
check(st == 200 and b'"acme/planted"' in body, f"/v1/models lists the id: {body[:200]}")
check(srv.stop() == 0, "a clean stop")

hints = [l for l in srv.log if "demo model" in l]
check(hints == [], f"a real model gets no demo-model hint: {hints}")

# On the demo model sculpt ships, the server says once how to get a real one.
demo = Server(os.path.join(os.environ["SCULPT_SOURCE_DIR"], "model", "default"), env=env)
st, _, _ = demo.request("GET", "/health")
check(st == 200 and demo.stop() == 0, "the demo model serves")
hints = [l for l in demo.log if "demo model" in l]
check(len(hints) == 1 and " info:" in hints[0] and "sculpt model pull" in hints[0],
      f"one info line on the demo model: {hints}")

p = subprocess.run([BIN, "serve", "--model", "acme/absent", "--listen", "127.0.0.1:0"],
                   capture_output=True, timeout=30, env=dict(os.environ, **env))
err = p.stderr.decode()
check(p.returncode == 1 and "sculpt model pull acme/absent" in err and
      len(err.strip().splitlines()) == 1, f"a missing id stops serve with one line: {err}")
finish()
print("ok")
