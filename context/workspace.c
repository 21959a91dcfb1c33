/* workspace.c — the workspace index and prompt assembly.
 *
 * The index lists the repository's files through git itself (so .gitignore
 * is honoured exactly as git does), skips binary, generated and huge files
 * and symlinks that lead out of the root, and keeps each file's definitions
 * (from our tree-sitter queries) and imports. Snippet text is read back from
 * disk when a prompt needs it, so memory stays at the definitions' size.
 *
 * Retrieval for a cursor: identifiers used around it, then their
 * definitions, nearest first: the same file, the files it imports, the rest
 * of the workspace. The prompt puts those snippets (each headed by its path
 * in the language's comment syntax) before the prefix window, within a
 * token budget counted with the model's tokenizer. */
#define _DEFAULT_SOURCE /* realpath */
#include "context.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct ws_def {
  char *name;
  uint32_t start_byte, end_byte, start_line, end_line;
} ws_def;

typedef struct ws_file {
  char *path; /* relative to the root */
  const char *lang;
  ws_def *defs;
  size_t n_defs;
  char **imports; /* the last path component of each import, without extension */
  size_t n_imports;
} ws_file;

struct sc_workspace {
  char *root; /* absolute, resolved */
  ws_file *files;
  size_t n_files, cap_files;
  sc_workspace_stats stats;
};

/* ---- listing ------------------------------------------------------------ */

static bool looks_binary(const char *data, size_t n) {
  return memchr(data, '\0', n < 8192 ? n : 8192) != NULL;
}

/* Minified or generated: a very long line, or a name that says so. */
static bool looks_generated(const char *path, const char *data, size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strstr(base, ".min.") || strcmp(base, "package-lock.json") == 0 ||
      strstr(base, ".pb.") || strstr(base, "_pb2."))
    return true;
  size_t line = 0;
  for (size_t i = 0; i < n && i < 65536; i++) {
    if (data[i] == '\n') line = 0;
    else if (++line > 1000) return true;
  }
  return false;
}

static char *read_all(const char *path, size_t max, size_t *len, bool *too_big) {
  *too_big = false;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return NULL;
  }
  if ((size_t)st.st_size > max) {
    *too_big = true;
    fclose(f);
    return NULL;
  }
  char *buf = malloc((size_t)st.st_size + 1);
  size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  fclose(f);
  if (!buf || got != (size_t)st.st_size) {
    free(buf);
    return NULL;
  }
  buf[got] = '\0';
  *len = got;
  return buf;
}

/* The module an import names, as a file stem: "pkg.calc" -> "calc",
 * "./util/strings.js" -> "strings", <stdio.h> -> "stdio", "fmt" -> "fmt". */
static char *stem_of(const char *s, size_t n) {
  static const char *const exts[] = {".h", ".hpp", ".hh", ".c", ".cc", ".cpp", ".py",
                                     ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go",
                                     ".rs", ".java", ".json", ".sh"};
  size_t a = 0;
  while (a < n && strchr("\"'<> ", s[a])) a++;
  while (n > a && strchr("\"'<> ;", s[n - 1])) n--;
  for (size_t i = a; i < n; i++)
    if (s[i] == '/') a = i + 1;
  for (size_t k = 0; k < sizeof exts / sizeof exts[0]; k++) {
    size_t el = strlen(exts[k]);
    if (n - a > el && memcmp(s + n - el, exts[k], el) == 0) {
      n -= el;
      break;
    }
  }
  for (size_t i = a; i < n; i++)
    if (s[i] == '.' || s[i] == ':') a = i + 1; /* dotted modules, Rust paths */
  return strndup(s + a, n - a);
}

/* Definitions and imports of a parsed file (tree's text is text). */
static void index_tree(ws_file *f, const sc_syntax_tree *tree, const char *text) {
  TSNode root = sc_syntax_tree_root(tree);
  const TSQuery *q = NULL;
  TSQueryCursor *qc = ts_query_cursor_new();
  if (sc_query_get(f->lang, SC_QUERY_DEFINITIONS, &q, NULL) == SC_OK) {
    ts_query_cursor_exec(qc, q, root);
    TSQueryMatch m;
    while (ts_query_cursor_next_match(qc, &m)) {
      TSNode def, name;
      memset(&def, 0, sizeof def);
      memset(&name, 0, sizeof name);
      bool have_def = false, have_name = false;
      for (uint16_t i = 0; i < m.capture_count; i++) {
        uint32_t cl;
        const char *cn = ts_query_capture_name_for_id(q, m.captures[i].index, &cl);
        if (cl == 4 && strncmp(cn, "name", 4) == 0) name = m.captures[i].node, have_name = true;
        else if (cl > 10 && strncmp(cn, "definition", 10) == 0)
          def = m.captures[i].node, have_def = true;
      }
      if (!have_def || !have_name) continue;
      ws_def *nd = realloc(f->defs, (f->n_defs + 1) * sizeof *nd);
      if (!nd) break;
      f->defs = nd;
      uint32_t a = ts_node_start_byte(name), b = ts_node_end_byte(name);
      f->defs[f->n_defs++] = (ws_def){strndup(text + a, b - a), ts_node_start_byte(def),
                                      ts_node_end_byte(def), ts_node_start_point(def).row,
                                      ts_node_end_point(def).row};
    }
  }
  if (sc_query_get(f->lang, SC_QUERY_IMPORTS, &q, NULL) == SC_OK) {
    ts_query_cursor_exec(qc, q, root);
    TSQueryMatch m;
    while (ts_query_cursor_next_match(qc, &m)) {
      for (uint16_t i = 0; i < m.capture_count; i++) {
        uint32_t cl;
        const char *cn = ts_query_capture_name_for_id(q, m.captures[i].index, &cl);
        if (!(cl == 11 && strncmp(cn, "import.path", 11) == 0)) continue;
        TSNode n = m.captures[i].node;
        uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
        char **ni = realloc(f->imports, (f->n_imports + 1) * sizeof *ni);
        if (!ni) break;
        f->imports = ni;
        f->imports[f->n_imports++] = stem_of(text + a, b - a);
      }
    }
  }
  ts_query_cursor_delete(qc);
}

static void index_file(ws_file *f, const char *text, size_t len) {
  sc_syntax_tree *tree = NULL;
  if (sc_syntax_tree_new(f->lang, text, len, &tree, NULL) != SC_OK) return;
  index_tree(f, tree, text);
  sc_syntax_tree_free(tree);
}

sc_status sc_workspace_index(const char *root, const sc_workspace_options *opts,
                             sc_workspace **out, sc_error *err) {
  *out = NULL;
  size_t max_files = opts && opts->max_files ? opts->max_files : 100000;
  size_t max_bytes = opts && opts->max_file_bytes ? opts->max_file_bytes : (1u << 20);
  char real[PATH_MAX];
  SC_CHECK(realpath(root, real), err, SC_ERR_IO, "workspace %s: %s", root, strerror(errno));
  sc_workspace *ws = calloc(1, sizeof *ws);
  SC_CHECK(ws, err, SC_ERR_NOMEM, "out of memory");
  ws->root = strdup(real);
  double t0 = sc_now_ms();
  /* git decides what is ignored; -z keeps odd names intact. */
  char cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd,
           "git -C '%s' ls-files -z --cached --others --exclude-standard 2>/dev/null", real);
  FILE *p = strchr(real, '\'') ? NULL : popen(cmd, "r");
  if (!p) {
    sc_workspace_free(ws);
    return sc_error_set(err, SC_ERR_IO, "workspace %s: cannot run git ls-files", real);
  }
  char name[PATH_MAX];
  size_t nl = 0;
  int ch;
  bool any = false;
  while ((ch = fgetc(p)) != EOF) {
    if (ch != '\0') {
      if (nl + 1 < sizeof name) name[nl++] = (char)ch;
      continue;
    }
    name[nl] = '\0';
    nl = 0;
    any = true;
    if (ws->n_files >= max_files) {
      ws->stats.skipped_limit++;
      continue;
    }
    const char *lang = sc_context_language_for(NULL, name);
    if (!lang || !sc_context_ts_language(lang)) continue;
    char full[PATH_MAX * 2];
    snprintf(full, sizeof full, "%s/%s", real, name);
    /* A symlink may lead out of the root: follow it and check. */
    char target[PATH_MAX];
    if (!realpath(full, target) || strncmp(target, real, strlen(real)) != 0 ||
        (target[strlen(real)] != '/' && target[strlen(real)] != '\0')) {
      ws->stats.skipped_outside++;
      continue;
    }
    size_t len = 0;
    bool too_big = false;
    char *text = read_all(full, max_bytes, &len, &too_big);
    if (!text) {
      if (too_big) ws->stats.skipped_huge++;
      continue;
    }
    if (looks_binary(text, len)) {
      ws->stats.skipped_binary++;
      free(text);
      continue;
    }
    if (looks_generated(name, text, len)) {
      ws->stats.skipped_generated++;
      free(text);
      continue;
    }
    if (ws->n_files == ws->cap_files) {
      size_t cap = ws->cap_files ? ws->cap_files * 2 : 64;
      ws_file *nf = realloc(ws->files, cap * sizeof *nf);
      if (!nf) {
        free(text);
        break;
      }
      ws->files = nf;
      ws->cap_files = cap;
    }
    ws_file *f = &ws->files[ws->n_files++];
    memset(f, 0, sizeof *f);
    f->path = strdup(name);
    f->lang = lang;
    index_file(f, text, len);
    ws->stats.definitions += f->n_defs;
    for (size_t i = 0; i < len; i++) ws->stats.lines += text[i] == '\n';
    free(text);
  }
  int rc = pclose(p);
  if (!any && rc != 0) {
    sc_workspace_free(ws);
    return sc_error_set(err, SC_ERR_IO, "workspace %s: not a git repository (git ls-files failed)",
                        real);
  }
  ws->stats.files = ws->n_files;
  ws->stats.ms = sc_now_ms() - t0;
  *out = ws;
  return SC_OK;
}

void sc_workspace_free(sc_workspace *ws) {
  if (!ws) return;
  for (size_t i = 0; i < ws->n_files; i++) {
    ws_file *f = &ws->files[i];
    for (size_t k = 0; k < f->n_defs; k++) free(f->defs[k].name);
    for (size_t k = 0; k < f->n_imports; k++) free(f->imports[k]);
    free(f->defs);
    free(f->imports);
    free(f->path);
  }
  free(ws->files);
  free(ws->root);
  free(ws);
}

const sc_workspace_stats *sc_workspace_get_stats(const sc_workspace *ws) { return &ws->stats; }
const char *sc_workspace_root(const sc_workspace *ws) { return ws->root; }

/* ---- prompt assembly ----------------------------------------------------- */

static size_t count_tokens(const sc_tokenizer *tok, const char *s, size_t n) {
  int32_t *ids = NULL;
  size_t k = 0;
  if (n == 0 || sc_tokenizer_encode(tok, s, n, &ids, &k, NULL) != SC_OK) k = n ? n / 3 + 1 : 0;
  free(ids);
  return k;
}

static const char *comment_prefix(const char *lang) {
  if (!lang) return NULL;
  if (strcmp(lang, "python") == 0 || strcmp(lang, "bash") == 0) return "#";
  if (strcmp(lang, "json") == 0) return NULL;
  return "//";
}

static bool is_keyword(const char *w) {
  static const char *const k[] = {
      "if", "else", "for", "while", "return", "def", "class", "import", "from", "in", "not",
      "and", "or", "is", "None", "True", "False", "int", "char", "void", "const", "static",
      "struct", "unsigned", "long", "float", "double", "function", "var", "let", "new", "this",
      "self", "fn", "pub", "use", "mut", "func", "package", "public", "private", "print",
      "include", "define", "typedef", "enum", "switch", "case", "break", "continue", "do",
      "try", "catch", "with", "as", "pass", "lambda", "yield", "async", "await", "export"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcmp(w, k[i]) == 0) return true;
  return false;
}

static bool add_snippet(sc_prompt *out, const char *path, const ws_def *d, const char *text,
                        size_t len, const char *reason, const char *lang) {
  if (d->end_byte > len || d->start_byte >= d->end_byte) return false;
  /* At most 40 lines of the definition. */
  size_t a = d->start_byte, b = d->end_byte, lines = 0;
  for (size_t i = a; i < b; i++)
    if (text[i] == '\n' && ++lines == 40) {
      b = i;
      break;
    }
  const char *cp = comment_prefix(lang);
  size_t hl = strlen(path) + 32;
  char *s = malloc(hl + (b - a) + 2);
  if (!s) return false;
  int n = cp ? snprintf(s, hl, "%s %s:%u\n", cp, path, d->start_line + 1) : 0;
  memcpy(s + n, text + a, b - a);
  s[n + (b - a)] = '\n';
  s[n + (b - a) + 1] = '\0';
  sc_context_snippet *ns = realloc(out->snippets, (out->n_snippets + 1) * sizeof *ns);
  if (!ns) {
    free(s);
    return false;
  }
  out->snippets = ns;
  out->snippets[out->n_snippets++] =
      (sc_context_snippet){strdup(path), d->start_line, d->end_line, reason, strdup(d->name),
                           s, strlen(s), 0};
  return true;
}

static bool already_have(const sc_prompt *out, const char *path, const ws_def *d) {
  for (size_t i = 0; i < out->n_snippets; i++)
    if (strcmp(out->snippets[i].path, path) == 0 && out->snippets[i].start_line == d->start_line)
      return true;
  return false;
}

sc_status sc_prompt_build(const sc_workspace *ws, const char *path, const char *lang,
                          const char *text, size_t len, size_t cursor,
                          const sc_tokenizer *tok, size_t budget, sc_prompt *out,
                          sc_error *err) {
  memset(out, 0, sizeof *out);
  SC_CHECK(tok && text && cursor <= len, err, SC_ERR_INVALID, "prompt: bad arguments");
  SC_CHECK(budget >= 16, err, SC_ERR_INVALID, "prompt: a budget of %zu tokens is too small",
           budget);
  /* Windows: whole lines around the cursor, nearest first, three quarters of
   * what the snippets leave before the cursor and the rest after. */
  size_t snippet_budget = budget / 4;
  size_t window_budget = budget - snippet_budget;
  size_t pre_budget = window_budget * 3 / 4, suf_budget = window_budget - pre_budget;
  size_t a = cursor, used = 0;
  while (a > 0) {
    size_t ls = a - 1;
    while (ls > 0 && text[ls - 1] != '\n') ls--;
    size_t t = count_tokens(tok, text + ls, a - ls);
    if (used + t > pre_budget && a != cursor) break;
    used += t;
    a = ls;
    if (used >= pre_budget) break;
  }
  out->prefix_tokens = used;
  size_t b = cursor;
  used = 0;
  while (b < len) {
    const char *nlp = memchr(text + b, '\n', len - b);
    size_t le = nlp ? (size_t)(nlp - text) + 1 : len;
    size_t t = count_tokens(tok, text + b, le - b);
    if (used + t > suf_budget && b != cursor) break;
    used += t;
    b = le;
    if (used >= suf_budget) break;
  }
  out->suffix_tokens = used;
  out->prefix = strndup(text + a, cursor - a);
  out->suffix = strndup(text + cursor, b - cursor);
  out->prefix_start = a;
  out->suffix_end = b;

  /* The enclosing scopes whose headers the prefix window cut off: the
   * path of functions and classes down to the cursor, outermost first, one
   * header line each. */
  /* One parse of the text serves the scopes and the file's own index. */
  sc_syntax_tree *tree = NULL;
  if (lang && sc_context_ts_language(lang) &&
      sc_syntax_tree_new(lang, text, len, &tree, NULL) != SC_OK)
    tree = NULL;
  if (tree) {
    TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)cursor,
                                                 (uint32_t)cursor);
    TSNode scopes[16];
    int ns = 0;
    for (; !ts_node_is_null(n) && ns < 16; n = ts_node_parent(n)) {
      const char *t = ts_node_type(n);
      bool scope = strstr(t, "function") || strstr(t, "class") || strstr(t, "method") ||
                   strstr(t, "impl_item") || strstr(t, "struct_specifier");
      if (scope && strstr(t, "call") == NULL && ts_node_start_byte(n) < a)
        scopes[ns++] = n;
    }
    for (int k = ns - 1; k >= 0; k--) {
      uint32_t x = ts_node_start_byte(scopes[k]), y = x;
      while (x > 0 && text[x - 1] != '\n') x--; /* keep the indentation */
      while (y < len && text[y] != '\n') y++;
      ws_def d = {strndup(text + x, y - x), x, y, ts_node_start_point(scopes[k]).row,
                  ts_node_start_point(scopes[k]).row};
      if (d.name) add_snippet(out, path ? path : "(buffer)", &d, text, len, "enclosing scope",
                              lang);
      free(d.name);
    }
  }

  /* Identifiers around the cursor, nearest first. */
  char *words[64];
  size_t n_words = 0;
  size_t lo = cursor > 2000 ? cursor - 2000 : 0, hi = cursor + 400 < len ? cursor + 400 : len;
  for (size_t i = cursor; i > lo && n_words < 64;) {
    /* scan backwards word by word */
    size_t e = i;
    while (e > lo && !(isalnum((unsigned char)text[e - 1]) || text[e - 1] == '_')) e--;
    size_t s = e;
    while (s > lo && (isalnum((unsigned char)text[s - 1]) || text[s - 1] == '_')) s--;
    if (s == e) break;
    i = s;
    if (e - s < 3 || isdigit((unsigned char)text[s])) continue;
    char *w = strndup(text + s, e - s);
    bool dup = is_keyword(w);
    for (size_t k = 0; k < n_words && !dup; k++) dup = strcmp(words[k], w) == 0;
    if (dup) free(w);
    else words[n_words++] = w;
  }
  for (size_t i = cursor; i < hi && n_words < 64;) {
    while (i < hi && !(isalnum((unsigned char)text[i]) || text[i] == '_')) i++;
    size_t s = i;
    while (i < hi && (isalnum((unsigned char)text[i]) || text[i] == '_')) i++;
    if (i - s < 3 || isdigit((unsigned char)text[s])) continue;
    char *w = strndup(text + s, i - s);
    bool dup = is_keyword(w);
    for (size_t k = 0; k < n_words && !dup; k++) dup = strcmp(words[k], w) == 0;
    if (dup) free(w);
    else words[n_words++] = w;
  }

  /* The current file's own definitions and imports (from its text now). */
  ws_file self = {0};
  self.lang = lang;
  if (tree) index_tree(&self, tree, text);
  sc_syntax_tree_free(tree);
  const char *self_path = path ? path : "(buffer)";
  for (size_t w = 0; w < n_words; w++) {
    bool found = false;
    /* 1. the same file, outside the windows */
    for (size_t k = 0; k < self.n_defs && !found; k++) {
      ws_def *d = &self.defs[k];
      if (strcmp(d->name, words[w]) != 0) continue;
      if (d->end_byte > a && d->start_byte < b) {
        found = true; /* already in the window */
        break;
      }
      found = !already_have(out, self_path, d) &&
              add_snippet(out, self_path, d, text, len, "same file", lang);
    }
    if (found || !ws) continue;
    /* 2. files this one imports, 3. the rest of the workspace */
    for (int pass = 0; pass < 2 && !found; pass++) {
      for (size_t fi = 0; fi < ws->n_files && !found; fi++) {
        ws_file *f = &ws->files[fi];
        if (path && strcmp(f->path, path) == 0) continue;
        bool imported = false;
        const char *base = strrchr(f->path, '/');
        base = base ? base + 1 : f->path;
        const char *dot = strrchr(base, '.');
        size_t bl = dot ? (size_t)(dot - base) : strlen(base);
        for (size_t k = 0; k < self.n_imports && !imported; k++)
          imported = strlen(self.imports[k]) == bl && strncmp(self.imports[k], base, bl) == 0;
        if ((pass == 0) != imported) continue;
        for (size_t k = 0; k < f->n_defs && !found; k++) {
          if (strcmp(f->defs[k].name, words[w]) != 0) continue;
          char full[PATH_MAX * 2];
          snprintf(full, sizeof full, "%s/%s", ws->root, f->path);
          size_t flen = 0;
          bool big = false;
          char *ftext = read_all(full, 4u << 20, &flen, &big);
          if (ftext && !already_have(out, f->path, &f->defs[k]))
            found = add_snippet(out, f->path, &f->defs[k], ftext, flen,
                                pass == 0 ? "imported file" : "workspace", f->lang);
          free(ftext);
        }
      }
    }
  }
  for (size_t w = 0; w < n_words; w++) free(words[w]);
  for (size_t k = 0; k < self.n_defs; k++) free(self.defs[k].name);
  for (size_t k = 0; k < self.n_imports; k++) free(self.imports[k]);
  free(self.defs);
  free(self.imports);

  /* Within the snippet budget, in retrieval order; none that repeats the
   * windows' text. */
  size_t kept = 0, total = 0;
  for (size_t i = 0; i < out->n_snippets; i++) {
    sc_context_snippet *s = &out->snippets[i];
    const char *body = strchr(s->text, '\n');
    body = body ? body + 1 : s->text;
    bool repeated = strstr(out->prefix, body) || strstr(out->suffix, body);
    s->tokens = count_tokens(tok, s->text, s->len);
    if (repeated || total + s->tokens > snippet_budget) {
      free(s->path);
      free(s->name);
      free(s->text);
      continue;
    }
    total += s->tokens;
    out->snippets[kept++] = *s;
  }
  out->n_snippets = kept;
  out->snippet_tokens = total;
  return SC_OK;
}

void sc_prompt_free(sc_prompt *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n_snippets; i++) {
    free(p->snippets[i].path);
    free(p->snippets[i].name);
    free(p->snippets[i].text);
  }
  free(p->snippets);
  free(p->prefix);
  free(p->suffix);
  memset(p, 0, sizeof *p);
}
