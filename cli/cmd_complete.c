/* cmd_complete.c — `sculpt complete FILE:LINE:COL`: fill in the middle at a
 * position of a file, from the text before and after it. With --backend URL
 * the middle comes from a remote FIM endpoint instead of a local model: the
 * prompt is still assembled here (context/, with the model's tokenizer when
 * one is at hand) and the answer is shaped here. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "context.h"
#include "model.h"
#include "net.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "complete"

/* Decoding flags given on the command line: they override the preset's
 * values (which need the model's family profile, known after loading). */
enum {
  SET_STEPS = 1u << 0,
  SET_RANK = 1u << 1, /* --algorithm: rank and schedule */
  SET_THRESHOLD = 1u << 2,
  SET_SEED = 1u << 3,
  SET_TEMPERATURE = 1u << 4,
  SET_TOP_P = 1u << 5,
  SET_TOP_K = 1u << 6,
  SET_BLOCK = 1u << 7,
  SET_EOS_PENALTY = 1u << 8,
  SET_NO_CACHE = 1u << 9,
  SET_DRAFT_THRESHOLD = 1u << 10,
};

typedef struct args {
  const char *target;
  const char *model_dir;
  const char *family;
  sc_device_kind device;
  sc_weights_kind weights;
  sc_infill_plan plan;
  sc_infill_params params; /* the flags' values (see set) */
  unsigned set;            /* SET_*: which flags were given */
  sc_preset preset;        /* --preset; AUTO: the family's default */
  int drafts;              /* --drafts: 1 on, 0 off, -1 the preset's (on for fast) */
  bool json;
  /* the remote backend */
  sc_fim_client_options remote; /* --backend and its options; url NULL: local */
} args;

static int parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  sc_infill_params_default(&a->params);
  a->plan.n_lengths = 1;
  a->plan.lengths[0] = 32;
  a->device = SC_DEVICE_AUTO;
  a->drafts = -1;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    int br;
    double d;
    if (strcmp(o, "--json") == 0) { a->json = true; continue; }
    if (strcmp(o, "--no-cache") == 0) { a->params.use_cache = false; a->set |= SET_NO_CACHE; continue; }
    if (o[0] != '-' || strcmp(o, "-") == 0) {
      if (a->target) { sc_cli_fail(CMD, "one FILE:LINE:COL only"); return 2; }
      a->target = o;
      continue;
    }
    if (!v) { sc_cli_fail(CMD, "%s needs a value", o); return 2; }
    i++;
    if (strcmp(o, "--model") == 0) a->model_dir = v;
    else if ((br = sc_cli_backend_option(CMD, o, v, &a->remote)) != 0) {
      if (br < 0) return 2;
    }
    else if (strcmp(o, "--family") == 0) a->family = v;
    else if (strcmp(o, "--weights") == 0) {
      if (!sc_weights_kind_parse(v, &a->weights)) {
        sc_cli_fail(CMD, "--weights takes " SC_WEIGHTS_KINDS);
        return 2;
      }
    }
    else if (strcmp(o, "--preset") == 0) {
      if (!sc_preset_parse(v, &a->preset)) { sc_cli_fail(CMD, "--preset takes fast, upstream or auto"); return 2; }
    }
    else if (strcmp(o, "--device") == 0) {
      if (!sc_device_kind_parse(v, &a->device)) { sc_cli_fail(CMD, "--device takes auto, cpu or cuda"); return 2; }
    } else if (strcmp(o, "--max-tokens") == 0) {
      if (!sc_cli_parse_long(v, 1, 4096, &n)) { sc_cli_fail(CMD, "--max-tokens takes 1 to 4096"); return 2; }
      a->plan.n_lengths = 1;
      a->plan.lengths[0] = (int)n;
    } else if (strcmp(o, "--lengths") == 0) {
      /* Several candidate canvas lengths, decoded and ranked. */
      a->plan.n_lengths = 0;
      char *copy = strdup(v), *save = NULL;
      for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (a->plan.n_lengths == SC_INFILL_MAX_CANDIDATES || !sc_cli_parse_long(t, 1, 4096, &n)) {
          free(copy);
          sc_cli_fail(CMD, "--lengths takes 1 to %d numbers from 1 to 4096", SC_INFILL_MAX_CANDIDATES);
          return 2;
        }
        a->plan.lengths[a->plan.n_lengths++] = (int)n;
      }
      free(copy);
      if (a->plan.n_lengths == 0) { sc_cli_fail(CMD, "--lengths is empty"); return 2; }
    } else if (strcmp(o, "--steps") == 0) {
      if (!sc_cli_parse_long(v, 1, 1 << 20, &n)) { sc_cli_fail(CMD, "--steps takes a positive number"); return 2; }
      a->params.steps = (int)n;
      a->params.schedule = SC_SCHEDULE_FIXED_K;
      a->set |= SET_STEPS;
    } else if (strcmp(o, "--algorithm") == 0) {
      int steps = a->params.steps;
      if (!sc_infill_algorithm_parse(v, &a->params)) {
        sc_cli_fail(CMD, "--algorithm takes threshold, confidence, margin or entropy");
        return 2;
      }
      a->params.steps = steps;
      a->set |= SET_RANK;
    } else if (strcmp(o, "--threshold") == 0) {
      if (!sc_cli_parse_double(v, 0, 1, &d)) { sc_cli_fail(CMD, "--threshold takes a number in [0, 1]"); return 2; }
      a->params.threshold = (float)d;
      a->params.schedule = SC_SCHEDULE_THRESHOLD;
      a->set |= SET_THRESHOLD;
    } else if (strcmp(o, "--seed") == 0) {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(v, &end, 10);
      if (errno || *end || v[0] == '-') { sc_cli_fail(CMD, "--seed takes a non-negative number"); return 2; }
      a->params.seed = s;
      a->set |= SET_SEED;
    } else if (strcmp(o, "--temperature") == 0) {
      if (!sc_cli_parse_double(v, 0, 100, &a->params.temperature)) { sc_cli_fail(CMD, "--temperature takes 0 to 100"); return 2; }
      a->set |= SET_TEMPERATURE;
    } else if (strcmp(o, "--top-p") == 0) {
      if (!sc_cli_parse_double(v, 0, 1, &a->params.top_p)) { sc_cli_fail(CMD, "--top-p takes (0, 1]"); return 2; }
      a->set |= SET_TOP_P;
    } else if (strcmp(o, "--top-k") == 0) {
      if (!sc_cli_parse_long(v, 0, 1 << 24, &n)) { sc_cli_fail(CMD, "--top-k takes a number"); return 2; }
      a->params.top_k = (int)n;
      a->set |= SET_TOP_K;
    } else if (strcmp(o, "--block-len") == 0) {
      if (!sc_cli_parse_long(v, 0, 4096, &n)) { sc_cli_fail(CMD, "--block-len takes 0 to 4096"); return 2; }
      a->params.block_len = (int)n;
      a->set |= SET_BLOCK;
    } else if (strcmp(o, "--drafts") == 0) {
      if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) { sc_cli_fail(CMD, "--drafts takes on or off"); return 2; }
      a->drafts = strcmp(v, "on") == 0;
    } else if (strcmp(o, "--draft-threshold") == 0) {
      if (!sc_cli_parse_double(v, 0, 1, &d)) { sc_cli_fail(CMD, "--draft-threshold takes a number in [0, 1]"); return 2; }
      a->params.draft_threshold = (float)d;
      a->set |= SET_DRAFT_THRESHOLD;
    } else if (strcmp(o, "--eos-penalty") == 0) {
      if (!sc_cli_parse_double(v, -SC_EOS_PENALTY_MAX, SC_EOS_PENALTY_MAX, &d)) {
        sc_cli_fail(CMD, "--eos-penalty takes -%g to %g", SC_EOS_PENALTY_MAX, SC_EOS_PENALTY_MAX);
        return 2;
      }
      a->params.eos_penalty = (float)d;
      a->set |= SET_EOS_PENALTY;
    } else {
      sc_cli_fail(CMD, "unknown option '%s' (see sculpt help complete)", o);
      return 2;
    }
  }
  if (!a->target) { sc_cli_fail(CMD, "needs FILE:LINE:COL (see sculpt help complete)"); return 2; }
  if (sc_cli_backend_orphan(CMD, &a->remote)) return 2;
  return 0;
}

/* The preset's parameters for the loaded model, with the flags given on top. */
static sc_infill_params decoding_params(const args *a, const sc_model *model) {
  sc_infill_params p;
  sc_infill_params_for(model, a->preset, &p);
  const sc_infill_params *u = &a->params;
  if (a->set & SET_RANK) p.rank = u->rank, p.schedule = u->schedule;
  if (a->set & SET_STEPS) p.steps = u->steps, p.schedule = u->schedule;
  if (a->set & SET_THRESHOLD) p.threshold = u->threshold, p.schedule = u->schedule;
  if (a->set & SET_SEED) p.seed = u->seed;
  if (a->set & SET_TEMPERATURE) p.temperature = u->temperature;
  if (a->set & SET_TOP_P) p.top_p = u->top_p;
  if (a->set & SET_TOP_K) p.top_k = u->top_k;
  if (a->set & SET_BLOCK) p.block_len = u->block_len;
  if (a->set & SET_EOS_PENALTY) p.eos_penalty = u->eos_penalty;
  if (a->set & SET_NO_CACHE) p.use_cache = false;
  if (a->set & SET_DRAFT_THRESHOLD) p.draft_threshold = u->draft_threshold;
  return p;
}

static int fail_err(const sc_error *err) {
  sc_cli_fail(CMD, "%s", err->msg);
  return err->status == SC_ERR_INVALID ? 2 : 1;
}

/* ---- the remote backend ------------------------------------------------------ */

#define REMOTE_BUDGET 2048     /* prompt tokens, snippets included */
#define REMOTE_BYTES_BEFORE 16384 /* without a tokenizer: byte windows */
#define REMOTE_BYTES_AFTER 4096

/* The repair's model call (sc_repair_fill_fn) through the backend: the
 * prompt plus the candidate's good head before the canvas, its tail plus
 * the suffix after it. */
typedef struct remote_fill_ctx {
  const sc_fim_client_options *o;
  const char *prompt;
  size_t prompt_len;
  const char *suffix;
  size_t suffix_len;
  bool one_line;
  int tries;
} remote_fill_ctx;

static sc_status remote_fill(void *user, const char *head, size_t head_len, const char *span,
                             size_t span_len, const char *tail, size_t tail_len, char **out,
                             size_t *out_len, sc_error *err) {
  remote_fill_ctx *f = user;
  char *before = malloc(f->prompt_len + head_len + 1);
  char *after = malloc(tail_len + f->suffix_len + 1);
  sc_status st = SC_ERR_NOMEM;
  if (before && after) {
    memcpy(before, f->prompt, f->prompt_len);
    memcpy(before + f->prompt_len, head, head_len);
    memcpy(after, tail, tail_len);
    memcpy(after + tail_len, f->suffix, f->suffix_len);
    static const char *const nl_stop[] = {"\n"};
    bool one = f->one_line || !memchr(span, '\n', span_len);
    /* About four bytes a token, with room to write it differently. */
    sc_fim_request req = {.prompt = before, .prompt_len = f->prompt_len + head_len,
                          .suffix = after, .suffix_len = tail_len + f->suffix_len,
                          .max_tokens = (int)(span_len / 2 + 8), .stop = one ? nl_stop : NULL,
                          .n_stop = one ? 1 : 0};
    sc_fim_result res = {0};
    st = sc_fim_complete_sync(f->o, &req, NULL, out, out_len, &res, err);
    f->tries += res.tries;
  } else {
    sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  free(before);
  free(after);
  return st;
}

/* Fills the middle at offset from the --backend endpoint; prints it shaped
 * (or, with --json, the raw and shaped text and the request's counters). */
static int complete_remote(const args *a, const char *path, const char *text, size_t len,
                           size_t offset) {
  sc_error err = {0};
  int exit_code = 1;
  /* The tokenizer counts the prompt's budget; without one, bytes do. */
  char *model_dir = NULL;
  sc_tokenizer *tok = NULL;
  if ((sc_model_resolve(a->model_dir, &model_dir, &err) != SC_OK ||
       (model_dir && sc_tokenizer_load_dir(model_dir, &tok, &err) != SC_OK))) {
    free(model_dir);
    if (a->model_dir) return fail_err(&err);
    model_dir = NULL;
    tok = NULL;
  }
  free(model_dir);
  const char *lang = sc_context_language_for(NULL, path);
  sc_syntax_tree *tree = NULL;
  sc_completion_plan plan = {0};
  bool planned = false;
  if (lang && sc_syntax_tree_new(lang, text, len, &tree, NULL) == SC_OK &&
      sc_completion_plan_at(tree, offset, &plan, NULL) == SC_OK)
    planned = true;
  char *prompt = NULL;
  size_t prompt_len = 0, n_snippets = 0;
  const char *suffix = text + offset;
  size_t suffix_len = len - offset > REMOTE_BYTES_AFTER ? REMOTE_BYTES_AFTER : len - offset;
  sc_prompt pr = {0};
  sc_fim_chunk *chunks = NULL; /* the snippets, for providers that take them apart */
  int n_chunks = 0;
  bool have_prompt = tok && lang &&
                     sc_prompt_build(NULL, path, lang, text, len, offset, tok, REMOTE_BUDGET,
                                     &pr, NULL) == SC_OK;
  if (have_prompt) {
    prompt = sc_prompt_text(&pr, &prompt_len);
    if (prompt) {
      n_snippets = pr.n_snippets;
      suffix = pr.suffix;
      suffix_len = strlen(pr.suffix);
      chunks = pr.n_snippets ? calloc(pr.n_snippets, sizeof *chunks) : NULL;
      for (size_t i = 0; chunks && i < pr.n_snippets; i++)
        chunks[n_chunks++] = (sc_fim_chunk){pr.snippets[i].path, strlen(pr.snippets[i].path),
                                            pr.snippets[i].text, pr.snippets[i].len};
    }
  } else {
    size_t p0 = offset > REMOTE_BYTES_BEFORE ? offset - REMOTE_BYTES_BEFORE : 0;
    prompt = malloc(offset - p0 + 1);
    if (prompt) {
      memcpy(prompt, text + p0, offset - p0);
      prompt_len = offset - p0;
    }
  }
  char *raw = NULL;
  size_t raw_len = 0, kept = 0;
  const char *discarded = NULL;
  char *repaired = NULL; /* the candidate after a repair (owned) */
  sc_fim_result res = {0};
  if (!prompt) {
    sc_cli_fail(CMD, "out of memory");
    goto done;
  }
  if (planned && plan.kind == SC_COMPLETION_NONE) {
    discarded = plan.reason ? plan.reason : "nothing to complete here";
  } else {
    static const char *const nl_stop[] = {"\n"};
    bool one_line = planned && plan.single_line;
    sc_fim_client_options o = a->remote;
    /* The prompt is the snippets then the window (sc_prompt_text): with the
     * snippets apart, the window alone follows them. */
    size_t window = chunks ? strlen(pr.prefix) : prompt_len;
    sc_fim_request req = {.prompt = prompt + (prompt_len - window), .prompt_len = window,
                          .suffix = suffix, .suffix_len = suffix_len,
                          .max_tokens = a->plan.lengths[0],
                          .temperature = a->params.temperature,
                          .stop = one_line ? nl_stop : NULL, .n_stop = one_line ? 1 : 0,
                          .extra = chunks, .n_extra = chunks ? n_chunks : 0};
    if (sc_fim_complete_sync(&o, &req, NULL, &raw, &raw_len, &res, &err) != SC_OK) {
      exit_code = fail_err(&err);
      goto done;
    }
    /* Shaping, as the editor gets it: the unit the plan asked for, one line
     * when it must be, no trailing blank space, no new syntax error. */
    kept = raw_len;
    if (planned) kept = sc_completion_cut(tree, &plan, offset, raw, kept);
    kept = sc_completion_trim(raw, kept, suffix, suffix_len, one_line);
    sc_completion_check chk;
    if (planned && kept > 0 &&
        sc_completion_check_insert(tree, offset, raw, kept, &chk, NULL) == SC_OK && !chk.ok) {
      /* Repair once: the backend rewrites the broken lines, the rest of the
       * candidate fixed around them. */
      remote_fill_ctx fc = {&o, prompt, prompt_len, suffix, suffix_len, one_line, 0};
      char *fixed = NULL;
      size_t fixed_len = 0;
      sc_completion_check after;
      if (sc_completion_repair(tree, offset, raw, kept, &chk, remote_fill, &fc, &fixed,
                               &fixed_len, &after, NULL) == SC_OK &&
          after.ok) {
        repaired = fixed;
        kept = fixed_len;
      } else {
        free(fixed);
        discarded = "new syntax errors";
        kept = 0;
      }
      res.tries += fc.tries;
    }
  }
  const char *shown = repaired ? repaired : raw ? raw : "";
  if (a->json) {
    json_t *o = json_pack("{s:s%, s:s%, s:s, s:I, s:i, s:i, s:f, s:s}", "text", shown,
                          kept, "raw", raw ? raw : "", raw_len, "backend", a->remote.url,
                          "snippets", (json_int_t)n_snippets, "tries", res.tries, "http_status",
                          res.http_status, "ms", res.ms, "kind",
                          planned ? sc_completion_kind_name(plan.kind) : "unplanned");
    if (o && discarded) json_object_set_new(o, "discarded", json_string(discarded));
    if (o) {
      json_object_set_new(o, "provider", json_string(sc_fim_provider_name(res.provider)));
      json_object_set_new(o, "streamed", json_boolean(res.streamed));
      json_object_set_new(o, "finish_reason", json_string(res.finish_reason));
      json_object_set_new(o, "truncated", json_boolean(res.truncated));
    }
    if (o && repaired) json_object_set_new(o, "repaired", json_true());
    char *out = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    json_decref(o);
    if (!out) {
      sc_cli_fail(CMD, "cannot format the result (is the answer valid UTF-8?)");
      goto done;
    }
    puts(out);
    free(out);
  } else {
    if (discarded) fprintf(stderr, "sculpt %s: nothing kept: %s\n", CMD, discarded);
    if (res.truncated)
      fprintf(stderr, "sculpt %s: the backend stopped at the token limit (--max-tokens): the "
                      "answer may be cut off\n", CMD);
    fwrite(shown, 1, kept, stdout);
    putchar('\n');
  }
  exit_code = 0;
done:
  free(raw);
  free(repaired);
  free(prompt);
  free(chunks);
  if (have_prompt) sc_prompt_free(&pr);
  sc_syntax_tree_free(tree);
  sc_tokenizer_free(tok);
  return exit_code;
}

int sc_cli_complete(int argc, char **argv) {
  args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  char *path = NULL;
  long line = 0, col = 0;
  size_t offset = 0;
  if (sc_cli_locate(a.target, &path, NULL, 0, NULL, true, &line, &col) != 0 || !path) {
    sc_cli_fail(CMD, "'%s' is not FILE:LINE:COL with 1-based numbers", a.target);
    free(path);
    return 2;
  }
  char *text = NULL;
  size_t len = 0;
  if (!sc_cli_read_file(path, &text, &len)) {
    sc_cli_fail(CMD, "cannot read %s: %s", path, strerror(errno));
    free(path);
    return 2;
  }
  int where = sc_cli_locate(a.target, NULL, text, len, &offset, false, &line, &col);
  if (where != 0) {
    sc_cli_fail(CMD, "%s has no %s %ld", path, where == -2 ? "line" : "column", where == -2 ? line : col);
    free(path);
    free(text);
    return 2;
  }

  if (a.remote.url) {
    rc = complete_remote(&a, path, text, len, offset);
    free(path);
    free(text);
    return rc;
  }
  char *model_dir = sc_cli_model_dir(CMD, a.model_dir, &rc);
  if (!model_dir) {
    free(path);
    free(text);
    return rc;
  }
  sc_error err = {0};
  double t0 = sc_now_ms();
  sc_model_options mo = {0};
  mo.weights = a.weights;
  if (a.family && !sc_model_family_parse(a.family, &mo.family)) {
    sc_cli_fail(CMD, "unknown --family '%s'", a.family);
    free(path);
    free(text);
    return 2;
  }
  sc_device_choice dev;
  sc_device_select(a.device, &dev);
  mo.device = dev.kind;
  sc_model *model = NULL;
  sc_tokenizer *tok = NULL;
  sc_engine *engine = NULL;
  sc_infill_prepared prep = {0};
  sc_infill_result res = {0};
  sc_drafts found = {0};
  sc_draft_runs runs = {0};
  int exit_code = 1;
  if (sc_model_load(model_dir, &mo, &model, &err) != SC_OK ||
      sc_tokenizer_load_dir(model_dir, &tok, &err) != SC_OK) {
    exit_code = fail_err(&err);
    goto done;
  }
  double t_load = sc_now_ms();
  /* The canvas, the room a DreamOn canvas may grow into and the prompt are
   * fitted to the model's context with the family's frame (model.h,
   * sc_infill_prepare): a long canvas is cut, and a file longer than the
   * rest keeps the tokens nearest the cursor, the prefix cut first (from
   * the left, down to half), then the suffix, which then ends without EOS.
   * The engine gets the positions that needs. */
  const sc_model_info *info = sc_model_get_info(model);
  sc_infill_params params = decoding_params(&a, model);
  if (sc_infill_prepare(model, tok, info->max_seq, 0, text, offset, text + offset, len - offset,
                        false, &a.plan, &params, &prep, &err) != SC_OK) {
    exit_code = fail_err(&err);
    goto done;
  }
  /* Drafts from the file's own text (context.h, sc_drafts_find): on with
   * the fast preset, on request with upstream (the authors' loop as it is). */
  bool drafting = a.drafts >= 0 ? a.drafts == 1 : params.preset != SC_PRESET_UPSTREAM;
  if (drafting) {
    sc_draft_query dq = {.before = text, .before_len = offset, .after = text + offset,
                         .after_len = len - offset};
    int longest = 0;
    for (int i = 0; i < prep.plan.n_lengths; i++)
      if (prep.plan.lengths[i] > longest) longest = prep.plan.lengths[i];
    if (sc_drafts_attach(&dq, tok, longest, &found, &runs, &prep.params, &err) != SC_OK) {
      exit_code = fail_err(&err);
      goto done;
    }
  }
  double t_tok = sc_now_ms();
  params = prep.params;
  size_t keep_pre = prep.tokens.keep_pre, keep_suf = prep.tokens.keep_suf;
  if (sc_engine_new(model, tok, prep.positions, &engine, &err) != SC_OK ||
      sc_engine_infill_prepared(engine, &prep, NULL, NULL, NULL, &res, &err) != SC_OK) {
    exit_code = fail_err(&err);
    goto done;
  }
  if (a.json) {
    /* What ran: CUDA may have been chosen and still fallen back to the CPU
     * for this model (the log says why). */
    sc_device_choice ran;
    sc_engine_device(engine, &dev, &ran);
    json_t *ids = json_array(), *conf = json_array(), *canvas = json_array();
    for (int i = 0; i < res.n_ids; i++) {
      json_array_append_new(ids, json_integer(res.ids[i]));
      json_array_append_new(conf, json_real((double)res.confidence[i]));
    }
    for (int i = 0; i < res.canvas_len; i++)
      json_array_append_new(canvas, json_integer(res.canvas_ids[i]));
    json_t *text_j = json_stringn(res.text ? res.text : "", res.text_len);
    json_t *o = json_pack(
        "{s:o, s:o, s:o, s:o, s:i, s:i, s:i, s:b, s:f, s:s, s:s, s:{s:s, s:s, s:s, s:s}, "
        "s:{s:I, s:I, s:i, s:b}, s:{s:f, s:f, s:f, s:f, s:f}, s:s}",
        "text", text_j ? text_j : json_string(""), "ids", ids, "confidence", conf,
        "canvas_ids", canvas, "steps", res.steps, "committed", res.committed, "canvas",
        res.canvas_len, "ended", res.ended, "mean_logp", res.mean_logp, "preset",
        sc_preset_name(params.preset), "loop", sc_decode_loop_name(params.loop), "model", "dir",
        model_dir, "family", sc_model_family_name(info->family), "profile",
        sc_model_get_profile(model)->name, "device", ran.description, "context",
        "prefix_tokens", (json_int_t)keep_pre, "suffix_tokens", (json_int_t)keep_suf,
        "model_tokens", prep.fit.context, "suffix_cut", params.suffix_cut, "timings", "load_ms",
        t_load - t0, "tokenize_ms", t_tok - t_load, "model_ms", res.ms_total, "forward_ms",
        res.ms_forward, "sample_ms", res.ms_sample, "weights",
        sc_weights_kind_name(info->weights));
    if (o) {
      /* What drafting did (model.h, sc_draft): offered is the drafts found
       * (their sources in rank order), the rest are tokens. */
      json_t *src = json_array();
      for (size_t i = 0; i < found.n; i++)
        json_array_append_new(src, json_string(found.d[i].source));
      json_object_set_new(o, "drafts",
                          json_pack("{s:b, s:i, s:o, s:i, s:i, s:i, s:f, s:f}", "on", drafting,
                                    "offered", runs.n, "sources", src, "drafted", res.drafted,
                                    "accepted", res.accepted, "rejected", res.rejected,
                                    "threshold", (double)params.draft_threshold, "ms",
                                    found.ms));
      json_object_set_new(o, "tokens_per_pass",
                          json_real(res.steps ? (double)res.committed / res.steps : 0.0));
    }
    char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    if (!s) {
      sc_cli_fail(CMD, "cannot format the result");
      json_decref(o);
      goto done;
    }
    puts(s);
    free(s);
    json_decref(o);
  } else {
    fwrite(res.text ? res.text : "", 1, res.text_len, stdout);
    if (res.text_len == 0 || res.text[res.text_len - 1] != '\n') putchar('\n');
  }
  exit_code = 0;
done:
  sc_infill_result_free(&res);
  sc_engine_free(engine);
  sc_infill_prepared_free(&prep);
  sc_draft_runs_free(&runs);
  sc_drafts_free(&found);
  sc_tokenizer_free(tok);
  sc_model_free(model);
  free(model_dir);
  free(path);
  free(text);
  return exit_code;
}
