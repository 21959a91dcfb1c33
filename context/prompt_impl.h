/* prompt_impl.h — what the parts of prompt assembly share: retrieve.c
 * (the windows, the budget and its rules, the snippets), retrieve_defs.c
 * (phase 1: definitions), retrieve_forms.c (their compact forms) and
 * retrieve_fill.c (phase 2: edits, neighbours, bodies, similar chunks).
 * The limits below are the budget's rules and the phases' bounds, in one
 * place. Private to context/. */
#ifndef SC_PROMPT_IMPL_H
#define SC_PROMPT_IMPL_H

#include "retrieve_impl.h"

#define QUERY_LINES_BEFORE 16 /* the cursor's window for similarity: these lines ... */
#define QUERY_LINES_AFTER 8   /* ... and these (about one chunk) */
#define MAX_EXTRA_DOCS 8      /* recently edited files read from disk for step 4 */
#define WS_CANDIDATES 8       /* workspace chunks re-scored exactly */
#define EDIT_CONTEXT_LINES 2  /* lines shown around a recent edit */
#define EDIT_MAX_LINES 16
#define SET_CAP 2048
#define MAX_CANDS 96          /* names looked up */
#define MAX_DEF_ITEMS 48      /* definitions offered */
#define MAX_IMPORTED 512      /* files an import resolves to */
#define AMBIGUOUS 6           /* more definitions than this, none preferred: skip the name */
#define MEMBER_LINES 16       /* member lines in a container's compact form ... */
#define CONTAINER_TOKENS 128  /* ... and tokens, with its head and closing line */
#define CURSOR_MEMBER_LINES 48 /* the type of the member access at the cursor, its member */
#define CURSOR_TYPE_TOKENS 192 /* not typed yet: more of its members */
#define BODY_MAX_LINES 40     /* a definition given whole: at most this many lines */
#define LATE_TOKENS 64        /* a definition costing more goes after the smaller ones */
#define SCOPES 3              /* enclosing scopes' headers: the outermost and the innermost */
#define SCOPE_LINE_BYTES 120  /* a header line, at most */
#define GUESSES 3             /* names predicted by the words around the cursor ... */
#define GUESS_MIN 3.0f        /* ... scoring at least this */
#define GUESS_MISSED 0.25f    /* a name's words not around the cursor: each lowers its score */
#define GUESS_POOL 8192       /* definitions scored for them, at most */
#define GUESS_LINE_BYTES 100  /* a guess is shown by its first line, at most this long ... */
#define GUESS_TOKENS 40       /* ... and costing at most this */
#define GUESS_FIT 0.5f        /* a guess fitting the slot scores this much more (less: not) */
#define MEMBER_WORDS_MIN 2.0f /* a member sharing this much with the words around the cursor ... */

typedef struct lines {
  size_t *starts; /* byte offset of each line; a final newline starts none */
  size_t n;
  size_t len;
} lines;

/* Phase 2 spends what phase 1 left. */
typedef struct spend {
  const sc_tokenizer *tok;
  size_t left;
  size_t first; /* snippets from here on were added in phase 2 */
} spend;

/* A definition: in the file being edited (fid SELF) or in the workspace. */
#define SELF UINT32_MAX

typedef struct defref {
  uint32_t fid, k;
} defref;

typedef struct retrieval {
  const sc_workspace *ws;
  const sc_tokenizer *tok;
  const ws_file *self; /* the current file's definitions (from its text now) */
  const char *self_path, *lang, *text;
  size_t len;
  uint32_t win_first, win_last; /* the windows' lines */
  const uint32_t *imported;
  size_t n_imported;
  const rv_cand *cands;
  size_t n_cands;
  const rv_bag *bag;       /* the words around the cursor */
  const rv_expect *expect; /* what the member at the cursor must give */
  defref chosen[MAX_DEF_ITEMS * 2];
  size_t n_chosen;
} retrieval;

typedef struct name_kind {
  const char *name;
  int want; /* 0: any; 1: not a member; 2: a type; 3: a member of scope */
  const char *scope;
} name_kind;

/* Scores names against the bag: the words a name shares with it, each
 * weighted by the bag and by its rarity among the names scored together
 * (log(N / df): "jv" in every jq function says nothing, "keys" says much);
 * the words it does not share lower it a little (of two names with the
 * word, the one that is mostly it). Two passes: add every name, then score. */
#define BAG_SLOTS 512
typedef struct scorer {
  const rv_bag *bag;
  int16_t slot[BAG_SLOTS]; /* word hash -> bag index, -1 empty */
  uint32_t df[RV_BAG];
  uint32_t n; /* names added */
} scorer;

typedef struct sbuf {
  char *p;
  size_t n, cap;
} sbuf;

/* The functions below are described where they are defined. */

/* ---- retrieve.c: tokens, lines, snippets, the budget ---- */
bool rv_afford(sc_prompt *out, spend *sp);
bool rv_lines_build(const char *text, size_t len, lines *L);
bool rv_overlaps(const sc_prompt *out, size_t first, const char *path, uint32_t s, uint32_t e);
bool rv_repeats_window(const sc_prompt *out, const sc_context_snippet *s);
const char *rv_comment_prefix(const char *lang);
sc_context_snippet *rv_push_text(sc_prompt *out, const char *path, const char *lang,
                                 const char *body, size_t n, uint32_t start_line, uint32_t end_line,
                                 const char *reason, const char *name, const char *kind,
                                 float score);
size_t rv_count_tokens(const sc_tokenizer *tok, const char *s, size_t n);
size_t rv_line_of(const lines *L, size_t off);
size_t rv_line_start(const lines *L, size_t i);
size_t rv_utf8_cut(const char *s, size_t n, size_t max);
void rv_snippet_free(sc_context_snippet *s);

/* ---- retrieve_defs.c: phase 1 ---- */
typedef bool (*def_filter)(const ws_file *f, const ws_def *d, const void *arg);
bool rv_filter(const ws_file *f, const ws_def *d, const void *arg);
bool rv_near_cursor(const retrieval *r, const char *name);
bool rv_pick_workspace(const retrieval *r, const ws_map *map, const char *key, def_filter ok,
                       const void *arg, defref *out);
bool rv_was_chosen(const retrieval *r, uint32_t fid, uint32_t k);
const char *rv_def_name(const ws_file *f, const ws_def *d);
const ws_file *rv_file_of(const retrieval *r, uint32_t fid);
float rv_scorer_score(const scorer *s, const char *name, float min_weight);
int rv_fits(const rv_expect *x, const ws_file *g, const ws_def *d, const char *head,
            const char *name);
size_t rv_bases_of(const retrieval *r, const char *type, char **out, size_t max);
uint32_t rv_kinship(const retrieval *r, const char *name);
uint32_t rv_nearness(const retrieval *r, const char *name);
void rv_choose(retrieval *r, uint32_t fid, uint32_t k);
void rv_scorer_add(scorer *s, const char *name);
void rv_scorer_init(scorer *s, const rv_bag *bag);
size_t rv_defs_offer(retrieval *r, const sc_syntax_tree *tree, size_t cursor, size_t wide_tokens,
                     rv_cand *cands, size_t *n_cands_out, defref *def_of, bool *at_cursor,
                     size_t *reserve, sc_prompt *out);

/* ---- retrieve_forms.c: compact forms ---- */
void rv_container_text(retrieval *r, uint32_t fid, uint32_t k, sbuf *b, size_t max_lines,
                       size_t max_tokens, const char *typed, bool wide, size_t *full);
void rv_group_text(retrieval *r, uint32_t fid, uint32_t k, sbuf *b, size_t max_tokens,
                   uint32_t *lo_line, uint32_t *hi_line);
void rv_sb_line(sbuf *b, const char *s);
void rv_sb_put(sbuf *b, const char *s, size_t n);

/* ---- retrieve_fill.c: phase 2 ---- */
void rv_fill(const retrieval *r, const char *path, size_t cursor, const sc_prompt_inputs *in,
             const lines *self_lines_in, const defref *kept_defs, size_t n_kept_defs,
             size_t n_scopes, spend *spp, sc_prompt *out);

#endif
