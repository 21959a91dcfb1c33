/* serve_shape.c — request and response shaping for `sculpt serve`: a
 * request's JSON body into a job (validated, with our bounds), a result or
 * a stream's progress into the answer's JSON, and error bodies. Pure
 * functions: no I/O, no locks, nothing about connections.
 *
 * Two request shapes:
 * - OpenAI's legacy completions
 *   (https://platform.openai.com/docs/api-reference/completions): prompt,
 *   suffix, max_tokens, temperature, top_p, stop, stream, seed; the
 *   answer's id/object/created/model/choices/usage.
 * - llama.cpp's server /infill (tools/server/README.md, "POST /infill";
 *   the answer as server-task.cpp's to_json_non_oaicompat builds it):
 *   input_prefix, input_suffix, input_extra [{filename, text}], prompt
 *   (text after the prefix, before the middle), n_predict, n_indent,
 *   response_fields, plus the /completion options we share (temperature,
 *   top_k, top_p, seed, stop, stream); the answer in `content`, with
 *   stop/stop_type/stopping_word, tokens_predicted/evaluated, truncated and
 *   llama.cpp's timings. llama.vim and llama.vscode send this.
 *
 * Streaming. By default a stream carries increments, as OpenAI's does:
 * each event holds only the text that is new (choices[0].text, and the same
 * as choices[0].delta.content, the chunk shape Continue reads; `content`
 * for /infill). A diffusion draft is not an append-only text: a later step
 * may fill a hole before text already decoded. So only the draft's stable
 * prefix is streamed: the tokens committed left to right up to the first
 * position still masked (the batched engine never uncommits a token, so
 * that prefix only grows and is a prefix of the final answer), minus any
 * tail that may yet begin a stop string, and never inside a UTF-8
 * sequence. What the model fills out of order arrives once its left side is
 * complete, at the latest in the last event, with finish_reason (OpenAI:
 * then `data: [DONE]`; /infill: `stop: true` and no [DONE], as llama.cpp).
 * The concatenated increments equal the answer not streamed. With
 * stream_drafts: true, each event instead carries the whole current draft
 * (holes left out) and its `step`, the progressive refinement a diffusion
 * model offers; the last event holds the whole final text. */
#define _GNU_SOURCE /* memmem */
#include "serve_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text --------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0. */
static int utf8_seq(const unsigned char *p, size_t left) {
  int n = sc_utf8_lead(p, left);
  return (size_t)n <= left ? n : 0;
}

/* A JSON string of text; bytes that are not valid UTF-8 (a middle cut inside
 * a character) become U+FFFD, since JSON text must be Unicode. */
json_t *sc_serve__json_text(const char *text, size_t len) {
  const unsigned char *p = (const unsigned char *)text;
  bool valid = true;
  for (size_t i = 0; i < len;) {
    int n = utf8_seq(p + i, len - i);
    if (!n) {
      valid = false;
      break;
    }
    i += (size_t)n;
  }
  if (valid) return json_stringn(len ? text : "", len);
  char *fixed = malloc(len * 3 + 1);
  if (!fixed) return NULL;
  size_t w = 0;
  for (size_t i = 0; i < len;) {
    int n = utf8_seq(p + i, len - i);
    if (n) {
      memcpy(fixed + w, p + i, (size_t)n);
      w += (size_t)n;
      i += (size_t)n;
    } else {
      memcpy(fixed + w, "\xEF\xBF\xBD", 3);
      w += 3;
      i++;
    }
  }
  json_t *j = json_stringn(fixed, w);
  free(fixed);
  return j;
}

/* Whether p[0..k) (k >= 1) begins a valid UTF-8 sequence not yet complete. */
static bool utf8_partial(const unsigned char *p, size_t k) {
  int n = sc_utf8_lead(p, k);
  return n > 0 && (size_t)n > k;
}

json_t *sc_serve__error_body(const char *msg, const char *type) {
  json_t *m = sc_serve__json_text(msg, strlen(msg));
  return json_pack("{s:{s:o, s:s, s:n, s:n}}", "error", "message", m ? m : json_string("?"),
                   "type", type, "param", "code");
}

/* ---- where the answer ends ------------------------------------------------------ */

size_t sc_serve__answer_end(const job *j, const char *text, size_t len, int *stop_hit,
                            bool *indent_cut) {
  size_t end = len;
  *stop_hit = -1;
  *indent_cut = false;
  for (int i = 0; i < j->n_stop; i++) {
    const char *hit = memmem(text, end, j->stop[i], strlen(j->stop[i]));
    if (hit && (size_t)(hit - text) < end) {
      end = (size_t)(hit - text);
      *stop_hit = i;
    }
  }
  if (j->n_indent <= 0) return end;
  /* As llama.cpp's n_indent: after each newline, a line whose leading
   * spaces and tabs are fewer than n_indent, and that has anything after
   * them, ends the answer before that first character. */
  for (size_t i = 0; i < end; i++) {
    if (text[i] != '\n') continue;
    size_t k = i + 1;
    int indent = 0;
    while (k < len && (text[k] == ' ' || text[k] == '\t')) k++, indent++;
    if (k < len && indent < j->n_indent) {
      if (k < end) {
        end = k;
        *stop_hit = -1;
        *indent_cut = true;
      }
      break;
    }
  }
  return end;
}

size_t sc_serve__sendable(const job *j, const char *text, size_t len) {
  int hit;
  bool indent_cut;
  size_t end = sc_serve__answer_end(j, text, len, &hit, &indent_cut);
  if (hit < 0) {
    /* No stop string yet: hold back the longest tail that begins one, which
     * the next step may complete (vLLM and llama.cpp hold back the same). */
    size_t hold = 0;
    for (int i = 0; i < j->n_stop; i++) {
      size_t sl = strlen(j->stop[i]);
      for (size_t k = sl - 1 < len ? sl - 1 : len; k > hold; k--)
        if (memcmp(text + len - k, j->stop[i], k) == 0) {
          hold = k;
          break;
        }
    }
    if (len - hold < end) end = len - hold;
  }
  /* Not inside a UTF-8 sequence the next token may complete: the event
   * would carry U+FFFD where the answer has the character. */
  const unsigned char *u = (const unsigned char *)text;
  for (size_t back = 1; back <= 3 && back <= end; back++) {
    unsigned char c = u[end - back];
    if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further */
    if (utf8_partial(u + end - back, back)) end -= back;
    break;
  }
  return end;
}

/* ---- answers ------------------------------------------------------------------ */

static const char *stop_type(const job *j) {
  return j->stop_hit >= 0 ? "word" : j->indent_cut ? "limit" : j->ended ? "eos" : "limit";
}

/* The OpenAI object; delta: the increment also as choices[0].delta. */
static json_t *openai_object(const server *s, const job *j, const char *text, size_t len,
                             const char *finish_reason, bool usage, bool delta) {
  json_t *t = sc_serve__json_text(text ? text : "", text ? len : 0);
  if (!t) t = json_string("");
  json_t *choice = json_pack("{s:O, s:i, s:n, s:o}", "text", t, "index", 0, "logprobs",
                             "finish_reason",
                             finish_reason ? json_string(finish_reason) : json_null());
  if (choice && delta) json_object_set_new(choice, "delta", json_pack("{s:O}", "content", t));
  json_decref(t);
  json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", j->id, "object",
                        "text_completion", "created", (json_int_t)j->created, "model",
                        s->model_name, "choices", choice);
  if (o && usage)
    json_object_set_new(o, "usage",
                        json_pack("{s:i, s:i, s:i}", "prompt_tokens", j->prompt_tokens,
                                  "completion_tokens", j->completion_tokens, "total_tokens",
                                  j->prompt_tokens + j->completion_tokens));
  return o;
}

/* llama.cpp's timings: the prompt part is the wait and tokenizing before
 * the request joined the batch, the predicted part its decoding. */
static json_t *infill_timings(const job *j) {
  double pms = j->t_admit > 0 ? j->t_admit - j->t_start : 0;
  double dms = j->t_done > 0 && j->t_admit > 0 ? j->t_done - j->t_admit : 0;
  int pn = j->prompt_tokens, dn = j->completion_tokens;
  return json_pack("{s:i, s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:f}", "cache_n", 0, "prompt_n",
                   pn, "prompt_ms", pms, "prompt_per_token_ms", pn ? pms / pn : 0.0,
                   "prompt_per_second", pms > 0 ? pn * 1000.0 / pms : 0.0, "predicted_n", dn,
                   "predicted_ms", dms, "predicted_per_token_ms", dn ? dms / dn : 0.0,
                   "predicted_per_second", dms > 0 ? dn * 1000.0 / dms : 0.0);
}

/* Keeps only the response_fields, each under its whole path ("timings/
 * prompt_n" is the value at timings.prompt_n), as llama.cpp's
 * json_get_nested_values does; fields that are not there are left out. */
static json_t *select_fields(const job *j, json_t *o) {
  if (!o || !j->fields) return o;
  json_t *r = json_object();
  for (int i = 0; r && i < j->n_fields; i++) {
    json_t *cur = o;
    char path[256];
    snprintf(path, sizeof path, "%s", j->fields[i]);
    for (char *save = NULL, *k = strtok_r(path, "/", &save); cur && k;
         k = strtok_r(NULL, "/", &save))
      cur = json_is_object(cur) ? json_object_get(cur, k) : NULL;
    if (cur && cur != o) json_object_set(r, j->fields[i], cur);
  }
  json_decref(o);
  return r;
}

/* The /infill object: a partial one (content and stop: false) or the last
 * (llama.cpp's final fields, response_fields applied). */
static json_t *infill_object(const server *s, const job *j, const char *text, size_t len,
                             bool final) {
  json_t *t = sc_serve__json_text(text ? text : "", text ? len : 0);
  json_t *o = json_pack("{s:i, s:o, s:[], s:i, s:b}", "index", 0, "content",
                        t ? t : json_string(""), "tokens", "id_slot", 0, "stop", final);
  if (!o || !final) return o;
  json_t *stops = json_array();
  for (int i = 0; stops && i < j->n_stop; i++) json_array_append_new(stops, json_string(j->stop[i]));
  json_object_set_new(o, "model", json_string(s->model_name));
  json_object_set_new(o, "tokens_predicted", json_integer(j->completion_tokens));
  json_object_set_new(o, "tokens_evaluated", json_integer(j->prompt_tokens));
  json_object_set_new(
      o, "generation_settings",
      json_pack("{s:i, s:i, s:f, s:f, s:i, s:I, s:o, s:b}", "n_predict", j->max_tokens,
                "n_indent", j->n_indent, "temperature", j->params.temperature, "top_p",
                j->params.top_p, "top_k", j->params.top_k, "seed", (json_int_t)j->params.seed,
                "stop", stops ? stops : json_array(), "stream", j->stream));
  json_object_set_new(o, "has_new_line",
                      json_boolean(j->text && memchr(j->text, '\n', j->text_len)));
  json_object_set_new(o, "truncated", json_boolean(j->truncated));
  json_object_set_new(o, "stop_type", json_string(stop_type(j)));
  json_object_set_new(o, "stopping_word", json_string(j->stop_hit >= 0 ? j->stop[j->stop_hit] : ""));
  json_object_set_new(o, "tokens_cached", json_integer(0));
  json_object_set_new(o, "timings", infill_timings(j));
  return select_fields(j, o);
}

json_t *sc_serve__stream_event(const server *s, const job *j, const char *text, size_t len,
                               int step, bool final) {
  json_t *o;
  if (j->api == API_INFILL) o = infill_object(s, j, text, len, final);
  else o = openai_object(s, j, text, len, final ? j->finish_reason : NULL, final,
                         !j->stream_drafts);
  if (o && j->stream_drafts && !final) json_object_set_new(o, "step", json_integer(step));
  return o;
}

json_t *sc_serve__answer(const server *s, const job *j) {
  if (j->api == API_INFILL) return infill_object(s, j, j->text, j->text_len, true);
  return openai_object(s, j, j->text, j->text_len, j->finish_reason, true, false);
}

/* ---- requests ----------------------------------------------------------------- */

static bool get_number(json_t *root, const char *key, double lo, double hi, double *out,
                       char *msg, size_t msg_len) {
  json_t *v = json_object_get(root, key);
  if (!v || json_is_null(v)) return true;
  if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi)) {
    snprintf(msg, msg_len, "'%s' must be a number from %g to %g", key, lo, hi);
    return false;
  }
  *out = json_number_value(v);
  return true;
}

void sc_serve__job_params(sc_infill_params *p) {
  sc_infill_params_default(p);
  p->block_len = 32;
  p->no_expand = true;
}

/* A new job with our defaults; NULL on OOM. */
static job *job_new(enum job_api api) {
  job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->api = api;
  sc_serve__job_params(&j->params);
  j->max_tokens = 32;
  j->stop_hit = -1;
  return j;
}

/* Copies a JSON string (NULL or null: "") into *out; false on OOM. */
static bool take_text(json_t *v, char **out, size_t *len) {
  size_t n = json_is_string(v) ? json_string_length(v) : 0;
  *out = malloc(n + 1);
  if (!*out) return false;
  if (n) memcpy(*out, json_string_value(v), n);
  (*out)[n] = '\0';
  *len = n;
  return true;
}

/* Whether root[key] is absent, null or a string; msg says so otherwise. */
static bool optional_string(json_t *root, const char *key, char *msg, size_t msg_len) {
  json_t *v = json_object_get(root, key);
  if (!v || json_is_null(v) || json_is_string(v)) return true;
  snprintf(msg, msg_len, "'%s' must be a string", key);
  return false;
}

/* The canvas from a token count (absent or null: keep the default;
 * negative allowed: the default, as llama.cpp's -1), capped by the
 * server. */
static bool get_canvas(const server *s, json_t *root, const char *key, bool allow_special,
                       job *j, char *msg, size_t msg_len) {
  json_t *v = json_object_get(root, key);
  if (!v || json_is_null(v)) return true;
  json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
  if (!json_is_integer(v) || (!allow_special && n < 1)) {
    snprintf(msg, msg_len, "'%s' must be a positive integer", key);
    return false;
  }
  if (n >= 0) j->max_tokens = n > s->o.max_tokens ? s->o.max_tokens : (int)n;
  return true;
}

/* What both shapes share: sampling, streaming and stop strings. */
static bool parse_common(const server *s, json_t *root, job *j, char *msg, size_t msg_len) {
  /* The server's longest canvas is at most half of what the context leaves
   * after the frame (serve.c): the default canvas too. */
  if (j->max_tokens > s->o.max_tokens) j->max_tokens = s->o.max_tokens;
  if (!get_number(root, "temperature", 0, 2, &j->params.temperature, msg, msg_len) ||
      !get_number(root, "top_p", 0, 1, &j->params.top_p, msg, msg_len))
    return false;
  if (j->params.top_p <= 0) j->params.top_p = 1.0;
  json_t *seed = json_object_get(root, "seed");
  if (seed && !json_is_null(seed)) {
    if (!json_is_integer(seed)) {
      snprintf(msg, msg_len, "'seed' must be an integer");
      return false;
    }
    j->params.seed = (uint64_t)json_integer_value(seed);
  }
  const char *flags[] = {"stream", "stream_drafts"};
  bool *dst[] = {&j->stream, &j->stream_drafts};
  for (int i = 0; i < 2; i++) {
    json_t *v = json_object_get(root, flags[i]);
    if (!v || json_is_null(v)) continue;
    if (!json_is_boolean(v)) {
      snprintf(msg, msg_len, "'%s' must be a boolean", flags[i]);
      return false;
    }
    *dst[i] = json_is_true(v);
  }
  json_t *stop = json_object_get(root, "stop");
  if (!stop || json_is_null(stop)) return true;
  if (!json_is_string(stop) && (!json_is_array(stop) || json_array_size(stop) > MAX_STOPS)) {
    snprintf(msg, msg_len, "'stop' must be a string or a list of up to %d strings", MAX_STOPS);
    return false;
  }
  size_t n = json_is_string(stop) ? 1 : json_array_size(stop);
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_is_string(stop) ? stop : json_array_get(stop, i);
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        strlen(json_string_value(v)) != json_string_length(v)) {
      snprintf(msg, msg_len, "each 'stop' must be a non-empty string");
      return false;
    }
    j->stop[j->n_stop] = strdup(json_string_value(v));
    if (!j->stop[j->n_stop]) {
      snprintf(msg, msg_len, "out of memory");
      return false;
    }
    j->n_stop++;
  }
  return true;
}

/* Loads a body that must be a JSON object; NULL with msg filled. */
static json_t *load_object(const char *body, size_t len, char *msg, size_t msg_len) {
  json_error_t jerr;
  size_t replaced;
  /* As the LSP reads its messages: NUL is text (the prompt keeps its
   * length), a lone UTF-16 surrogate escape becomes U+FFFD. */
  json_t *root = sc_json_load_text(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr,
                                   &replaced);
  if (!root) {
    snprintf(msg, msg_len, "the body is not valid JSON: %s (line %d, column %d)", jerr.text,
             jerr.line, jerr.column);
    return NULL;
  }
  if (!json_is_object(root)) {
    snprintf(msg, msg_len, "the body must be a JSON object");
    json_decref(root);
    return NULL;
  }
  return root;
}

/* The OpenAI fields of a completion. */
static bool fill_completion(const server *s, json_t *root, job *j, char *msg, size_t msg_len) {
  json_t *prompt = json_object_get(root, "prompt");
  /* OpenAI also takes a list of prompts; one is what a FIM request has. */
  if (json_is_array(prompt) && json_array_size(prompt) == 1)
    prompt = json_array_get(prompt, 0);
  if (!json_is_string(prompt)) {
    snprintf(msg, msg_len, "'prompt' must be a string");
    return false;
  }
  if (!optional_string(root, "suffix", msg, msg_len)) return false;
  if (!take_text(prompt, &j->prompt, &j->prompt_len) ||
      !take_text(json_object_get(root, "suffix"), &j->suffix, &j->suffix_len)) {
    snprintf(msg, msg_len, "out of memory");
    return false;
  }
  if (!get_canvas(s, root, "max_tokens", false, j, msg, msg_len)) return false;
  json_t *n = json_object_get(root, "n");
  if (n && !json_is_null(n) && !(json_is_integer(n) && json_integer_value(n) == 1)) {
    snprintf(msg, msg_len, "'n' must be 1");
    return false;
  }
  return optional_string(root, "model", msg, msg_len);
}

/* The text before the middle for /infill: the input_extra chunks (each
 * ending in a newline), then input_prefix, then prompt (the current line
 * up to the cursor, llama.vim's "middle"). llama.cpp puts the chunks
 * before the FIM prefix, inside repo-level tokens when the model has them;
 * sculpt's models have none, so each chunk's text stands as it is (no file
 * name: a header line would have to be in some language's comment syntax,
 * which the server does not know). The prompt's start is what a full
 * context drops first. */
static bool infill_prompt(json_t *root, job *j, char *msg, size_t msg_len) {
  json_t *extra = json_object_get(root, "input_extra");
  if (extra && !json_is_null(extra) && !json_is_array(extra)) {
    snprintf(msg, msg_len, "'input_extra' must be a list of {filename, text}");
    return false;
  }
  size_t n_extra = json_is_array(extra) ? json_array_size(extra) : 0;
  for (size_t i = 0; i < n_extra; i++) {
    json_t *c = json_array_get(extra, i);
    json_t *fn = json_is_object(c) ? json_object_get(c, "filename") : NULL;
    if (!json_is_object(c) || !json_is_string(json_object_get(c, "text")) ||
        (fn && !json_is_null(fn) && !json_is_string(fn))) {
      snprintf(msg, msg_len, "'input_extra' must be a list of {filename, text}");
      return false;
    }
  }
  const char *keys[] = {"input_prefix", "input_suffix", "prompt"};
  for (int i = 0; i < 3; i++)
    if (!optional_string(root, keys[i], msg, msg_len)) return false;
  char *out = NULL;
  size_t len = 0, cap = 0;
  bool ok = sc_buf_append(&out, &len, &cap, 256, "", 0);
  for (size_t i = 0; ok && i < n_extra; i++) {
    json_t *t = json_object_get(json_array_get(extra, i), "text");
    size_t tl = json_string_length(t);
    ok = sc_buf_append(&out, &len, &cap, 256, json_string_value(t), tl);
    if (ok && tl && json_string_value(t)[tl - 1] != '\n')
      ok = sc_buf_append(&out, &len, &cap, 256, "\n", 1);
  }
  for (int i = 0; ok && i < 3; i += 2) {
    json_t *t = json_object_get(root, keys[i]);
    if (json_is_string(t))
      ok = sc_buf_append(&out, &len, &cap, 256, json_string_value(t), json_string_length(t));
  }
  if (!ok || !take_text(json_object_get(root, "input_suffix"), &j->suffix, &j->suffix_len)) {
    free(out);
    snprintf(msg, msg_len, "out of memory");
    return false;
  }
  j->prompt = out;
  j->prompt_len = len;
  return true;
}

/* The llama.cpp fields of an /infill request. */
static bool fill_infill(const server *s, json_t *root, job *j, char *msg, size_t msg_len) {
  if (!infill_prompt(root, j, msg, msg_len)) return false;
  /* n_predict as llama.cpp reads it: max_tokens when absent; -1 (its
   * "until the end") is our default canvas; 0 evaluates the prompt only
   * (llama.vim sends such requests to warm a cache): nothing to decode. */
  if (!get_canvas(s, root, "max_tokens", true, j, msg, msg_len) ||
      !get_canvas(s, root, "n_predict", true, j, msg, msg_len))
    return false;
  json_t *v = json_object_get(root, "n_indent");
  if (v && !json_is_null(v)) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1024) {
      snprintf(msg, msg_len, "'n_indent' must be an integer from 0 to 1024");
      return false;
    }
    j->n_indent = (int)json_integer_value(v);
  }
  v = json_object_get(root, "top_k");
  if (v && !json_is_null(v)) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
      snprintf(msg, msg_len, "'top_k' must be a non-negative integer");
      return false;
    }
    j->params.top_k = json_integer_value(v) > 1000000 ? 1000000 : (int)json_integer_value(v);
  }
  v = json_object_get(root, "response_fields");
  if (!v || json_is_null(v)) return true;
  size_t n = json_is_array(v) ? json_array_size(v) : 0;
  if (!json_is_array(v) || n > 64) {
    snprintf(msg, msg_len, "'response_fields' must be a list of up to 64 strings");
    return false;
  }
  j->fields = calloc(n ? n : 1, sizeof *j->fields);
  for (size_t i = 0; j->fields && i < n; i++) {
    json_t *f = json_array_get(v, i);
    if (!json_is_string(f) || json_string_length(f) >= 256) {
      snprintf(msg, msg_len, "each of 'response_fields' must be a string (a path a/b/c)");
      return false;
    }
    if (!(j->fields[j->n_fields] = strdup(json_string_value(f)))) break;
    j->n_fields++;
  }
  if (!j->fields || j->n_fields != (int)n) {
    snprintf(msg, msg_len, "out of memory");
    return false;
  }
  return true;
}

/* A body into a job of that api: its own fields (fill), then the shared. */
static job *parse_body(const server *s, enum job_api api, const char *body, size_t len,
                       char *msg, size_t msg_len) {
  json_t *root = load_object(body, len, msg, msg_len);
  if (!root) return NULL;
  job *j = job_new(api);
  bool ok = false;
  if (!j) snprintf(msg, msg_len, "out of memory");
  else if (api == API_INFILL) ok = fill_infill(s, root, j, msg, msg_len);
  else ok = fill_completion(s, root, j, msg, msg_len);
  ok = ok && parse_common(s, root, j, msg, msg_len);
  json_decref(root);
  if (!ok) {
    sc_serve__job_free(j);
    return NULL;
  }
  return j;
}

job *sc_serve__parse_completion(const server *s, const char *body, size_t len, char *msg,
                                size_t msg_len) {
  return parse_body(s, API_OPENAI, body, len, msg, msg_len);
}

job *sc_serve__parse_infill(const server *s, const char *body, size_t len, char *msg,
                            size_t msg_len) {
  return parse_body(s, API_INFILL, body, len, msg, msg_len);
}
