/* family.c — the family profiles: how each model family frames an infill,
 * where its middle ends, and how its authors decode it (the `upstream`
 * preset). One table of data (rows[] below), a row picked from the
 * checkpoint (architectures/model_type through config.c, then the
 * tokenizer's added tokens), its ids resolved from the tokenizer files, and
 * config.json's sculpt_* keys applied on top (model.h lists them).
 *
 * Every row cites the upstream files it follows; the facts are restated in
 * ../shared/notes/diffusion-models.md ("Infill convention") and docs/models.md.
 * Also here: the frame, ending and cleaning rules every decode loop applies,
 * and the presets' parameters. */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h"
#include "model_impl.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- names ------------------------------------------------------------------- */

const char *sc_decode_loop_name(sc_decode_loop loop) {
  switch (loop) {
  case SC_LOOP_BLOCKS: return "blocks";
  case SC_LOOP_ONE_PER_STEP: return "one-per-step";
  case SC_LOOP_DREAM_SCHEDULE: return "dream-schedule";
  case SC_LOOP_P2: return "p2";
  case SC_LOOP_LLADA: return "llada";
  case SC_LOOP_DREAMON: return "dreamon";
  }
  return "?";
}

bool sc_preset_parse(const char *s, sc_preset *out) {
  if (!s) return false;
  if (strcmp(s, "auto") == 0) *out = SC_PRESET_AUTO;
  else if (strcmp(s, "fast") == 0) *out = SC_PRESET_FAST;
  else if (strcmp(s, "upstream") == 0) *out = SC_PRESET_UPSTREAM;
  else return false;
  return true;
}

const char *sc_preset_name(sc_preset preset) {
  switch (preset) {
  case SC_PRESET_AUTO: return "auto";
  case SC_PRESET_FAST: return "fast";
  case SC_PRESET_UPSTREAM: return "upstream";
  }
  return "?";
}

const char *sc_bos_rule_name(sc_bos_rule rule) {
  switch (rule) {
  case SC_BOS_NONE: return "none";
  case SC_BOS_TOKENIZER: return "tokenizer";
  case SC_BOS_TOKENIZER_ADDS: return "tokenizer-adds";
  }
  return "?";
}

/* ---- the table ----------------------------------------------------------------- */

typedef struct profile_row {
  const char *name;
  sc_bos_rule bos;
  bool eos_after_suffix;
  const char *end_text;  /* one more end token, by its text in the tokenizer */
  int32_t end_id;        /* one more end token by id (when inside the vocabulary) */
  bool eos_fill;
  bool expand;           /* DreamOn: find the expand token */
  int max_infill;
  sc_decode_loop loop;
  sc_rank rank;
  float temperature, top_p;
  int steps, block_len, pad_after;
  bool plain_confidence;
  const char *source;
} profile_row;

/* DreamOn's expand token: the id its harness and trainer hard-code
 * (DreamOn eval/evaluate.py L52, src/trainer/sft_expand_dataset.py L58). */
#define DREAMON_EXPAND_ID 151667
/* LLaDA's end of turn (generate.py L98, confidence_eos_eot_inf). */
#define LLADA_EOT_ID 126348

static const profile_row rows[] = {
    /* Dream, Dream-Coder, DiffuCoder (base): DreamOn's fixed-canvas harness,
     * the one their infill numbers come from: [bos] prefix [MASK]*m suffix
     * [eos], padded with max_gen_len (64) more EOS (generator.py L181-200),
     * one token per step by entropy (L126-174, number_transfer_tokens = 1),
     * T 0.2, top_p 0.9, steps 256 (eval_humaneval_infilling.sh). The BOS is
     * the tokenizer's: Dream-Coder's trainer overwrites config.json's with it
     * (Dream-Coder instruct/src/workers/fsdp_workers.py L255). */
    {"dream", SC_BOS_TOKENIZER, true, NULL, -1, false, false, 0, SC_LOOP_ONE_PER_STEP,
     SC_RANK_ENTROPY, 0.2f, 0.9f, 256, 0, 64, false,
     "DreamLM/DreamOn@8a0a549 eval/generator.py L126-203, eval/eval_humaneval_infilling.sh; "
     "DreamLM/Dream-Coder@87409da instruct/src/workers/fsdp_workers.py L255"},
    /* DiffuCoder-Instruct pads its answers with <|dlm_pad|> and its demo
     * cuts there (ml-diffucoder inference_demo.py L58); otherwise as dream. */
    {"diffucoder-instruct", SC_BOS_TOKENIZER, true, "<|dlm_pad|>", -1, false, false, 0,
     SC_LOOP_ONE_PER_STEP, SC_RANK_ENTROPY, 0.2f, 0.9f, 256, 0, 64, false,
     "apple/ml-diffucoder@f735e01 inference_demo.py L58; framing and loop as dream"},
    /* DreamOn: [bos] prefix [MASK]*min_gen suffix [eos]; expand -> two
     * masks, EOS deletes, masks after the first EOS become EOS
     * (pad_eos_to_right), the middle at most max_gen_len = 64; one token per
     * step, entropy, T 0.2, top_p 0.9, 256 steps (generator.py L205-341,
     * eval_humaneval_infilling.sh). */
    {"dreamon", SC_BOS_TOKENIZER, true, NULL, -1, true, true, 64, SC_LOOP_DREAMON,
     SC_RANK_ENTROPY, 0.2f, 0.9f, 256, 0, 0, false,
     "DreamLM/DreamOn@8a0a549 eval/generator.py L205-341, eval/evaluate.py L52, "
     "eval/eval_humaneval_infilling.sh"},
    /* Open-dCoder: prefix [MASK]*m suffix, no BOS (Qwen2's tokenizer adds
     * none) and no EOS (eval_infill.py L71-80); p2 with T 0.6 and 64 steps
     * (run_eval.sh), top_p 0.95 (eval_infill.py L464). */
    {"open-dcoder", SC_BOS_NONE, false, NULL, -1, false, false, 0, SC_LOOP_P2,
     SC_RANK_CONFIDENCE, 0.6f, 0.95f, 64, 0, 0, false,
     "pengzhangzhi/Open-dLLM@8b38787 eval/eval_infill/eval_infill.py L71-80, L459-469, "
     "eval/eval_infill/run_eval.sh; veomni/models/transformers/qwen2/generation_utils.py "
     "L166-277"},
    /* CoDA: no infill code upstream; its tokenizer adds no BOS
     * (tokenizer_config add_bos_token false, though bos = eos = <|im_end|>),
     * answers end at the eos (diffllm.py L291); Dream's schedule with
     * steps = tokens, entropy, T 0.1, top_p 0.9 (eval_mbpp_humaneval.sh,
     * generation_utils.py L450-540). */
    {"coda", SC_BOS_NONE, false, NULL, -1, false, false, 0, SC_LOOP_DREAM_SCHEDULE,
     SC_RANK_ENTROPY, 0.1f, 0.9f, 0, 0, 0, false,
     "SalesforceAIResearch/CoDA@fa1d505 CoDALanguageModel/generation_utils.py L412-540, "
     "CoDALanguageModel/tokenizer_config.json, evaluation/lm_eval/eval_mbpp_humaneval.sh, "
     "evaluation/lm_eval/lm_eval/models/diffllm.py L265-295"},
    /* LLaDA: no infill code upstream; the BOS only when its tokenizer adds
     * one (eval_llada.py L249 encodes with the tokenizer's defaults); EoT
     * 126348 ends a turn (generate.py L98); low-confidence remasking in
     * blocks of 32, steps = length, T 0, confidence from the plain softmax
     * (generate.py L43-120, chat.py L13-31). */
    {"llada", SC_BOS_TOKENIZER_ADDS, false, NULL, LLADA_EOT_ID, false, false, 0, SC_LOOP_LLADA,
     SC_RANK_CONFIDENCE, 0.0f, 1.0f, 0, 32, 0, true,
     "ML-GSAI/LLaDA@b7e6c35 generate.py L43-120, chat.py L13-31, eval_llada.py L246-275"},
    /* sculpt's own model (model/default): trained on [bos] prefix middle
     * EOS..EOS suffix [eos] (model/train/train.py), so masks after an end
     * are EOS; its evaluator decodes one token per step by confidence in
     * blocks of 32 (model/train/evaluate.py TorchInfill). Chosen only by
     * the sculpt_profile key its export writes. */
    {"sculpt", SC_BOS_TOKENIZER, true, NULL, -1, true, false, 0, SC_LOOP_BLOCKS,
     SC_RANK_CONFIDENCE, 0.0f, 1.0f, 0, 32, 0, false,
     "model/train/train.py (infill layout), model/train/evaluate.py (TorchInfill)"},
};
#define N_ROWS (sizeof rows / sizeof rows[0])

static const profile_row *row_named(const char *name) {
  for (size_t i = 0; i < N_ROWS; i++)
    if (strcasecmp(rows[i].name, name) == 0) return &rows[i];
  return NULL;
}

/* ---- detection ------------------------------------------------------------------ */

/* DreamOn's expand token in a Dream-family tokenizer: <|expand|> by text,
 * else the id its code hard-codes when that id is an added token with no
 * other role. -1 when neither. */
static int32_t find_expand(const sc_token_files *tf, const sc_config *c) {
  int32_t id = sc_token_files_added_id(tf, "<|expand|>");
  if (id >= 0) return id;
  const char *text = sc_token_files_added_text(tf, DREAMON_EXPAND_ID);
  if (!text || strcmp(text, "<|dlm_pad|>") == 0) return -1;
  if (DREAMON_EXPAND_ID == c->mask_id || DREAMON_EXPAND_ID == c->eos_id ||
      DREAMON_EXPAND_ID == c->pad_id || DREAMON_EXPAND_ID == c->bos_id)
    return -1;
  return DREAMON_EXPAND_ID;
}

static const profile_row *detect(const sc_token_files *tf, const sc_config *c) {
  switch (c->family) {
  case SC_FAMILY_DREAM:
    if (find_expand(tf, c) >= 0) return row_named("dreamon");
    if (sc_token_files_added_id(tf, "<|dlm_pad|>") >= 0) return row_named("diffucoder-instruct");
    return row_named("dream");
  case SC_FAMILY_QWEN2: return row_named("open-dcoder");
  case SC_FAMILY_QWEN3: return row_named("coda");
  case SC_FAMILY_LLADA: return row_named("llada");
  case SC_FAMILY_AUTO: break;
  }
  return row_named("dream");
}

/* The id of a token the tokenizer files name ("bos", "eos", "pad"); -1. */
static int32_t named_id(const sc_token_files *tf, const char *what) {
  const char *text = sc_token_files_named(tf, what);
  return text ? sc_token_files_added_id(tf, text) : -1;
}

/* The BOS a tokenizer adds by itself (what HF's add_special_tokens=True
 * does): add_bos_token in tokenizer_config.json, or a TemplateProcessing
 * post-processor (alone or in a Sequence) whose single template starts with
 * a special token. -1 when it adds none. */
static int32_t bos_added_by_tokenizer(const sc_token_files *tf) {
  if (json_is_true(json_object_get(tf->tokenizer_config, "add_bos_token")))
    return named_id(tf, "bos");
  json_t *pp = json_object_get(tf->tokenizer, "post_processor");
  json_t *list = json_object_get(pp, "processors");
  size_t n = json_is_array(list) ? json_array_size(list) : 1;
  for (size_t i = 0; i < n; i++) {
    json_t *proc = json_is_array(list) ? json_array_get(list, i) : pp;
    json_t *type = json_object_get(proc, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "TemplateProcessing") != 0)
      continue;
    json_t *first = json_array_get(json_object_get(proc, "single"), 0);
    json_t *sp = json_object_get(json_object_get(first, "SpecialToken"), "id");
    if (!json_is_string(sp)) return -1;
    json_t *ids = json_object_get(
        json_object_get(json_object_get(proc, "special_tokens"), json_string_value(sp)), "ids");
    json_t *id = json_array_get(ids, 0);
    if (json_is_integer(id)) return (int32_t)json_integer_value(id);
    return sc_token_files_added_id(tf, json_string_value(sp));
  }
  return -1;
}

static void add_end(sc_family_profile *pf, int32_t id, const sc_config *c) {
  if (id < 0 || id >= c->vocab || id == c->mask_id || id == pf->expand_id) return;
  if (sc_family_is_end(pf, id) || pf->n_end == SC_PROFILE_MAX_END) return;
  pf->end_ids[pf->n_end++] = id;
}

/* ---- config.json overrides ---------------------------------------------------- */

/* An integer key in [lo, hi]; absent leaves *out. */
static sc_status key_int(const json_t *cfg, const char *key, long long lo, long long hi,
                         int32_t *out, bool *seen, const char *dir, sc_error *err) {
  json_t *v = json_object_get(cfg, key);
  if (!v) return SC_OK;
  SC_CHECK(json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi,
           err, SC_ERR_FORMAT, "%s/config.json: '%s' must be an integer in [%lld, %lld]", dir,
           key, lo, hi);
  *out = (int32_t)json_integer_value(v);
  *seen = true;
  return SC_OK;
}

static sc_status key_bool(const json_t *cfg, const char *key, bool *out, bool *seen,
                          const char *dir, sc_error *err) {
  json_t *v = json_object_get(cfg, key);
  if (!v) return SC_OK;
  SC_CHECK(json_is_boolean(v), err, SC_ERR_FORMAT, "%s/config.json: '%s' must be a boolean",
           dir, key);
  *out = json_is_true(v);
  *seen = true;
  return SC_OK;
}

static sc_status apply_overrides(const char *dir, const json_t *cfg, const sc_config *c,
                                 sc_family_profile *pf, sc_error *err) {
  bool seen = false;
  const long long V = c->vocab - 1;
  int32_t bos = pf->bos_id;
  SC_TRY(key_int(cfg, "sculpt_bos_token_id", -1, V, &bos, &seen, dir, err));
  if (bos != pf->bos_id) pf->bos_rule = bos < 0 ? SC_BOS_NONE : pf->bos_rule;
  pf->bos_id = bos;
  SC_TRY(key_bool(cfg, "sculpt_eos_after_suffix", &pf->eos_after_suffix, &seen, dir, err));
  SC_TRY(key_bool(cfg, "sculpt_eos_fill", &pf->eos_fill, &seen, dir, err));
  SC_TRY(key_int(cfg, "sculpt_expand_token_id", -1, V, &pf->expand_id, &seen, dir, err));
  int32_t max_infill = pf->max_infill;
  SC_TRY(key_int(cfg, "sculpt_max_infill", 0, 1 << 20, &max_infill, &seen, dir, err));
  pf->max_infill = max_infill;
  json_t *ends = json_object_get(cfg, "sculpt_end_token_ids");
  if (ends) {
    SC_CHECK(json_is_array(ends) && json_array_size(ends) <= SC_PROFILE_MAX_END, err,
             SC_ERR_FORMAT, "%s/config.json: 'sculpt_end_token_ids' must be a list of at most "
             "%d token ids", dir, SC_PROFILE_MAX_END);
    pf->n_end = 0;
    size_t i;
    json_t *v;
    json_array_foreach(ends, i, v) {
      SC_CHECK(json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= V,
               err, SC_ERR_FORMAT,
               "%s/config.json: 'sculpt_end_token_ids' must hold ids in [0, %lld]", dir, V);
      int32_t id = (int32_t)json_integer_value(v);
      if (!sc_family_is_end(pf, id)) pf->end_ids[pf->n_end++] = id;
    }
    seen = true;
  }
  json_t *preset = json_object_get(cfg, "sculpt_preset");
  if (preset) {
    sc_preset p;
    SC_CHECK(json_is_string(preset) && sc_preset_parse(json_string_value(preset), &p) &&
                 p != SC_PRESET_AUTO,
             err, SC_ERR_FORMAT, "%s/config.json: 'sculpt_preset' must be \"fast\" or "
             "\"upstream\"", dir);
    pf->preset = p;
    seen = true;
  }
  pf->overridden = seen;
  return SC_OK;
}

sc_status sc_family_profile_resolve(const char *dir, const json_t *cfg,
                                    const sc_token_files *tf, sc_config *c, sc_error *err) {
  sc_family_profile *pf = &c->profile;
  memset(pf, 0, sizeof *pf);
  const profile_row *r = NULL;
  json_t *name = json_object_get(cfg, "sculpt_profile");
  if (name) {
    r = json_is_string(name) ? row_named(json_string_value(name)) : NULL;
    SC_CHECK(r, err, SC_ERR_FORMAT,
             "%s/config.json: 'sculpt_profile' must be one of dream, diffucoder-instruct, "
             "dreamon, open-dcoder, coda, llada, sculpt",
             dir);
  } else {
    r = detect(tf, c);
  }
  snprintf(pf->name, sizeof pf->name, "%s", r->name);
  pf->source = r->source;
  pf->bos_rule = r->bos;
  switch (r->bos) {
  case SC_BOS_NONE: pf->bos_id = -1; break;
  case SC_BOS_TOKENIZER: {
    int32_t id = named_id(tf, "bos");
    pf->bos_id = id >= 0 ? id : c->bos_id;
    break;
  }
  case SC_BOS_TOKENIZER_ADDS: pf->bos_id = bos_added_by_tokenizer(tf); break;
  }
  if (pf->bos_id >= c->vocab) pf->bos_id = -1;
  /* The EOS after the suffix is the tokenizer's (DreamOn's harness writes
   * tokenizer.eos_token_id), else config.json's. */
  int32_t eos = named_id(tf, "eos");
  pf->eos_id = eos >= 0 && eos < c->vocab ? eos : c->eos_id;
  pf->eos_after_suffix = r->eos_after_suffix;
  pf->eos_fill = r->eos_fill;
  pf->expand_id = r->expand ? find_expand(tf, c) : -1;
  if (r->expand && pf->expand_id < 0 && DREAMON_EXPAND_ID < c->vocab)
    pf->expand_id = DREAMON_EXPAND_ID; /* named by sculpt_profile: as its harness */
  if (pf->expand_id >= c->vocab) pf->expand_id = -1;
  pf->max_infill = r->max_infill;
  pf->preset = SC_PRESET_FAST;
  pf->loop = r->loop;
  pf->rank = r->rank;
  pf->temperature = r->temperature;
  pf->top_p = r->top_p;
  pf->steps = r->steps;
  pf->block_len = r->block_len;
  pf->pad_after = r->pad_after;
  pf->plain_confidence = r->plain_confidence;
  /* End tokens: the frame's EOS, config.json's eos and pad, the
   * tokenizer's eos and pad, and the row's own. */
  add_end(pf, pf->eos_id, c);
  add_end(pf, c->eos_id, c);
  add_end(pf, c->pad_id, c);
  add_end(pf, named_id(tf, "eos"), c);
  add_end(pf, named_id(tf, "pad"), c);
  if (r->end_text) add_end(pf, sc_token_files_added_id(tf, r->end_text), c);
  add_end(pf, r->end_id, c);
  return apply_overrides(dir, cfg, c, pf, err);
}

const sc_family_profile *sc_model_get_profile(const sc_model *model) {
  return &model->cfg.profile;
}

/* ---- presets ----------------------------------------------------------------------- */

void sc_infill_params_for(const sc_model *model, sc_preset preset, sc_infill_params *p) {
  const sc_family_profile *pf = sc_model_get_profile(model);
  sc_infill_params_default(p);
  if (preset == SC_PRESET_AUTO) preset = pf->preset;
  p->preset = preset;
  if (preset != SC_PRESET_UPSTREAM) return;
  p->loop = pf->loop;
  p->rank = pf->rank;
  p->schedule = SC_SCHEDULE_FIXED_K;
  p->temperature = pf->temperature;
  p->top_p = pf->top_p;
  p->top_k = 0;
  p->steps = pf->steps;
  p->block_len = pf->block_len;
  p->use_cache = false;
  p->pad_after = pf->pad_after;
  p->plain_confidence = pf->plain_confidence;
}

/* ---- the frame a fit reserves -------------------------------------------------------- */

void sc_family_frame_for(const sc_family_profile *pf, int vocab, const sc_infill_params *p,
                         sc_infill_frame *out) {
  out->whole = sc_family_frame_extra(pf, false, p->pad_after);
  out->cut = sc_family_frame_extra(pf, true, p->pad_after);
  /* DreamOn's expand grows a canvas up to max_canvas, else the profile's
   * max_infill (0: it does not grow), as sc_loop_decode and the engine
   * decide (an expand id past the vocabulary is none). */
  bool dreamon = pf->expand_id >= 0 && pf->expand_id < vocab && !p->no_expand &&
                 (p->loop == SC_LOOP_BLOCKS || p->loop == SC_LOOP_DREAMON);
  out->grow = !dreamon ? 0 : p->max_canvas > 0 ? p->max_canvas : pf->max_infill;
}

void sc_infill_frame_for(const sc_model *model, const sc_infill_params *p,
                         sc_infill_frame *out) {
  sc_family_frame_for(sc_model_get_profile(model), sc_model_get_info(model)->vocab, p, out);
}

/* ---- frame, ending, cleaning -------------------------------------------------------- */

int sc_family_frame_extra(const sc_family_profile *pf, bool suffix_cut, int pad_after) {
  int eos = pf->eos_id >= 0 && !suffix_cut;
  return (pf->bos_id >= 0) + (pf->eos_after_suffix ? eos : 0) +
         (pad_after > 0 ? pad_after * eos : 0);
}

int sc_family_frame(const sc_family_profile *pf, bool suffix_cut, int pad_after,
                    const int32_t *prefix, int n_prefix, int32_t mask, int m,
                    const int32_t *suffix, int n_suffix, int32_t *seq, int *c0) {
  int n = 0;
  if (pf->bos_id >= 0) seq[n++] = pf->bos_id;
  if (n_prefix) memcpy(seq + n, prefix, (size_t)n_prefix * sizeof *seq);
  n += n_prefix;
  *c0 = n;
  for (int i = 0; i < m; i++) seq[n++] = mask;
  if (n_suffix) memcpy(seq + n, suffix, (size_t)n_suffix * sizeof *seq);
  n += n_suffix;
  /* A cut suffix is followed by nothing: any EOS would say the file ends. */
  if (pf->eos_id >= 0 && !suffix_cut) {
    if (pf->eos_after_suffix) seq[n++] = pf->eos_id;
    for (int i = 0; i < pad_after; i++) seq[n++] = pf->eos_id;
  }
  return n;
}

int sc_family_middle(const sc_family_profile *pf, const sc_tokenizer *tok, int32_t mask,
                     const int32_t *canvas, const float *conf, int m, int32_t *ids,
                     float *out_conf) {
  int n = 0;
  for (int i = 0; i < m; i++) {
    int32_t t = canvas[i];
    if (sc_family_is_end(pf, t)) break;
    if (t == mask || t == pf->expand_id || t == pf->bos_id || t == pf->eos_id || t < 0) continue;
    if (tok && (sc_tokenizer_id_to_token(tok, t) == NULL ||
                (sc_tokenizer_token_flags(tok, t) & SC_TOKEN_SPECIAL)))
      continue;
    ids[n] = t;
    out_conf[n] = conf ? conf[i] : 0.0f;
    n++;
  }
  return n;
}

void sc_family_score(const sc_family_profile *pf, sc_cand *cs) {
  double sum = 0;
  int count = 0;
  cs->ended = false;
  for (int i = 0; i < cs->m; i++) {
    double c = cs->conf[i] > 1e-30f ? cs->conf[i] : 1e-30;
    sum += log(c);
    count++;
    if (sc_family_is_end(pf, cs->canvas[i])) {
      cs->ended = true;
      break;
    }
  }
  cs->mean_logp = count ? sum / count : 0;
}
