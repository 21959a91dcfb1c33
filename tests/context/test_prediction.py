"""What the cursor is about to use when the line is cut at the cursor (the
user is typing it), on small fixture repositories: `sculpt context
FILE:LINE:COL --json --cut` must show the definition of a name that is
written nowhere near the cursor, found by

  - the words of the code around it (`args = ` predicts expand_args of an
    imported module; `static jv f_keys(...) { return ` predicts jv_keys of
    a header; `raise ` predicts an exception class);
  - what the slot expects of the member access at the cursor (`return c.`
    in a function returning error lists the type's methods that return
    error before its fields; `if c.` its bool members);
  - a Go type's method set spread over its package, each method under the
    path line of its own file;
  - a receiver declared by taking an object apart (`const {options} =
    this;` in TypeScript).

Each check names the retrieval rule that would break it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from ctxtest import check, failures, write

BIN = os.environ["SCULPT_BIN"]


CACHE = tempfile.mkdtemp(prefix="sculpt-predict-cache-")
ENV = dict(os.environ, XDG_CACHE_HOME=CACHE)
made = [CACHE]  # removed at the end


def repo(files):
    root = tempfile.mkdtemp(prefix="sculpt-predict-")
    made.append(root)
    subprocess.run(["git", "init", "-q", root], check=True)
    for rel, text in files.items():
        write(root, rel, text)
    return root


def prompt(root, rel, needle, extra=("--budget", "1024")):
    """The prompt with the cursor just after the first `needle` of rel,
    the rest of that line cut; at the editor's default contextBudget (1024)
    unless extra says otherwise (without --budget, sculpt context fits the
    shipped model's 256-token context, which leaves room for few snippets)."""
    text = open(os.path.join(root, rel)).read()
    at = text.index(needle) + len(needle)
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    p = subprocess.run([BIN, "context", "%s:%d:%d" % (rel, line, col), "--json", "--cut", *extra],
                       cwd=root, capture_output=True, timeout=60, env=ENV)
    if p.returncode != 0:
        print(p.stderr.decode())
        return {"snippets": []}
    return json.loads(p.stdout)


def shown(res, line, path=None):
    """Whether a snippet shows line (stripped), under path when given (its
    own path or a path line above it within the snippet)."""
    for s in res["snippets"]:
        where = s["path"]
        for raw in s["text"].split("\n"):
            t = raw.strip()
            if t.startswith(("// ", "# ")) and ":" in t and " " not in t.split(" ", 1)[1]:
                where = t.split(" ", 1)[1].rsplit(":", 1)[0]
                continue
            if t == line and (path is None or where == path):
                return True
    return False


def texts(res):
    return "\n".join(s["text"] for s in res["snippets"])


def expect(root, rel, needle, line, path, what, extra=("--budget", "1024")):
    """Checks that the prompt after needle (the line cut) shows line under
    path; returns that prompt."""
    res = prompt(root, rel, needle, extra)
    check(shown(res, line, path), "%s: %s" % (what, texts(res)))
    return res


if not shutil.which("git"):
    print("skip: git is needed to list the workspace")
    sys.exit(77)

# Python: the words of the line being written predict a function of an
# imported module; `raise ` predicts an exception class, not a function.
pad = "".join("def helper_%d(x):\n    return x + %d\n\n\n" % (i, i) for i in range(12))
py = repo({
    "app/__init__.py": "",
    "app/util.py": pad + "def expand_args(args, *, user=True):\n    return list(args)\n\n\n"
                   "def render_page(page):\n    return str(page)\n",
    "app/errors.py": pad + "class AppError(Exception):\n    pass\n\n\n"
                     "class MissingConfigError(AppError):\n    pass\n\n\n"
                     "def format_failure(msg):\n    return msg\n",
    "app/main.py": "from . import errors, util\n\n\n"
                   "def run(argv):\n    config = None\n    args = util.expand_args(argv)\n"
                   "    if config is None:\n"
                   "        raise errors.MissingConfigError(errors.format_failure('x'))\n"
                   "    return args\n",
})
expect(py, "app/main.py", "    args = ", "def expand_args(args, *, user=True):", "app/util.py",
       "`args = ` shows expand_args (words of the cursor's line)")
res = expect(py, "app/main.py", "raise ", "class MissingConfigError(AppError):", "app/errors.py",
             "`raise ` shows an exception class")
check(not shown(res, "def format_failure(msg):"),
      "`raise ` guesses classes only, not format_failure: %s" % texts(res))

# C: the enclosing function's name (f_keys) predicts jv_keys of the header.
protos = "".join("jv jv_op_%d(jv);\n" % i for i in range(30))
c = repo({
    "jv.h": "typedef struct { int kind; } jv;\n" + protos + "jv jv_keys(jv);\njv jv_copy(jv);\n",
    "builtin.c": "#include \"jv.h\"\n\nstatic jv f_keys(jv input) {\n"
                 "  return jv_keys(input);\n}\n",
})
expect(c, "builtin.c", "  return ", "jv jv_keys(jv);", "jv.h",
       "`return ` in f_keys shows jv_keys (the function's name)")

# Go: the method set of a type spread over its package, each method under
# its own file's path line; `return c.` in a function returning error lists
# the methods returning error before the type's many fields, `if c.` its
# bool field before string fields that are used more.
fields = "".join("\tOption%d string\n" % i for i in range(40))
uses = "".join("\t_ = c.Option%d\n" % i for i in range(40))
go = repo({
    "go.mod": "module example.com/tool\n\ngo 1.21\n",
    "cmd.go": "package tool\n\nimport \"io\"\n\n// Cmd is a command.\ntype Cmd struct {\n" + fields +
              "\tHidden bool\n}\n\nfunc (c *Cmd) Name() string {\n\treturn \"\"\n}\n\n"
              "func (c *Cmd) Out() io.Writer {\n\treturn nil\n}\n",
    "fish.go": "package tool\n\nimport \"io\"\n\n" +
               "".join("func fishPad%d(alpha%d, beta%d int) int {\n\treturn alpha%d * beta%d\n}\n\n"
                       % ((i,) * 5) for i in range(12)) +
               "func (c *Cmd) GenFishCompletion(w io.Writer) error {\n\treturn nil\n}\n",
    "use.go": "package tool\n\nfunc use(c *Cmd) {\n" + uses + uses + "}\n",
    "run.go": "package tool\n\nfunc run(c *Cmd) error {\n\tif c.Hidden {\n\t\treturn nil\n\t}\n"
              "\treturn c.GenFishCompletion(c.Out())\n}\n",
})
expect(go, "run.go", "\treturn c.", "func (c *Cmd) GenFishCompletion(w io.Writer) error {",
       "fish.go", "`return c.` shows the method returning error under fish.go's path line")
expect(go, "run.go", "\tif c.", "Hidden bool", "cmd.go",
       "`if c.` shows the bool field among 40 string fields")

# TypeScript: `const {options} = this;` gives options the class field's
# type, whose boolean member a condition wants.
members = "".join("\tsetting%d?: string;\n" % i for i in range(40))
ts = repo({
    "src/options.ts": "export interface Options {\n" + members + "\tverbose?: boolean;\n}\n",
    "src/client.ts": "import type {Options} from './options.js';\n\nexport class Client {\n"
                     "\tprivate options: Options;\n\n\tconstructor(options: Options) {\n"
                     "\t\tthis.options = options;\n\t}\n\n\tstart(): void {\n"
                     "\t\tconst {options} = this;\n\t\tif (options.verbose) {\n"
                     "\t\t\tconsole.log('start');\n\t\t}\n\t}\n}\n",
    "src/use.ts": "import type {Options} from './options.js';\n\nexport function use(o: Options) {\n" +
                  "".join("\tconsole.log(o.setting%d, o.setting%d);\n" % (i, i) for i in range(40)) +
                  "}\n",
})
expect(ts, "src/client.ts", "\t\tif (options.", "verbose?: boolean;", "src/options.ts",
       "`if (options.` after `const {options} = this` lists Options' boolean",
       ("--budget", "512"))

for d in made:
    shutil.rmtree(d, ignore_errors=True)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
