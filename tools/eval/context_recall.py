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
          counted as bytes / the repository's measured bytes per token);
  --prev: the same measurement with another binary (the previous release).

    tools/eval/context_recall.py cases REPO --lang c [--n 60] [--seed 1] > cases.tsv
    tools/eval/context_recall.py run CASES.tsv... [--bin build/sculpt] [--prev BIN]
                                 [--budget 1024] [--json OUT] [--monotonic 512,1024,2048]

--monotonic B1,B2,... also checks, on every case and scenario, that a larger
budget never drops a definition a smaller one included (a definition moving
into the windows still counts as present).

The repository is copied to a temporary folder (git init there, so that it
is its own work tree); the index cache goes to a temporary XDG_CACHE_HOME.
"""
import argparse
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


def find_cases(repo, lang, n, seed):
    files = load_repo(repo, lang)
    defs = definitions(files, lang)
    eligible = {}  # name -> [(path, line, col, kind, member)]
    for path, text in sorted(files.items()):
        code = strip_code(text, lang)
        lines = code.split("\n")
        own = {}
        for ln, t in enumerate(lines):
            if IMPORT_LINE[lang].search(t):
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
                eligible.setdefault(name, []).append((path, ln + 1, m.start() + 1, kind,
                                                     ["%s:%d" % (s.path, s.line) for s in use]))
    rng = random.Random(seed)
    names = sorted(eligible)
    rng.shuffle(names)
    cases, seen_lines = [], set()
    for name in names:
        opts = eligible[name]
        rng.shuffle(opts)
        for path, line, col, kind, sites in opts:
            if (path, line) in seen_lines:
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


def scored(snippets, keys):
    """Whether a snippet from a definition's file shows its first line (a
    line that is it, or starts with it: a signature may be shown joined
    with its continuation lines)."""
    for s in snippets:
        body = [norm(x) for x in s["text"].split("\n")]
        for p, k in keys:
            if s["path"] == p and any(x == k or (len(k) >= 6 and x.startswith(k)) for x in body):
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


def check_monotonic(binary, work, cases, scenario, budgets, env, problems, have=None):
    """have: {budget: run} already made (the main measurement)."""
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
                if d not in have and not in_window:
                    problems.append("%s:%d:%d %s: %s at budget %d but not at %d" % (
                        cases[i]["file"], cases[i]["line"], cases[i]["col"], scenario, d,
                        budgets[k - 1], budgets[k]))


def evaluate(case_file, a, env):
    meta, cases = read_cases(case_file)
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
                per_case.append({"scenario": scenario, "file": c["file"], "line": c["line"],
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
    print("  %-11s %-6s %-8s %-8s %-8s %s" % ("language", "cases", "scenario", "sculpt", "grep",
                                             "previous" if a.prev else ""))
    for r in results:
        for sc in ("intact", "cut"):
            x = r[sc]
            print("  %-11s %-6d %-8s %-8.2f %-8s %s" % (
                r["lang"], r["cases"], sc, x["sculpt"],
                "%.2f" % x["grep"] if "grep" in x else "-",
                "%.2f" % x["prev"] if "prev" in x else ""))
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
    a = ap.parse_args()
    if a.cmd == "cases":
        cmd_cases(a)
        return 0
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
