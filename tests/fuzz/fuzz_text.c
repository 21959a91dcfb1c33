/* fuzz_text.c — sculpt's own text code under fuzzing: what runs on a
 * document's text and on what a model writes, past the syntax layer
 * (fuzz_syntax) and the message path (fuzz_lsp, which has no model, so
 * never reaches these):
 *   - the compiler-diagnostics reader of `sculpt batch` (edit/diag.c), and
 *     the site each diagnostic maps to;
 *   - shaping a model's candidate (context/shape.c): the plan, the cut, the
 *     trim against the suffix, the insertion check and one repair;
 *   - drafts (context/draft.c) from the prompt, the previous suggestion and
 *     the workspace's line table, and their tokens;
 *   - the workspace indexer on a hostile file (definitions, chunks, line
 *     table) and the prompt built from it (context/retrieve*.c);
 *   - holes, empty blocks and splices of the edit engine (edit/site.c,
 *     doc.c).
 * A model's output is as untrusted as a repository's file: any bytes, any
 * length, NULs, broken UTF-8.
 *
 * Input: byte 0 picks the part (below) and byte 1 the language, byte 2 the
 * cursor (a fraction of the text), byte 3 flags; the rest is split at the
 * first "\0\0" into the document A and the other text B (the candidate,
 * the text after the cursor, an open buffer, a replacement).
 * Every answer is checked against what its header promises (a length
 * inside the text, a draft inside its bounds, a prompt window that is the
 * document's text), so a wrong answer is a finding, as is a crash, a leak
 * or a sanitizer report. */
#define _GNU_SOURCE /* memmem */
#include "context.h"
#include "edit.h"
#include "model.h"
#include "sculpt.h"
#include "fuzz_tmp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define QUERY_LIMIT_NS 20000000ll
#define PARSE_LIMIT_NS 300000000ll

static const struct {
  const char *lang, *path;
} k_langs[] = {{"c", "f.c"},          {"cpp", "f.cc"},         {"python", "f.py"},
               {"javascript", "f.js"}, {"typescript", "f.ts"}, {"tsx", "f.tsx"},
               {"go", "f.go"},         {"rust", "f.rs"},       {"java", "F.java"},
               {"bash", "f.sh"},       {"json", "f.json"}};
#define N_LANGS (sizeof k_langs / sizeof k_langs[0])

static sc_tokenizer *g_tok;
static sc_workspace *g_ws;

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    if (!(x)) {                                                                                    \
      fprintf(stderr, "fuzz_text: %s:%d: %s\n", __FILE__, __LINE__, #x);                           \
      __builtin_trap();                                                                            \
    }                                                                                              \
  } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  sc_log_set_stderr_level(SC_LOG_ERROR);
  /* The edit engine's verdicts never start an interpreter or a compiler
   * here: only the parts that are ours are fuzzed. */
  setenv("SCULPT_PYTHON", "", 1);
  sc_error err = {0};
  if (sc_tokenizer_load_dir(SC_FUZZ_MODEL_DIR, &g_tok, &err) != SC_OK) {
    fprintf(stderr, "fuzz_text: tokenizer: %s\n", err.msg);
    return 1;
  }
  /* A work tree of its own (an empty git folder, no index kept on disk):
   * each input's document replaces the file of its language. */
  char dir[] = "/tmp/sculpt-fuzz-text-XXXXXX";
  const char *tmp = getenv("TMPDIR");
  char buf[4096];
  if (tmp && *tmp && strlen(tmp) < 4000) {
    snprintf(buf, sizeof buf, "%s/sculpt-fuzz-text-XXXXXX", tmp);
  } else {
    snprintf(buf, sizeof buf, "%s", dir);
  }
  if (!mkdtemp(buf)) return 1;
  fuzz_tmp_remove_at_exit(buf);
  char p[4200];
  snprintf(p, sizeof p, "%s/.git", buf);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/.git/objects", buf);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/.git/refs", buf);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/.git/HEAD", buf);
  FILE *f = fopen(p, "w");
  if (f) {
    fputs("ref: refs/heads/main\n", f);
    fclose(f);
  }
  sc_workspace_options o = {.cache_dir = ""};
  if (sc_workspace_index(buf, &o, &g_ws, &err) != SC_OK) {
    fprintf(stderr, "fuzz_text: workspace: %s\n", err.msg);
    g_ws = NULL; /* the parts that need it are skipped */
  }
  return 0;
}

/* ---- part 0: diagnostics ---------------------------------------------------- */

static void part_diagnostics(const char *a, size_t na, const char *b, size_t nb, int li,
                             unsigned flags) {
  sc_edit_diagnostic *d = NULL;
  size_t n = 0;
  sc_error err = {0};
  const char *only = flags & 1 ? k_langs[li].path : NULL;
  if (sc_edit_diagnostics_parse(a, na, only, &d, &n, &err) != SC_OK) {
    CHECK(d == NULL || n == 0);
    sc_edit_diagnostics_free(d, n);
    return;
  }
  CHECK(n > 0); /* "one must be a diagnostic" */
  sc_edit_doc *doc = NULL;
  if (nb && sc_edit_doc_new(k_langs[li].lang, k_langs[li].path, b, nb, &doc, NULL) != SC_OK)
    doc = NULL;
  for (size_t i = 0; i < n; i++) {
    CHECK(d[i].path && d[i].message);
    CHECK(d[i].line >= 0 && d[i].col >= -1);
    CHECK(d[i].severity >= SC_EDIT_ERROR && d[i].severity <= SC_EDIT_HINT);
    CHECK(d[i].unit >= SC_EDIT_COL_BYTES && d[i].unit <= SC_EDIT_COL_DISPLAY);
    if (!doc) continue;
    /* The site at the diagnostic's line start (clamped into B), as batch
     * maps it: on the text, with the message. */
    size_t len = 0;
    const char *t = sc_edit_doc_text(doc, &len);
    size_t off = 0;
    for (long l = 0; l < d[i].line && off < len; off++)
      if (t[off] == '\n') l++;
    if (d[i].col > 0) off += (size_t)d[i].col < len - off ? (size_t)d[i].col : len - off;
    sc_edit_site s;
    if (sc_edit_site_for_diagnostic(doc, off, d[i].message, &s, NULL) == SC_OK) {
      CHECK(s.start <= s.end && s.end <= len && s.anchor <= len);
      CHECK(s.n_choices >= 0 && s.n_choices <= SC_EDIT_MAX_CHOICES);
      CHECK(memchr(s.expect, '\0', sizeof s.expect) != NULL);
      for (int c = 0; c < s.n_choices; c++)
        CHECK(s.choices[c][0] && memchr(s.choices[c], '\0', sizeof s.choices[c]) != NULL);
    }
  }
  sc_edit_doc_free(doc);
  sc_edit_diagnostics_free(d, n);
}

/* ---- part 1: a model's candidate, shaped --------------------------------------- */

typedef struct {
  const char *text;
  size_t len;
} fill_src;

static sc_status fill_from(void *user, const char *head, size_t head_len, const char *span,
                           size_t span_len, const char *tail, size_t tail_len, char **out,
                           size_t *out_len, sc_error *err) {
  (void)head, (void)head_len, (void)span, (void)tail, (void)tail_len, (void)err;
  const fill_src *src = user;
  /* The rewrite: as long as the span, from the candidate's other bytes. */
  size_t n = span_len < src->len ? span_len : src->len;
  *out = malloc(n + 1);
  if (!*out) return SC_ERR_NOMEM;
  memcpy(*out, src->text + src->len - n, n);
  (*out)[n] = 0;
  *out_len = n;
  return SC_OK;
}

static void part_shape(const char *a, size_t na, const char *b, size_t nb, int li,
                       size_t cursor) {
  sc_syntax_tree *t = NULL;
  if (sc_syntax_tree_new_unparsed(k_langs[li].lang, a, na, &t, NULL) != SC_OK) return;
  sc_syntax_tree_set_parse_limit(t, PARSE_LIMIT_NS);
  if (sc_syntax_tree_parse(t, NULL, NULL, NULL) != SC_OK) {
    sc_syntax_tree_free(t);
    return;
  }
  sc_completion_plan plan;
  if (sc_completion_plan_at(t, cursor, &plan, NULL) != SC_OK) {
    sc_syntax_tree_free(t);
    return;
  }
  CHECK(plan.line_start <= cursor && cursor <= plan.line_end && plan.line_end <= na);
  if (plan.kind != SC_COMPLETION_NONE) {
    CHECK(plan.n_canvas > 0 && plan.n_canvas <= SC_COMPLETION_MAX_CANVAS);
    size_t cut = sc_completion_cut(t, &plan, cursor, b, nb);
    CHECK(cut <= nb);
    size_t kept = sc_completion_trim(b, cut, a + cursor, na - cursor, plan.single_line);
    CHECK(kept <= cut);
    if (plan.single_line) CHECK(memchr(b, '\n', kept) == NULL);
    sc_completion_check chk;
    if (sc_completion_check_insert(t, cursor, b, kept, &chk, NULL) == SC_OK && !chk.ok) {
      CHECK(chk.span_start <= chk.span_end && chk.span_end <= kept);
      fill_src src = {b, nb};
      char *fixed = NULL;
      size_t fixed_len = 0;
      sc_completion_check chk2;
      if (sc_completion_repair(t, cursor, b, kept, &chk, fill_from, &src, &fixed, &fixed_len,
                               &chk2, NULL) == SC_OK) {
        CHECK(fixed && fixed[fixed_len] == 0);
        if (!chk2.ok) CHECK(chk2.span_end <= fixed_len);
      }
      free(fixed);
    }
  }
  size_t s, e;
  sc_statement_span(t, cursor, &s, &e);
  CHECK(s <= e && e <= na);
  sc_syntax_tree_free(t);
}

/* ---- part 2: drafts, and their tokens ------------------------------------------- */

static void part_drafts(const char *a, size_t na, const char *b, size_t nb, size_t cursor,
                        unsigned flags) {
  sc_draft_query q = {
      .before = a,
      .before_len = cursor,
      .after = a + cursor,
      .after_len = na - cursor,
      .ws = flags & 1 ? g_ws : NULL,
      .previous = flags & 2 ? b : NULL,
      .previous_len = flags & 2 ? nb : 0,
      .single_line = flags & 4,
      .max_bytes = flags & 8 ? (flags >> 4) * 16 + 1 : 0,
      .max_lines = flags & 8 ? (int)(flags >> 6) : 0,
  };
  if (!(flags & 2) && nb) { /* B as the text after the cursor instead */
    q.after = b;
    q.after_len = nb;
  }
  sc_drafts found;
  sc_drafts_find(&q, &found);
  CHECK(found.n <= SC_DRAFTS_MAX);
  size_t max_bytes = q.max_bytes ? q.max_bytes : 240;
  for (size_t i = 0; i < found.n; i++) {
    const sc_text_draft *d = &found.d[i];
    CHECK(d->text && d->len > 0 && d->len <= max_bytes && d->source);
    if (q.single_line) CHECK(memchr(d->text, '\n', d->len) == NULL);
    if (i) CHECK(found.d[i - 1].score >= d->score);
  }
  sc_draft_runs runs;
  int max_tokens = 1 + (int)(flags % 48);
  if (sc_drafts_encode(&found, g_tok, max_tokens, &runs, NULL) == SC_OK) {
    CHECK(runs.n >= 0 && (size_t)runs.n <= found.n);
    for (int i = 0; i < runs.n; i++) CHECK(runs.d[i].n > 0 && runs.d[i].n <= max_tokens);
    sc_draft_runs_free(&runs);
  }
  sc_drafts_free(&found);
}

/* ---- part 3: the indexer and the prompt -------------------------------------------- */

static void part_prompt(const char *a, size_t na, const char *b, size_t nb, int li, size_t cursor,
                        unsigned flags) {
  if (g_ws) {
    bool indexed = false;
    /* A's language's file is A now; B, when asked, another file. */
    sc_workspace_update_file(g_ws, k_langs[li].path, a, na, &indexed, NULL);
    if (flags & 1) sc_workspace_update_file(g_ws, "other/g.py", b, nb, NULL, NULL);
  }
  sc_open_document doc = {.path = "open.c", .lang = NULL, .text = b, .len = nb};
  sc_edited_range edit = {.path = k_langs[li].path, .start_line = flags, .end_line = flags + 3};
  sc_prompt_inputs in = {.docs = &doc, .n_docs = flags & 2 ? 1 : 0, .edits = &edit,
                         .n_edits = flags & 4 ? 1 : 0, .index_pending = flags & 8};
  sc_prompt p;
  size_t budget = 64 + (size_t)flags * 8;
  if (sc_prompt_build_with(flags & 16 ? g_ws : NULL, k_langs[li].path, k_langs[li].lang, a, na,
                           cursor, g_tok, budget, &in, &p, NULL) != SC_OK)
    return;
  /* The windows are the document's text around the cursor. */
  CHECK(p.prefix && p.suffix && p.prefix_start <= cursor && cursor <= p.suffix_end &&
        p.suffix_end <= na);
  CHECK(memcmp(p.prefix, a + p.prefix_start, cursor - p.prefix_start) == 0);
  CHECK(memcmp(p.suffix, a + cursor, p.suffix_end - cursor) == 0);
  for (size_t i = 0; i < p.n_snippets; i++)
    CHECK(p.snippets[i].text && p.snippets[i].path && p.snippets[i].reason &&
          p.snippets[i].start_line <= p.snippets[i].end_line);
  size_t n = 0;
  char *before = sc_prompt_text(&p, &n);
  if (before) {
    size_t fit = sc_prompt_suffix_fit(g_tok, before, n, a + cursor, na - cursor, budget * 2);
    CHECK(fit <= na - cursor);
    free(before);
  }
  sc_prompt_free(&p);
}

/* ---- part 4: holes, blocks and splices ------------------------------------------------ */

static void part_edit(const char *a, size_t na, const char *b, size_t nb, int li, size_t cursor,
                      unsigned flags) {
  sc_edit_doc *doc = NULL;
  if (sc_edit_doc_new(k_langs[li].lang, k_langs[li].path, a, na, &doc, NULL) != SC_OK) return;
  sc_edit_hole_options ho = {.marker = flags & 1 ? "XX" : NULL, .python_ellipsis = flags & 2};
  sc_edit_site *sites = NULL;
  size_t n = 0;
  if (sc_edit_find_holes(doc, &ho, 0, SIZE_MAX, &sites, &n, NULL) == SC_OK) {
    const char *marker = ho.marker ? ho.marker : SC_EDIT_DEFAULT_MARKER;
    for (size_t i = 0; i < n; i++) {
      CHECK(sites[i].start <= sites[i].end && sites[i].end <= na);
      if (i) CHECK(sites[i - 1].start <= sites[i].start);
      /* A hole replaces its marker (a line, a comment or the marker
       * itself), or a body that is only `...`. */
      size_t w = sites[i].end - sites[i].start;
      CHECK(memmem(a + sites[i].start, w, marker, strlen(marker)) ||
            (ho.python_ellipsis && memmem(a + sites[i].start, w, "...", 3)));
    }
  }
  sc_edit_site blk;
  bool have_blk = sc_edit_site_block_at(doc, cursor, &blk);
  if (have_blk) CHECK(blk.start == cursor && blk.end == cursor);
  /* A splice at the first hole (else the block, else the cursor): the new
   * text is exactly the old one with B in place. */
  size_t s = n ? sites[0].start : cursor, e = n ? sites[0].end : cursor;
  free(sites);
  if (sc_edit_doc_apply(doc, s, e, b, nb, NULL) == SC_OK) {
    size_t len = 0;
    const char *t = sc_edit_doc_text(doc, &len);
    CHECK(len == na - (e - s) + nb);
    CHECK(memcmp(t, a, s) == 0 && memcmp(t + s, b, nb) == 0 &&
          memcmp(t + s + nb, a + e, na - e) == 0);
  }
  sc_edit_doc_free(doc);
}

/* ---- part 5: the tokenizer ----------------------------------------------------------- */

static void part_tokens(const char *a, size_t na) {
  int32_t *ids = NULL;
  size_t n = 0;
  if (sc_tokenizer_encode(g_tok, a, na, &ids, &n, NULL) != SC_OK) return;
  char *text = NULL;
  size_t len = 0;
  /* Bytes in, the same bytes out: an answer's text is decoded from ids. */
  CHECK(sc_tokenizer_decode(g_tok, ids, n, &text, &len, NULL) == SC_OK);
  CHECK(len == na && memcmp(text, a, na) == 0);
  free(text);
  free(ids);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 4 || !g_tok) return 0;
  unsigned part = data[0] % 6, li = data[1] % N_LANGS, flags = data[3];
  const char *a = (const char *)data + 4;
  size_t rest = size - 4, na = rest;
  for (size_t i = 0; i + 1 < rest; i++)
    if (a[i] == 0 && a[i + 1] == 0) {
      na = i;
      break;
    }
  const char *b = na + 2 <= rest ? a + na + 2 : a + rest;
  size_t nb = na + 2 <= rest ? rest - na - 2 : 0;
  size_t cursor = na ? (size_t)data[2] * na / 255 : 0;
  switch (part) {
  case 0: part_diagnostics(a, na, b, nb, (int)li, flags); break;
  case 1: part_shape(a, na, b, nb, (int)li, cursor); break;
  case 2: part_drafts(a, na, b, nb, cursor, flags); break;
  case 3: part_prompt(a, na, b, nb, (int)li, cursor, flags); break;
  case 4: part_edit(a, na, b, nb, (int)li, cursor, flags); break;
  default: part_tokens(a, na); break;
  }
  return 0;
}
