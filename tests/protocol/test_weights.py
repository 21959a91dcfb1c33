"""The weights setting: what the CPU computes the loaded model in (model.h,
sc_weights_kind) reaches model loading, and sculpt/status says what the
model computes in. `sculpt lsp --weights` is the setting's default (as
--device is the device setting's); a change reloads the model; a bad value
is ignored with a warning. Auto picks f32 for a checkpoint this small
(bf16 or int8 from 50M parameters), so every other kind seen here was asked
for."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import ProtocolError, check, eq, planted_model, run_tests, spawn  # noqa: E402

MODEL = planted_model()


def ready(s, start=0):
    """The first sculpt/status at or after message `start` whose state is
    ready or error; returns (its params, the index after it)."""
    m = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                       m["params"]["state"] in ("ready", "error"), what="model loaded",
                       start=start)
    return m["params"], s.messages.index(m) + 1


def start(*args, **options):
    s = spawn(args=args, env={"SCULPT_WEIGHTS": ""})
    s.start({}, initializationOptions={"modelPath": MODEL, **options})
    return s


def test_auto():
    st, _ = ready(start())
    eq(st.get("weights"), "f32", "no setting, no flag: auto computes this small model in f32")


def test_setting():
    st, _ = ready(start(weights="int8"))
    eq(st.get("weights"), "int8", "weights int8 in initializationOptions")


def test_flag_is_the_default():
    s = start("--weights", "int8")
    st, after = ready(s)
    eq(st.get("weights"), "int8", "sculpt lsp --weights int8 with no setting")
    # A change of the setting reloads the model in the new kind.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"weights": "f32"}}})
    # The ready after that reload: a status sent before it (the index's,
    # still in the int8 model's state) may come between.
    loading = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                             m["params"]["state"] == "loading", what="a reload", start=after)
    at = next(i for i in range(after, len(s.messages)) if s.messages[i] is loading)
    st, after = ready(s, at + 1)
    eq(st.get("weights"), "f32", "the setting f32 overrides --weights int8 (reloaded)")
    # A bad value is ignored with a warning: no reload, the kind stays.
    n = len(s.messages)
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"weights": "int4"}}})
    s.sync()

    def warned():  # under the client's lock; stderr is read by its own thread
        return (any("weights must be" in m.get("params", {}).get("message", "")
                    for m in s.messages[n:] if m.get("method") == "window/logMessage") or
                any("weights must be" in line for line in s.stderr_lines))
    try:
        s.wait_for(warned, timeout=10, what="the warning")
        named = True
    except ProtocolError:
        named = False
    check(named, "a bad weights value is named in a warning")
    check(not any(m.get("method") == "sculpt/status" and m["params"]["state"] == "loading"
                  for m in s.messages[n:]), "a bad weights value reloads nothing")
    s.shutdown_and_exit()


def test_bad_flag():
    s = spawn(args=("--weights", "int4"))
    code = s.wait_exit()
    check(code == 2 and "--weights" in s.stderr_text(),
          "sculpt lsp --weights int4 is refused (exit 2)", s.stderr_text())


if __name__ == "__main__":
    run_tests([test_auto, test_setting, test_flag_is_the_default, test_bad_flag])
