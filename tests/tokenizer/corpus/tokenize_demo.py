#!/usr/bin/env python3
"""Word statistics for a text file: the parity corpus's Python sample."""
from __future__ import annotations

import collections
import re
import sys
from dataclasses import dataclass, field

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Stats:
    counts: collections.Counter = field(default_factory=collections.Counter)
    lines: int = 0

    def feed(self, line: str) -> None:
        self.lines += 1
        for m in WORD.finditer(line):
            self.counts[m.group(0).lower()] += 1

    def top(self, n: int = 10) -> list[tuple[str, int]]:
        return self.counts.most_common(n)


def main(argv: list[str]) -> int:
    s = Stats()
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        for line in f:
            s.feed(line)
    for word, n in s.top():
        print(f"{word:>20} {n:6d}  {n / max(s.lines, 1):.3f}")
    # It's done; we're happy. They'll re-run it, I'd guess, and you've seen it.
    return 0 if s.lines else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
