"""corpus.py over fetched packages (fetch_sources.py's layout: --deb-root,
--src-root, --npm-root) with --no-system: only packages whose license
evidence is all permissive are kept, Debian source packages contribute their
upstream code but not debian/, an npm package with src/ contributes only
src/ and build-format folders (esm/) are skipped, and --max-mb caps one
language. Standard library only."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish  # noqa: E402


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def dep5(*lics):
    head = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
    return head + "".join(f"Files: *\nCopyright: someone\nLicense: {l}\n\n" for l in lics)


def code(name, lang, n=12):
    body = {"python": "def {f}_{i}(x):\n    return x * {i} + len('{f}')\n\n",
            "c": "int {f}_{i}(int x) {{\n  return x * {i};\n}}\n\n",
            "javascript": "function {f}_{i}(x) {{\n  return x * {i};\n}}\n\n",
            "typescript": "export function {f}_{i}(x: number): number {{\n  return x * {i};\n}}\n\n",
            "go": "func {f}_{i}(x int) int {{\n\treturn x * {i}\n}}\n\n",
            "rust": "pub fn {f}_{i}(x: u32) -> u32 {{\n    x * {i}\n}}\n\n",
            "java": "    public int {f}_{i}(int x) {{\n        return x * {i};\n    }}\n\n",
            "cpp": "template <typename T>\nT {f}_{i}(T x) {{\n  return x * {i};\n}}\n\n"}[lang]
    return "".join(body.format(f=name, i=i) for i in range(n))


t = tempfile.mkdtemp(prefix="sculpt-corpus-")
atexit.register(shutil.rmtree, t, True)
deb, src, npm = (os.path.join(t, k) for k in ("deb", "src", "npm"))
py = "usr/lib/python3/dist-packages"
write(f"{deb}/python3-good/usr/share/doc/python3-good/copyright", dep5("Expat", "BSD-3-clause"))
write(f"{deb}/python3-good/{py}/good/core.py", code("good_core", "python"))
write(f"{deb}/python3-good/{py}/good/util.py", code("good_util", "python", 40))
write(f"{deb}/python3-gpl/usr/share/doc/python3-gpl/copyright", dep5("Expat", "GPL-2+"))
write(f"{deb}/python3-gpl/{py}/gpl/core.py", code("gpl_core", "python"))
write(f"{deb}/python3-freeform/usr/share/doc/python3-freeform/copyright", "This is MIT, trust me.\n")
write(f"{deb}/python3-freeform/{py}/ff/core.py", code("ff_core", "python"))
write(f"{src}/libgood/debian/copyright", dep5("BSD-2-clause"))
write(f"{src}/libgood/libgood-1.0/src/good.c", code("libgood", "c"))
write(f"{src}/libgood/debian/tests/helper.c", code("debian_helper", "c"))
# Mixed: MIT overall, GPL packaging and one GPL folder with a Zlib file in it.
write(f"{src}/libmixed/debian/copyright",
      "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
      "Files: *\nCopyright: a\nLicense: Expat\n\n"
      "Files: debian/*\nCopyright: b\nLicense: GPL-2+\n\n"
      "Files: src/gpl/\n tools/*.c\nCopyright: c\nLicense: GPL-3+\n\n"
      "Files: src/gpl/ok?.c\nCopyright: d\nLicense: Zlib\n\n"
      "Files: www/*\nCopyright: e\nLicense: GPL-2+\n\n"
      "License: Expat\n the text\n")
write(f"{src}/libmixed/libmixed-2.0/src/a.c", code("mixed_a", "c"))
write(f"{src}/libmixed/libmixed-2.0/src/b.c", code("mixed_b", "c"))
write(f"{src}/libmixed/libmixed-2.0/src/gpl/bad.c", code("mixed_gplbad", "c"))
write(f"{src}/libmixed/libmixed-2.0/src/gpl/ok1.c", code("mixed_gplok", "c"))
write(f"{src}/libmixed/libmixed-2.0/tools/t.c", code("mixed_tool", "c"))
write(f"{src}/libmixed/www/site.js", code("mixed_www", "javascript"))  # a component tarball
write(f"{src}/libfree/debian/copyright", "Free-form: MIT, honest.\n")
write(f"{src}/libfree/libfree-1.0/free.c", code("libfree", "c"))
write(f"{npm}/withsrc/package/package.json", json.dumps({"name": "withsrc", "version": "1.0.0", "license": "MIT"}))
write(f"{npm}/withsrc/package/src/index.ts", code("withsrc_src", "typescript"))
write(f"{npm}/withsrc/package/dist/index.js", code("withsrc_dist", "javascript"))
write(f"{npm}/nosrc/package/package.json", json.dumps({"name": "nosrc", "version": "2.0.0", "license": "ISC"}))
write(f"{npm}/nosrc/package/lib/a.js", code("nosrc_lib", "javascript"))
write(f"{npm}/nosrc/package/esm/a.js", code("nosrc_esm", "javascript"))
write(f"{npm}/gplnpm/package/package.json", json.dumps({"name": "gplnpm", "version": "1.0.0", "license": "GPL-3.0"}))
write(f"{npm}/gplnpm/package/lib/a.js", code("gplnpm_lib", "javascript"))

out = os.path.join(t, "corpus")
p = subprocess.run([sys.executable, os.path.join(SRC, "model", "train", "corpus.py"), out, "--no-system",
                    "--deb-root", deb, "--src-root", src, "--npm-root", npm, "--heldout-pct", "0",
                    "--max-mb", "python=0.0015"], capture_output=True, text=True, timeout=120)
print(p.stdout, p.stderr)
check(p.returncode == 0, "corpus.py exits 0")
recs = [json.loads(l) for l in open(os.path.join(out, "train.jsonl"))]
names = {r["text"].split("(")[0].split()[-1].rsplit("_", 1)[0] for r in recs}
print(sorted(names))
for want in ("libgood", "withsrc_src", "nosrc_lib", "mixed_a", "mixed_b", "mixed_gplok"):
    check(want in names, f"{want} kept")
for unwanted in ("gpl_core", "ff_core", "debian_helper", "withsrc_dist", "nosrc_esm", "gplnpm_lib",
                 "mixed_gplbad", "mixed_tool", "mixed_www", "libfree"):
    check(unwanted not in names, f"{unwanted} left out")
pys = [r for r in recs if r["lang"] == "python"]
check(len(pys) == 1 and pys[0]["source"] == "debian:python3-good",
      f"--max-mb python caps Python to one file of python3-good ({len(pys)})")
m = json.load(open(os.path.join(out, "manifest.json")))
srcs = {s["source"]: s for s in m["sources"]}
check(set(srcs) == {"debian:python3-good", "debian-source:libgood", "npm:withsrc@1.0.0", "npm:nosrc@2.0.0",
                    "debian-source:libmixed [Expat]", "debian-source:libmixed [Zlib]"},
      f"manifest sources {sorted(srcs)}")
lic = {r["text"].split("(")[0].split()[-1].rsplit("_", 1)[0]: r["license"] for r in recs}
check(lic.get("mixed_a") == "Expat" and lic.get("mixed_gplok") == "Zlib",
      f"each file records its own stanza's license: {lic}")
check(srcs.get("debian-source:libgood", {}).get("license_evidence", "").endswith("libgood/debian/copyright"),
      "a source package's evidence is its debian/copyright")
check(m["filters"]["max_mb"] == {"python": 0.0015}, "the caps are recorded")

# Go, Rust, Java and C++: Go and Rust libraries ship their sources in -dev
# packages, Java and C++ come as source packages; Go's testdata/ is not the
# package's code; a C++ header named .h is C++, a .c that reads as C++ is
# left out (a C file is what "c" promises).
t2 = os.path.join(t, "more")
deb2, src2 = os.path.join(t2, "deb"), os.path.join(t2, "src")
gocode = "usr/share/gocode/src/github.com/acme/mux"
write(f"{deb2}/golang-github-acme-mux-dev/usr/share/doc/golang-github-acme-mux-dev/copyright",
      dep5("BSD-3-clause"))
write(f"{deb2}/golang-github-acme-mux-dev/{gocode}/route.go", "package mux\n\n" + code("go_route", "go"))
write(f"{deb2}/golang-github-acme-mux-dev/{gocode}/testdata/bad.go",
      "package bad\n\n" + code("go_testdata", "go"))
crate = "usr/share/cargo/registry/acme-1.0.2"
write(f"{deb2}/librust-acme-dev/usr/share/doc/librust-acme-dev/copyright", dep5("MIT or Apache-2.0"))
write(f"{deb2}/librust-acme-dev/{crate}/src/lib.rs", code("rust_lib", "rust"))
write(f"{src2}/libacme-java/debian/copyright", dep5("Apache-2.0"))
write(f"{src2}/libacme-java/acme-2.0/src/main/java/org/acme/Box.java",
      "package org.acme;\n\npublic class Box {\n" + code("java_box", "java") + "}\n")
write(f"{src2}/acmecpp/debian/copyright", dep5("Expat"))
write(f"{src2}/acmecpp/acmecpp-3.1/include/acme/box.hpp", code("cpp_hpp", "cpp"))
write(f"{src2}/acmecpp/acmecpp-3.1/include/acme/box.h", "namespace acme {\n" + code("cpp_h", "cpp") + "}\n")
write(f"{src2}/acmecpp/acmecpp-3.1/src/odd.c", "namespace acme {\n" + code("cpp_c", "cpp") + "}\n")
out2 = os.path.join(t2, "corpus")
p = subprocess.run([sys.executable, os.path.join(SRC, "model", "train", "corpus.py"), out2, "--no-system",
                    "--deb-root", deb2, "--src-root", src2, "--heldout-pct", "0",
                    "--repo-records", "8"], capture_output=True, text=True, timeout=120)
print(p.stdout, p.stderr[-2000:])
check(p.returncode == 0, "corpus.py exits 0 over Go, Rust, Java and C++ packages")
recs2 = [json.loads(l) for l in open(os.path.join(out2, "train.jsonl"))]
langs = {r["text"].split("(")[0].split()[-1].rsplit("_", 1)[0]: r["lang"] for r in recs2}
print(langs)
check(langs == {"go_route": "go", "rust_lib": "rust", "java_box": "java", "cpp_hpp": "cpp",
                "cpp_h": "cpp"}, f"each file under its language, testdata/ and a C++ .c left out: {langs}")
sys.path.insert(0, os.path.join(SRC, "model", "train"))
import corpus  # noqa: E402
for path, want in ((f"/x/deb/golang-github-acme-mux-dev/{gocode}/route.go", "route.go"),
                   ("/x/deb/golang-gopkg-yaml.v3-dev/usr/share/gocode/src/gopkg.in/yaml.v3/decode.go",
                    "decode.go"),
                   (f"/x/deb/librust-acme-dev/{crate}/src/lib.rs", "src/lib.rs"),
                   ("/x/src/libacme-java/acme-2.0/src/main/java/org/acme/Box.java",
                    "src/main/java/org/acme/Box.java")):
    check(corpus.package_path(path) == want, f"package_path names {want} as a checkout would: "
          f"{corpus.package_path(path)}")
# Repository records name definitions in every language, with the LSP's
# comment ("//") over each snippet.
java = ("public class Element extends Node {\n    public Element(String tag) {\n        this.tag = tag;\n"
        "    }\n\n    public <T extends Node> T expectFirst(String q, Class<T> type) {\n"
        "        if (q == null) {\n            return null;\n        } else if (type == null) {\n"
        "            return foo(q,\n                bar);\n        }\n        return null;\n    }\n}\n")
defs = [(n, i, b.count("\n")) for n, i, b in corpus.definitions("java", java)]
check([d[:2] for d in defs] == [("Element", 0), ("Element", 1), ("expectFirst", 5)],
      f"Java: the class, its constructor and a method; no call or `else if` taken for one: {defs}")
check(defs[2][2] == 9, f"a Java method's snippet ends at its own closing brace: {defs[2]}")
cpp = ("template <typename T>\nclass Box {\n public:\n  T get() const {\n    if (v_) {\n      return v_;\n"
       "    }\n    return fn(a,\n       b);\n  }\n};\n\nint Box::size(int a) {\n  return a;\n}\n")
check([n for n, _, _ in corpus.definitions("cpp", cpp)] == ["Box", "get", "Box::size"],
      f"C++: {[n for n, _, _ in corpus.definitions('cpp', cpp)]}")
rust = "impl Foo {\n    pub fn new(a: u32) -> Self {\n        Foo { a }\n    }\n}\npub(crate) struct Bar;\n"
check([n for n, _, _ in corpus.definitions("rust", rust)] == ["new", "Bar"],
      f"Rust: {[n for n, _, _ in corpus.definitions('rust', rust)]}")
go = "type Route struct {\n\tname string\n}\n\nfunc (r *Route) Name(n string) *Route {\n\treturn r\n}\n"
check([n for n, _, _ in corpus.definitions("go", go)] == ["Route", "Name"],
      f"Go: {[n for n, _, _ in corpus.definitions('go', go)]}")
check(corpus.snippet_text("go", "route.go", 4, "func x() {}\n") == "// route.go:5\nfunc x() {}\n",
      "a Go snippet's header is a // comment, as the LSP writes it")
finish()
