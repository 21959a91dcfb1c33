"""NOT torch: a stand-in for tools/gpu_rehearse.sh's chroot, where
model/train/run_gpu.sh asks whether PyTorch sees a GPU before it starts the
training (which the rehearsal replaces by tools/rehearse/train_standin.py).
It answers yes, and names itself, so no log can mistake it for the real
thing. Anything else a program asks of it fails (AttributeError), as it
should: bench_torch.py and the oracle then report themselves failed or
skipped in the rehearsal's results."""
__version__ = "0+rehearsal-stand-in"


class cuda:  # noqa: N801 (torch.cuda)
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_name(i=0):
        return "stand-in (tools/gpu_rehearse.sh: no GPU, no torch)"
