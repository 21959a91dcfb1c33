"""What the tests in tests/train share: where the source and the binary
are, skipping (exit 77) when what a test needs is missing, and check()."""
import os
import sys

SRC = os.environ.get("SCULPT_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
failures = []


def need_bin():
    """The sculpt binary under test, or skip."""
    b = os.environ.get("SCULPT_BIN")
    if not b or not os.path.exists(b):
        print("SCULPT_BIN is not set or missing; skipping")
        sys.exit(77)
    return b


def need_torch():
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print(f"needs numpy and torch (Debian python3-numpy, python3-torch): {e}; skipping")
        sys.exit(77)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def finish():
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all passed")
