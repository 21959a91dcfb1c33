#!/usr/bin/env python3
"""Context evaluation: does the prompt hold the definition the cursor is
about to use?

A case is a cursor placed just before a use of a function, type, field,
macro, method, constant or variable that is defined in another file of the
repository. Cases are found mechanically on real repositories: identifiers
used in file A whose definition the grep-style patterns below find only in
other files (at most three sites), one case per name, seeded. They are
committed as a list (tests/context/recall_cases/*.tsv) so that every run
measures the same cursors.

The patterns know names, not types, so a member use (`x.name`) may match a
same-named member of another type: cobra's `flag.Hidden`, flag a
*pflag.Flag, matched cobra's Command.Hidden. Such a use is not a case when
its receiver's type is known to be another: the receiver chain's first name
is looked up at its nearest declaration in the enclosing blocks (a
parameter, a Go receiver, a var, an annotation, a composite literal, a
constructor or function call, a `with ... as`, a TypeScript `instanceof` on
the same line; self/this is the enclosing class), then each further part
through the repository's own definitions (a field's declared type, a
method's result); the use is dropped when that ends in a type the
repository does not define (a builtin such as Response, URL, str, a type or
module of another package) or, for Python and TypeScript, in a class of the
repository that does not define the member on itself or a base. Where the
type cannot be told (no declaration, `any`, `unknown`, a type alias) the
use is kept. The rule is applied after the seeded shuffles, so the other
cases stay as they were. Some noise remains where lexical rules cannot see
a type (a narrowing by a function: `if (isHTTPError(error)) error.response`).

Halves: each case falls, by a seeded hash of its position (half_of), in the
"tune" half, which retrieval was developed on, or the "check" half, held
out; --halves reports both.

For each case, `sculpt context FILE:LINE:COL --json` (default budget) is
asked for the prompt, in two scenarios:
  intact: the file as it is, the use visible right after the cursor;
  cut:    the cursor's line cut at the cursor (the user is typing it).
A case scores when a snippet from one of the definition's files holds the
definition's first line. The share of scoring cases is reported per
language and scenario, beside:
  grep:   a grep baseline: the identifiers within 20 lines of the cursor,
          nearest first, each looked up with the same definition patterns
          over the other files, every hit's line (path:line: text) added
          until the same snippet budget (a quarter of the budget; tokens
          counted as bytes / the repository's measured bytes per token).
          It uses the very patterns that made the cases, so when the name
          is within reach it finds exactly the expected line: an upper
          bound for a grep, not what a user's grep -w would rank;
  --prev: the same measurement with another binary (the previous release).

    tools/eval/context_recall.py cases REPO --lang c [--n 60] [--seed 1] > cases.tsv
    tools/eval/context_recall.py run CASES.tsv... [--bin build/sculpt] [--prev BIN]
                                 [--budget 1024] [--json OUT] [--monotonic 512,1024,2048]
                                 [--halves] [--half tune|check]

--monotonic B1,B2,... also checks, on every case and scenario, that a larger
budget never drops a definition a smaller one included (a definition moving
into the windows still counts as present).

The repository is copied to a temporary folder (git init there, so that it
is its own work tree); the index cache goes to a temporary XDG_CACHE_HOME.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

EXTS = {"c": (".c", ".h"), "python": (".py",), "go": (".go",), "typescript": (".ts",)}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYWORDS = set("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while bool true false NULL size_t uint8_t uint16_t uint32_t uint64_t int8_t int16_t
int32_t int64_t uintptr_t intptr_t ssize_t FILE
and as assert async await class def del elif except finally from global import in is lambda
nonlocal not or pass raise try with yield None True False self cls print len str list dict set
tuple isinstance super object type range bytes bool float
chan defer fallthrough func go interface map package select string error nil iota make new
append cap copy delete panic recover rune byte any
abstract declare export extends implements instanceof keyof let module namespace private
protected public readonly require this throw typeof undefined var void never unknown number
boolean symbol bigint null get
""".split())
MEMBER_KINDS = {"field", "method"}


# ---- lexing ---------------------------------------------------------------------

def strip_code(text, lang):
    """text with comments blanked and string contents blanked (quotes kept),
    same length and newlines, so that offsets and lines still match."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if lang == "python":
            if c == "#":
                j = text.find("\n", i)
                j = n if j < 0 else j
                blank(i, j)
                i = j
                continue
            if c in "'\"":
                q3 = text[i:i + 3]
                if q3 in ('"""', "'''"):
                    j = text.find(q3, i + 3)
                    j = n if j < 0 else j + 3
                    blank(i + 3, max(i + 3, j - 3))
                    i = j
                    continue
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                blank(i + 1, min(j, n))
                i = j + 1
                continue
        else:
            if text.startswith("//", i):
                j = text.find("\n", i)
                j = n if j < 0 else j
                blank(i, j)
                i = j
                continue
            if text.startswith("/*", i):
                j = text.find("*/", i + 2)
                j = n if j < 0 else j + 2
                blank(i, j)
                i = j
                continue
            if c in "'\"`" and not (lang == "go" and c == "'" and False):
                j = i + 1
                while j < n and text[j] != c and (c == "`" or text[j] != "\n"):
                    j += 2 if text[j] == "\\" and c != "`" else 1
                blank(i + 1, min(j, n))
                i = j + 1
                continue
        i += 1
    return "".join(out)


def line_starts(text):
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


class Site:
    __slots__ = ("path", "line", "kind", "scope")

    def __init__(self, path, line, kind, scope=None):
        self.path, self.line, self.kind, self.scope = path, line, kind, scope


# ---- definitions, as grep patterns over lines with a little bracket context ------

def _openers(code, lang):
    """For each line (0-based), the kind of the innermost open bracket at its
    start and the text that opened it. Kinds: struct, enum, class, interface,
    block (const/var/type groups), func, init, other; transparent brackets
    (extern "C", namespaces) are skipped."""
    stack, per_line, head_start = [], [], 0
    line_ctx = []
    i, n = 0, len(code)
    line_ctx.append(None)
    while i < n:
        c = code[i]
        if c == "\n":
            line_ctx.append(stack[-1] if stack else None)
        elif c in "{(" and (c == "{" or lang == "go"):
            head = code[head_start:i]
            if c == "(":
                hl = head.strip().split("\n")[-1].strip()
                kind = "block" if re.fullmatch(r"(const|var|type)", hl) else None
                stack.append((kind or "paren", hl))
                head_start = i + 1
                i += 1
                continue
            h = " ".join(head.split())
            if re.search(r'\bextern\s*"|\bnamespace\b|\bdeclare\s+global\b', h):
                kind = "transparent"
            elif "=" in h and lang in ("c", "typescript") and not re.search(r"\btype\s+\w+[^=]*=\s*$", h):
                kind = "init"
            elif re.search(r"\benum\b", h):
                kind = "enum"
            elif lang == "go" and re.search(r"\binterface\s*$", h):
                kind = "interface"
            elif lang == "go" and re.search(r"\bstruct\s*$", h):
                kind = "struct"
            elif lang == "c" and re.search(r"\b(struct|union)\b", h) and "(" not in h:
                kind = "struct"
            elif lang == "typescript" and re.search(r"\bclass\b", h):
                kind = "class"
            elif lang == "typescript" and re.search(r"\binterface\b|\btype\s+\w+[^=]*=\s*$", h):
                kind = "interface"
            elif "(" in h or re.search(r"\b(if|else|for|while|do|switch|try|finally|func)\b", h):
                kind = "func"
            else:
                kind = "other"
            stack.append((kind, h))
            head_start = i + 1
        elif c in "})" and (c == "}" or lang == "go"):
            if stack:
                stack.pop()
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
        elif c == "#" and lang == "c" and (i == 0 or code[i - 1] == "\n"):
            j = code.find("\n", i)
            while j > 0 and code[j - 1] == "\\":
                j = code.find("\n", j + 1)
            j = n if j < 0 else j
            for k in range(i, j):
                if code[k] == "\n":
                    line_ctx.append(stack[-1] if stack else None)
            i = j
            head_start = j
            continue
        i += 1
    # Kind of the innermost bracket that is not transparent.
    res = []
    for ctx in line_ctx:
        res.append(ctx)
    return res, stack


def find_defs_c(path, code, sites):
    lines = code.split("\n")
    ctx, _ = _openers(code, "c")
    # Statement-level scan at top level, fields and enumerators in their bodies.
    stmt, stmt_line = "", 0
    depth_kinds = []
    in_macro = False
    for ln, text in enumerate(lines):
        c = ctx[ln] if ln < len(ctx) else None
        kind = c[0] if c else None
        s = text.strip()
        was_macro, in_macro = in_macro, text.endswith("\\") and (in_macro or s.startswith("#"))
        if was_macro:
            continue
        m = re.match(r"#\s*define\s+(\w+)", s)
        if m:
            sites.append(Site(path, ln + 1, "macro"))
            continue
        if s.startswith("#"):
            continue
        if kind in (None, "transparent"):
            if not stmt:
                stmt_line = ln
            stmt += " " + text
            # A top-level statement ends at ; or {.
            if re.search(r"[;{]", text):
                head = re.split(r"[;{]", stmt)[0]
                _c_toplevel(path, stmt_line, lines, head, stmt, sites)
                stmt = ""
            continue
        stmt = ""
        if kind == "struct":
            m = re.match(r"^\s*(?:[A-Za-z_][\w\s\*]*?[\s\*])(\w+)\s*(?:\[[^\]]*\]\s*)*(?::\s*\d+\s*)?[;,]", text)
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", text)
            if fp:
                sites.append(Site(path, ln + 1, "field", c[1]))
            elif m and not re.match(r"\s*(struct|union|enum)\s+\w+\s*$", text):
                sites.append(Site(path, ln + 1, "field", c[1]))
        elif kind == "enum":
            m = re.match(r"^\s*([A-Za-z_]\w*)\s*(=[^,]*)?,?\s*$", text)
            if m:
                sites.append(Site(path, ln + 1, "constant", c[1]))
    # typedef'd anonymous structs: "} name;" closes a typedef body.
    for ln, text in enumerate(lines):
        m = re.match(r"^\}\s*(\w+)\s*;", text)
        if m:
            sites.append(Site(path, ln + 1, "type"))


def _c_toplevel(path, first_line, lines, head, stmt, sites):
    h = " ".join(head.split())
    if not h:
        return
    # The line of the statement where a name sits.
    def line_of(name):
        for k in range(first_line, min(first_line + 30, len(lines))):
            if re.search(r"\b%s\b" % re.escape(name), lines[k]):
                return k + 1
        return first_line + 1
    if h.startswith("typedef"):
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", h)
        if fp:
            sites.append(Site(path, line_of(fp.group(1)), "type"))
            return
        m = re.match(r"typedef\s+(?:struct|union|enum)\s+(\w+)\s*$", h)
        if m:  # typedef struct X { ...
            sites.append(Site(path, line_of(m.group(1)), "type"))
            return
        m = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", h)
        if m and ";" in stmt.split("{")[0]:
            sites.append(Site(path, line_of(m.group(1)), "type"))
        return
    m = re.match(r"^(?:static\s+|extern\s+)?(struct|union|enum)\s+(\w+)\s*$", h)
    if m and "{" in stmt:
        sites.append(Site(path, line_of(m.group(2)), "type"))
        return
    if "=" in h.split("(")[0]:
        m = re.match(r"^(?:[\w\*]+\s+|\*\s*)+?\**\s*(\w+)\s*(?:\[[^\]]*\])*\s*=", h)
        if m and m.group(1) not in KEYWORDS:
            sites.append(Site(path, line_of(m.group(1)), "variable"))
        return
    m = re.search(r"\b([A-Za-z_]\w*)\s*\(", h)
    if m:
        before = h[:m.start()].strip()
        name = m.group(1)
        if name in KEYWORDS or name.startswith("__attribute"):
            return
        # A type before the name (or the name first, its type on the line above).
        if before and not re.search(r"[=,()]", before) or not before:
            sites.append(Site(path, line_of(name), "function"))
        return
    m = re.match(r"^(?:[\w\*]+\s+|\*\s*)+\**\s*(\w+)\s*(?:\[[^\]]*\])*$", h)
    if m and m.group(1) not in KEYWORDS and ";" in stmt and "{" not in stmt:
        sites.append(Site(path, line_of(m.group(1)), "variable"))


def find_defs_python(path, code, sites):
    lines = code.split("\n")
    stack = []  # (indent, kind, name)
    depth = 0
    for ln, text in enumerate(lines):
        s = text.strip()
        start_depth = depth
        depth += text.count("(") + text.count("[") + text.count("{")
        depth -= text.count(")") + text.count("]") + text.count("}")
        depth = max(depth, 0)
        if not s or start_depth > 0:
            continue
        indent = len(text) - len(text.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        top = stack[-1] if stack else None
        m = re.match(r"(?:async\s+)?def\s+(\w+)", s)
        if m:
            in_class = top is not None and top[1] == "class"
            sites.append(Site(path, ln + 1, "method" if in_class else "function",
                              top[2] if in_class else None))
            stack.append((indent, "def", m.group(1)))
            continue
        m = re.match(r"class\s+(\w+)", s)
        if m:
            sites.append(Site(path, ln + 1, "class"))
            stack.append((indent, "class", m.group(1)))
            continue
        if top is None or top[1] == "class":
            m = re.match(r"([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::[^=]+)?=(?!=)", s) or \
                re.match(r"([A-Za-z_]\w*)\s*:\s*[^=]+$", s)
            if m:
                kind = "field" if top else "variable"
                sites.append(Site(path, ln + 1, kind, top[2] if top else None))
            continue
        if top[1] == "def":
            owner = next((e for e in reversed(stack) if e[1] == "class"), None)
            m = re.match(r"self\.(\w+)\s*(?::[^=]+)?=(?!=)", s)
            if m and owner:
                sites.append(Site(path, ln + 1, "field", owner[2]))


def find_defs_go(path, code, sites):
    lines = code.split("\n")
    ctx, _ = _openers(code, "go")
    for ln, text in enumerate(lines):
        c = ctx[ln] if ln < len(ctx) else None
        kind = c[0] if c else None
        if kind is None:
            m = re.match(r"func\s+(?:\(\s*\w*\s*\*?\s*(\w+)[^)]*\)\s*)?(\w+)", text)
            if m:
                sites.append(Site(path, ln + 1, "method" if m.group(1) else "function",
                                  m.group(1)))
                continue
            m = re.match(r"type\s+(\w+)", text)
            if m:
                sites.append(Site(path, ln + 1, "type"))
                continue
            m = re.match(r"(?:const|var)\s+(\w+)", text)
            if m:
                sites.append(Site(path, ln + 1, "variable"))
            continue
        if kind == "block":
            m = re.match(r"\s+([A-Za-z_]\w*)\b", text)
            if m and not text.strip().startswith(")"):
                k = "type" if c[1] == "type" else "variable"
                sites.append(Site(path, ln + 1, k))
        elif kind == "struct":
            if re.match(r"\s+[A-Za-z_]\w*(\s*,\s*\w+)*\s+[^\s/]", text):
                sites.append(Site(path, ln + 1, "field", _go_type_name(c[1])))
        elif kind == "interface":
            if re.match(r"\s+[A-Za-z_]\w*\s*\(", text):
                sites.append(Site(path, ln + 1, "method", _go_type_name(c[1])))


def _go_type_name(head):
    m = re.search(r"\btype\s+(\w+)", head)
    return m.group(1) if m else None


def find_defs_typescript(path, code, sites):
    lines = code.split("\n")
    ctx, _ = _openers(code, "typescript")
    for ln, text in enumerate(lines):
        c = ctx[ln] if ln < len(ctx) else None
        kind = c[0] if c else None
        s = text.strip()
        if kind in (None, "transparent"):
            m = re.match(r"(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?"
                         r"(?:function\*?\s+(\w+)|(?:abstract\s+)?class\s+(\w+)|"
                         r"(interface|type|enum|namespace)\s+(\w+)|(?:const|let|var)\s+(\w+))", s)
            if m:
                if m.group(1):
                    sites.append(Site(path, ln + 1, "function"))
                elif m.group(2):
                    sites.append(Site(path, ln + 1, "class"))
                elif m.group(4):
                    sites.append(Site(path, ln + 1, "type"))
                elif m.group(5):
                    sites.append(Site(path, ln + 1, "variable"))
            continue
        if kind == "class":
            m = re.match(r"(?:(?:public|private|protected|static|readonly|declare|override|"
                         r"abstract|async|get|set|accessor)\s+)*#?([A-Za-z_]\w*)\s*[?!]?\s*([(:=<;])", s)
            if m and m.group(1) not in ("constructor", "if", "for", "while", "return"):
                k = "method" if m.group(2) in "(<" else "field"
                sites.append(Site(path, ln + 1, k, _ts_type_name(c[1])))
        elif kind == "interface":
            m = re.match(r"(?:readonly\s+)?([A-Za-z_]\w*)\s*\??\s*([:(<])", s)
            if m:
                k = "method" if m.group(2) in "(<" else "field"
                sites.append(Site(path, ln + 1, k, _ts_type_name(c[1])))
        elif kind == "enum":
            m = re.match(r"([A-Za-z_]\w*)\s*(=|,|$)", s)
            if m:
                sites.append(Site(path, ln + 1, "constant"))


def _ts_type_name(head):
    m = re.search(r"\b(?:class|interface|type)\s+(\w+)", head)
    return m.group(1) if m else None


FINDERS = {"c": find_defs_c, "python": find_defs_python, "go": find_defs_go,
           "typescript": find_defs_typescript}


def load_repo(repo, lang):
    files = {}
    for dp, dn, fn in os.walk(repo):
        dn[:] = sorted(d for d in dn if not d.startswith("."))
        for f in sorted(fn):
            if f.endswith(EXTS[lang]) and not f.endswith(".d.ts"):
                p = os.path.join(dp, f)
                try:
                    files[os.path.relpath(p, repo)] = open(p, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    pass
    return files


def definitions(files, lang):
    """name -> [Site]: every definition the patterns find, keyed by the name
    on the site's line (the first identifier the pattern captured)."""
    by_name = {}
    for path, text in files.items():
        code = strip_code(text, lang)
        sites = []
        FINDERS[lang](path, code, sites)
        lines = code.split("\n")
        for s in sites:
            name = _site_names(lines[s.line - 1], s.kind, lang)
            for nm in name:
                by_name.setdefault(nm, []).append(s)
    return by_name


def _site_names(line, kind, lang):
    t = line.strip()
    if kind == "macro":
        m = re.match(r"#\s*define\s+(\w+)", t)
        return [m.group(1)] if m else []
    if lang == "c":
        if kind == "function":
            m = re.search(r"\b([A-Za-z_]\w*)\s*\(", t)
            return [m.group(1)] if m else []
        if kind == "field":
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", t)
            if fp:
                return [fp.group(1)]
            names = re.findall(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?::\s*\d+\s*)?(?=[;,])", t)
            return names
        if kind == "constant":
            return [re.match(r"(\w+)", t).group(1)]
        if kind == "type":
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", t)
            if fp:
                return [fp.group(1)]
            m = re.match(r"^\}\s*(\w+)\s*;", t) or re.search(r"(?:struct|union|enum)\s+(\w+)\s*\{?\s*$", t) \
                or re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*;\s*$", t)
            return [m.group(1)] if m else []
        if kind == "variable":
            m = re.search(r"(\w+)\s*(?:\[[^\]]*\])*\s*(?:=|;)", t)
            return [m.group(1)] if m else []
    if lang == "python":
        if kind in ("function", "method"):
            return [re.match(r"(?:async\s+)?def\s+(\w+)", t).group(1)]
        if kind == "class":
            return [re.match(r"class\s+(\w+)", t).group(1)]
        if kind == "field" and t.startswith("self."):
            return [re.match(r"self\.(\w+)", t).group(1)]
        m = re.match(r"([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)", t)
        return [x.strip() for x in m.group(1).split(",")] if m else []
    if lang == "go":
        if kind in ("function", "method") and t.startswith("func"):
            m = re.match(r"func\s+(?:\([^)]*\)\s*)?(\w+)", t)
            return [m.group(1)] if m else []
        m = re.match(r"(?:type|const|var)\s+(\w+)", t)
        if m:
            return [m.group(1)]
        m = re.match(r"([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)", t)
        return [x.strip() for x in m.group(1).split(",")] if m else []
    if lang == "typescript":
        m = re.match(r"(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?"
                     r"(?:function\*?\s+|(?:abstract\s+)?class\s+|(?:interface|type|enum|namespace)\s+|"
                     r"(?:const|let|var)\s+)(\w+)", t)
        if m and kind not in MEMBER_KINDS:
            return [m.group(1)]
        m = re.match(r"(?:(?:public|private|protected|static|readonly|declare|override|abstract|"
                     r"async|get|set|accessor)\s+)*#?([A-Za-z_]\w*)", t)
        return [m.group(1)] if m else []
    return []


# ---- cases --------------------------------------------------------------------------

IMPORT_LINE = {
    "c": re.compile(r"^\s*#\s*include"),
    "python": re.compile(r"^\s*(import|from)\s"),
    "go": re.compile(r'^\s*(import\b|"[^"]*"\s*$|\w+\s+"[^"]*"\s*$)'),
    "typescript": re.compile(r"^\s*(import|export\s+(\*|\{[^}]*\}|type\s*\{[^}]*\})\s*from)\b|^\s*\w+,\s*$|^\s*\}\s*from\s"),
}


IMPORT_SPAN = {
    "c": None,
    "python": re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t]*\([^)]*\)", re.M),
    "go": re.compile(r"^[ \t]*import[ \t]*\([^)]*\)", re.M),
    "typescript": re.compile(r"^[ \t]*(?:import|export)\b[^;'\"`]*?\bfrom[ \t]*['\"][^'\"]*['\"]",
                             re.M),
}


def import_lines(code, lang):
    """The 0-based lines inside import statements that span several lines
    (`from x import (\n a,\n)`, `export {\n A,\n} from './a'`): a name
    listed there is imported, not used."""
    pat = IMPORT_SPAN[lang]
    out = set()
    if not pat:
        return out
    for m in pat.finditer(code):
        a = code.count("\n", 0, m.start())
        b = code.count("\n", 0, m.end())
        out.update(range(a, b + 1))
    return out


def binds_locally(code, name, lang):
    """Whether file code binds name itself (a local, a parameter, an import
    alias): a use there may not mean the other file's definition."""
    e = re.escape(name)
    pats = {
        "c": [r"\b[A-Za-z_]\w*\s*\**\s*\b%s\s*(\[[^\]]*\]\s*)*[;=,)]" % e],
        "python": [r"\b%s\s*(:[^=\n]*)?=(?!=)" % e, r"\bfor\s+[\w, ]*\b%s\b" % e,
                   r"\bas\s+%s\b" % e, r"def\s+\w+\s*\([^)]*\b%s\b" % e, r"\blambda\b[^:]*\b%s\b" % e],
        "go": [r"\b%s\s*(,\s*\w+\s*)*:=" % e, r"\b\w+\s*,\s*%s\s*:=" % e, r"\bvar\s+%s\b" % e,
               r"\(\s*([\w\s,*.\[\]]*,\s*)?%s\s+[\w*\[\].]+" % e, r"\bfor\s+[\w, ]*\b%s\b" % e],
        "typescript": [r"\b(const|let|var)\s+[^=;]*\b%s\b" % e, r"[(,]\s*%s\s*[?:,)=]" % e,
                       r"\bcatch\s*\(\s*%s\b" % e, r"\b%s\s*=>" % e],
    }[lang]
    return any(re.search(p, code) for p in pats)


# ---- receivers: a member case must be a member of the repository's type --------------
#
# The definition patterns know names, not types: `flag.Hidden` where flag is a
# *pflag.Flag matches cobra's own Command.Hidden field, though the use means
# pflag's. A member use is kept as a case only when its receiver's type is not
# known to be another one: the receiver chain's first name is looked up in the
# file (its nearest declaration above the use: a parameter, a Go receiver, a
# var, an annotation, a composite literal or constructor call, a C declarator),
# then each further part through the repository's own field and method
# definitions (a field's declared type, a method's result). When that gives a
# type the repository does not define (a builtin such as Response or unknown,
# or a Go type of another module's package), the case is dropped; when the
# type cannot be told, or is the repository's, it is kept.

UNTYPED = {"any", "unknown", "object", "Any", "t.Any", "typing.Any", "interface{}"}
GO_BUILTIN_TYPES = set("""bool byte complex64 complex128 error float32 float64 int int8 int16
int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr any""".split())


def receiver_chain(pre):
    """The parts of the receiver chain that ends pre (pre ends with '.' or
    '->'), first to last, each (name, is_call); None when it is not a plain
    chain of names and calls."""
    i = len(pre) - (2 if pre.endswith("->") else 1)
    parts = []
    while True:
        call = False
        if i > 0 and pre[i - 1] == ")":
            depth = 0
            j = i
            while j > 0:
                j -= 1
                if pre[j] == ")":
                    depth += 1
                elif pre[j] == "(":
                    depth -= 1
                    if depth == 0:
                        break
            if depth:
                return None
            i = j
            call = True
        e = i
        while i > 0 and (pre[i - 1].isalnum() or pre[i - 1] in "_#"):
            i -= 1
        if i == e:
            return None
        parts.append((pre[i:e].lstrip("#"), call))
        if pre[i - 2:i] in ("?.", "->"):
            i -= 2
        elif i > 0 and pre[i - 1] == ".":
            i -= 1
        else:
            break
    parts.reverse()
    return parts


def _clean_type(t, lang):
    """The type name a declaration's type text names (pointer, optional,
    quotes dropped), or None for a composite (slice, map, function)."""
    t = t.strip().strip("\"'")
    # Wrappers whose members are their argument's: Partial<X>, Optional[X].
    while True:
        m = re.match(r"(?:\w+\.)?(Partial|Required|Readonly|NonNullable|Omit|Pick|Optional|"
                     r"Final|ClassVar|Annotated)\s*[<\[]\s*(.*)", t)
        if not m:
            break
        t = m.group(2)
    if t in UNTYPED or re.match(r"(typeof|keyof)\b", t):
        return None  # untyped, or the type of a value: not told here
    if lang == "go":
        t = t.lstrip("*&")
        if t.startswith(("[", "map[", "func", "chan", "struct", "interface")):
            return None
    if lang == "c":
        t = t.replace("struct ", "").replace("const ", "").strip()
    m = re.match(r"[A-Za-z_][\w.]*", t)
    return m.group(0) if m else None


def _decl_type(lines, upto, name, lang):
    """The type text of the nearest declaration of name in lines[:upto + 1]
    (the use's own line included, left of the use) and its line, or None
    and None. A Go `x := f(...)` gives "f(" (its line holds the rest)."""
    e = re.escape(name)
    pats = {
        "go": [r"func\s*\(\s*%s\s+\*?([\w.]+)\s*\)" % e,
               r"[(,]\s*%s\s+(\*?[\w.]+)" % e,
               r"\bvar\s+%s\s+(\*?[\w.]+)" % e,
               r"\b%s\s*:=\s*&?([\w.]+)\{" % e,
               r"\b%s\s*(?:,\s*\w+\s*)*:=\s*([\w.]+\()" % e],
        "typescript": [r"(?:^|[(,]|\b(?:const|let|var|readonly|private|public|protected))\s*"
                       r"#?%s\s*\??:\s*((?:typeof\s+|keyof\s+)?[\w.]+(?:\s*<[\w.<]+)?)" % e,
                       r"\b%s\s*=\s*new\s+([\w.]+)" % e],
        "python": [r"(?:^|[(,])\s*%s\s*:\s*([\"']?[\w.]+(?:\[[\w.\[]+)?)" % e,
                   r"^\s*%s\s*=\s*([\w.]+\()" % e,
                   r"\bwith\s+([\w.]+\().*\bas\s+%s\s*:" % e],
        "c": [r"\b((?:struct\s+)?\w+)\s*\*+\s*%s\s*[;,)=\[]" % e,
              r"\b((?:struct\s+)?\w+)\s+%s\s*[;,)=\[]" % e],
    }[lang]
    # Upwards through the enclosing blocks only, to the head of the function
    # around the use (its parameters are on it); file scope when there is none.
    level = _indent(lines[upto])
    for ln in range(upto, max(-1, upto - 2000), -1):
        text = lines[ln]
        for p in pats:
            m = re.search(p, text)
            if m:
                return m.group(1), ln
        if not text.strip() or ln == upto:
            continue
        ind = _indent(text)
        if ind >= level:
            continue
        level = ind
        if _function_head(text, lang):
            break
    return None, None


def _indent(text):
    return len(text) - len(text.lstrip())


def _function_head(text, lang):
    """Whether a line opens a named function (the end of a declaration's
    scope; a closure sees the variables around it, so its head is not)."""
    t = text.strip()
    if lang == "python":
        return re.match(r"(?:async\s+)?def\s|class\s", t) is not None
    if lang == "go":
        return t.startswith("func ")
    if re.match(r"(?:\}\s*)?(?:else|if|for|while|switch|catch|do|try|finally|case|default|"
                r"return)\b", t) or "=>" in t or re.search(r"\bfunction\s*\(", t):
        return False
    return "(" in t and t.endswith("{")


def foreign_modules(files, path, lang, module):
    """The names a file binds to modules that are not the repository's: Go
    packages of other modules, Python modules that are no file or package of
    the repository, TypeScript bare specifiers."""
    text = files[path]
    if lang == "go":
        return _go_foreign_packages(text, module)
    out = set()
    if lang == "python":
        tops = {p.split("/")[0] for p in files} | {p.split("/")[1] for p in files if "/" in p and
                                                   p.split("/")[0] == "src"}
        tops |= {os.path.splitext(os.path.basename(p))[0] for p in files}
        for m in re.finditer(r"^\s*import\s+([\w.]+)(?:\s+as\s+(\w+))?", text, re.M):
            if m.group(1).split(".")[0] not in tops:
                out.add(m.group(2) or m.group(1).split(".")[0])
        for m in re.finditer(r"^\s*from\s+(\w[\w.]*)\s+import\s+([\w, ]+)", text, re.M):
            if m.group(1).split(".")[0] not in tops:
                out |= {x.split()[-1] for x in m.group(2).split(",") if x.strip()}
    elif lang == "typescript":
        for m in re.finditer(r"^\s*import\s+(?:type\s+)?([^;]*?)\s+from\s+['\"]([^'\"]+)['\"]",
                             text, re.M):
            if not m.group(2).startswith("."):
                out |= set(re.findall(r"\w+", m.group(1).replace(" as ", " "))) - {"type"}
    return out


def _enclosing_class(lines, upto, lang):
    """The class around line upto (Python by indentation, TypeScript the
    nearest class head above), or None."""
    if lang == "python":
        ind = len(lines[upto]) - len(lines[upto].lstrip())
        for ln in range(upto, -1, -1):
            t = lines[ln]
            if not t.strip():
                continue
            i = len(t) - len(t.lstrip())
            m = re.match(r"\s*class\s+(\w+)", t)
            if m and i < ind:
                return m.group(1)
            if i < ind:
                ind = i
        return None
    if lang == "typescript":
        for ln in range(upto, -1, -1):
            m = re.match(r"\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(\w+)",
                         lines[ln])
            if m:
                return m.group(1)
    return None


def _go_foreign_packages(text, module):
    """Import names of a Go file that are not packages of the module."""
    out = set()
    for m in re.finditer(r'^\s*(?:import\s+)?(?:(\w+)\s+)?"([^"]+)"', text, re.M):
        path = m.group(2)
        if module and (path == module or path.startswith(module + "/")):
            continue
        out.add(m.group(1) or path.rsplit("/", 1)[-1])
    return out


def _member_type(defs, files, owner, part, call, lang):
    """The type a member of owner (a field's declared type, a method's
    result) has, from its definition in the repository, and the file that
    defines it (its imports name the type's package); None when the
    repository does not define it on owner or the type cannot be told;
    "" when it is defined there but its type is not a plain name."""
    for s in defs.get(part, []):
        if s.kind not in MEMBER_KINDS or s.scope is None:
            continue
        if _scope_name(s.scope, lang) != owner:
            continue
        text = files[s.path].split("\n")[s.line - 1].strip()
        e = re.escape(part)
        if lang == "go":
            if call:
                m = re.search(r"\b%s\s*\([^)]*\)\s*\(?\s*(\*?[\w.]+)" % e, text)
            else:
                m = re.search(r"^%s\s+(\*?[\w.]+)" % e, text)
        elif lang == "typescript":
            m = re.search(r"\b%s\s*\??\s*(?:\([^)]*\))?\s*:\s*([\w.]+)" % e, text)
        elif lang == "python":
            m = re.search(r"->\s*([\"']?[\w.]+)", text) if call else \
                re.search(r"\b%s\s*:\s*([\"']?[\w.]+)" % e, text)
        else:
            m = re.search(r"((?:struct\s+)?\w+)\s*\**\s*\b%s\b" % e, text)
        return (m.group(1), s.path) if m else ("", s.path)
    return None, None


def _scope_name(scope, lang):
    if scope is None:
        return None
    m = re.search(r"\b(?:struct|union|class|interface|type)\s+(\w+)", scope)
    return m.group(1) if m else scope.strip()


def foreign_receiver(files, defs, repo_types, path, line, pre, lang, module, member_name):
    """Whether the member use member_name after pre (line `line`, 1-based,
    of path) has a receiver whose type is known not to be the repository's,
    or (Python, TypeScript) a repository class that does not define it."""
    parts = receiver_chain(pre)
    if not parts:
        return False
    lines = strip_code(files[path], lang).split("\n")
    lines = lines[:line - 1] + [pre]
    foreign = foreign_modules(files, path, lang, module)

    def verdict(t, where=None):
        """(True: another's, False: the repository's, None: cannot tell;
        the type's name). where: the file the type is written in, when not
        the use's (its imports say what a package name means)."""
        t = _clean_type(t, lang) if t else None
        if not t:
            return None, None
        name = t.rsplit(".", 1)[-1]
        if lang == "go" and "." in t:
            pkg = t.split(".", 1)[0]
            there = foreign if where in (None, path) else \
                foreign_modules(files, where, lang, module)
            return (True if pkg in there else (False if name in repo_types else None)), name
        if lang == "go":
            return (t in GO_BUILTIN_TYPES), name
        return (name not in repo_types), name

    def chain(parts, upto, depth):
        """The verdict on the type of the chain parts (first to last)."""
        first, call = parts[0]
        where = None
        if depth > 3:
            return None, None
        if first in ("self", "cls", "this") and not call:
            t = _enclosing_class(lines, upto, lang)
        elif first == "super":
            return None, None
        elif first in foreign and lang != "go":
            return True, None  # a member of another package's module
        elif call:
            if lang == "go" and first in foreign:
                return None, None
            t = None
            for s in defs.get(first, []):
                if s.kind == "function":
                    m = re.search(r"\)\s*(?:->|:)?\s*\(?\s*([\"']?\*?[\w.]+)",
                                  files[s.path].split("\n")[s.line - 1])
                    t = m.group(1) if m else None
                    where = s.path
                    break
        elif lang == "go" and first in foreign:
            # pkg.F(...) or pkg.V: another module's package.
            return True, None
        else:
            t, dl = _decl_type(lines, upto, first, lang)
            # A narrowing on the use's own line: `x instanceof T && x.m`.
            m = re.search(r"\b%s\s+instanceof\s+([\w.]+)" % re.escape(first), lines[upto])
            if lang == "typescript" and m:
                t, dl = m.group(1), upto
            if t and t.endswith("("):  # x := chain(...): that chain's type
                e = re.escape(first)
                m = re.search(r"\b%s\s*(?:,\s*\w+\s*)*:=\s*(.*)$" % e if lang == "go" else
                              r"^\s*%s\s*=\s*(.*)$" % e, lines[dl]) or \
                    re.search(r"\bwith\s+(.*?)\s+as\s+%s\s*:" % e, lines[dl])
                inner = receiver_chain(m.group(1).rstrip() + ".") if m else None
                if not inner or inner[-1][1] is False:
                    return None, None
                return chain(inner, dl - 1, depth + 1)
        v, owner = verdict(t, where)
        for part, pcall in parts[1:]:
            if v is not False:
                return v, owner
            mt, where = _member_type(defs, files, owner, part, pcall, lang)
            if not mt:
                return None, None
            v, owner = verdict(mt, where)
        return v, owner

    v, owner = chain(parts, len(lines) - 1, 0)
    if v is False and owner and lang in ("python", "typescript"):
        # The repository's class: the member must be its own or a repository
        # base's (self.flush() in a subclass of io.RawIOBase is io's).
        return _has_member(defs, files, owner, member_name, lang, set()) is False
    return v is True


def _has_member(defs, files, owner, name, lang, seen):
    """Whether the repository defines name on class owner or on one of the
    bases its head names (those the repository defines); None when that
    cannot be told (a TypeScript type alias: `type A = B & Omit<C, 'x'>`,
    `Mutable<T>`)."""
    if owner in seen or len(seen) > 8:
        return False
    seen.add(owner)
    if any(s.kind in MEMBER_KINDS and _scope_name(s.scope, lang) == owner
           for s in defs.get(name, [])):
        return True
    told = False
    for s in defs.get(owner, []):
        if s.kind not in ("class", "type"):
            continue
        head = files[s.path].split("\n")[s.line - 1]
        if re.search(r"\btype\s+\w+", head) and "=" in head:
            return None
        told = True
        if lang == "python":
            m = re.search(r"class\s+\w+\s*\((.*)\)", head)
            bases = re.findall(r"(?:\w+\.)*(\w+)", m.group(1)) if m else []
        else:
            m = re.search(r"\b(?:extends|implements)\s+([^{]*)", head)
            bases = re.findall(r"(\w+)(?:<[^>]*>)?", m.group(1)) if m else []
        for b in bases:
            if b in ("extends", "implements", "metaclass"):
                continue
            h = _has_member(defs, files, b, name, lang, seen)
            if h is not False:
                return h
    return False if told else None


def go_module(repo):
    try:
        m = re.search(r"^module\s+(\S+)", open(os.path.join(repo, "go.mod")).read(), re.M)
        return m.group(1) if m else None
    except OSError:
        return None


def find_cases(repo, lang, n, seed, dropped=None):
    """dropped, when a list, receives the member uses left out because their
    receiver is another's type (see foreign_receiver)."""
    files = load_repo(repo, lang)
    defs = definitions(files, lang)
    repo_types = {nm for nm, ss in defs.items()
                  if any(x.kind in ("type", "class") for x in ss)}
    module = go_module(repo) if lang == "go" else None
    eligible = {}  # name -> [(path, line, col, kind, sites, foreign)]
    for path, text in sorted(files.items()):
        code = strip_code(text, lang)
        lines = code.split("\n")
        own = {}
        in_import = import_lines(code, lang)
        for ln, t in enumerate(lines):
            if IMPORT_LINE[lang].search(t) or ln in in_import:
                continue
            for m in IDENT.finditer(t):
                name = m.group(0)
                if len(name) < 3 or name in KEYWORDS:
                    continue
                sites = defs.get(name)
                if not sites or len(sites) > 3:
                    continue
                if any(s.path == path for s in sites):
                    continue
                pre = t[:m.start()]
                member = pre.endswith(".") or pre.endswith("->")
                kinds = {s.kind for s in sites}
                if lang == "go" and member:
                    recv = re.search(r"(\w+)\.$", pre)
                    if recv and re.search(r'^\s*(import\s+)?(\w+\s+)?"[^"]*/%s"' % recv.group(1),
                                          text, re.M):
                        member = False  # a package-qualified name
                if member and not kinds & MEMBER_KINDS:
                    continue
                if not member and kinds <= MEMBER_KINDS:
                    continue
                if not member:
                    key = (path, name)
                    if key not in own:
                        own[key] = binds_locally(code, name, lang)
                    if own[key]:
                        continue
                if m.start() < len(t) - len(t.lstrip()):
                    continue
                use = [s for s in sites if (s.kind in MEMBER_KINDS) == member] or sites
                kind = sorted({s.kind for s in use})[0]
                foreign = member and foreign_receiver(files, defs, repo_types, path, ln + 1,
                                                      pre, lang, module, name)
                eligible.setdefault(name, []).append((path, ln + 1, m.start() + 1, kind,
                                                     ["%s:%d" % (s.path, s.line) for s in use],
                                                     foreign))
    rng = random.Random(seed)
    names = sorted(eligible)
    rng.shuffle(names)
    cases, seen_lines = [], set()
    for name in names:
        opts = eligible[name]
        rng.shuffle(opts)
        for path, line, col, kind, sites, foreign in opts:
            if (path, line) in seen_lines:
                continue
            if foreign:  # after the shuffles, so that the other cases stay the same
                if dropped is not None:
                    dropped.append((path, line, col, name))
                continue
            seen_lines.add((path, line))
            # Columns are bytes for sculpt: convert from characters.
            raw = files[path].split("\n")[line - 1]
            bcol = len(raw[:col - 1].encode("utf-8")) + 1
            cases.append((path, line, bcol, name, kind, sites))
            break
        if len(cases) >= n:
            break
    return cases


def cmd_cases(a):
    cases = find_cases(a.repo, a.lang, a.n, a.seed)
    rel = os.path.relpath(os.path.abspath(a.repo), ROOT)
    if rel.startswith(".."):
        rel = os.path.abspath(a.repo)  # a repository fetched outside the tree
    print("# sculpt context recall cases: repo=%s lang=%s n=%d seed=%d" % (rel, a.lang, a.n, a.seed))
    print("# generated by tools/eval/context_recall.py cases; do not edit by hand")
    print("# file\tline\tcol\tname\tkind\tdefinition sites")
    for path, line, col, name, kind, sites in cases:
        print("%s\t%d\t%d\t%s\t%s\t%s" % (path, line, col, name, kind, ",".join(sites)))
    if len(cases) < a.n:
        print("only %d cases found" % len(cases), file=sys.stderr)


# ---- running ------------------------------------------------------------------------

def read_cases(path):
    meta, cases = {}, []
    for raw in open(path, encoding="utf-8"):
        raw = raw.rstrip("\n")
        if raw.startswith("# sculpt context recall cases:"):
            for kv in raw.split(":", 1)[1].split():
                k, v = kv.split("=", 1)
                meta[k] = v
            continue
        if not raw or raw.startswith("#"):
            continue
        f, line, col, name, kind, sites = raw.split("\t")
        cases.append({"file": f, "line": int(line), "col": int(col), "name": name, "kind": kind,
                      "sites": [(s.rsplit(":", 1)[0], int(s.rsplit(":", 1)[1]))
                                for s in sites.split(",")]})
    return meta, cases


def norm(s):
    return " ".join(s.split())


def key_lines(repo_files, case):
    out = []
    for p, ln in case["sites"]:
        lines = repo_files[p].split("\n")
        out.append((p, norm(lines[ln - 1])))
    return out


PATH_LINE = re.compile(r"^(?:#|//) (\S+):\d+$")


def scored(snippets, keys):
    """Whether a snippet shows a definition's first line (a line that is it,
    or starts with it: a signature may be shown joined with its
    continuation lines) as a line of the definition's file: the snippet's
    path, or the path line (`// path:line`) above it within the snippet (a
    Go type's method set lists methods from several files under theirs)."""
    for s in snippets:
        where = s["path"]
        for raw in s["text"].split("\n"):
            m = PATH_LINE.match(raw.strip())
            if m:
                where = m.group(1)
                continue
            x = norm(raw)
            for p, k in keys:
                if where == p and (x == k or (len(k) >= 6 and x.startswith(k))):
                    return True
    return False


_POSITIONS = {}


def supports_positions(binary):
    if binary not in _POSITIONS:
        p = subprocess.run([binary, "help", "context"], capture_output=True, text=True)
        _POSITIONS[binary] = "--positions" in p.stdout + p.stderr
    return _POSITIONS[binary]


def cut_text(text, line, col):
    lines = text.split("\n")
    raw = lines[line - 1].encode("utf-8")
    lines[line - 1] = raw[:col - 1].decode("utf-8", "replace")
    return "\n".join(lines)


def run_sculpt(binary, work, cases, scenario, budget, env):
    """The JSON prompt of every case (None where sculpt failed)."""
    if supports_positions(binary):
        lst = os.path.join(work, ".positions")
        with open(lst, "w") as f:
            for c in cases:
                f.write("%s:%d:%d\n" % (c["file"], c["line"], c["col"]))
        args = [binary, "context", "--json", "--positions", lst, "--budget", str(budget)]
        if scenario == "cut":
            args.append("--cut")
        p = subprocess.run(args, cwd=work, capture_output=True, text=True, env=env)
        out = [json.loads(x) if x.strip() else None for x in p.stdout.split("\n")[:len(cases)]]
        if p.returncode != 0 or len(out) != len(cases):
            sys.exit("%s context --positions failed (%d): %s" % (binary, p.returncode, p.stderr[-2000:]))
        os.unlink(lst)
        return out
    out = []
    for c in cases:
        full = os.path.join(work, c["file"])
        original = open(full, encoding="utf-8").read()
        if scenario == "cut":
            with open(full, "w", encoding="utf-8") as f:
                f.write(cut_text(original, c["line"], c["col"]))
        p = subprocess.run([binary, "context", "%s:%d:%d" % (c["file"], c["line"], c["col"]),
                            "--json", "--budget", str(budget)], cwd=work, capture_output=True,
                           text=True, env=env)
        if scenario == "cut":
            with open(full, "w", encoding="utf-8") as f:
                f.write(original)
        out.append(json.loads(p.stdout) if p.returncode == 0 else None)
    return out


def bytes_per_token(binary, files):
    sample = "".join(files[k] for k in sorted(files))[:200000]
    p = subprocess.run([binary, "tokenize", "--model", os.path.join(ROOT, "model", "default")],
                       input=sample.encode(), capture_output=True)
    n = len(p.stdout.split())
    return len(sample.encode()) / n if p.returncode == 0 and n else 4.0


def grep_baseline(files, defs, case, scenario, budget_bytes, lang):
    text = files[case["file"]]
    if scenario == "cut":
        text = cut_text(text, case["line"], case["col"])
    lines = text.split("\n")
    cl = case["line"] - 1
    order = []
    for d in range(0, 21):
        for ln in ([cl] if d == 0 else [cl + d, cl - d]):
            if 0 <= ln < len(lines):
                for m in IDENT.finditer(lines[ln]):
                    w = m.group(0)
                    if len(w) >= 3 and w not in KEYWORDS and w not in order:
                        order.append(w)
    out, used = [], 0
    for w in order:
        for s in defs.get(w, []):
            if s.path == case["file"]:
                continue
            row = "%s:%d: %s\n" % (s.path, s.line, files[s.path].split("\n")[s.line - 1])
            if used + len(row.encode()) > budget_bytes:
                return out
            used += len(row.encode())
            out.append((s.path, s.line))
    return out


def window_lines(r, case):
    """The 1-based lines the prompt's windows cover."""
    before = r["prefix"].count("\n")
    after = r["suffix"].count("\n")
    return case["line"] - before, case["line"] + after


def defs_present(r, case):
    return {(s["path"], s["range"]["start_line"], s["name"]) for s in r["snippets"]
            if s["reason"] in ("same file", "imported file", "workspace", "definition")}


def named_line(r, d):
    """The line of the snippet for definition d = (path, line, name) that
    names it (a listing's head, a member's line), normalized; or None."""
    for s in r["snippets"]:
        if (s["path"], s["range"]["start_line"], s["name"]) != d:
            continue
        for raw in s["text"].split("\n"):
            if not PATH_LINE.match(raw.strip()) and re.search(r"\b%s\b" % re.escape(d[2]), raw):
                return norm(raw)
    return None


def check_monotonic(binary, work, cases, scenario, budgets, env, problems, have=None):
    """have: {budget: run} already made (the main measurement). A definition
    is still there when the larger prompt's windows hold it, or a snippet of
    its file shows the line that names it (a member once given alone may be
    listed in its type's members)."""
    have = have or {}
    runs = [have[b] if b in have else run_sculpt(binary, work, cases, scenario, b, env)
            for b in budgets]
    for i in range(len(cases)):
        for k in range(1, len(budgets)):
            small, big = runs[k - 1][i], runs[k][i]
            if small is None or big is None:
                continue
            lo, hi = window_lines(big, cases[i])
            have = defs_present(big, cases[i])
            for d in defs_present(small, cases[i]):
                in_window = d[0] == cases[i]["file"] and lo <= d[1] <= hi
                if d in have or in_window:
                    continue
                key = named_line(small, d)
                if key and (scored(big["snippets"], [(d[0], key)]) or
                            key in norm(big["prefix"] + "\n" + big["suffix"])):
                    continue
                if True:
                    problems.append("%s:%d:%d %s: %s at budget %d but not at %d" % (
                        cases[i]["file"], cases[i]["line"], cases[i]["col"], scenario, d,
                        budgets[k - 1], budgets[k]))


SPLIT_SEED = 20


def half_of(case):
    """The half a case falls in, by a seeded hash of where it is: "tune"
    (retrieval is developed looking at these) or "check" (held out)."""
    key = "%d|%s|%d|%d|%s" % (SPLIT_SEED, case["file"], case["line"], case["col"], case["name"])
    return "tune" if hashlib.sha256(key.encode()).digest()[0] % 2 == 0 else "check"


def evaluate(case_file, a, env):
    meta, cases = read_cases(case_file)
    if a.half:
        cases = [c for c in cases if half_of(c) == a.half]
    lang = meta["lang"]
    src = os.path.join(ROOT, meta["repo"])
    files = load_repo(src, lang)
    defs = definitions(files, lang) if not a.no_grep else {}
    work = tempfile.mkdtemp(prefix="sculpt-recall-")
    repo = os.path.join(work, "repo")
    shutil.copytree(src, repo, symlinks=True)
    subprocess.run(["git", "init", "-q", repo], check=True)
    res = {"lang": lang, "repo": meta["repo"], "cases": len(cases), "budget": a.budget}
    bpt = bytes_per_token(a.bin, files) if not a.no_grep else 4.0
    problems = []
    per_case = []
    try:
        for scenario in ("intact", "cut"):
            got = run_sculpt(a.bin, repo, cases, scenario, a.budget, env)
            prev = run_sculpt(a.prev, repo, cases, scenario, a.budget, env) if a.prev else None
            hits = {"sculpt": 0, "grep": 0, "prev": 0}
            by_half = {}
            for i, c in enumerate(cases):
                keys = key_lines(files, c)
                h = bool(got[i]) and scored(got[i]["snippets"], keys)
                hp = bool(prev and prev[i]) and scored(prev[i]["snippets"], keys)
                hg = False
                if not a.no_grep:
                    g = grep_baseline(files, defs, c, scenario, bpt * a.budget / 4, lang)
                    hg = any(site in g for site in c["sites"])
                hits["sculpt"] += h
                hits["prev"] += hp
                hits["grep"] += hg
                hh = by_half.setdefault(half_of(c), {"n": 0, "sculpt": 0, "grep": 0, "prev": 0})
                hh["n"] += 1
                hh["sculpt"] += h
                hh["grep"] += hg
                hh["prev"] += hp
                per_case.append({"scenario": scenario, "half": half_of(c), "lang": lang,
                                 "repo": os.path.basename(meta["repo"]),
                                 "file": c["file"], "line": c["line"],
                                 "col": c["col"], "name": c["name"], "kind": c["kind"],
                                 "sculpt": h, "grep": hg, "prev": hp if a.prev else None})
                if got[i] is None:
                    problems.append("%s:%d:%d: sculpt failed" % (c["file"], c["line"], c["col"]))
            n = len(cases)
            res[scenario] = {"sculpt": round(hits["sculpt"] / n, 4)}
            if not a.no_grep:
                res[scenario]["grep"] = round(hits["grep"] / n, 4)
            if a.prev:
                res[scenario]["prev"] = round(hits["prev"] / n, 4)
            res[scenario]["halves"] = {
                k: {"cases": v["n"], **{w: round(v[w] / v["n"], 4) for w in ("sculpt", "grep", "prev")
                                        if w == "sculpt" or (w == "grep" and not a.no_grep) or
                                        (w == "prev" and a.prev)}}
                for k, v in sorted(by_half.items())}
            if a.monotonic:
                check_monotonic(a.bin, repo, cases, scenario, a.monotonic, env, problems,
                                {a.budget: got})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res, per_case, problems


def cmd_run(a):
    cache = tempfile.mkdtemp(prefix="sculpt-recall-cache-")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    results, problems, per_case = [], [], []
    try:
        for cf in a.cases:
            r, pc, pr = evaluate(cf, a, env)
            results.append(r)
            per_case += pc
            problems += pr
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print("definition of the used name in the prompt (share of cases), budget %d:" % a.budget)
    print("  %-11s %-10s %-6s %-8s %-8s %-8s %s" % ("language", "repository", "cases", "scenario",
                                                  "sculpt", "grep", "previous" if a.prev else ""))
    for r in results:
        for sc in ("intact", "cut"):
            x = r[sc]
            print("  %-11s %-10s %-6d %-8s %-8.2f %-8s %s" % (
                r["lang"], os.path.basename(r["repo"]), r["cases"], sc, x["sculpt"],
                "%.2f" % x["grep"] if "grep" in x else "-",
                "%.2f" % x["prev"] if "prev" in x else ""))
    if a.halves:
        print("by half (tune: looked at while developing retrieval; check: held out):")
        for r in results:
            for sc in ("intact", "cut"):
                for k, x in r[sc]["halves"].items():
                    print("  %-11s %-10s %-6s %-8s %-6d sculpt %.2f%s%s" % (
                        r["lang"], os.path.basename(r["repo"]), k, sc, x["cases"], x["sculpt"],
                        "  grep %.2f" % x["grep"] if "grep" in x else "",
                        "  previous %.2f" % x["prev"] if "prev" in x else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "cases": per_case, "problems": problems}, f, indent=1)
    for p in problems[:50]:
        print("problem:", p)
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cases")
    c.add_argument("repo")
    c.add_argument("--lang", required=True, choices=sorted(EXTS))
    c.add_argument("--n", type=int, default=60)
    c.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("cases", nargs="+")
    r.add_argument("--bin", default=os.path.join(ROOT, "build", "sculpt"))
    r.add_argument("--prev")
    r.add_argument("--budget", type=int, default=1024)
    r.add_argument("--json")
    r.add_argument("--monotonic", type=lambda s: [int(x) for x in s.split(",")])
    r.add_argument("--no-grep", action="store_true", help="skip the grep baseline (faster)")
    r.add_argument("--halves", action="store_true",
                   help="also report the tuning and the held-out half (see half_of)")
    r.add_argument("--half", choices=("tune", "check"), help="run only this half's cases")
    a = ap.parse_args()
    if a.cmd == "cases":
        cmd_cases(a)
        return 0
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
