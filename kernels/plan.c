/* plan.c — how a forward pass runs on the device, decided on the host:
 * attention tiles and key chunks, the pass's shape class (its graph key),
 * the graph cache's policy, and the run-time switches. No CUDA here: a
 * CPU-only build compiles it too, and the unit tests (test_kernels_plan.c,
 * test_graph_keys.c) check on any machine what kernels/model.cu does with
 * it on a GPU. */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The grid's y dimension (tiles) holds at most this. */
#define MAX_GRID_Y 65535
/* A key chunk is worth a block from this many keys (the tensor-core
 * kernel's tile). */
#define MIN_CHUNK_KEYS 64

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

int sc_kernels_tile_count(const sc_kernels_step_in *in) {
  if (!in || in->tq < 1) return 0;
  if (!in->segs) return ceil_div(in->w1 - in->w0, in->tq);
  int nt = 0;
  for (int s = 0; s < in->n_segs; s++) nt += ceil_div(in->segs[s + 1] - in->segs[s], in->tq);
  return nt;
}

bool sc_kernels_plan_step(const sc_kernels_step_in *in, sc_kernels_tile *tiles,
                          sc_kernels_step_plan *out) {
  memset(out, 0, sizeof *out);
  if (!in || in->tq < 1 || in->n_kv_heads < 1 || in->n < 1 || in->w0 < 0 ||
      in->w1 <= in->w0 || in->w1 > in->n || in->n_rows < 0)
    return false;
  const int nw = in->w1 - in->w0, tq = in->tq;
  int nt = 0, max_keys = 0;
  if (!in->segs) {
    for (int r0 = 0; r0 < nw; r0 += tq, nt++)
      if (tiles) tiles[nt] = (sc_kernels_tile){r0, nw - r0 < tq ? nw - r0 : tq, 0, in->n};
    max_keys = in->n;
  } else {
    if (in->n_segs < 1 || in->w0 != 0 || in->w1 != in->n) return false;
    for (int s = 0; s < in->n_segs; s++) {
      const int a = in->segs[s], b = in->segs[s + 1];
      if (b <= a) return false;
      for (int r0 = a; r0 < b; r0 += tq, nt++)
        if (tiles) tiles[nt] = (sc_kernels_tile){r0, b - r0 < tq ? b - r0 : tq, a, b};
      if (b - a > max_keys) max_keys = b - a;
    }
  }
  if (nt > MAX_GRID_Y) return false;
  /* Split the keys when tiles x kv heads alone leave SMs idle (a small
   * canvas over a long context), a chunk at least MIN_CHUNK_KEYS keys
   * (forced counts may go to 32), within the partial buffer. */
  const int base = nt * in->n_kv_heads;
  int chunks = 1;
  if (in->forced_chunks > 0) {
    chunks = in->forced_chunks;
    if (chunks > ceil_div(max_keys, 32)) chunks = ceil_div(max_keys, 32);
  } else if (base < 2 * in->sm_count) {
    chunks = ceil_div(2 * in->sm_count, base);
    /* The cap in powers of two: requests whose contexts differ by less
     * than double share a class (and a graph) while the keys cap it. */
    int cap = 1;
    while (cap * 2 <= ceil_div(max_keys, MIN_CHUNK_KEYS)) cap *= 2;
    if (chunks > cap) chunks = cap;
  }
  if (in->part_blocks > 0 && chunks > in->part_blocks / base) chunks = in->part_blocks / base;
  if (chunks < 1) chunks = 1;
  /* The lm_head in the graph: every window row when the window is small
   * (the rows still masked change each step, the window does not), else
   * the rows rounded up to 32 (a full pass asks for one block's rows). */
  int head = 0;
  if (in->head_in_graph && in->n_rows > 0) {
    if (nw <= in->head_cap) head = nw;
    else if ((head = ceil_div(in->n_rows, 32) * 32) > in->head_cap)
      head = in->n_rows <= in->head_cap ? in->n_rows : 0; /* 0: too many, after the graph */
  }
  out->nw = nw;
  out->n_tiles = nt;
  out->max_keys = max_keys;
  out->n_chunks = chunks;
  out->head_rows = head;
  /* The class: what the launches' grids and arguments depend on. */
  const uint64_t flags = (head > 0 ? 1u : 0u) | (head > 0 && in->sample ? 2u : 0u) |
                         (head > 0 && in->sample && in->banned ? 4u : 0u);
  const int32_t h[5] = {nw, nt, chunks, head, (int32_t)flags};
  out->key = sc_hash64(h, sizeof h, 0x5c0ffee2u);
  return true;
}

void sc_kernels_graph_cache_init(sc_kernels_graph_cache *g) { memset(g, 0, sizeof *g); }

sc_kernels_graph_action sc_kernels_graph_cache_decide(sc_kernels_graph_cache *g, uint64_t key,
                                                      int *slot) {
  g->tick++;
  for (int i = 0; i < SC_KERNELS_GRAPH_SLOTS; i++)
    if (g->slot_used[i] && g->slot_key[i] == key) {
      g->slot_used[i] = g->tick;
      *slot = i;
      return SC_KERNELS_GRAPH_REPLAY;
    }
  for (int i = 0; i < SC_KERNELS_GRAPH_SEEN; i++)
    if (g->seen[i] == key && key != 0) {
      g->seen[i] = 0;
      int lru = 0;
      for (int j = 1; j < SC_KERNELS_GRAPH_SLOTS; j++)
        if (g->slot_used[j] < g->slot_used[lru]) lru = j;
      g->slot_key[lru] = key;
      g->slot_used[lru] = g->tick;
      *slot = lru;
      return SC_KERNELS_GRAPH_CAPTURE;
    }
  g->seen[g->seen_next] = key;
  g->seen_next = (g->seen_next + 1) % SC_KERNELS_GRAPH_SEEN;
  *slot = -1;
  return SC_KERNELS_GRAPH_EAGER;
}

void sc_kernels_graph_cache_drop(sc_kernels_graph_cache *g, int slot) {
  if (slot >= 0 && slot < SC_KERNELS_GRAPH_SLOTS) g->slot_used[slot] = 0, g->slot_key[slot] = 0;
}

/* ---- switches ----------------------------------------------------------------- */

static bool env_bool(const char *name, bool *v, sc_error *err) {
  const char *s = getenv(name);
  if (!s || !*s) return true;
  if (!strcmp(s, "1") || !strcmp(s, "on")) *v = true;
  else if (!strcmp(s, "0") || !strcmp(s, "off")) *v = false;
  else {
    sc_error_set(err, SC_ERR_INVALID, "%s=%.20s: expected 1/on or 0/off", name, s);
    return false;
  }
  return true;
}

bool sc_kernels_options_from_env(sc_kernels_options *o, sc_error *err) {
  memset(o, 0, sizeof *o);
  o->graphs = true;
  o->attn = SC_KERNELS_ATTN_MMA;
  o->gemm = SC_KERNELS_GEMM_CUBLAS;
  o->head_in_graph = true;
  o->fuse = true;
  if (!env_bool("SCULPT_CUDA_GRAPH", &o->graphs, err) || !env_bool("SCULPT_CUDA_FUSE", &o->fuse, err))
    return false;
  const char *a = getenv("SCULPT_CUDA_ATTN");
  if (a && *a) {
    if (!strcmp(a, "simt")) o->attn = SC_KERNELS_ATTN_SIMT;
    else if (!strcmp(a, "mma")) o->attn = SC_KERNELS_ATTN_MMA;
    else {
      sc_error_set(err, SC_ERR_INVALID, "SCULPT_CUDA_ATTN=%.20s: expected simt or mma", a);
      return false;
    }
  }
  const char *g = getenv("SCULPT_CUDA_GEMM");
  if (g && *g) {
    if (!strcmp(g, "cublas")) o->gemm = SC_KERNELS_GEMM_CUBLAS;
    else if (!strcmp(g, "narrow")) o->gemm = SC_KERNELS_GEMM_NARROW;
    else {
      sc_error_set(err, SC_ERR_INVALID, "SCULPT_CUDA_GEMM=%.20s: expected cublas or narrow", g);
      return false;
    }
  }
  const char *h = getenv("SCULPT_CUDA_HEAD");
  if (h && *h) {
    if (!strcmp(h, "graph")) o->head_in_graph = true;
    else if (!strcmp(h, "host")) o->head_in_graph = false;
    else {
      sc_error_set(err, SC_ERR_INVALID, "SCULPT_CUDA_HEAD=%.20s: expected graph or host", h);
      return false;
    }
  }
  return true;
}

const char *sc_kernels_kind_name(sc_kernels_kind k) {
  static const char *const names[SC_KK_COUNT] = {
      "upload",   "embed",     "norm",         "gemm_qkv",    "qkv_post",
      "attention", "attn_combine", "gemm_o",   "gemm_gate_up", "swiglu",
      "gemm_down", "head_gather", "head_gemm", "head_stats",  "download"};
  return (unsigned)k < SC_KK_COUNT ? names[k] : "?";
}

/* ---- FP8 (e4m3), the host reference of kernels.h's rule -------------------------
 * OCP 8-bit floating point specification (2023), E4M3: bias 7, no
 * infinities, S.1111.111 NaN, largest finite 448, subnormals m * 2^-9. */
uint8_t sc_kernels_fp8_from_float(float x) {
  if (isnan(x)) return 0x7f;
  const uint8_t sign = signbit(x) ? 0x80 : 0;
  const float a = fabsf(x);
  if (a >= 448.0f) return sign | 0x7e; /* saturate (SATFINITE) */
  if (a < 0.015625f) {                  /* below 2^-6: subnormal steps of 2^-9 */
    const int m = (int)nearbyintf(a * 512.0f); /* 8 is 2^-6, the smallest normal: code 8 */
    return sign | (uint8_t)m;
  }
  int e;
  const float f = frexpf(a, &e); /* a = f * 2^e, f in [0.5, 1) */
  e -= 1;                        /* a = (2f) * 2^e, 2f in [1, 2) */
  int m = (int)nearbyintf((2.0f * f - 1.0f) * 8.0f);
  if (m == 8) m = 0, e++;
  const int code = ((e + 7) << 3) | m;
  return sign | (uint8_t)(code > 0x7e ? 0x7e : code);
}

float sc_kernels_fp8_to_float(uint8_t q) {
  const int e = (q >> 3) & 15, m = q & 7;
  if (e == 15 && m == 7) return NAN;
  const float v = e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + m / 8.0f, e - 7);
  return q & 0x80 ? -v : v;
}

void sc_kernels_fp8_quantize_row(const float *w, int n, uint8_t *q, float *scale) {
  float mx = 0.0f;
  for (int i = 0; i < n; i++) mx = fmaxf(mx, fabsf(w[i]));
  const float s = sc_kernels_fp8_scale(mx);
  *scale = s;
  for (int i = 0; i < n; i++) q[i] = sc_kernels_fp8_from_float(w[i] / s);
}
