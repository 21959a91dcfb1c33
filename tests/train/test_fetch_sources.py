"""fetch_sources.py without the network: the package list's format (bad
lines are refused with their line number), the folder names npm packages
get, and the private deb-src configuration (the machine's own mirrors as
deb-src, the security suite left out, the system's apt files untouched).
Standard library only."""
import atexit
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "model", "train"))
import fetch_sources  # noqa: E402

t = tempfile.mkdtemp(prefix="sculpt-fetch-")
atexit.register(shutil.rmtree, t, True)
good = os.path.join(t, "good.txt")
with open(good, "w") as f:
    f.write("# comment\n\ndeb python3-foo   # trailing comment\nsrc lua5.4\nnpm @scope/pkg@1\nnpm rxjs@7\n")
check(fetch_sources.read_list(good) == [("deb", "python3-foo"), ("src", "lua5.4"),
                                        ("npm", "@scope/pkg@1"), ("npm", "rxjs@7")],
      "the list is read, comments and blank lines skipped")
bad = os.path.join(t, "bad.txt")
with open(bad, "w") as f:
    f.write("deb ok\npip numpy\n")
p = subprocess.run([sys.executable, os.path.join(SRC, "model", "train", "fetch_sources.py"), t,
                    "--list", bad], capture_output=True, text=True, timeout=60)
check(p.returncode != 0 and "bad.txt:2" in p.stderr, f"a bad line is refused with its place: {p.stderr!r}")
check(not os.path.exists(os.path.join(t, "deb", "ok")), "nothing is fetched from a bad list")

check(fetch_sources.slug("@tanstack/query-core@5") == "tanstack__query-core", "a scoped name's folder")
check(fetch_sources.slug("rxjs@7") == "rxjs" and fetch_sources.slug("lodash") == "lodash",
      "a version range is not part of the folder")

# The shipped list parses, and names each package once.
items = fetch_sources.read_list(os.path.join(SRC, "model", "train", "sources.txt"))
check(len(items) > 50 and len(set(items)) == len(items), f"sources.txt: {len(items)} distinct entries")

before = {f: os.path.getmtime(f) for f in glob.glob("/etc/apt/sources.list*") +
          glob.glob("/etc/apt/sources.list.d/*")}
opts = fetch_sources.src_apt_options(t)
parts = opts[opts.index("-o") + 3].split("=", 1)[1]
texts = "".join(open(f).read() for f in glob.glob(os.path.join(parts, "*")))
check("Dir::Etc::SourceList=/dev/null" in opts and parts.startswith(t), "apt reads only our folder")
check("security" not in texts, "the security suite is left out")
types = [l for l in texts.splitlines() if l.startswith("Types:")]
lines = [l for l in texts.splitlines() if l.startswith("deb")]
check(all(l == "Types: deb-src" for l in types) and all(l.startswith("deb-src ") for l in lines),
      f"only deb-src entries: {types + lines}")
after = {f: os.path.getmtime(f) for f in before}
check(before == after, "the system's apt files are untouched")
finish()
