/*
 * context.h — repository context: syntax trees, the workspace index,
 * retrieval, prompt assembly, infill planning and shaping.
 *
 * context/ knows no protocol: the LSP daemon, the CLI and batch mode all use
 * it unchanged. It depends on model/ only for the tokenizer (token budgets).
 * Its functions arrive with the context issue; the module exists now so that
 * the build and the dependency order are fixed from the start.
 */
#ifndef SCULPT_CONTEXT_H
#define SCULPT_CONTEXT_H

#include "model.h"

/* Trees and queries are handed out as tree-sitter's own types (TSNode,
 * TSQuery, from the pinned runtime in grammars/), so that callers walk them with
 * its API rather than through a copy of it here. */
#include <tree_sitter/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Maps an LSP languageId or a file name's extension to sculpt's language
 * name ("c", "cpp", "python", ...). Returns NULL when the language is not
 * one sculpt knows. The result is a static string. */
const char *sc_context_language_for(const char *language_id, const char *path);

/* ---- grammars and queries ----------------------------------------------------
 * Every language sc_context_language_for() returns has a tree-sitter grammar
 * compiled in (grammars/, versions pinned in grammars/package-lock.json) and
 * four queries written for sculpt (grammars/queries/<lang>/<kind>.scm). */

/* The grammar for a sculpt language name, or NULL when there is none. Static;
 * safe from any thread. */
const TSLanguage *sc_context_ts_language(const char *lang);
/* The tree-sitter runtime's release compiled in ("0.25.1"; static). */
const char *sc_syntax_runtime_version(void);

typedef enum sc_query_kind {
  SC_QUERY_DEFINITIONS = 0, /* @definition.{function,method,class,type,module} + @name */
  SC_QUERY_IDENTIFIERS,     /* @identifier */
  SC_QUERY_IMPORTS,         /* @import (statement), @import.path */
  SC_QUERY_BLOCKS,          /* @block.function, @block.class, @block */
  SC_QUERY_KIND_COUNT
} sc_query_kind;

const char *sc_query_kind_name(sc_query_kind kind); /* static, e.g. "blocks" */

/* The query's .scm source as embedded at build time (static), or NULL. */
const char *sc_query_source(const char *lang, sc_query_kind kind, size_t *len);

/* The compiled query for (lang, kind). Compiled once on first use and kept
 * for the life of the process: the result is owned by the library, immutable
 * and may be used from several threads at once, each with its own
 * TSQueryCursor. A query that does not compile is SC_ERR_FORMAT with the byte
 * offset and the kind of error in the message. */
sc_status sc_query_get(const char *lang, sc_query_kind kind, const TSQuery **out,
                       sc_error *err);

/* ---- syntax trees ------------------------------------------------------------
 * One per open document. The tree keeps its own copy of the text, so that an
 * edit needs only the changed bytes (as LSP incremental sync sends them) and
 * row/column points are computed here. Offsets are UTF-8 byte offsets;
 * columns in TSPoint are bytes too, as tree-sitter wants. A tree is not
 * thread-safe: one thread at a time (the document's owner) may use it. */
typedef struct sc_syntax_tree sc_syntax_tree;

/* Parses text (len bytes, borrowed; copied) in lang. *out is owned by the
 * caller: sc_syntax_tree_free. SC_ERR_UNSUPPORTED for a language without a
 * grammar or one the runtime cannot load (ABI). */
sc_status sc_syntax_tree_new(const char *lang, const char *text, size_t len,
                             sc_syntax_tree **out, sc_error *err);
void sc_syntax_tree_free(sc_syntax_tree *tree); /* NULL is fine */

/* A deep copy (the TSTree copy is cheap, the text is duplicated), e.g. to try
 * an edit without touching the original. */
sc_status sc_syntax_tree_copy(const sc_syntax_tree *tree, sc_syntax_tree **out,
                              sc_error *err);

/* Replaces bytes [start, old_end) with new_text (new_len bytes, borrowed) and
 * reparses incrementally from the old tree. SC_ERR_INVALID when the range is
 * outside the text (the tree is unchanged then). */
sc_status sc_syntax_tree_edit(sc_syntax_tree *tree, size_t start, size_t old_end,
                              const char *new_text, size_t new_len, sc_error *err);

/* Parses the current text again from scratch. Incremental reparsing can, in
 * rare cases, recover from a syntax error differently than a fresh parse
 * would (tree-sitter issues #1645, #4001; seen here with the bash scanner);
 * calling this when the document is saved or the editor idles bounds how
 * long such a difference can last. Costs a full parse (~75 ms for 170 KB of C). */
sc_status sc_syntax_tree_reparse(sc_syntax_tree *tree, sc_error *err);

/* Parsing off the caller's thread (the language server's loop never
 * parses): a tree is made or edited without parsing, copied to a worker
 * (sc_syntax_tree_copy), and parsed there. Until it is parsed such a tree
 * is pending: its text is current but its nodes are not, and only
 * sc_syntax_tree_text, _copy, _edit_unparsed, _parse and _free may be
 * called on it. */

/* A tree for text (len bytes, copied) in lang, not parsed yet. */
sc_status sc_syntax_tree_new_unparsed(const char *lang, const char *text, size_t len,
                                      sc_syntax_tree **out, sc_error *err);
/* sc_syntax_tree_edit without the parse: many edits then cost one
 * (incremental) parse instead of one each. */
sc_status sc_syntax_tree_edit_unparsed(sc_syntax_tree *tree, size_t start, size_t old_end,
                                       const char *new_text, size_t new_len, sc_error *err);
/* Every parse runs under a time budget: tree-sitter's error recovery is
 * quadratic on some texts (20,000 bash heredocs opened on their own lines,
 * 140 KB, took 11 s), and a document is anyone's text. Past the budget the
 * parse is abandoned with SC_ERR_UNSUPPORTED, and the tree stays as it was
 * (pending, when it was being brought up to date). Real code parses far
 * inside it (170 KB of C in 75 ms). The budget is CPU time of the parsing
 * thread: what bounds the work is the text, not how busy the machine is,
 * and a parse (or a query, below) that was waiting for a core does not come
 * out different (the repository-context recall test, under ASan and load,
 * lost definitions to queries halted on the wall clock). */
#define SC_SYNTAX_PARSE_BUDGET_NS 2000000000ll /* 2 s, plus per byte: */
#define SC_SYNTAX_PARSE_NS_PER_BYTE 5000ll
/* Another budget for tree's parses (ns; 0: the default): for tests and
 * fuzzing, where a smaller one keeps inputs many. */
void sc_syntax_tree_set_parse_limit(sc_syntax_tree *tree, long long ns);

/* The stack a parse of a text of len bytes may need. tree-sitter recurses
 * once a level in places (deep unclosed brackets, edited, took 2.5 MB for
 * 43 KB), so a parse runs on the calling thread only when this much of its
 * stack is left, else on a thread of its own: a thread that parses texts
 * up to len in place is created with this much (context/syntax.c). */
size_t sc_syntax_parse_stack_size(size_t len);

/* True: asked to stop (the parse is abandoned). */
typedef bool (*sc_syntax_stop_fn)(void *user);
/* Brings a pending tree up to its text: incrementally from its old nodes
 * when it has them, else from scratch; nothing to do when it is not pending.
 * With stop, stop(user) is asked every few milliseconds while the parse
 * runs (tree-sitter's progress callback): true abandons it with
 * SC_ERR_CANCELLED and the tree stays pending, unchanged. */
sc_status sc_syntax_tree_parse(sc_syntax_tree *tree, sc_syntax_stop_fn stop, void *user,
                               sc_error *err);
bool sc_syntax_tree_pending(const sc_syntax_tree *tree);

/* Replaces the whole text and parses it from scratch (LSP full sync). */
sc_status sc_syntax_tree_set_text(sc_syntax_tree *tree, const char *text, size_t len,
                                  sc_error *err);

const char *sc_syntax_tree_language(const sc_syntax_tree *tree); /* static */
/* The current text (owned by the tree, NUL-terminated, valid until the next
 * edit) and its length. */
const char *sc_syntax_tree_text(const sc_syntax_tree *tree, size_t *len);
/* The tree-sitter tree, owned by the tree, valid until the next edit. */
const TSTree *sc_syntax_tree_ts(const sc_syntax_tree *tree);
TSNode sc_syntax_tree_root(const sc_syntax_tree *tree);

/* Nesting bounds. tree-sitter's own walks upwards cost the depth of the
 * node they start from: ts_node_parent descends from the root on every
 * call, and a query cursor looks up through the hidden nodes above each node
 * it enters. In a document nested 10^5 levels deep (a generated file, a run
 * of unclosed brackets) a walk to the root with ts_node_parent, or a query
 * over the whole tree, then takes minutes. */

/* A query cursor (ts_query_cursor_delete frees it) that starts no match
 * deeper than SC_SYNTAX_QUERY_MAX_DEPTH levels below the node it runs on:
 * no real definition, import or block lies deeper, and the cursor then
 * skips what lies below. */
#define SC_SYNTAX_QUERY_MAX_DEPTH 1024u
TSQueryCursor *sc_syntax_query_cursor_new(void);

/* A query's time budget. Depth is not the only cost: entering a node, the
 * cursor scans its later siblings for a named one, so a node with 10^5
 * anonymous children (a line of unclosed brackets, which error recovery
 * leaves flat) costs 10^10 steps. Real code stays far inside the budget
 * (a 170 KB C file's queries take milliseconds); past it the query halts
 * and the matches read so far are all there is. */
#define SC_SYNTAX_QUERY_BUDGET_NS 200000000ll /* 200 ms, plus per byte: */
#define SC_SYNTAX_QUERY_NS_PER_BYTE 200ll
typedef struct sc_syntax_budget {
  long long limit_ns;        /* the caller's: 0 for the default above */
  TSQueryCursorOptions opts; /* private: tree-sitter keeps a pointer to it */
  sc_cpu_budget cpu;         /* private */
  bool halted;               /* the budget ran out: the matches are partial */
} sc_syntax_budget;
/* ts_query_cursor_exec(c, q, node) under a budget for node's bytes (or
 * b->limit_ns) of CPU time of the thread that reads the matches, which must
 * be the thread that called this (as with parses, above). b is the
 * caller's, zeroed but for limit_ns, and must live until the last match is
 * read. */
void sc_syntax_query_exec(TSQueryCursor *c, const TSQuery *q, TSNode node, sc_syntax_budget *b);

/* node, then its ancestors up to the root, innermost first: the nodes a
 * `for (; !ts_node_is_null(n); n = sc_syntax_parent(n))` loop visits, found
 * in one descent from the root instead of one per node. At most
 * SC_SYNTAX_ANCESTRY_MAX of them (the innermost), in *out (owned by the
 * caller, free()); their count, 0 (with *out NULL) for a null node or when
 * out of memory. */
#define SC_SYNTAX_ANCESTRY_MAX 4096u
size_t sc_syntax_ancestry(TSNode node, TSNode **out);
/* The same from the node ts_node_descendant_for_byte_range finds for
 * [a, b] in tree's text. */
size_t sc_syntax_ancestry_at(const sc_syntax_tree *tree, size_t a, size_t b, TSNode **out);
/* ts_node_parent(node) without its recursion: tree-sitter 0.25.1 recurses
 * once a level for an empty node (a MISSING token) and deep nesting
 * overflows the stack. Use this, never ts_node_parent; the null node at
 * the root. */
TSNode sc_syntax_parent(TSNode node);

/* How many ERROR and MISSING nodes the tree has (each counted once, nested
 * ones too). 0 means the text parsed cleanly. */
size_t sc_syntax_tree_error_count(const sc_syntax_tree *tree);

typedef struct sc_syntax_error {
  uint32_t start_byte, end_byte; /* a MISSING node is empty: start == end */
  TSPoint start, end;
  bool missing;                  /* MISSING (inserted) rather than ERROR */
} sc_syntax_error;

/* The ERROR and MISSING nodes in document order. *out is a malloc'd array
 * owned by the caller (free()); NULL with *n == 0 when there are none. */
sc_status sc_syntax_tree_errors(const sc_syntax_tree *tree, sc_syntax_error **out,
                                size_t *n, sc_error *err);

/* The root's S-expression (ts_node_string), malloc'd, owned by the caller.
 * For tests and logs. */
sc_status sc_syntax_tree_sexp(const sc_syntax_tree *tree, char **out, sc_error *err);

/* ---- completion planning -----------------------------------------------------------
 * Before the engine runs: what kind of text belongs at the cursor, how long a
 * canvas (masked tokens) to offer the diffusion model, or that nothing should
 * be suggested at all. */
typedef enum sc_completion_kind {
  SC_COMPLETION_NONE = 0,      /* suggest nothing (reason says why) */
  SC_COMPLETION_EXPRESSION,    /* mid-line, between existing text: one line, short */
  SC_COMPLETION_LINE,          /* the rest of the current line */
  SC_COMPLETION_STATEMENT,     /* a statement (or declaration) on an empty line */
  SC_COMPLETION_BLOCK,         /* the body of an empty block (if, loop, class...) */
  SC_COMPLETION_FUNCTION_BODY, /* the whole body of an empty function */
} sc_completion_kind;

const char *sc_completion_kind_name(sc_completion_kind kind); /* static: "none", "line", ... */

#define SC_COMPLETION_MAX_CANVAS 4

typedef struct sc_completion_plan {
  sc_completion_kind kind;
  const char *reason;   /* static, for logs: e.g. "inside a string" */
  /* Canvas lengths in tokens to try, shortest first; none for SC_COMPLETION_NONE.
   * A starting point: the engine may grow or shrink a canvas as it denoises. */
  uint32_t canvas[SC_COMPLETION_MAX_CANVAS];
  size_t n_canvas;
  bool single_line;     /* the completion must not contain a newline */
  /* The cursor's line: [line_start, line_end) without its line break. */
  size_t line_start, line_end;
} sc_completion_plan;

/* The engine's plan (model.h) with this plan's canvas lengths. */
void sc_completion_plan_to_infill(const sc_completion_plan *plan, sc_infill_plan *out);

/* Plans a completion at byte offset cursor in tree's text. *out is filled on
 * SC_OK (which includes the "suggest nothing" answer, kind SC_COMPLETION_NONE);
 * SC_ERR_INVALID when cursor is past the end of the text. */
sc_status sc_completion_plan_at(const sc_syntax_tree *tree, size_t cursor, sc_completion_plan *out,
                            sc_error *err);

/* ---- shaping a candidate -------------------------------------------------------
 * After the engine: keep only the syntactic unit the plan asked for, then
 * check the kept text by reparsing the document with it inserted. */

/* How many bytes of cand (len bytes) to keep: up to the first line break for
 * one-line kinds; for a statement, its first line plus the lines that
 * continue it (open brackets, deeper indentation); for a block or body, up
 * to where the candidate closes (or, in Python, dedents out of) the block the
 * cursor is in, which the text after the cursor already does. Trailing
 * whitespace is dropped. Brackets inside strings and comments are skipped
 * with a lexical scan (no parse: cand alone is rarely a whole program).
 * cursor is the insertion offset in tree's text, for the indentation. */
size_t sc_completion_cut(const sc_syntax_tree *tree, const sc_completion_plan *plan,
                         size_t cursor, const char *cand, size_t len);

/* Trims a middle (len bytes) against the suffix the editor already has: a
 * single-line completion stops at the line's end and drops a tail the rest
 * of the line repeats (a closing bracket); a multi-line one is cut before
 * its first line that equals the suffix's first non-blank line; trailing
 * blank space goes. Returns the kept length. No parse: any language. */
size_t sc_completion_trim(const char *mid, size_t len, const char *suffix, size_t suffix_len,
                          bool single_line);

typedef struct sc_completion_check {
  bool ok;              /* the insertion created no new ERROR/MISSING node */
  size_t errors_before; /* ERROR/MISSING nodes in the document as it is */
  size_t errors_after;  /* ... with the candidate inserted at the offset */
  size_t new_errors;    /* those after, not present before at the same place */
  /* When !ok: the whole lines of cand holding the new errors, as bytes
   * [span_start, span_end) of cand (no final line break). A repair masks
   * them again and lets the model rewrite them with the rest of the
   * candidate fixed around them (sc_completion_repair_split); an error
   * just outside cand (a bracket it left open) counts on its nearest line. */
  size_t span_start, span_end;
} sc_completion_check;

/* Inserts cand (len bytes, borrowed) at byte offset into a copy of tree and
 * compares the syntax errors; tree is not changed. An error after the
 * insertion is new unless one of the same kind (ERROR or MISSING) covered
 * the same bytes before (shifted past the insertion). Errors the insertion
 * repairs (the incomplete code at the cursor) simply disappear; one that it
 * leaves half-written is new, even when the count stays the same. */
sc_status sc_completion_check_insert(const sc_syntax_tree *tree, size_t offset, const char *cand,
                                     size_t len, sc_completion_check *out, sc_error *err);

/* Repair once: the model rewrites the lines of a candidate that broke the
 * parse, with the rest of the candidate fixed around them. fill gets the
 * candidate's text before the span (head), the span itself (to size the
 * canvas) and the text after it (tail), and returns the new span in *out
 * (malloc'd, owned by the caller). The caller's fill adds its own prompt
 * before head and the document's suffix after tail. */
typedef sc_status (*sc_repair_fill_fn)(void *user, const char *head, size_t head_len,
                                       const char *span, size_t span_len, const char *tail,
                                       size_t tail_len, char **out, size_t *out_len,
                                       sc_error *err);

/* Rebuilds cand (len bytes, inserted at offset in tree's text) with chk's
 * span (from sc_completion_check_insert, !chk->ok) rewritten by fill, and
 * checks the result the same way into *out_chk. A span without a line
 * break gets a one-line rewrite. *out (owned by the caller, NUL-terminated)
 * is set on SC_OK whether or not the result parses: out_chk->ok says. An
 * empty span (nothing in cand to re-mask) is SC_ERR_INVALID. */
sc_status sc_completion_repair(const sc_syntax_tree *tree, size_t offset, const char *cand,
                               size_t len, const sc_completion_check *chk,
                               sc_repair_fill_fn fill, void *user, char **out, size_t *out_len,
                               sc_completion_check *out_chk, sc_error *err);

/* ---- batch and quick fixes ----------------------------------------------------
 * (context/batch.c) Shared by `sculpt batch` and the editor's quick fixes. */

/* The statement around byte offset in tree's text, as [*start, *end): the
 * nearest statement-like ancestor (*_statement, *_declaration or ERROR)
 * when it spans at most 5 lines, else the line without its indentation;
 * a trailing line break is never included. Never fails; an offset past the
 * end is clamped. */
void sc_statement_span(const sc_syntax_tree *tree, size_t offset, size_t *start, size_t *end);

/* ---- the workspace index and prompt assembly ---------------------------------
 * (context/workspace.c, definitions.c, index_store.c, retrieve.c) The files of
 * a repository as git lists them (so .gitignore holds), with binary,
 * generated and huge files and symlinks out of the root skipped; per file its
 * definitions (functions and their prototypes, types, fields, methods,
 * macros, constants, module-level variables; each with its kind, container
 * and compact form), imports and a MinHash sketch of the identifier set of
 * each chunk (24-line windows, step 12). Name -> definitions and container
 * -> members maps make lookups independent of the tree's size. The index is
 * updated file by file; a pthread rwlock lets one thread update it while
 * others build prompts from it. It is kept on disk between runs (one file
 * per work tree in the user's cache directory, replaced atomically): a file
 * whose mtime and size, or else content hash, match is not parsed again, so
 * a second run on an unchanged tree starts warm. */
typedef struct sc_workspace sc_workspace;

typedef struct sc_workspace_options {
  size_t max_files;      /* 0: 100,000 */
  size_t max_file_bytes; /* 0: 1 MiB; larger files are skipped */
  size_t max_chunks;     /* 0: 2,000,000 sketched chunks (~80 MB); later files get none */
  const _Atomic int *cancel; /* may be NULL; when it becomes non-zero the index
                                stops between files: SC_ERR_CANCELLED */
  /* Where the index is kept between runs: NULL is $XDG_CACHE_HOME/sculpt/index
   * (else ~/.cache/sculpt/index); "" keeps none. The folder is bounded (64
   * work trees, 512 MiB; the least recently used go first). */
  const char *cache_dir;
  /* The line tables drafts read (which line follows which, with the files'
   * text): 0 is SC_WS_MAX_LINE_BYTES; past it later files get none. */
  size_t max_line_bytes;
} sc_workspace_options;
#define SC_WS_MAX_LINE_BYTES ((size_t)96 << 20)

typedef struct sc_workspace_stats {
  size_t files, definitions, lines, chunks;
  size_t skipped_binary, skipped_huge, skipped_generated, skipped_outside, skipped_limit;
  size_t updates, removals; /* per-file updates applied since the index was built */
  size_t cached;  /* files taken unchanged from the index kept on disk */
  bool partial;   /* a bound (max_files, max_chunks) left files or chunks out */
  double ms;
  size_t line_bytes; /* the line tables' memory (drafts), at most max_line_bytes */
  bool line_partial; /* that bound left a file's lines out */
} sc_workspace_stats;

/* Indexes root (a git work tree), starting from the index kept on disk
 * for it when there is one (a kept index that does not load is one log
 * line and a build from scratch), and writes it back when it changed.
 * *out owned by the caller. */
sc_status sc_workspace_index(const char *root, const sc_workspace_options *opts,
                             sc_workspace **out, sc_error *err);
/* Writes the index to its place on disk now (after per-file updates, e.g.
 * when the server exits), so that the next start is warm. Entries built
 * from editor buffers are left out (they may differ from the disk). A
 * no-op when the workspace keeps no index on disk. Thread-safe. */
sc_status sc_workspace_save(sc_workspace *ws, sc_error *err);
void sc_workspace_free(sc_workspace *ws);
/* A snapshot of the counters, taken under the lock (safe during updates). */
sc_workspace_stats sc_workspace_get_stats(const sc_workspace *ws);
const char *sc_workspace_root(const sc_workspace *ws); /* borrowed; never changes */
/* The top of the git work tree holding path (a file or a folder), resolved;
 * owned by the caller. NULL when path is in none. Read with libgit2
 * (context/git.c): no git subprocess, nothing the repository configures
 * runs. */
char *sc_workspace_find_root(const char *path);

/* Re-indexes one file, rel_path relative to the root. text (len bytes,
 * borrowed) is its content, e.g. an editor buffer; NULL reads it from disk,
 * and when rel_path is a folder there, indexes the files git lists under it
 * (a folder created or moved in; *indexed: any was).
 * A file the index did not have is first checked against git's ignore
 * rules (so .gitignore holds for new files) and the same skips as the full index
 * (language, binary, generated, huge, outside the root, max_files). A file
 * that is now skipped or gone from disk is removed. *indexed (may be NULL)
 * says whether the file is in the index afterwards. Thread-safe: parsing
 * happens outside the lock, the swap under the write lock. */
sc_status sc_workspace_update_file(sc_workspace *ws, const char *rel_path, const char *text,
                                   size_t len, bool *indexed, sc_error *err);
/* Drops rel_path from the index, or every file under it when it names a
 * folder (a deleted or moved-away folder); false when nothing was there.
 * Thread-safe. */
bool sc_workspace_remove_file(sc_workspace *ws, const char *rel_path);
/* How many definitions of name the index holds (a test and debugging aid). */
size_t sc_workspace_count_definitions(const sc_workspace *ws, const char *name);

/* ---- which folder to index (context/root.c) ---------------------------------- */

/* The folder to index for a file (owned by the caller; NULL when the file
 * does not exist). editor_root (may be NULL) is the folder the editor
 * named: it is kept when it holds the file and is, or lies in, a work tree,
 * or when the file is in no work tree at all. Otherwise (no folder named,
 * one that does not hold the file, one above several repositories) the
 * file's own work tree (sc_workspace_find_root), else the file's folder. */
char *sc_context_index_root(const char *file, const char *editor_root);

/* ---- identifier sets and MinHash (context/workspace.c) ----------------------
 * An identifier is [A-Za-z_][A-Za-z0-9_]* of at least 2 characters that is
 * not a common keyword; a set is kept as sorted unique 64-bit hashes. */
#define SC_MINHASH_K 16

/* The identifier set of text[0, len): sorted unique hashes into buf (at most
 * cap; the rest are dropped). Returns the count. */
size_t sc_ident_set(const char *text, size_t len, uint64_t *buf, size_t cap);
/* Exact Jaccard similarity |A n B| / |A u B| of two sets (0 when both empty). */
float sc_ident_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb);
/* The set's MinHash sketch: for each of SC_MINHASH_K hash functions, the low
 * 16 bits of the minimum over the set. */
void sc_minhash_sketch(const uint64_t *set, size_t n, uint16_t sig[SC_MINHASH_K]);
/* The fraction of equal minima: an unbiased-up-to-2^-16 estimate of the
 * Jaccard similarity (standard error sqrt(J(1-J)/K) <= 0.125 for K = 16). */
float sc_minhash_estimate(const uint16_t a[SC_MINHASH_K], const uint16_t b[SC_MINHASH_K]);

/* ---- prompt assembly (context/retrieve.c) ----------------------------------- */

typedef struct sc_context_snippet {
  char *path;        /* relative to the root (or the buffer's name) */
  uint32_t start_line, end_line; /* 0-based */
  const char *reason; /* static: "enclosing scope", "same file", "recent edit",
                         "similar chunk", "imported file", "workspace" */
  char *name;        /* the identifier it defines ("" for chunks and edits) */
  const char *kind;  /* static: what it defines ("function", "field", ...; "" for others) */
  bool body;         /* a definition given whole, not only its signature or declaration */
  char *text;        /* headed by the path in the language's comment syntax */
  size_t len, tokens;
  float score;       /* "similar chunk": Jaccard similarity to the cursor's window; else 0 */
} sc_context_snippet;

typedef struct sc_prompt {
  char *prefix, *suffix;      /* the windows around the cursor */
  size_t prefix_start, suffix_end; /* their extent in the text */
  sc_context_snippet *snippets;
  size_t n_snippets;
  size_t prefix_tokens, suffix_tokens, snippet_tokens;
  /* The prompt was built while the workspace index was incomplete (the
   * caller said it is still being built, or a bound left files out): a
   * definition may be missing for that reason. For the LSP's sculpt/status
   * and each result's data. */
  bool partial_index;
} sc_prompt;

/* Another document the editor has open (or one recently edited), e.g. an
 * unsaved buffer. All fields borrowed. */
typedef struct sc_open_document {
  const char *path; /* relative to the workspace root when inside it */
  const char *lang; /* sculpt's language name, or NULL: from the path */
  const char *text;
  size_t len;
} sc_open_document;

/* A recently edited line range (0-based, inclusive) in path (borrowed); in
 * the current file, one of the open documents, or else read from disk. */
typedef struct sc_edited_range {
  const char *path;
  uint32_t start_line, end_line;
  double when_ms; /* any clock; larger is more recent */
} sc_edited_range;

/* What the editor knows beyond the current file; zeroed (or NULL) = none. */
typedef struct sc_prompt_inputs {
  const sc_open_document *docs; /* most recently used first */
  size_t n_docs;
  const sc_edited_range *edits; /* any order */
  size_t n_edits;
  float similar_threshold; /* 0: 0.2; the least Jaccard similarity for a chunk */
  size_t max_similar;      /* 0: 3 similar chunks at most */
  size_t max_recent_edits; /* 0: 3 recent edits at most */
  /* The workspace index is still being built (or none yet): the prompt
   * says so in partial_index. */
  bool index_pending;
  /* The syntax tree of exactly text (borrowed), when the caller has one (an
   * editor's document): it saves parsing the file again. NULL: parsed here. */
  const sc_syntax_tree *tree;
} sc_prompt_inputs;

/* The prompt for a cursor (byte offset) in text, counted with tok within
 * budget tokens: up to a quarter for snippets, in this priority order: the
 * headers of the enclosing functions and classes the window cut off,
 * definitions in the same file of identifiers used around the cursor, the
 * recently edited ranges (most recent first), chunks of the open and
 * recently edited documents most similar to the lines around the cursor
 * (Jaccard over identifier sets), definitions in imported files, then in the
 * rest of the workspace, then similar workspace chunks (MinHash, re-scored
 * exactly). None overlaps the windows or repeats their text. Of the rest,
 * three quarters go before the cursor, whole lines nearest first. ws may be
 * NULL (the file alone); path is the file's path relative to the workspace
 * root; in may be NULL. *out owned by the caller: sc_prompt_free. */
sc_status sc_prompt_build_with(const sc_workspace *ws, const char *path, const char *lang,
                               const char *text, size_t len, size_t cursor,
                               const sc_tokenizer *tok, size_t budget,
                               const sc_prompt_inputs *in, sc_prompt *out, sc_error *err);
/* sc_prompt_build_with without inputs. */
sc_status sc_prompt_build(const sc_workspace *ws, const char *path, const char *lang,
                          const char *text, size_t len, size_t cursor, const sc_tokenizer *tok,
                          size_t budget, sc_prompt *out, sc_error *err);
void sc_prompt_free(sc_prompt *p);

/* The text before the canvas: the snippets in order, then the prefix
 * window. malloc'd (NUL-terminated, *len bytes), owned by the caller; NULL
 * when out of memory. */
char *sc_prompt_text(const sc_prompt *p, size_t *len);

/* The suffix a prompt's text before the canvas (before, e.g. sc_prompt_text)
 * leaves room for within budget tokens: the end of the longest run of whole
 * lines of suf (the rest of the cursor's line at least) whose tokens fit
 * what before's leave, so that fitting cuts nothing from the snippets' end.
 * As the LSP gives the local engine its prompt. */
size_t sc_prompt_suffix_fit(const sc_tokenizer *tok, const char *before, size_t before_len,
                            const char *suf, size_t len, size_t budget);

/* ---- drafts (context/draft.c) ------------------------------------------------
 * Text that may come next at a cursor, found where code repeats itself, for
 * the engine to verify in the passes it runs anyway (model.h, sc_draft):
 * the rest of a suggestion the typing left (the caller's), the prompt's own
 * text (the places where the lexemes before the cursor occur, longest
 * match first, then nearest), and the workspace index's line table (the
 * lines that follow the previous non-blank line elsewhere in the
 * repository, most frequent first, that begin with what the cursor's line
 * holds). A draft that runs into the text after the cursor is cut there
 * and ends the middle. Bounded work: about a millisecond on a CPython-sized
 * workspace (docs/evaluation.md, "Drafts"). */
#define SC_DRAFTS_MAX SC_INFILL_MAX_DRAFTS

typedef struct sc_text_draft {
  char *text;         /* what would follow the cursor (owned) */
  size_t len;
  bool ends_middle;   /* the text after the cursor follows it */
  const char *source; /* static: "previous", "prompt" or "workspace" */
  double score;       /* the rank, larger first */
} sc_text_draft;

typedef struct sc_drafts {
  sc_text_draft d[SC_DRAFTS_MAX]; /* best first */
  size_t n;
  double ms; /* the time finding them took */
} sc_drafts;

typedef struct sc_draft_query {
  const char *before; /* the prompt's text before the cursor: snippets, then the window */
  size_t before_len;
  const char *after;  /* the text after the cursor */
  size_t after_len;
  const sc_workspace *ws; /* its line table; NULL: none */
  const char *previous;   /* the rest of a suggestion the typing left; NULL: none */
  size_t previous_len;
  bool single_line;       /* drafts end at the line's end */
  size_t max_bytes;       /* the longest draft; 0: 240 */
  int max_lines;          /* lines a draft may hold; 0: 4 (1 with single_line) */
} sc_draft_query;

/* *out owned by the caller (sc_drafts_free); never fails (memory that
 * runs out means fewer drafts). */
void sc_drafts_find(const sc_draft_query *q, sc_drafts *out);
void sc_drafts_free(sc_drafts *d);

/* The drafts as the engine takes them: each tokenized with tok, in rank
 * order, at most max_tokens each (a cut draft no longer ends the middle).
 * Put out->d and out->n in sc_infill_params.drafts and n_drafts. */
typedef struct sc_draft_runs {
  sc_draft d[SC_INFILL_MAX_DRAFTS]; /* ids owned */
  int n;
} sc_draft_runs;
sc_status sc_drafts_encode(const sc_drafts *d, const sc_tokenizer *tok, int max_tokens,
                           sc_draft_runs *out, sc_error *err);
void sc_draft_runs_free(sc_draft_runs *r);
/* sc_drafts_find, then sc_drafts_encode into runs, and params's drafts set
 * to them: what every caller does before sc_engine_infill. found and runs
 * must outlive the infill; free both. */
sc_status sc_drafts_attach(const sc_draft_query *q, const sc_tokenizer *tok, int max_tokens,
                           sc_drafts *found, sc_draft_runs *runs, sc_infill_params *params,
                           sc_error *err);

#ifdef __cplusplus
}
#endif
#endif
