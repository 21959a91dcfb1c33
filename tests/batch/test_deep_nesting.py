"""Documents nested tens of thousands of levels deep, as a generated file or
a line of unclosed brackets makes them (issue 38). Debian's tree-sitter
0.20.7 corrupted its heap freeing such a tree (exit 134, munmap_chunk():
invalid pointer, from about 65,600 levels); sculpt now builds with the
pinned 0.25.1, and bounds its own walks and queries on deep trees. Here:

  - `batch --holes` over 70,000 unclosed brackets, braces or nested blocks
    in every language with a grammar exits cleanly;
  - `batch --holes --write` over a tree that holds such files beside a
    file with a hole writes that file and exits 0 (it used to abort at
    teardown, after writing);
  - `batch --diagnostics` with a site inside such a file answers, and
    changes nothing it cannot check."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from batchlib import FILL, batch, check, cleanup, finish, make_repo, model, read  # noqa: E402

N = 70000
M = model()
DEEP = {
    "deep_parens.py": "(" * N + "\n",
    "deep_lines.py": "(\n" * N,
    "deep_brackets.js": "[" * N + "\n",
    "deep_braces.c": "int f(void) " + "{" * N + "\n",
    "deep_blocks.go": "package p\nfunc f() " + "{" * N + "}" * N + "\n",
    "deep_parens.rs": "fn f() { let x = " + "(" * N + "1" + ")" * N + "; }\n",
    "deep_comments.rs": "/*" * N + "*/" * N + "\nfn main() {}\n",
    "deep_template.ts": "let s = " + "`${" * N + "\n",
    "deep_subst.sh": "echo " + "$(" * N + "\n",
    "deep_array.json": "[" * N + "]" * N + "\n",
    "deep_parens.java": "class A { int x = " + "(" * N + "1" + ")" * N + "; }\n",
    "deep_parens.cpp": "int x = " + "(" * N + "1" + ")" * N + ";\n",
}

root = make_repo(DEEP)
rc, out, err = batch("--holes", "--model", M, root)
check(rc in (0, 1) and "Aborted" not in err and "munmap" not in err,
      f"batch --holes over {len(DEEP)} deep files exits cleanly ({rc}: {err[-300:]})")
cleanup(root)

files = dict(DEEP)
files["py/letters.py"] = "LETTERS = abcTODO(sculpt)\n"
root = make_repo(files)
rc, out, err = batch("--holes", "--write", "--model", M, root)
check(rc == 0, f"batch --holes --write beside deep files exits 0 ({rc}: {err[-300:]})")
check(read(root, "py/letters.py") == f"LETTERS = abc{FILL}\n", "the hole beside them is filled")
check(all(read(root, rel) == text for rel, text in DEEP.items()), "the deep files are unchanged")

# A compiler's diagnostic inside a deep file: an answer, and no change that
# the engine's checks did not pass.
rc, out, err = batch("--diagnostics", "-", "--write", "--model", M, root,
                     stdin=f"{os.path.join(root, 'deep_lines.py')}:{N}:1: error: '(' was never "
                           "closed\n")
check(rc in (0, 1) and "Aborted" not in err, f"a diagnostic in a deep file is answered ({rc}: "
      f"{err[-300:]})")
check(read(root, "deep_braces.c") == DEEP["deep_braces.c"], "other deep files are unchanged")
cleanup(root)
finish()
