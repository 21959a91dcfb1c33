"""model/train/presets.py: the default model's preset ("gpu") has context
1024 (the LSP's default prompt budget) and bf16 weights within the 32 MB the
project ships; the torch-free tensor list (the rehearsal's stand-in trainer
writes by it) is exactly model.py's state_dict for every preset, and its
parameter count is the model's. The torch comparison skips its part
without torch; the budget checks always run."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "model", "train"))
import presets  # noqa: E402

VOCAB = 16384  # the GPU run's tokenizer (gpu_session.sh --prepare)
gpu = presets.preset_config("gpu", VOCAB)
check(gpu["max_position_embeddings"] == 1024, f"gpu preset context 1024 ({gpu['max_position_embeddings']})")
n = presets.n_params(gpu)
check(2 * n <= presets.MAX_SHIPPED_BYTES, f"gpu preset bf16 weights {2 * n} bytes <= 32 MB")
check(14_000_000 < n < 16_000_000, f"gpu preset about 14.9M parameters ({n})")

try:
    import torch  # noqa: F401
    from model import DiffusionLM
except ImportError as e:
    print(f"no torch ({e}): the state_dict comparison is skipped")
else:
    for name in sorted(presets.PRESETS):
        cfg = presets.preset_config(name, 512 if name != "gpu" else VOCAB)
        m = DiffusionLM(cfg)
        want = [(k, tuple(v.shape)) for k, v in m.state_dict().items()]
        check(presets.tensor_shapes(cfg) == want, f"{name}: tensor_shapes is model.py's state_dict")
        check(presets.n_params(cfg) == m.n_params(), f"{name}: n_params {presets.n_params(cfg)}")
finish()
