"""What the tests/context scripts share: a check that fails is printed and
kept in `failures` (each script turns it into its exit status at the end),
and writing a fixture file under a repository root."""
import os

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def write(root, rel, text, mode="w"):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, mode) as f:
        f.write(text)
