"""What the tests/cli scripts share: a check that fails is printed and kept
in `failures`, which each script turns into its exit status at the end."""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
