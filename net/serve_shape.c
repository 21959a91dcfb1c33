/* serve_shape.c — request and response shaping for `sculpt serve`: a
 * completion request's JSON body into a job (validated, with our bounds),
 * a result into the answer's JSON, and error bodies. Pure functions: no
 * I/O, no locks, nothing about connections.
 *
 * The completion API follows OpenAI's legacy completions
 * (https://platform.openai.com/docs/api-reference/completions): prompt,
 * suffix, max_tokens, temperature, top_p, stop, stream, seed; the answer's
 * id/object/created/model/choices/usage. */
#define _POSIX_C_SOURCE 200809L
#include "serve_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text --------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0. RFC 3629 section 4. */
static int utf8_seq(const unsigned char *p, size_t left) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if ((size_t)n > left) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
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

json_t *sc_serve__error_body(const char *msg, const char *type) {
  json_t *m = sc_serve__json_text(msg, strlen(msg));
  return json_pack("{s:{s:o, s:s, s:n, s:n}}", "error", "message", m ? m : json_string("?"),
                   "type", type, "param", "code");
}

/* ---- answers ------------------------------------------------------------------ */

json_t *sc_serve__completion_object(const server *s, const job *j, const char *text,
                                    size_t len, const char *finish_reason, bool usage) {
  json_t *t = sc_serve__json_text(text ? text : "", text ? len : 0);
  json_t *choice = json_pack("{s:o, s:i, s:n, s:o}", "text", t ? t : json_string(""), "index",
                             0, "logprobs", "finish_reason",
                             finish_reason ? json_string(finish_reason) : json_null());
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

/* Validates the body into a job; NULL with msg filled on a bad request. */
job *sc_serve__parse_completion(const server *s, const char *body, size_t len, char *msg,
                                size_t msg_len) {
  json_error_t jerr;
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    snprintf(msg, msg_len, "the body is not valid JSON: %s (line %d, column %d)", jerr.text,
             jerr.line, jerr.column);
    return NULL;
  }
  job *j = calloc(1, sizeof *j);
  if (!j) {
    snprintf(msg, msg_len, "out of memory");
    json_decref(root);
    return NULL;
  }
  sc_infill_params_default(&j->params);
  j->params.block_len = 32;
  j->max_tokens = 32;
  bool ok = false;
  if (!json_is_object(root)) {
    snprintf(msg, msg_len, "the body must be a JSON object");
    goto out;
  }
  json_t *prompt = json_object_get(root, "prompt");
  /* OpenAI also takes a list of prompts; one is what a FIM request has. */
  if (json_is_array(prompt) && json_array_size(prompt) == 1)
    prompt = json_array_get(prompt, 0);
  if (!json_is_string(prompt)) {
    snprintf(msg, msg_len, "'prompt' must be a string");
    goto out;
  }
  json_t *suffix = json_object_get(root, "suffix");
  if (suffix && !json_is_null(suffix) && !json_is_string(suffix)) {
    snprintf(msg, msg_len, "'suffix' must be a string");
    goto out;
  }
  j->prompt_len = json_string_length(prompt);
  j->prompt = malloc(j->prompt_len + 1);
  j->suffix_len = json_is_string(suffix) ? json_string_length(suffix) : 0;
  j->suffix = malloc(j->suffix_len + 1);
  if (!j->prompt || !j->suffix) {
    snprintf(msg, msg_len, "out of memory");
    goto out;
  }
  memcpy(j->prompt, json_string_value(prompt), j->prompt_len + 1);
  if (json_is_string(suffix)) memcpy(j->suffix, json_string_value(suffix), j->suffix_len + 1);
  else j->suffix[0] = '\0';

  json_t *mt = json_object_get(root, "max_tokens");
  if (mt && !json_is_null(mt)) {
    if (!json_is_integer(mt) || json_integer_value(mt) < 1) {
      snprintf(msg, msg_len, "'max_tokens' must be a positive integer");
      goto out;
    }
    json_int_t v = json_integer_value(mt);
    j->max_tokens = v > s->o.max_tokens ? s->o.max_tokens : (int)v;
  }
  /* At least half the context stays for the prompt and suffix: a canvas
   * with nothing to condition on would be noise. */
  if (j->max_tokens > (s->context - 2) / 2) j->max_tokens = (s->context - 2) / 2;
  if (!get_number(root, "temperature", 0, 2, &j->params.temperature, msg, msg_len) ||
      !get_number(root, "top_p", 0, 1, &j->params.top_p, msg, msg_len))
    goto out;
  if (j->params.top_p <= 0) j->params.top_p = 1.0;
  json_t *seed = json_object_get(root, "seed");
  if (seed && !json_is_null(seed)) {
    if (!json_is_integer(seed)) {
      snprintf(msg, msg_len, "'seed' must be an integer");
      goto out;
    }
    j->params.seed = (uint64_t)json_integer_value(seed);
  }
  json_t *n = json_object_get(root, "n");
  if (n && !json_is_null(n) && !(json_is_integer(n) && json_integer_value(n) == 1)) {
    snprintf(msg, msg_len, "'n' must be 1");
    goto out;
  }
  json_t *stream = json_object_get(root, "stream");
  if (stream && !json_is_null(stream)) {
    if (!json_is_boolean(stream)) {
      snprintf(msg, msg_len, "'stream' must be a boolean");
      goto out;
    }
    j->stream = json_is_true(stream);
  }
  json_t *model = json_object_get(root, "model");
  if (model && !json_is_null(model) && !json_is_string(model)) {
    snprintf(msg, msg_len, "'model' must be a string");
    goto out;
  }
  json_t *stop = json_object_get(root, "stop");
  if (stop && !json_is_null(stop)) {
    json_t *list = stop;
    if (json_is_string(stop)) {
      list = json_array();
      json_array_append(list, stop);
    } else if (!json_is_array(stop) || json_array_size(stop) > MAX_STOPS) {
      snprintf(msg, msg_len, "'stop' must be a string or a list of up to %d strings",
               MAX_STOPS);
      goto out;
    } else {
      json_incref(list);
    }
    size_t i;
    json_t *v;
    bool bad = false;
    json_array_foreach(list, i, v) {
      if (!json_is_string(v) || json_string_length(v) == 0 ||
          strlen(json_string_value(v)) != json_string_length(v)) {
        bad = true;
        break;
      }
      j->stop[j->n_stop] = strdup(json_string_value(v));
      if (j->stop[j->n_stop]) j->n_stop++;
    }
    json_decref(list);
    if (bad) {
      snprintf(msg, msg_len, "each 'stop' must be a non-empty string");
      goto out;
    }
  }
  ok = true;
out:
  json_decref(root);
  if (!ok) {
    sc_serve__job_free(j);
    return NULL;
  }
  return j;
}

