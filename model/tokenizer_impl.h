/*
 * tokenizer_impl.h — private to model/tokenizer*.c: the layout of
 * sc_tokenizer and the helpers the loader (tokenizer_load.c) and the encoder
 * (tokenizer.c) share. Nothing here is public API.
 */
#ifndef SC_TOKENIZER_IMPL_H
#define SC_TOKENIZER_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "model.h"

/* An added token (tokenizer.json "added_tokens", or tokenizer_config.json
 * "added_tokens_decoder"). Flags follow Hugging Face's AddedToken. */
typedef struct sc_tok_added {
  char *content;       /* the token's text; decoding emits exactly this */
  size_t content_len;
  char *pattern;       /* what is matched: content, NFC'd when `normalized` */
  size_t pattern_len;
  int32_t id;
  bool special, single_word, lstrip, rstrip, normalized;
} sc_tok_added;

/* One entry of the merge table: the pair (left,right) of token ids, packed
 * into a 64-bit key, becomes `merged` with priority `rank` (lower first). */
typedef struct sc_tok_merge {
  uint64_t key; /* 0 marks an empty slot; real keys have bit 63 set */
  int32_t rank;
  int32_t merged;
} sc_tok_merge;

/* Added tokens of one matching pass, sorted by (first byte, length desc) so
 * that the first hit at a position is the longest (leftmost-longest). */
typedef struct sc_tok_addset {
  int32_t *idx;        /* indices into sc_tokenizer.added */
  size_t n;
  uint32_t start[257]; /* idx[start[b] .. start[b+1]) begin with byte b */
} sc_tok_addset;

#define SC_TOK_MAX_SPLITS 8

struct sc_tokenizer {
  /* vocabulary: id -> token (byte-level form); NULL where an id is unused */
  char **vocab;
  uint32_t *vocab_len;
  size_t n_ids;         /* max id + 1 over the vocabulary and added tokens */
  size_t ids_cap;       /* allocated length of vocab, vocab_len, added_of_id */
  size_t id_limit;      /* ids must be below it (0: SC_TOK_MAX_ID alone); set by
                           the tokenizer.json loader from the entries it has */
  int32_t *vmap;        /* open addressing: token -> id, -1 = empty */
  size_t vmap_cap;      /* power of two */

  sc_tok_merge *merges; /* open addressing on key */
  size_t merges_cap;    /* power of two */
  size_t n_merges;
  bool ignore_merges;   /* BPE "ignore_merges": whole-word vocab hit wins */
  int32_t unk_id;       /* -1 when the model has no unk_token */

  /* byte-level alphabet (GPT-2 bytes_to_unicode) */
  int32_t byte_id[256];     /* id of the one-byte token, -1 if absent */
  int16_t cp_to_byte[324];  /* inverse mapping, -1 if not a byte char */

  /* added tokens */
  sc_tok_added *added;
  size_t n_added, cap_added;
  int32_t *added_of_id;     /* id -> index into added, -1 (size n_ids) */
  sc_tok_addset raw_set;    /* normalized=false: matched on the raw text */
  sc_tok_addset norm_set;   /* normalized=true: matched after NFC */

  /* pipeline */
  bool nfc;
  pcre2_code *split[SC_TOK_MAX_SPLITS]; /* Split(Isolated) stages, in order */
  size_t n_split;
  bool prefix_space;        /* ByteLevel add_prefix_space */
  pcre2_code *bl_regex;     /* ByteLevel use_regex: GPT-2 pattern, or NULL */
};

/* The Qwen2 pre-tokenizer pattern, used for the slow (vocab.json +
 * merges.txt) form. Source: transformers
 * src/transformers/models/qwen2/tokenization_qwen2.py, PRETOKENIZE_REGEX; the
 * same string is the Split pattern in Qwen2.5/Qwen3 tokenizer.json files. */
#define SC_TOK_QWEN2_PATTERN                                                   \
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "        \
  "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* GPT-2's pattern, which HF's ByteLevel pre-tokenizer applies when
 * use_regex is true. Source: openai/gpt-2 src/encoder.py and HF tokenizers
 * src/pre_tokenizers/byte_level.rs. */
#define SC_TOK_GPT2_PATTERN                                                    \
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"          \
  "\\s+(?!\\S)|\\s+"

/* ---- shared helpers (tokenizer.c) -------------------------------------- */

/* Empty tokenizer with the byte-level tables filled in; NULL on OOM. */
sc_tokenizer *sc_tok__new(void);
/* Adds vocabulary entry token -> id (the id space grows as needed). */
sc_status sc_tok__add_vocab(sc_tokenizer *t, const char *token, size_t len,
                            int32_t id, sc_error *err);
/* Builds the token -> id hash; call once after all add_vocab calls. */
sc_status sc_tok__index_vocab(sc_tokenizer *t, sc_error *err);
/* Vocabulary lookup (not added tokens); -1 when absent. */
int32_t sc_tok__vocab_find(const sc_tokenizer *t, const char *s, size_t len);
/* Adds merge (a, b) -> a+b with priority `rank` (its line number: lower
 * merges first). `where` names it in errors. Needs sc_tok__index_vocab and
 * sc_tok__reserve_merges first. */
sc_status sc_tok__add_merge(sc_tokenizer *t, const char *a, size_t alen,
                            const char *b, size_t blen, int32_t rank,
                            const char *where, sc_error *err);
sc_status sc_tok__reserve_merges(sc_tokenizer *t, size_t n, sc_error *err);
/* Compiles a pre-tokenizer pattern (PCRE2_UTF|PCRE2_UCP, JIT when present). */
sc_status sc_tok__compile(const char *pattern, size_t len, bool literal,
                          pcre2_code **out, sc_error *err);
/* Adds an added token; a second token with the same id replaces the flags
 * only when `replace` is set. */
sc_status sc_tok__add_added(sc_tokenizer *t, const char *content, size_t len,
                            int32_t id, bool special, bool single_word,
                            bool lstrip, bool rstrip, bool normalized,
                            bool replace, sc_error *err);
/* Index of the added token with this content, or -1. */
int32_t sc_tok__added_find(const sc_tokenizer *t, const char *s, size_t len);
/* Builds the matching sets; call once at the end of loading. */
sc_status sc_tok__finish(sc_tokenizer *t, sc_error *err);

/* ---- GGUF (gguf.c) -------------------------------------------------------- */

/* The .gguf file a model path names: the path itself when it is one, else
 * the one .gguf file of a folder without config.json; NULL otherwise. The
 * result is written into buf. */
const char *sc_gguf_find(const char *dir, char *buf, size_t n);
/* The tokenizer in a GGUF file's metadata (tokenizer.ggml.*). */
sc_status sc_tokenizer_load_gguf(const char *path, sc_tokenizer **out, sc_error *err);

#endif /* SC_TOKENIZER_IMPL_H */
