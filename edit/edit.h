/*
 * edit.h — the edit engine: a site in a document becomes a checked text
 * edit. One engine behind both front doors: `sculpt batch` (cli/cmd_batch.c:
 * many files, many sites, written to disk) and the editor's code actions
 * (one site in one open document, answered as a TextEdit).
 *
 * What it owns:
 *   - sites: holes (an explicit marker), the statement around a diagnostic,
 *     the nodes a tree-sitter query captures, an empty block at a cursor;
 *   - candidates, asked of a generator the caller supplies (the local
 *     diffusion engine through sc_edit_local, or the caller's own callback,
 *     e.g. over a remote FIM endpoint): seed 0 greedy, then samples;
 *   - the checks a candidate must pass before it may reach a file or an
 *     editor (sc_edit_check);
 *   - the resulting text edit, a unified diff of a file's change, and, for
 *     a run over files, reading and writing those files safely.
 *
 * edit/ depends on context/ (syntax trees, planning) and model/ (the engine
 * and the tokenizer, for the local generator); never on lsp/, net/ or cli/:
 * a remote backend comes in as a generator callback.
 *
 * ---- The code actions' adapter (lsp/actions.c) ----
 * For one codeAction request, on the worker thread:
 *   1. sc_edit_doc_from_tree(tree, path, &doc): a snapshot of the open
 *      document over the tree the job parsed (the engine never sees the
 *      protocol); path from the document's URI (stubs, includes).
 *   2. The site. Quick fix: sc_edit_site_for_diagnostic(doc, offset of the
 *      diagnostic's range.start, its message, &site). Fill hole:
 *      sc_edit_find_holes(doc, &{holeMarker setting, python_ellipsis: an
 *      action is an offer the user picks}, the range's offsets, &sites,
 *      &n). Complete block: sc_edit_site_block_at(doc, cursor, &site).
 *   3. The generator: sc_edit_local_generator(local), where local wraps the
 *      server's engine with options from its settings (maxTokens as
 *      max_tokens, contextBudget as context_tokens, the infill params), its
 *      calls counted; or the server's own callback over the remote FIM
 *      client, which sends the byte windows sc_edit_request_window gives,
 *      fitted to the backend's context when known.
 *   4. sc_edit_fill(doc, &site, &opts (3 seeds), &res). When res.status is
 *      SC_EDIT_DONE the action's edit is one TextEdit replacing
 *      [res.start, res.end) of the snapshot with res.text (byte offsets; the
 *      LSP converts them with its line index and position encoding). The
 *      engine's checks are the rule for offering an action at all: a
 *      candidate that fails them is never offered.
 * The same site and seed give the same edit there and in `sculpt batch`;
 * tests/unit/test_edit.c checks it (sc_edit_fill against the CLI), and
 * tests/protocol/test_actions.py (a code action against the CLI).
 *
 * Offsets are UTF-8 byte offsets into the document's text. Documents and
 * runs are not thread-safe: one thread at a time per handle.
 */
#ifndef SCULPT_EDIT_H
#define SCULPT_EDIT_H

#include "context.h"
#include "model.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SC_EDIT_MAX_CANDIDATES 16
#define SC_EDIT_DEFAULT_MARKER "TODO(sculpt)"

/* ---- documents ----------------------------------------------------------------- */

typedef struct sc_edit_doc sc_edit_doc;

/* A document: its language (sculpt's name, e.g. "python"), its path (may be
 * NULL; borrowed, copied: only its name is looked at, e.g. a .pyi stub) and
 * its text (len bytes, borrowed, copied), parsed. *out owned by the caller.
 * SC_ERR_UNSUPPORTED for a language without a grammar. */
sc_status sc_edit_doc_new(const char *lang, const char *path, const char *text, size_t len,
                          sc_edit_doc **out, sc_error *err);
void sc_edit_doc_free(sc_edit_doc *doc); /* NULL is fine */

/* A document over a tree the caller has parsed already (e.g. the editor's
 * copy of an open file), so that it is not parsed twice: the tree is copied
 * (cheap for its nodes, the text duplicated; a pending tree is parsed
 * here), path as for sc_edit_doc_new. *out owned by the caller. */
sc_status sc_edit_doc_from_tree(const sc_syntax_tree *tree, const char *path, sc_edit_doc **out,
                                sc_error *err);

/* The current text (owned by the document, NUL-terminated, valid until the
 * next sc_edit_doc_apply) and its language (static). */
const char *sc_edit_doc_text(const sc_edit_doc *doc, size_t *len);
const char *sc_edit_doc_language(const sc_edit_doc *doc);

/* Replaces [start, end) with text (len bytes, borrowed) and parses the
 * result afresh. SC_ERR_INVALID for a range outside the text. */
sc_status sc_edit_doc_apply(sc_edit_doc *doc, size_t start, size_t end, const char *text,
                            size_t len, sc_error *err);

/* ---- sites --------------------------------------------------------------------- */

typedef enum sc_edit_kind {
  SC_EDIT_HOLE = 1,   /* an explicit marker (or, opted in, a Python `...` body) */
  SC_EDIT_DIAGNOSTIC, /* the statement around a compiler's or an LSP diagnostic */
  SC_EDIT_QUERY,      /* a node a tree-sitter query captured */
  SC_EDIT_BLOCK,      /* an empty block or function body at a cursor */
} sc_edit_kind;

/* "hole", "diagnostic", "query", "block" (static). */
const char *sc_edit_kind_name(sc_edit_kind kind);

#define SC_EDIT_MAX_CHOICES 32

typedef struct sc_edit_site {
  sc_edit_kind kind;
  size_t start, end; /* the span a candidate replaces: [start, end) */
  size_t anchor;     /* a diagnostic's position, as the site attributes it; else start */
  bool single_line;  /* the replacement must stay on one line (an inline hole) */
  char expect[8];    /* a diagnostic's missing token as its message names it
                        (`expected ';'`, gcc's `expected ‘;’`), else "" */
  /* The tokens a message offers as a choice (rustc's `expected one of `)`,
   * `,`, or an operator, found `x``, gcc's `expected ‘,’ or ‘;’ before`,
   * javac's `')' or ',' expected`), in its order, each NUL-terminated,
   * rustc's "an operator" as its binary operators; n_choices 0 when it
   * names one (expect) or none. choices_open: it also names a kind of
   * thing (`identifier`, `path`), which no token here stands for. */
  char choices[SC_EDIT_MAX_CHOICES][8];
  int n_choices;
  bool choices_open;
} sc_edit_site;

typedef struct sc_edit_hole_options {
  const char *marker;   /* NULL: SC_EDIT_DEFAULT_MARKER */
  /* A Python function body that is only `...` (after a docstring at most),
   * on its own line, is a hole too; never under @overload or
   * @abstractmethod, in a Protocol, ABC or ABCMeta class, or in a .pyi. */
  bool python_ellipsis;
} sc_edit_hole_options;

/* The holes on the lines that [from, to] touches (0 and SIZE_MAX: the whole
 * document), in document order. A marker is a hole in code or in a
 * comment, never in a string, a docstring, a character or regex literal
 * (code interpolated into a string is code). A comment holding it is the
 * hole, replaced whole: over several lines when it is alone on its line,
 * on its line when it follows code; a comment over several lines only when
 * it holds nothing but the marker (prose that mentions it is not a hole).
 * In code, a line that is only the marker is replaced whole (indentation
 * kept); elsewhere the marker itself is an inline hole, filled on its
 * line. *out is a malloc'd array owned by the caller (free()); NULL with
 * *n == 0 when there is none. */
sc_status sc_edit_find_holes(const sc_edit_doc *doc, const sc_edit_hole_options *o, size_t from,
                             size_t to, sc_edit_site **out, size_t *n, sc_error *err);

/* The site of a diagnostic at byte offset (message may be NULL). It holds
 * the diagnostic's position and lies on its line: the statement there when
 * that is simple (no statement inside it, not a block, not an ERROR) and
 * 5 lines at most, else the line; from the position to the statement's end
 * when the position is inside it. A position at a line's end belongs to
 * that line's statement; one at the start of a line whose previous line
 * tree-sitter finds broken at its end (gcc reports a missing `;` at the
 * next token) belongs to the previous line. A message about indentation
 * takes the whole line, indentation included. A message that names the
 * token expected "before" the next one (gcc's `expected ';' before 'old'`)
 * puts it right after the token before (blanks and comments skipped), on
 * the line before when gcc's position starts a line; Python's `'(' was
 * never closed` takes from the opener to the end of its line (or of the
 * deeper-indented lines after it), where the closer goes. site.anchor is
 * the position as attributed; site.expect the token the message says is
 * expected, when it names one and only one. SC_ERR_INVALID for an offset
 * past the end of the text. */
sc_status sc_edit_site_for_diagnostic(const sc_edit_doc *doc, size_t offset, const char *message,
                                      sc_edit_site *out, sc_error *err);

/* Every node the query (tree-sitter S-expression source) captures as
 * @capture, in document order. SC_ERR_INVALID, with the reason, when the
 * query does not compile for the document's language or has no such
 * capture. *out as for sc_edit_find_holes. */
sc_status sc_edit_find_query(const sc_edit_doc *doc, const char *query, const char *capture,
                             sc_edit_site **out, size_t *n, sc_error *err);

/* An empty block or function body at cursor: an insertion point
 * [cursor, cursor). False when the cursor is not in one. */
bool sc_edit_site_block_at(const sc_edit_doc *doc, size_t cursor, sc_edit_site *out);

/* ---- candidates ---------------------------------------------------------------- */

/* What a generator is asked: a replacement for [site.start, site.end) of
 * text. All borrowed for the call. */
typedef struct sc_edit_request {
  const char *text; /* the document's whole current text */
  size_t len;
  const char *lang;
  sc_edit_site site;
  uint64_t seed; /* 0: greedy; else a sample at the generator's temperature */
} sc_edit_request;

typedef struct sc_edit_candidate {
  char *text;        /* malloc'd; owned by whoever holds the struct; NULL: none */
  size_t len;
  double confidence; /* mean per-token confidence in [0, 1]; 0 when unknown */
} sc_edit_candidate;

void sc_edit_candidate_free(sc_edit_candidate *c); /* frees text; NULL is fine */

typedef struct sc_edit_generator {
  /* One candidate for req into *out (its text malloc'd). */
  sc_status (*generate)(void *user, const sc_edit_request *req, sc_edit_candidate *out,
                        sc_error *err);
  /* Optional: the greedy candidates of n requests at once (e.g. in shared
   * forward passes). outs[i].text stays NULL for a request it did not do;
   * *passes (may be NULL) gets the forward passes spent. */
  sc_status (*generate_many)(void *user, const sc_edit_request *reqs, size_t n,
                             sc_edit_candidate *outs, int *passes, sc_error *err);
  void *user;
  /* A remote endpoint: a failure would repeat for every seed, so a site
   * stops at the first. */
  bool remote;
} sc_edit_generator;

/* The byte windows around a request's site that a prompt of context_tokens
 * tokens draws from (8 bytes a token before the site, a quarter of that
 * plus 256 after): [*prefix_start, site.start) and [site.end, *suffix_end).
 * A remote generator sends these; the local one trims them by tokens. */
void sc_edit_request_window(const sc_edit_request *req, size_t context_tokens,
                            size_t *prefix_start, size_t *suffix_end);

/* The local diffusion engine as a generator. */
typedef struct sc_edit_local sc_edit_local;

typedef struct sc_edit_local_options {
  int max_tokens;      /* a hole's canvas; a re-infill tries lengths near its span's,
                          at most twice this. 0: 32 */
  int context_tokens;  /* prompt tokens around the site, at most. 0: 1024 */
  double temperature;  /* seeds > 0 sample at this. 0: 0.8 */
  const sc_infill_params *params; /* the rest (NULL: sc_infill_params_default);
                                     copied; seed and temperature are set per request */
  const _Atomic int *cancel; /* may be NULL; polled between denoising steps */
} sc_edit_local_options;

/* engine, tok and model are borrowed and must outlive it; model gives the
 * context length. *out owned by the caller. */
sc_status sc_edit_local_new(sc_engine *engine, const sc_tokenizer *tok, const sc_model *model,
                            const sc_edit_local_options *o, sc_edit_local **out, sc_error *err);
void sc_edit_local_free(sc_edit_local *l);
/* The generator (generate and generate_many); valid while l lives. */
sc_edit_generator sc_edit_local_generator(sc_edit_local *l);

/* ---- checks -------------------------------------------------------------------- */

/* The engine's judgement of one candidate for a site of doc: ok, or the
 * reason it is refused (static text, as reports show it). */
typedef struct sc_edit_verdict {
  bool ok;
  const char *why; /* NULL when ok */
  size_t errors_before, errors_after; /* tree-sitter ERROR/MISSING nodes, whole file */
} sc_edit_verdict;

/* Checks cand (len bytes, as it would replace the site) against doc, the
 * rule for a candidate to reach a file or be offered as a code action:
 *   - a diagnostic's site holds an error some judge sees on its lines or
 *     the next (tree-sitter, the C compiler, Python): a type checker's
 *     error or a warning on code that parses and compiles is not fixed
 *     ("no error to fix there");
 *   - the whole file then has no new syntax error and no more in all
 *     (tree-sitter, whole file); a diagnostic's fix has fewer when the file
 *     had any on its lines or the next, and none at or right after its
 *     text ("does not parse");
 *   - every token outside the site is still the same token (a candidate
 *     that comments out or strings over the code after it, or merges into
 *     a neighbour, fails: "changes code outside its site"), except where
 *     the parser's recovery had split it (an ERROR or MISSING inside: `-`
 *     `>` becomes `->` again) or it is a string's text, still in a string;
 *   - brackets balanced within the site, unless the file's unmatched ones
 *     shrink ("unbalanced brackets");
 *   - no comment or directive where there was code, for a site that held
 *     code ("hides code in a comment or directive");
 *   - a diagnostic's fix drops at most a quarter of its site's non-blank
 *     bytes, at least 2 (longest common subsequence): it fixes the
 *     statement rather than writing another ("drops the code it fixes");
 *   - a Python file compiles no worse ("does not compile"; "bad
 *     indentation" from our own check when no interpreter is at hand), a
 *     C/C++ file gets no new compiler error ("does not compile"), and a
 *     diagnostic's fix leaves it fewer ("does not fix the error").
 * doc is not changed. An error (out of memory) leaves *out refused. */
sc_status sc_edit_check(const sc_edit_doc *doc, const sc_edit_site *site, const char *cand,
                        size_t len, sc_edit_verdict *out, sc_error *err);

/* Python's own compile() of a whole file (text, len bytes): 1 compiles, 0
 * does not, -1 no interpreter (none on PATH, or $SCULPT_PYTHON empty). The
 * text is compiled, never run, by the one interpreter per process that
 * sc_edit_check's Python verdict uses. Thread-safe. */
int sc_edit_python_compiles(const char *text, size_t len);

/* ---- filling one site ----------------------------------------------------------- */

typedef enum sc_edit_status {
  SC_EDIT_PENDING = 0,
  SC_EDIT_DONE,
  SC_EDIT_FAILED,
  SC_EDIT_SKIPPED,
} sc_edit_status;

/* "pending", "done", "failed", "skipped" (static). */
const char *sc_edit_status_name(sc_edit_status s);

/* Where a candidate of seed came from: "insertion" (seed -1, a missing
 * token inserted) or "model" (static). */
const char *sc_edit_source_name(int seed);

/* One candidate tried, as reports show it. */
typedef struct sc_edit_try {
  int seed;            /* the model's seed; -1: a missing token inserted (sc_edit_fill) */
  bool decoded;        /* false: the generator failed (error says why) */
  char *text;          /* the candidate as judged (trimmed); owned */
  size_t len;
  double confidence;
  bool parsed;         /* it passed the engine's checks */
  const char *rejected; /* static: why not, or NULL */
  const char *check;   /* the caller's test: "passed", "failed", "not run"; NULL: none asked */
  char *error;         /* owned; the generator's or the test's error, or NULL */
  bool has_ms;         /* ms is set (not when the try ended in an error) */
  double ms;
} sc_edit_try;

typedef struct sc_edit_result {
  sc_edit_status status;
  const char *reason; /* static; why it is not done, else NULL */
  const char *check;  /* the caller's test for the kept candidate: "passed",
                         "failed" or "not run" */
  sc_edit_try *tries; /* in seed order; owned */
  size_t n_tries;
  /* When done: the edit, replacing [start, end) of the document's text (as
   * it was given) with text, and the candidate it came from. */
  size_t start, end;
  char *text; /* owned */
  size_t len;
  int seed;   /* -1 when not done, or done by an insertion */
  double confidence;
  double ms;
} sc_edit_result;

void sc_edit_result_free(sc_edit_result *r); /* frees what it owns; keeps the struct */

/* The caller's own test of a candidate that passed every engine check (in
 * batch: write it, run --check CMD): text is the whole document with the
 * candidate in place. *passed true keeps it. An error means the test could
 * not run: the site stops there (SC_ERR_STALE: "the file changed on disk"). */
typedef sc_status (*sc_edit_accept_fn)(void *user, const char *text, size_t len, bool *passed,
                                       sc_error *err);

typedef struct sc_edit_fill_options {
  sc_edit_generator gen;     /* required */
  int candidates;            /* seeds 0 .. candidates-1; 0: 1; at most SC_EDIT_MAX_CANDIDATES */
  sc_edit_candidate *first;  /* may be NULL: seed 0's candidate decoded already (e.g.
                                by generate_many); its text is taken over */
  sc_edit_accept_fn accept;  /* may be NULL */
  void *accept_user;
  const _Atomic int *cancel; /* may be NULL; non-zero stops before the next candidate */
} sc_edit_fill_options;

/* Asks for candidates in seed order and keeps the first that passes the
 * engine's checks (and accept). A diagnostic's site first tries inserting
 * its missing token, as seed -1 (sc_edit_source_name: "insertion"): the
 * one token the message says is expected (site.expect) at site.anchor,
 * else the tokens tree-sitter's recovery inserted in the site (a MISSING
 * `;` or `)`); of a choice (site.choices), each token that passes the
 * checks, as seeds -n .. -1 in the message's order, when accept is given,
 * else the one that alone passes (none when the choice is open and no C
 * compiler judged it). *out is filled whatever happens (free it with
 * sc_edit_result_free); the return value is SC_OK unless something
 * outside the candidates failed (out of memory, a document that cannot be
 * parsed). doc is not changed: apply the edit with sc_edit_doc_apply. */
sc_status sc_edit_fill(const sc_edit_doc *doc, const sc_edit_site *site,
                       const sc_edit_fill_options *o, sc_edit_result *out, sc_error *err);

/* ---- diagnostics as input ------------------------------------------------------ */

/* What a tool's columns count. */
typedef enum sc_edit_col_unit {
  SC_EDIT_COL_BYTES = 0, /* UTF-8 bytes: clang, go */
  SC_EDIT_COL_CHARS,     /* code points: Python, flake8, ruff, mypy, rustc */
  SC_EDIT_COL_UTF16,     /* UTF-16 code units: LSP, tsc, pyright */
  SC_EDIT_COL_DISPLAY,   /* gcc (since 11): a tab to the next multiple of 8, a code point 1 */
} sc_edit_col_unit;

/* LSP's severities. */
enum { SC_EDIT_ERROR = 1, SC_EDIT_WARNING, SC_EDIT_INFORMATION, SC_EDIT_HINT };

typedef struct sc_edit_diagnostic {
  char *path, *message; /* owned */
  long line;            /* 0-based */
  long col;             /* 0-based, in unit; -1: none given (mypy): the line's end */
  sc_edit_col_unit unit;
  bool col_in_content;  /* col counts from the line's first non-blank character (Python's
                           traceback shows the line without its indentation) */
  int severity;         /* SC_EDIT_ERROR .. SC_EDIT_HINT */
} sc_edit_diagnostic;

/* Parses diagnostics as tools print them (other lines are ignored, but
 * one must be a diagnostic):
 *   - `path:line:col: SEVERITY: message`: gcc, clang, mypy
 *     (--show-column-numbers), cargo's short form; `path:line: SEVERITY:`
 *     (mypy: no column); SEVERITY is fatal error, error, warning, note,
 *     remark, info, information, hint or help (notes, remarks and help
 *     are not diagnostics of their own and are left out);
 *   - `path:line:col: CODE message` (flake8, ruff, pycodestyle): E9xx
 *     and a SyntaxError are errors, other codes warnings;
 *   - `path:line:col: message` (go build, go vet, gofmt -e): errors;
 *   - `path:line:col - SEVERITY: message` (pyright, tsc --pretty);
 *     `path(line,col): SEVERITY TSnnnn: message` (tsc);
 *   - rustc and cargo: `error[E0425]: message` or `warning: message` and
 *     then ` --> path:line:col`;
 *   - Python's traceback (py_compile, a crash): `File "path", line N`,
 *     the line, a caret, `SyntaxError: message`;
 * with ANSI colours removed; or LSP JSON: a Diagnostic, an array of them
 * (each with "uri" or "file", or else all for only_file),
 * PublishDiagnosticsParams {uri, diagnostics}, or an array of those (a
 * file URI is percent-decoded, a missing severity is an error). gcc's
 * columns are display columns unless clang's "N errors generated." shows
 * the text is clang's. SC_ERR_FORMAT with the reason on malformed input.
 * *out owned by the caller: sc_edit_diagnostics_free. */
sc_status sc_edit_diagnostics_parse(const char *text, size_t len, const char *only_file,
                                    sc_edit_diagnostic **out, size_t *n, sc_error *err);
void sc_edit_diagnostics_free(sc_edit_diagnostic *d, size_t n);

/* ---- a run over files (sculpt batch) --------------------------------------------- */

typedef struct sc_edit_run sc_edit_run;

typedef struct sc_edit_run_options {
  sc_edit_kind mode;            /* SC_EDIT_HOLE, SC_EDIT_DIAGNOSTIC or SC_EDIT_QUERY */
  sc_edit_hole_options holes;   /* SC_EDIT_HOLE */
  const char *query, *capture;  /* SC_EDIT_QUERY */
  int candidates;               /* per site; 0: 1 */
  /* The strongest test, optional: each candidate that passes the engine's
   * checks is written and `sh -c check_cmd` runs ($SCULPT_BATCH_FILE is the
   * file, its stdout goes to stderr); the first that exits 0 is kept. */
  const char *check_cmd;
  /* sc_edit_run_finish writes the kept edits (else it only puts back what
   * --check left on disk). A run that writes or checks first removes the
   * temp files a killed run left in the folders it visits. */
  bool write;
  bool force;                   /* write read-only files too */
  bool warnings;                /* diagnostics of severity warning are sites too (else
                                   errors only) */
  const _Atomic int *cancel;    /* may be NULL; non-zero stops between sites and candidates */
  /* One line for the user, without a prefix or line break: SC_LOG_INFO for
   * a skipped file, SC_LOG_ERROR for a failure (a refused write, a backend
   * that fails). May be NULL. */
  void (*say)(void *user, sc_log_level level, const char *line);
  void *user;
} sc_edit_run_options;

/* A run over the files under paths (files or folders); each must exist: a
 * path that does not is SC_ERR_INVALID ("PATH: why"). Their real paths are
 * the roots nothing outside of which is read or written. o and paths are
 * borrowed for the run's life. *out owned by the caller. */
sc_status sc_edit_run_new(const sc_edit_run_options *o, const char *const *paths, int n_paths,
                          sc_edit_run **out, sc_error *err);
void sc_edit_run_free(sc_edit_run *r);

/* Holes and query modes: walks the paths (hidden entries skipped, symlinked
 * folders not followed, files leading out of the roots refused) and finds
 * the sites. SC_ERR_INVALID when the query compiles for none of the files. */
sc_status sc_edit_run_collect(sc_edit_run *r, sc_error *err);

/* Diagnostics mode: one site per error (per warning too with o->warnings;
 * the rest are left out, and said), an overlapping one dropped.
 * SC_ERR_INVALID for a line past the end of its file. */
sc_status sc_edit_run_add_diagnostics(sc_edit_run *r, const sc_edit_diagnostic *d, size_t n,
                                      sc_error *err);

size_t sc_edit_run_site_count(const sc_edit_run *r);

/* Fills every site, per file last site first (so that earlier offsets stay
 * valid), with gen; with batch_sites and gen->generate_many, the holes'
 * greedy candidates are decoded together first. Stops when cancel is set.
 * progress (may be NULL) is called after each site with the count done.
 * Returns how many sites were reached (the rest are skipped: interrupted). */
size_t sc_edit_run_fill(sc_edit_run *r, const sc_edit_generator *gen, bool batch_sites,
                      void (*progress)(void *user, size_t done), void *user);

/* The end of a run: with o->write, each changed file is replaced by its new
 * text, each on its own (all or nothing per file); without, a file --check
 * left changed is put back. Failures are said (o->say) and recorded on the
 * file: a read-only file (unless o->force), a file with hard links, a file
 * changed on disk since it was read (its new bytes are kept). */
void sc_edit_run_finish(sc_edit_run *r);

/* What the report shows. Everything returned is owned by the run. */
typedef struct sc_edit_run_file {
  const char *path;  /* as shown in diffs and reports */
  const char *orig;  /* the text as read */
  size_t orig_len;
  const char *text;  /* with the kept edits */
  size_t len;
  bool written;      /* a write run left the new text on disk */
  bool failed_write; /* the text could not be written (or put back) */
  const char *write_error; /* why not, or NULL */
} sc_edit_run_file;

typedef struct sc_edit_run_site {
  size_t file;         /* index for sc_edit_run_get_file */
  sc_edit_site site;   /* in the file's original text */
  uint32_t line0, col0, line1, col1; /* 0-based, byte columns, of the span */
  const char *message; /* the diagnostic's, or NULL */
  sc_edit_result result;
} sc_edit_run_site;

size_t sc_edit_run_file_count(const sc_edit_run *r);
void sc_edit_run_get_file(const sc_edit_run *r, size_t i, sc_edit_run_file *out);
/* Sites in file order, then by offset. */
const sc_edit_run_site *sc_edit_run_get_site(const sc_edit_run *r, size_t k);
size_t sc_edit_run_skipped_count(const sc_edit_run *r);
void sc_edit_run_get_skipped(const sc_edit_run *r, size_t i, const char **path,
                             const char **reason);
/* How many diagnostics were left out as not errors (sc_edit_run_add_diagnostics). */
size_t sc_edit_run_left_out(const sc_edit_run *r);
/* How many greedy candidates were decoded together, in how many passes. */
void sc_edit_run_batched(const sc_edit_run *r, int *sites, int *passes);

typedef struct sc_edit_run_counts {
  size_t files, sites;
  size_t done, failed;          /* sites: done, and not done (failed or skipped) */
  size_t written, failed_writes; /* files */
  size_t left_out;              /* diagnostics that were not sites (not errors) */
} sc_edit_run_counts;

void sc_edit_run_count(const sc_edit_run *r, sc_edit_run_counts *out);

/* The run's report as JSON text (malloc'd, owned by the caller; NULL when
 * out of memory): "sites" (file, range, mode, status, candidates tried and
 * each candidate, check, ms, original, text, seed, confidence, reason,
 * message), "summary" (the counts, diagnostics_left_out, skipped_files, and
 * interrupted, write and ms as given, batched_sites and batched_passes,
 * written_files: the paths
 * written, write_failures: [{path, reason}]) and "diffs" (path -> the
 * unified diff of each changed file). */
char *sc_edit_run_report_json(const sc_edit_run *r, bool interrupted, bool write, double ms);

/* ---- diffs --------------------------------------------------------------------- */

/* A unified diff (3 lines of context, git-style a/ b/ headers) of old -> new
 * for path, to o. Nothing when they are equal. */
void sc_edit_diff_write(FILE *o, const char *path, const char *old, size_t old_len,
                        const char *new_text, size_t new_len);

#ifdef __cplusplus
}
#endif
#endif /* SCULPT_EDIT_H */
