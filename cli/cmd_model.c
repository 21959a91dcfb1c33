/* cmd_model.c — `sculpt model info`: what a checkpoint is, one `key: value`
 * per line, or the same keys as one JSON object with --json; `sculpt model
 * quantize DIR --out DIR2`: the checkpoint with int8 matrices (model.h,
 * sc_model_quantize). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "model.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *info_json(const sc_model_info *i) {
  json_t *o = json_object();
  json_object_set_new(o, "family", json_string(sc_model_family_name(i->family)));
  json_object_set_new(o, "architecture", json_string(i->architecture));
  json_object_set_new(o, "layers", json_integer(i->n_layers));
  json_object_set_new(o, "hidden", json_integer(i->hidden));
  json_object_set_new(o, "heads", json_integer(i->n_heads));
  json_object_set_new(o, "kv_heads", json_integer(i->n_kv_heads));
  json_object_set_new(o, "head_dim", json_integer(i->head_dim));
  json_object_set_new(o, "intermediate", json_integer(i->intermediate));
  json_object_set_new(o, "vocab", json_integer(i->vocab));
  json_object_set_new(o, "params", json_integer(i->n_params));
  json_object_set_new(o, "dtype", json_string(sc_dtype_name(i->dtype)));
  json_object_set_new(o, "rope_theta", json_real(i->rope_theta));
  json_object_set_new(o, "rms_eps", json_real(i->rms_eps));
  json_object_set_new(o, "qkv_bias", json_boolean(i->qkv_bias));
  json_object_set_new(o, "qk_norm", json_boolean(i->qk_norm));
  json_object_set_new(o, "tied_embeddings", json_boolean(i->tied_embeddings));
  json_object_set_new(o, "mask_id", json_integer(i->mask_id));
  json_object_set_new(o, "eos_id", json_integer(i->eos_id));
  json_object_set_new(o, "pad_id", json_integer(i->pad_id));
  json_object_set_new(o, "bos_id", json_integer(i->bos_id));
  json_object_set_new(o, "shift_logits", json_boolean(i->shift_logits));
  json_object_set_new(o, "eos_penalty", json_real(i->eos_penalty));
  json_object_set_new(o, "max_seq", json_integer(i->max_seq));
  json_object_set_new(o, "weight_bytes", json_integer((json_int_t)i->weight_bytes));
  json_object_set_new(o, "context_bytes", json_integer((json_int_t)i->context_bytes));
  json_object_set_new(o, "weights", json_string(sc_weights_kind_name(i->weights)));
  json_object_set_new(o, "packed_bytes", json_integer((json_int_t)i->packed_bytes));
  /* int8/bf16 compute: the converted copy replaces the mapped matrices. */
  uint64_t resident = i->packed_bytes ? i->packed_bytes : i->weight_bytes;
  json_object_set_new(o, "memory_bytes",
                      json_integer((json_int_t)(resident + i->context_bytes)));
  return o;
}

/* The family profile (model/family.c): framing, ending, presets. */
static json_t *profile_json(const sc_family_profile *p) {
  static const char *const ranks[] = {"confidence", "margin", "entropy"};
  json_t *o = json_object();
  char framing[96];
  snprintf(framing, sizeof framing, "%sprefix [MASK]*m suffix%s%s",
           p->bos_id >= 0 ? "[BOS] " : "", p->eos_after_suffix && p->eos_id >= 0 ? " [EOS]" : "",
           p->pad_after > 0 ? " (upstream: + EOS padding)" : "");
  json_object_set_new(o, "name", json_string(p->name));
  json_object_set_new(o, "framing", json_string(framing));
  json_object_set_new(o, "bos_from", json_string(sc_bos_rule_name(p->bos_rule)));
  json_object_set_new(o, "bos_id", json_integer(p->bos_id));
  json_object_set_new(o, "eos_after_suffix", json_boolean(p->eos_after_suffix));
  json_object_set_new(o, "eos_id", json_integer(p->eos_id));
  json_t *ends = json_array();
  for (int k = 0; k < p->n_end; k++) json_array_append_new(ends, json_integer(p->end_ids[k]));
  json_object_set_new(o, "end_ids", ends);
  json_object_set_new(o, "eos_fill", json_boolean(p->eos_fill));
  json_object_set_new(o, "expand_id", json_integer(p->expand_id));
  json_object_set_new(o, "max_infill", json_integer(p->max_infill));
  json_object_set_new(o, "preset", json_string(sc_preset_name(p->preset)));
  json_object_set_new(o, "upstream_loop", json_string(sc_decode_loop_name(p->loop)));
  json_object_set_new(o, "upstream_rank", json_string(ranks[p->rank]));
  json_object_set_new(o, "upstream_temperature", json_real(p->temperature));
  json_object_set_new(o, "upstream_top_p", json_real(p->top_p));
  json_object_set_new(o, "upstream_steps", json_integer(p->steps));
  json_object_set_new(o, "upstream_block_len", json_integer(p->block_len));
  json_object_set_new(o, "upstream_pad_after", json_integer(p->pad_after));
  json_object_set_new(o, "upstream_plain_confidence", json_boolean(p->plain_confidence));
  json_object_set_new(o, "overridden", json_boolean(p->overridden));
  json_object_set_new(o, "source", json_string(p->source ? p->source : ""));
  return o;
}

/* One `key: value` line per field; a nested object's fields as
 * "object.key", a list as comma-separated values. */
static void print_text(const char *prefix, json_t *o) {
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (json_is_object(v)) {
      char p[128];
      snprintf(p, sizeof p, "%s%s.", prefix, key);
      print_text(p, v);
      continue;
    }
    printf("%s%s: ", prefix, key);
    if (json_is_array(v)) {
      size_t i;
      json_t *x;
      json_array_foreach(v, i, x) printf("%s%lld", i ? "," : "", (long long)json_integer_value(x));
      putchar('\n');
    } else if (json_is_string(v)) printf("%s\n", json_string_value(v));
    else if (json_is_integer(v)) printf("%lld\n", (long long)json_integer_value(v));
    else if (json_is_real(v)) printf("%g\n", json_real_value(v));
    else printf("%s\n", json_is_true(v) ? "true" : "false");
  }
}

static int model_quantize(int argc, char **argv) {
  const char *dir = NULL, *out = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--out") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(a, "--model") == 0 && i + 1 < argc) dir = argv[++i];
    else if (a[0] != '-' && !dir) dir = a;
    else {
      sc_cli_fail("model", "quantize: unexpected argument '%s' (see sculpt help model)", a);
      return 2;
    }
  }
  if (!dir || !out) {
    sc_cli_fail("model", "quantize needs DIR and --out DIR2 (see sculpt help model)");
    return 2;
  }
  sc_error err = {0};
  double t0 = sc_now_ms();
  int rc = 0;
  char *resolved = sc_cli_model_dir("model", dir, &rc); /* a folder or ORG/NAME */
  if (!resolved) return rc;
  sc_status st = sc_model_quantize(resolved, out, &err);
  free(resolved);
  if (st != SC_OK) {
    sc_cli_fail("model", "%s", err.msg);
    return err.status == SC_ERR_INVALID ? 2 : 1;
  }
  fprintf(stderr, "sculpt model: wrote %s/model.safetensors (int8 matrices) in %.1f s\n", out,
          (sc_now_ms() - t0) / 1000.0);
  return 0;
}

int sc_cli_model(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "quantize") == 0) return model_quantize(argc, argv);
  /* pull and list: cmd_model_pull.c */
  if (argc >= 2 && strcmp(argv[1], "pull") == 0) return sc_cli_model_pull(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "list") == 0) return sc_cli_model_list(argc, argv);
  if (argc < 2 || strcmp(argv[1], "info") != 0) {
    sc_cli_fail("model", "expected 'info', 'pull', 'list' or 'quantize' (see sculpt help model)");
    return 2;
  }
  const char *dir = NULL, *family_arg = NULL, *weights_arg = NULL;
  bool as_json = false;
  int max_seq = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    bool has_val = i + 1 < argc;
    if (strcmp(a, "--model") == 0 && has_val) dir = argv[++i];
    else if (strcmp(a, "--family") == 0 && has_val) family_arg = argv[++i];
    else if (strcmp(a, "--max-seq") == 0 && has_val) max_seq = atoi(argv[++i]);
    else if (strcmp(a, "--weights") == 0 && has_val) weights_arg = argv[++i];
    else if (strcmp(a, "--json") == 0) as_json = true;
    else {
      sc_cli_fail("model", "unexpected argument '%s' (see sculpt help model)", a);
      return 2;
    }
  }
  if (!dir) dir = sc_model_default_dir(); /* the model the other subcommands load */
  if (!dir) {
    sc_cli_fail("model", "no model: pass --model DIR or set SCULPT_MODEL");
    return 2;
  }
  sc_model_options opts = {.device = SC_DEVICE_CPU, .max_seq = max_seq};
  if (family_arg && !sc_model_family_parse(family_arg, &opts.family)) {
    sc_cli_fail("model", "--family: '%s' is not dream, qwen2, qwen3 or llada", family_arg);
    return 2;
  }
  if (weights_arg && !sc_weights_kind_parse(weights_arg, &opts.weights)) {
    sc_cli_fail("model", "--weights: '%s' is not " SC_WEIGHTS_KINDS, weights_arg);
    return 2;
  }
  if (max_seq < 0) {
    sc_cli_fail("model", "--max-seq must be positive");
    return 2;
  }
  sc_error err = {0};
  sc_model *model = NULL;
  int rc = 0;
  char *resolved = sc_cli_model_dir("model", dir, &rc); /* a folder or ORG/NAME */
  if (!resolved) return rc;
  sc_status loaded = sc_model_load(resolved, &opts, &model, &err);
  free(resolved);
  if (loaded != SC_OK) {
    sc_cli_fail("model", "%s", err.msg);
    return err.status == SC_ERR_INVALID ? 2 : 1;
  }
  json_t *o = info_json(sc_model_get_info(model));
  json_object_set_new(o, "profile", profile_json(sc_model_get_profile(model)));
  sc_model_free(model);
  if (as_json) {
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    if (s) puts(s);
    free(s);
  } else {
    print_text("", o);
  }
  json_decref(o);
  return 0;
}
