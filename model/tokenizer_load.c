/*
 * tokenizer_load.c — reading a tokenizer: tokenizer.json (the `tokenizers`
 * serialization), or the slow form vocab.json + merges.txt, plus the added
 * tokens of tokenizer_config.json and special_tokens_map.json.
 *
 * Formats learnt from HF tokenizers (src/tokenizer/serialization.rs,
 * src/models/bpe/serialization.rs) and transformers (tokenization_utils*.py,
 * models/qwen2/tokenization_qwen2.py). Every shape we do not implement is
 * refused with SC_ERR_UNSUPPORTED naming it, never guessed at.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "tokenizer_impl.h"
#include "model_impl.h"

/* Present in any form: a FIFO or a directory in a tokenizer file's place
 * is then refused by name when it is read, not taken for absent. */
static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static sc_status read_file(const char *path, char **out, size_t *len, sc_error *err) {
  return sc_file_read_regular(path, SC_JSON_FILE_MAX, out, len, err);
}

/* sc_json_file_load reads the whole file first: json_loadf reads a
 * character at a time, which was most of the load time for a 10 MB
 * tokenizer.json. */
static sc_status load_json(const char *path, json_t **out, sc_error *err) {
  return sc_json_file_load(path, JSON_ALLOW_NUL, out, err);
}

static bool get_bool(const json_t *obj, const char *key, bool dflt) {
  const json_t *v = json_object_get(obj, key);
  return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *type_of(const json_t *obj) {
  const char *s = json_string_value(json_object_get(obj, "type"));
  return s ? s : "";
}

/* ---- model ------------------------------------------------------------------ */

static sc_status load_vocab(sc_tokenizer *t, const json_t *vocab, const char *path,
                            sc_error *err) {
  SC_CHECK(json_is_object(vocab), err, SC_ERR_FORMAT,
           "%s: the vocabulary is not a JSON object", path);
  /* Real vocabularies are dense: ids run from 0 to about the entry count
   * (added tokens and padding a little beyond; a test's separator sits at
   * 70,000 over a few hundred entries). A few entries naming huge ids
   * would size every id-indexed table by the largest; the file is refused
   * instead, before anything grows (a fuzzer's find: 1,526 entries up to
   * id 9.8M took 0.3 s and some 150 MB). The slack bounds such a table at
   * about 1M entries, some 16 MB. */
  t->id_limit = 2 * json_object_size(vocab) + ((size_t)1 << 20);
  void *it;
  for (it = json_object_iter((json_t *)vocab); it;
       it = json_object_iter_next((json_t *)vocab, it)) {
    const char *key = json_object_iter_key(it);
    size_t klen = json_object_iter_key_len(it);
    const json_t *v = json_object_iter_value(it);
    SC_CHECK(json_is_integer(v), err, SC_ERR_FORMAT,
             "%s: vocabulary entry \"%.40s\" has no integer id", path, key);
    json_int_t id = json_integer_value(v);
    SC_CHECK(id >= 0 && id < INT32_MAX, err, SC_ERR_FORMAT,
             "%s: vocabulary id %lld out of range", path, (long long)id);
    SC_TRY(sc_tok__add_vocab(t, key, klen, (int32_t)id, err));
  }
  SC_CHECK(t->n_ids > 0, err, SC_ERR_FORMAT, "%s: empty vocabulary", path);
  return sc_tok__index_vocab(t, err);
}

static sc_status load_merges_json(sc_tokenizer *t, const json_t *merges,
                                  const char *path, sc_error *err) {
  SC_CHECK(json_is_array(merges), err, SC_ERR_FORMAT,
           "%s: model.merges is not an array", path);
  size_t n = json_array_size(merges);
  SC_TRY(sc_tok__reserve_merges(t, n, err));
  char where[64];
  for (size_t i = 0; i < n; i++) {
    const json_t *m = json_array_get(merges, i);
    snprintf(where, sizeof where, "merge %zu", i);
    const char *a, *b;
    size_t alen, blen;
    if (json_is_string(m)) {
      /* "a b": exactly one space, as HF's convert_merges_to_hashmap demands;
       * byte-level tokens never contain a space (it is written Ġ). */
      a = json_string_value(m);
      size_t len = json_string_length(m);
      const char *sp = memchr(a, ' ', len);
      SC_CHECK(sp && !memchr(sp + 1, ' ', len - (size_t)(sp + 1 - a)), err,
               SC_ERR_FORMAT, "%s: %s is not of the form \"a b\"", path, where);
      alen = (size_t)(sp - a);
      b = sp + 1;
      blen = len - alen - 1;
    } else if (json_is_array(m) && json_array_size(m) == 2 &&
               json_is_string(json_array_get(m, 0)) &&
               json_is_string(json_array_get(m, 1))) {
      a = json_string_value(json_array_get(m, 0));
      alen = json_string_length(json_array_get(m, 0));
      b = json_string_value(json_array_get(m, 1));
      blen = json_string_length(json_array_get(m, 1));
    } else {
      return sc_error_set(err, SC_ERR_FORMAT,
                          "%s: %s is neither \"a b\" nor [\"a\", \"b\"]", path, where);
    }
    SC_CHECK(alen && blen, err, SC_ERR_FORMAT, "%s: %s has an empty side", path, where);
    SC_TRY(sc_tok__add_merge(t, a, alen, b, blen, (int32_t)i, where, err));
  }
  return SC_OK;
}

static sc_status load_model(sc_tokenizer *t, const json_t *model, const char *path,
                            sc_error *err) {
  SC_CHECK(json_is_object(model), err, SC_ERR_FORMAT, "%s: no \"model\" object", path);
  const char *type = type_of(model);
  SC_CHECK(!*type || strcmp(type, "BPE") == 0, err, SC_ERR_UNSUPPORTED,
           "%s: model type \"%s\" is not supported (only BPE)", path, type);
  const json_t *dropout = json_object_get(model, "dropout");
  SC_CHECK(!json_is_number(dropout) || json_number_value(dropout) == 0.0, err,
           SC_ERR_UNSUPPORTED, "%s: BPE dropout is not supported", path);
  SC_CHECK(!get_bool(model, "byte_fallback", false), err, SC_ERR_UNSUPPORTED,
           "%s: BPE byte_fallback is not supported", path);
  const char *csp = json_string_value(json_object_get(model, "continuing_subword_prefix"));
  const char *eow = json_string_value(json_object_get(model, "end_of_word_suffix"));
  SC_CHECK((!csp || !*csp) && (!eow || !*eow), err, SC_ERR_UNSUPPORTED,
           "%s: BPE subword prefixes/suffixes are not supported", path);
  t->ignore_merges = get_bool(model, "ignore_merges", false);
  SC_TRY(load_vocab(t, json_object_get(model, "vocab"), path, err));
  const json_t *merges = json_object_get(model, "merges");
  SC_CHECK(merges, err, SC_ERR_FORMAT, "%s: model has no merges", path);
  SC_TRY(load_merges_json(t, merges, path, err));
  const char *unk = json_string_value(json_object_get(model, "unk_token"));
  if (unk) t->unk_id = sc_tok__vocab_find(t, unk, strlen(unk));
  return SC_OK;
}

/* ---- normalizer, pre-tokenizer, decoder -------------------------------------- */

static sc_status load_normalizer(sc_tokenizer *t, const json_t *n, const char *path,
                                 sc_error *err) {
  if (!n || json_is_null(n)) return SC_OK;
  const char *type = type_of(n);
  if (strcmp(type, "NFC") == 0) {
    t->nfc = true;
    return SC_OK;
  }
  if (strcmp(type, "Sequence") == 0) {
    const json_t *list = json_object_get(n, "normalizers");
    SC_CHECK(json_is_array(list), err, SC_ERR_FORMAT,
             "%s: normalizer Sequence without a list", path);
    for (size_t i = 0; i < json_array_size(list); i++)
      SC_TRY(load_normalizer(t, json_array_get(list, i), path, err));
    return SC_OK;
  }
  return sc_error_set(err, SC_ERR_UNSUPPORTED,
                      "%s: normalizer \"%s\" is not supported (only NFC)", path, type);
}

static sc_status load_one_pretok(sc_tokenizer *t, const json_t *p, bool *saw_bl,
                                 const char *path, sc_error *err) {
  const char *type = type_of(p);
  SC_CHECK(!*saw_bl, err, SC_ERR_UNSUPPORTED,
           "%s: pre-tokenizer \"%s\" after ByteLevel is not supported", path, type);
  if (strcmp(type, "Split") == 0) {
    const json_t *pat = json_object_get(p, "pattern");
    const json_t *re = json_object_get(pat, "Regex");
    const json_t *lit = json_object_get(pat, "String");
    SC_CHECK(json_is_string(re) || json_is_string(lit), err, SC_ERR_FORMAT,
             "%s: Split pre-tokenizer without a Regex or String pattern", path);
    const char *behavior = json_string_value(json_object_get(p, "behavior"));
    SC_CHECK(behavior && strcmp(behavior, "Isolated") == 0, err, SC_ERR_UNSUPPORTED,
             "%s: Split behavior \"%s\" is not supported (only Isolated)", path,
             behavior ? behavior : "");
    SC_CHECK(!get_bool(p, "invert", false), err, SC_ERR_UNSUPPORTED,
             "%s: Split with invert=true is not supported", path);
    SC_CHECK(t->n_split < SC_TOK_MAX_SPLITS, err, SC_ERR_UNSUPPORTED,
             "%s: more than %d Split pre-tokenizers", path, SC_TOK_MAX_SPLITS);
    const json_t *s = re ? re : lit;
    SC_TRY(sc_tok__compile(json_string_value(s), json_string_length(s), !re,
                           &t->split[t->n_split], err));
    t->n_split++;
    return SC_OK;
  }
  if (strcmp(type, "ByteLevel") == 0) {
    /* HF's defaults for both flags are true. */
    *saw_bl = true;
    t->prefix_space = get_bool(p, "add_prefix_space", true);
    if (get_bool(p, "use_regex", true))
      SC_TRY(sc_tok__compile(SC_TOK_GPT2_PATTERN, PCRE2_ZERO_TERMINATED, false,
                             &t->bl_regex, err));
    return SC_OK;
  }
  return sc_error_set(err, SC_ERR_UNSUPPORTED,
                      "%s: pre-tokenizer \"%s\" is not supported (only Split and "
                      "ByteLevel)", path, type);
}

static sc_status load_pretok(sc_tokenizer *t, const json_t *p, const char *path,
                             sc_error *err) {
  SC_CHECK(json_is_object(p), err, SC_ERR_UNSUPPORTED,
           "%s: no pre_tokenizer; a byte-level BPE needs ByteLevel", path);
  bool saw_bl = false;
  if (strcmp(type_of(p), "Sequence") == 0) {
    const json_t *list = json_object_get(p, "pretokenizers");
    SC_CHECK(json_is_array(list), err, SC_ERR_FORMAT,
             "%s: pre_tokenizer Sequence without a list", path);
    for (size_t i = 0; i < json_array_size(list); i++)
      SC_TRY(load_one_pretok(t, json_array_get(list, i), &saw_bl, path, err));
  } else {
    SC_TRY(load_one_pretok(t, p, &saw_bl, path, err));
  }
  SC_CHECK(saw_bl, err, SC_ERR_UNSUPPORTED,
           "%s: pre_tokenizer has no ByteLevel step; only byte-level BPE is "
           "supported", path);
  return SC_OK;
}

static sc_status check_decoder(const json_t *d, const char *path, sc_error *err) {
  if (!d || json_is_null(d)) return SC_OK;
  const char *type = type_of(d);
  SC_CHECK(strcmp(type, "ByteLevel") == 0, err, SC_ERR_UNSUPPORTED,
           "%s: decoder \"%s\" is not supported (only ByteLevel)", path, type);
  return SC_OK;
}

/* ---- added tokens ------------------------------------------------------------ */

static sc_status add_token_obj(sc_tokenizer *t, const json_t *o, json_int_t id,
                               bool replace, const char *path, sc_error *err) {
  const json_t *c = json_object_get(o, "content");
  SC_CHECK(json_is_string(c), err, SC_ERR_FORMAT,
           "%s: added token %lld has no content", path, (long long)id);
  SC_CHECK(id >= 0 && id < INT32_MAX, err, SC_ERR_FORMAT,
           "%s: added token id %lld out of range", path, (long long)id);
  bool special = get_bool(o, "special", false);
  return sc_tok__add_added(t, json_string_value(c), json_string_length(c),
                           (int32_t)id, special, get_bool(o, "single_word", false),
                           get_bool(o, "lstrip", false), get_bool(o, "rstrip", false),
                           get_bool(o, "normalized", !special), replace, err);
}

static sc_status load_added_tokens(sc_tokenizer *t, const json_t *list,
                                   const char *path, sc_error *err) {
  if (!list || json_is_null(list)) return SC_OK;
  SC_CHECK(json_is_array(list), err, SC_ERR_FORMAT,
           "%s: added_tokens is not an array", path);
  for (size_t i = 0; i < json_array_size(list); i++) {
    const json_t *o = json_array_get(list, i);
    const json_t *id = json_object_get(o, "id");
    SC_CHECK(json_is_integer(id), err, SC_ERR_FORMAT,
             "%s: added token %zu has no integer id", path, i);
    SC_TRY(add_token_obj(t, o, json_integer_value(id), true, path, err));
  }
  return SC_OK;
}

/* tokenizer_config.json "added_tokens_decoder": {"151643": {...}, ...}.
 * Tokens tokenizer.json already defines keep their definition there. */
static sc_status load_config_added(sc_tokenizer *t, const json_t *cfg,
                                   const char *path, sc_error *err) {
  const json_t *dec = json_object_get(cfg, "added_tokens_decoder");
  if (!dec) return SC_OK;
  SC_CHECK(json_is_object(dec), err, SC_ERR_FORMAT,
           "%s: added_tokens_decoder is not an object", path);
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)dec, key, v) {
    char *end;
    errno = 0;
    long long id = strtoll(key, &end, 10);
    SC_CHECK(*key && !*end && errno == 0, err, SC_ERR_FORMAT,
             "%s: added_tokens_decoder key \"%.40s\" is not an id", path, key);
    SC_CHECK(json_is_object(v), err, SC_ERR_FORMAT,
             "%s: added_tokens_decoder[%s] is not an object", path, key);
    SC_TRY(add_token_obj(t, v, id, false, path, err));
  }
  return SC_OK;
}

/* A token named in special_tokens_map.json (or the same keys of
 * tokenizer_config.json): transformers adds it as a special added token. We
 * mark an existing added token special, or add a vocabulary token; a name
 * with no id anywhere is ignored (we cannot invent ids the model knows). */
static sc_status mark_special(sc_tokenizer *t, const json_t *v, sc_error *err) {
  if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++)
      SC_TRY(mark_special(t, json_array_get(v, i), err));
    return SC_OK;
  }
  if (json_is_object(v)) v = json_object_get(v, "content");
  if (!json_is_string(v) || json_string_length(v) == 0) return SC_OK;
  const char *s = json_string_value(v);
  size_t len = json_string_length(v);
  int32_t a = sc_tok__added_find(t, s, len);
  if (a >= 0) {
    t->added[a].special = true;
    return SC_OK;
  }
  int32_t id = sc_tok__vocab_find(t, s, len);
  if (id < 0) {
    SC_LOG_DEBUG("tokenizer: special token \"%.60s\" has no id; ignored", s);
    return SC_OK;
  }
  return sc_tok__add_added(t, s, len, id, true, false, false, false, false, false, err);
}

static sc_status load_special_keys(sc_tokenizer *t, const json_t *root, sc_error *err) {
  static const char *const keys[] = {"bos_token", "eos_token", "unk_token",
                                     "sep_token", "pad_token", "cls_token",
                                     "mask_token", "additional_special_tokens"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    SC_TRY(mark_special(t, json_object_get(root, keys[i]), err));
  return SC_OK;
}

/* ---- the two forms ------------------------------------------------------------- */

static sc_status parse_tokenizer_json(sc_tokenizer *t, const char *path, sc_error *err) {
  json_t *root = NULL;
  SC_TRY(load_json(path, &root, err));
  sc_status st = SC_OK;
  if (!json_is_object(root)) {
    st = sc_error_set(err, SC_ERR_FORMAT, "%s: not a JSON object", path);
    goto out;
  }
  if ((st = load_model(t, json_object_get(root, "model"), path, err)) != SC_OK) goto out;
  if ((st = load_normalizer(t, json_object_get(root, "normalizer"), path, err)) != SC_OK)
    goto out;
  if ((st = load_pretok(t, json_object_get(root, "pre_tokenizer"), path, err)) != SC_OK)
    goto out;
  if ((st = check_decoder(json_object_get(root, "decoder"), path, err)) != SC_OK) goto out;
  st = load_added_tokens(t, json_object_get(root, "added_tokens"), path, err);
out:
  json_decref(root);
  return st;
}

/* merges.txt: an optional "#version" first line, then "a b" per line, rank
 * = position (transformers' slow BPE tokenizers read it the same way). */
static sc_status load_merges_txt(sc_tokenizer *t, const char *path, sc_error *err) {
  char *buf = NULL;
  size_t len = 0;
  SC_TRY(read_file(path, &buf, &len, err));
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
  sc_status st = sc_tok__reserve_merges(t, lines, err);
  int32_t rank = 0;
  size_t lineno = 0;
  char where[64];
  for (char *p = buf; st == SC_OK && p < buf + len;) {
    char *nl = memchr(p, '\n', (size_t)(buf + len - p));
    char *end = nl ? nl : buf + len;
    lineno++;
    char *q = end;
    while (q > p && (q[-1] == '\r' || q[-1] == ' ' || q[-1] == '\t')) q--;
    while (p < q && (*p == ' ' || *p == '\t')) p++;
    if (q > p && !(lineno == 1 && q - p >= 9 && memcmp(p, "#version:", 9) == 0)) {
      char *sp = p;
      while (sp < q && *sp != ' ' && *sp != '\t') sp++;
      char *b = sp;
      while (b < q && (*b == ' ' || *b == '\t')) b++;
      char *be = b;
      while (be < q && *be != ' ' && *be != '\t') be++;
      snprintf(where, sizeof where, "line %zu", lineno);
      if (sp == p || b == q || be != q)
        st = sc_error_set(err, SC_ERR_FORMAT, "%s: %s is not \"a b\"", path, where);
      else
        st = sc_tok__add_merge(t, p, (size_t)(sp - p), b, (size_t)(q - b), rank++,
                               where, err);
    }
    p = nl ? nl + 1 : buf + len;
  }
  free(buf);
  return st;
}

static sc_status parse_slow(sc_tokenizer *t, const char *vocab_path,
                            const char *merges_path, sc_error *err) {
  json_t *vocab = NULL;
  SC_TRY(load_json(vocab_path, &vocab, err));
  sc_status st = load_vocab(t, vocab, vocab_path, err);
  json_decref(vocab);
  SC_TRY(st);
  SC_TRY(load_merges_txt(t, merges_path, err));
  /* Qwen2Tokenizer (transformers models/qwen2/tokenization_qwen2.py) applies
   * unicodedata.normalize("NFC") in prepare_for_tokenization, splits with
   * PRETOKENIZE_REGEX and byte-encodes each piece with no prefix space. */
  t->nfc = true;
  t->prefix_space = false;
  SC_TRY(sc_tok__compile(SC_TOK_QWEN2_PATTERN, PCRE2_ZERO_TERMINATED, false,
                         &t->split[0], err));
  t->n_split = 1;
  return SC_OK;
}

static char *path_join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = malloc(a + b + 2);
  if (!p) return NULL;
  memcpy(p, dir, a);
  size_t k = a;
  if (k && p[k - 1] != '/') p[k++] = '/';
  memcpy(p + k, name, b + 1);
  return p;
}

sc_status sc_tokenizer_load_file(const char *path, sc_tokenizer **out, sc_error *err) {
  SC_CHECK(path && out, err, SC_ERR_INVALID, "sc_tokenizer_load_file: NULL argument");
  *out = NULL;
  sc_tokenizer *t = sc_tok__new();
  SC_CHECK(t, err, SC_ERR_NOMEM, "out of memory (tokenizer)");
  sc_status st = parse_tokenizer_json(t, path, err);
  if (st == SC_OK) st = sc_tok__finish(t, err);
  if (st != SC_OK) {
    sc_tokenizer_free(t);
    return st;
  }
  *out = t;
  return SC_OK;
}

sc_status sc_tokenizer_load_dir(const char *dir, sc_tokenizer **out, sc_error *err) {
  SC_CHECK(dir && out, err, SC_ERR_INVALID, "sc_tokenizer_load_dir: NULL argument");
  *out = NULL;
  /* A llama.cpp GGUF file (or a folder holding one and no tokenizer files):
   * its own metadata (gguf.c). */
  char gguf[4200], tj[4200], vj[4200];
  snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
  snprintf(vj, sizeof vj, "%s/vocab.json", dir);
  if (!file_exists(tj) && !file_exists(vj) && sc_gguf_find(dir, gguf, sizeof gguf))
    return sc_tokenizer_load_gguf(gguf, out, err);
  enum { TJ, VJ, MT, TC, SM, NPATHS };
  static const char *const names[NPATHS] = {"tokenizer.json", "vocab.json", "merges.txt",
                                            "tokenizer_config.json",
                                            "special_tokens_map.json"};
  char *p[NPATHS] = {0};
  sc_tokenizer *t = sc_tok__new();
  sc_status st = t ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory (tokenizer)");
  for (int i = 0; st == SC_OK && i < NPATHS; i++)
    if (!(p[i] = path_join(dir, names[i])))
      st = sc_error_set(err, SC_ERR_NOMEM, "out of memory (tokenizer)");
  if (st == SC_OK) {
    if (file_exists(p[TJ]))
      st = parse_tokenizer_json(t, p[TJ], err);
    else if (file_exists(p[VJ]) && file_exists(p[MT]))
      st = parse_slow(t, p[VJ], p[MT], err);
    else
      st = sc_error_set(err, SC_ERR_IO,
                        "%s: no tokenizer.json, and no vocab.json + merges.txt", dir);
  }
  for (int i = TC; st == SC_OK && i <= SM; i++) {
    if (!file_exists(p[i])) continue;
    json_t *root = NULL;
    st = load_json(p[i], &root, err);
    if (st == SC_OK && !json_is_object(root))
      st = sc_error_set(err, SC_ERR_FORMAT, "%s: not a JSON object", p[i]);
    if (st == SC_OK && i == TC) st = load_config_added(t, root, p[i], err);
    if (st == SC_OK) st = load_special_keys(t, root, err);
    json_decref(root);
  }
  if (st == SC_OK) st = sc_tok__finish(t, err);
  for (int i = 0; i < NPATHS; i++) free(p[i]);
  if (st != SC_OK) {
    sc_tokenizer_free(t);
    return st;
  }
  *out = t;
  return SC_OK;
}
