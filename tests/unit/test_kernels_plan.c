/* test_kernels_plan.c — the CUDA backend's host-side planning (kernels/plan.c),
 * which runs in every build: attention tiles and key chunks, the shape class
 * a pass's graph is keyed by, the graph cache's capture policy, and the
 * switches read from the environment. What the GPU replays depends on
 * these; none of them needs a device. */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "sc_test.h"

#include <stdlib.h>

/* Dream 7B on an H200: 28/4 heads (group 7, tiles of 9 rows), 132 SMs. */
static sc_kernels_step_in dream_in(int n, int w0, int w1, int n_rows) {
  sc_kernels_step_in in = {0};
  in.n = n, in.w0 = w0, in.w1 = w1, in.n_rows = n_rows;
  in.tq = 9, in.n_kv_heads = 4, in.sm_count = 132, in.part_blocks = 1024, in.head_cap = 128;
  in.head_in_graph = true, in.sample = true, in.banned = true;
  return in;
}

static void test_window_key_ignores_place(void) {
  sc_kernels_tile t1[16], t2[16];
  sc_kernels_step_plan a, b, c;
  sc_kernels_step_in in = dream_in(4128, 2047, 2080, 33);
  REQUIRE(sc_kernels_plan_step(&in, t1, &a));
  in = dream_in(4128, 2079, 2112, 20); /* the next block, fewer masked rows */
  REQUIRE(sc_kernels_plan_step(&in, t2, &b));
  EXPECTF(a.key == b.key, "a window that moved changed its class");
  EXPECT(a.nw == 33 && a.n_tiles == 4 && a.head_rows == 33 && b.head_rows == 33);
  /* Tiles: local rows, every key of the sequence. */
  EXPECT(t1[0].q0 == 0 && t1[0].nq == 9 && t1[3].q0 == 27 && t1[3].nq == 6);
  EXPECT(t1[0].k0 == 0 && t1[0].k1 == 4128 && t2[3].k1 == 4128);
  /* A few more positions of context split the same way: same class. */
  in = dream_in(4100, 100, 133, 33);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &c));
  EXPECTF(a.key == c.key, "n 4128 vs 4100 (same chunks) changed the class");
  /* Another window size is another class. */
  in = dream_in(4128, 2047, 2079, 32);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &c));
  EXPECT(c.key != a.key);
  /* The full pass is another class, with the rows rounded up to 32. */
  in = dream_in(4128, 0, 4128, 32);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &c));
  EXPECT(c.key != a.key && c.head_rows == 32 && c.n_tiles == 459 && c.n_chunks == 1);
  sc_kernels_step_plan d;
  in = dream_in(4128, 0, 4128, 21);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &d));
  EXPECT(d.key == c.key && d.head_rows == 32);
  /* Picking or not, banning or not: other launches, other classes. */
  in = dream_in(4128, 2047, 2080, 33);
  in.banned = false;
  REQUIRE(sc_kernels_plan_step(&in, NULL, &c));
  EXPECT(c.key != a.key);
  in.sample = false;
  REQUIRE(sc_kernels_plan_step(&in, NULL, &d));
  EXPECT(d.key != a.key && d.key != c.key);
}

static void test_chunks(void) {
  sc_kernels_step_plan p;
  /* 4 tiles x 4 kv heads = 16 blocks on 132 SMs: split 17 ways. */
  sc_kernels_step_in in = dream_in(4128, 2047, 2080, 33);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECTF(p.n_chunks == 17, "chunks %d", p.n_chunks);
  EXPECT(p.n_chunks * p.n_tiles * 4 <= 1024);
  /* A short context caps the split at one chunk per 64 keys. */
  in = dream_in(200, 100, 133, 33);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECTF(p.n_chunks == 4, "chunks %d", p.n_chunks);
  in = dream_in(40, 5, 38, 33);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.n_chunks == 1);
  /* The cap moves in powers of two: 1,000 and 1,500 keys share a class. */
  sc_kernels_step_plan q;
  in = dream_in(1000, 500, 533, 33);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  in = dream_in(1500, 700, 733, 33);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &q));
  EXPECTF(p.n_chunks == 16 && q.n_chunks == 16 && p.key == q.key, "chunks %d, %d", p.n_chunks,
          q.n_chunks);
  /* Forced (tests, the benchmark's sweep); at most one per 32 keys. */
  in = dream_in(80, 0, 80, 3);
  in.forced_chunks = 3;
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.n_chunks == 3);
  in.forced_chunks = 50;
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.n_chunks == 3);
  /* The partial buffer bounds it: 200 tiles x 4 heads leaves 1. */
  in = dream_in(1800, 0, 1800, 32);
  in.forced_chunks = 8;
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.n_chunks == 1);
}

static void test_head_rows(void) {
  sc_kernels_step_plan p;
  sc_kernels_step_in in = dream_in(600, 0, 600, 100);
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.head_rows == 128);
  in.n_rows = 129; /* more than the graph holds: after it */
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.head_rows == 0);
  in.n_rows = 0; /* nothing asked */
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.head_rows == 0);
  in = dream_in(600, 0, 600, 120); /* rounds past the cap: exactly the rows */
  in.head_cap = 125;
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.head_rows == 120);
  in = dream_in(600, 300, 333, 10);
  in.head_in_graph = false; /* $SCULPT_CUDA_HEAD=host */
  REQUIRE(sc_kernels_plan_step(&in, NULL, &p));
  EXPECT(p.head_rows == 0);
}

static void test_packed(void) {
  const int32_t segs[4] = {0, 5, 25, 30};
  sc_kernels_step_in in = dream_in(30, 0, 30, 3);
  in.segs = segs, in.n_segs = 3;
  sc_kernels_tile t[8];
  EXPECT(sc_kernels_tile_count(&in) == 1 + 3 + 1);
  sc_kernels_step_plan p;
  REQUIRE(sc_kernels_plan_step(&in, t, &p));
  EXPECT(p.n_tiles == 5 && p.max_keys == 20);
  EXPECT(t[0].q0 == 0 && t[0].nq == 5 && t[0].k0 == 0 && t[0].k1 == 5);
  EXPECT(t[1].q0 == 5 && t[1].nq == 9 && t[1].k0 == 5 && t[1].k1 == 25);
  EXPECT(t[3].q0 == 23 && t[3].nq == 2 && t[4].k0 == 25 && t[4].k1 == 30);
  /* Packed sequences are a full pass; an empty one is refused. */
  in.w0 = 1;
  EXPECT(!sc_kernels_plan_step(&in, NULL, &p));
  const int32_t bad[3] = {0, 7, 7};
  in = dream_in(7, 0, 7, 1);
  in.segs = bad, in.n_segs = 2;
  EXPECT(!sc_kernels_plan_step(&in, NULL, &p));
  /* Windows outside the sequence. */
  in = dream_in(10, 4, 4, 0);
  EXPECT(!sc_kernels_plan_step(&in, NULL, &p));
  in = dream_in(10, 4, 11, 0);
  EXPECT(!sc_kernels_plan_step(&in, NULL, &p));
}

static void test_graph_cache(void) {
  sc_kernels_graph_cache g;
  sc_kernels_graph_cache_init(&g);
  int slot = 7;
  EXPECT(sc_kernels_graph_cache_decide(&g, 11, &slot) == SC_KERNELS_GRAPH_EAGER && slot == -1);
  EXPECT(sc_kernels_graph_cache_decide(&g, 22, &slot) == SC_KERNELS_GRAPH_EAGER);
  EXPECT(sc_kernels_graph_cache_decide(&g, 11, &slot) == SC_KERNELS_GRAPH_CAPTURE);
  const int s11 = slot;
  EXPECT(sc_kernels_graph_cache_decide(&g, 11, &slot) == SC_KERNELS_GRAPH_REPLAY && slot == s11);
  EXPECT(sc_kernels_graph_cache_decide(&g, 22, &slot) == SC_KERNELS_GRAPH_CAPTURE && slot != s11);
  /* Eight more classes, each used twice: the least recently used go. */
  for (uint64_t k = 100; k < 108; k++) {
    EXPECT(sc_kernels_graph_cache_decide(&g, k, &slot) == SC_KERNELS_GRAPH_EAGER);
    EXPECT(sc_kernels_graph_cache_decide(&g, k, &slot) == SC_KERNELS_GRAPH_CAPTURE);
  }
  EXPECT(sc_kernels_graph_cache_decide(&g, 107, &slot) == SC_KERNELS_GRAPH_REPLAY);
  EXPECT(sc_kernels_graph_cache_decide(&g, 11, &slot) == SC_KERNELS_GRAPH_EAGER);
  /* A failed capture forgets its slot. */
  EXPECT(sc_kernels_graph_cache_decide(&g, 11, &slot) == SC_KERNELS_GRAPH_CAPTURE);
  sc_kernels_graph_cache_drop(&g, slot);
  EXPECT(sc_kernels_graph_cache_decide(&g, 11, &slot) == SC_KERNELS_GRAPH_EAGER);
}

static void test_options(void) {
  sc_kernels_options o;
  sc_error err = {0};
  unsetenv("SCULPT_CUDA_GRAPH");
  unsetenv("SCULPT_CUDA_ATTN");
  unsetenv("SCULPT_CUDA_HEAD");
  unsetenv("SCULPT_CUDA_FUSE");
  unsetenv("SCULPT_CUDA_GEMM");
  REQUIRE(sc_kernels_options_from_env(&o, &err));
  EXPECT(o.graphs && o.attn == SC_KERNELS_ATTN_MMA && o.head_in_graph && o.fuse &&
         o.attn_chunks == 0 && o.gemm == SC_KERNELS_GEMM_CUBLAS);
  setenv("SCULPT_CUDA_GEMM", "narrow", 1);
  REQUIRE(sc_kernels_options_from_env(&o, &err));
  EXPECT(o.gemm == SC_KERNELS_GEMM_NARROW);
  setenv("SCULPT_CUDA_GEMM", "cutlass", 1);
  EXPECT(!sc_kernels_options_from_env(&o, &err));
  unsetenv("SCULPT_CUDA_GEMM");
  setenv("SCULPT_CUDA_GRAPH", "0", 1);
  setenv("SCULPT_CUDA_ATTN", "simt", 1);
  setenv("SCULPT_CUDA_HEAD", "host", 1);
  setenv("SCULPT_CUDA_FUSE", "off", 1);
  REQUIRE(sc_kernels_options_from_env(&o, &err));
  EXPECT(!o.graphs && o.attn == SC_KERNELS_ATTN_SIMT && !o.head_in_graph && !o.fuse);
  setenv("SCULPT_CUDA_ATTN", "tensor", 1);
  EXPECT(!sc_kernels_options_from_env(&o, &err));
  EXPECTF(strstr(err.msg, "SCULPT_CUDA_ATTN") != NULL, "%s", err.msg);
  unsetenv("SCULPT_CUDA_ATTN");
  setenv("SCULPT_CUDA_GRAPH", "yes", 1);
  EXPECT(!sc_kernels_options_from_env(&o, &err));
  unsetenv("SCULPT_CUDA_GRAPH");
  unsetenv("SCULPT_CUDA_HEAD");
  unsetenv("SCULPT_CUDA_FUSE");
  for (int k = 0; k < SC_KK_COUNT; k++)
    EXPECT(strcmp(sc_kernels_kind_name((sc_kernels_kind)k), "?") != 0);
  EXPECT(strcmp(sc_kernels_kind_name(SC_KK_COUNT), "?") == 0);
}

int main(void) {
  RUN(test_window_key_ignores_place);
  RUN(test_chunks);
  RUN(test_head_rows);
  RUN(test_packed);
  RUN(test_graph_cache);
  RUN(test_options);
  TEST_MAIN_END();
}
