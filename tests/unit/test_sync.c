/* test_sync.c — incremental didChange against full sync. A client model
 * keeps the text, picks random edits, and converts their byte offsets to LSP
 * positions with its own (deliberately simple) counting. The server's
 * document gets the incremental edits; the text must equal the client's,
 * which is what full sync would have sent, after every edit. So must the
 * text of the syntax tree a snapshot parses, with its tree handed back to
 * the document now or after more edits (as a request's job does). */
#include "context.h"
#include "lsp_impl.h"
#include "sc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static const char *const k_pieces[] = {"a", "Z", " ", "\t", "\xc3\xa9", "\xe4\xb8\xad",
                                        "\xf0\x9f\x98\x80", "\n", "\r\n", "\r", "xy"};
#define N_PIECES (sizeof k_pieces / sizeof k_pieces[0])
/* The same without a \r. */
static const char *const k_plain[] = {"a", "Z", " ", "\t", "\xc3\xa9", "\xe4\xb8\xad",
                                      "\xf0\x9f\x98\x80", "\n", "xy"};
#define N_PLAIN (sizeof k_plain / sizeof k_plain[0])

static unsigned rng_state;
static unsigned rnd(unsigned n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 8) % n;
}

static size_t lead_len(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Valid LSP positions: character starts; between \r and \n too (one past
 * the line's end, where Neovim ends it). */
static bool is_boundary(const char *t, size_t len, size_t off) {
  if (off == 0 || off == len) return true;
  return ((unsigned char)t[off] & 0xC0) != 0x80;
}

static size_t random_boundary(const char *t, size_t len) {
  for (;;) {
    size_t off = rnd((unsigned)len + 1);
    if (is_boundary(t, len, off)) return off;
  }
}

/* The client's own offset -> (line, character). */
static void client_position(const char *t, size_t off, sc_pos_encoding enc, uint32_t *line,
                            uint32_t *ch) {
  uint32_t l = 0, c = 0;
  for (size_t i = 0; i < off;) {
    if (t[i] == '\n') { l++; c = 0; i++; continue; }
    if (t[i] == '\r' && t[i + 1] == '\n' && i + 1 < off) { l++; c = 0; i += 2; continue; }
    /* A lone \r, or the \r of a \r\n that off splits: a character. */
    if (t[i] == '\r') { c++; i++; continue; }
    size_t n = lead_len((unsigned char)t[i]);
    c += enc == SC_POS_UTF8 ? (uint32_t)n : enc == SC_POS_UTF32 ? 1 : n == 4 ? 2 : 1;
    i += n;
  }
  *line = l;
  *ch = c;
}

/* A request's syntax: snapshot on the loop, parse (the job), and the
 * parsed tree's text. */
static sc_syntax_snapshot *parsed_snapshot(sc_document *doc, const char **text, size_t *len) {
  sc_syntax_snapshot *snap = sc_document_syntax_snapshot(doc, NULL);
  struct sc_syntax_tree *tree = snap ? sc_syntax_snapshot_parse(snap, NULL, NULL) : NULL;
  *text = tree ? sc_syntax_tree_text(tree, len) : NULL;
  return snap;
}

static void test_random_sequences(void) {
  sc_pos_encoding encs[] = {SC_POS_UTF8, SC_POS_UTF16, SC_POS_UTF32};
  int sequences = 3000, mismatches = 0;
  char *client = malloc(1 << 16);
  rng_state = 42;
  for (int seq = 0; seq < sequences && mismatches < 5; seq++) {
    sc_pos_encoding enc = encs[seq % 3];
    size_t len = 0;
    int n0 = (int)rnd(40);
    for (int i = 0; i < n0; i++) {
      const char *p = k_pieces[rnd(N_PIECES)];
      memcpy(client + len, p, strlen(p));
      len += strlen(p);
    }
    client[len] = '\0';
    sc_document_store *store = sc_document_store_new();
    REQUIRE(store);
    REQUIRE(sc_document_store_open(store, "file:///t.c", "c", 1, client, len, NULL) == SC_OK);
    sc_document *doc = sc_document_store_get(store, "file:///t.c");
    /* Half the sequences build the syntax tree first, so that edits queue. */
    const char *tt = NULL;
    size_t tl = 0;
    if (seq % 2) {
      sc_syntax_snapshot *snap = parsed_snapshot(doc, &tt, &tl);
      REQUIRE(tt != NULL);
      sc_document_syntax_adopt(store, "file:///t.c", snap);
      sc_syntax_snapshot_free(snap);
      REQUIRE(doc->tree != NULL && doc->n_edits == 0);
    }
    sc_syntax_snapshot *late = NULL; /* adopted after the next edit */
    int edits = 1 + (int)rnd(30);
    for (int e = 0; e < edits; e++) {
      size_t a = random_boundary(client, len), b = random_boundary(client, len);
      if (b < a) { size_t t = a; a = b; b = t; }
      char ins[64];
      size_t il = 0;
      int k = (int)rnd(4);
      for (int i = 0; i < k; i++) {
        const char *p = k_pieces[rnd(N_PIECES)];
        memcpy(ins + il, p, strlen(p));
        il += strlen(p);
      }
      uint32_t sl, sc, el, ec;
      client_position(client, a, enc, &sl, &sc);
      client_position(client, b, enc, &el, &ec);
      /* Apply on the client. */
      memmove(client + a + il, client + b, len - b);
      memcpy(client + a, ins, il);
      len = len - (b - a) + il;
      client[len] = '\0';
      bool clamped = true;
      EXPECT(sc_document_apply_edit(doc, sl, sc, el, ec, enc, ins, il, &clamped, NULL) ==
             SC_OK);
      EXPECT(!clamped);
      if (late) {
        /* The edit made since stays queued on the adopted tree. */
        sc_document_syntax_adopt(store, "file:///t.c", late);
        sc_syntax_snapshot_free(late);
        late = NULL;
        EXPECT(doc->tree != NULL && doc->n_edits == 1);
      }
      /* The lazily updated tree sees the same text. */
      if (e % 7 == 6 || e == edits - 1) {
        sc_syntax_snapshot *snap = parsed_snapshot(doc, &tt, &tl);
        EXPECT(tt && tl == len && memcmp(tt, client, len) == 0);
        if (e % 2) {
          late = snap;
        } else {
          sc_document_syntax_adopt(store, "file:///t.c", snap);
          sc_syntax_snapshot_free(snap);
          EXPECT(doc->tree != NULL && doc->n_edits == 0);
        }
      }
      if (doc->len != len || memcmp(doc->text, client, len) != 0) {
        mismatches++;
        fprintf(stderr, "seq %d edit %d (%s): server text differs from full sync\n", seq, e,
                sc_pos_encoding_name(enc));
        break;
      }
    }
    sc_syntax_snapshot_free(late);
    sc_document_store_free(store);
  }
  EXPECT(mismatches == 0);
  free(client);
}

/* Random pieces into out: at least `pieces_min` of them and `bytes_min`
 * bytes. Returns the length. */
static size_t random_text(char *out, const char *const *pieces, unsigned n_pieces,
                          int pieces_min, size_t bytes_min) {
  size_t len = 0;
  for (int i = 0; i < pieces_min || len < bytes_min; i++) {
    const char *p = pieces[rnd(n_pieces)];
    memcpy(out + len, p, strlen(p));
    len += strlen(p);
  }
  return len;
}

/* Two documents of the same text (a.c and b.c, C) in a new store (owned
 * by the caller), or NULL. */
static sc_document_store *twins(const char *text, size_t len, sc_document **a, sc_document **b) {
  sc_document_store *store = sc_document_store_new();
  if (!store ||
      sc_document_store_open(store, "file:///a.c", "c", 1, text, len, NULL) != SC_OK ||
      sc_document_store_open(store, "file:///b.c", "c", 1, text, len, NULL) != SC_OK) {
    sc_document_store_free(store);
    return NULL;
  }
  *a = sc_document_store_get(store, "file:///a.c");
  *b = sc_document_store_get(store, "file:///b.c");
  return store;
}

/* After a batch applied to a in one pass: the same changes one by one to b
 * (sc_document_apply_edit), and whether the texts and line indexes are the
 * same. */
static bool same_as_one_by_one(sc_document *a, sc_document *b, const sc_text_change *ch, size_t n,
                               sc_pos_encoding enc) {
  for (size_t i = 0; i < n; i++)
    EXPECT(sc_document_apply_edit(b, ch[i].sl, ch[i].sc, ch[i].el, ch[i].ec, enc, ch[i].text,
                                  ch[i].len, NULL, NULL) == SC_OK);
  const sc_line_index *ia = sc_document_lines(a), *ib = sc_document_lines(b);
  return a->len == b->len && memcmp(a->text, b->text, a->len) == 0 && ia && ib &&
         ia->n == ib->n && memcmp(ia->starts, ib->starts, ia->n * sizeof *ia->starts) == 0;
}

/* Batches in one pass (sc_document_apply_reversed for changes in reverse
 * document order, sc_document_apply_in_order for changes in the order made,
 * each in the text the ones before it left) against the same changes one by
 * one (sc_document_apply_edit): the same text, line index, and text of the
 * tree a snapshot parses from the queued edits. A batch not in its order,
 * or with a position past its line's end, is refused with nothing changed. */
static void check_batches(bool in_order) {
  sc_pos_encoding encs[] = {SC_POS_UTF8, SC_POS_UTF16, SC_POS_UTF32};
  char *text = malloc(1 << 14), *ins = malloc(1 << 14), *cur = malloc(1 << 15);
  int differ = 0, applied = 0, refused = 0;
  rng_state = in_order ? 8 : 7;
  for (int seq = 0; seq < 2000 && differ < 3; seq++) {
    sc_pos_encoding enc = encs[seq % 3];
    /* Half the texts without \r: a change near one is refused in order. */
    const char *const *pieces = seq % 2 ? k_pieces : k_plain;
    unsigned n_pieces = seq % 2 ? N_PIECES : N_PLAIN;
    size_t len = random_text(text, pieces, n_pieces, 5 + (int)rnd(60), 0);
    sc_document *a, *b;
    sc_document_store *store = twins(text, len, &a, &b);
    REQUIRE(store);
    if (seq % 4 < 2) { /* with a tree, so that the edits queue */
      const char *tt;
      size_t tl;
      for (int k = 0; k < 2; k++) {
        sc_document *d = k ? b : a;
        sc_syntax_snapshot *snap = parsed_snapshot(d, &tt, &tl);
        sc_document_syntax_adopt(store, k ? "file:///b.c" : "file:///a.c", snap);
        sc_syntax_snapshot_free(snap);
      }
    }
    /* Cut points in the text as it is, sorted: change i covers the bytes
     * between the 2i-th and the (2i+1)-th, in reverse order or in order. */
    size_t cuts[64];
    int nc = 2 * (1 + (int)rnd(12));
    for (int i = 0; i < nc; i++) cuts[i] = random_boundary(text, len);
    for (int i = 0; i < nc; i++)
      for (int j = i + 1; j < nc; j++)
        if (in_order ? cuts[j] < cuts[i] : cuts[j] > cuts[i]) {
          size_t t = cuts[i];
          cuts[i] = cuts[j];
          cuts[j] = t;
        }
    if (rnd(5) == 0) { size_t t = cuts[0]; cuts[0] = cuts[nc - 1]; cuts[nc - 1] = t; }
    sc_text_change ch[32];
    size_t il = 0, n = (size_t)nc / 2;
    /* Positions as the client writes them: in the text the changes before
     * have left (the same as it is, for reverse order). */
    memcpy(cur, text, len);
    size_t cur_len = len;
    long long moved = 0;
    for (size_t i = 0; i < n; i++) {
      size_t lo = cuts[2 * i], hi = cuts[2 * i + 1];
      if (lo > hi) { size_t t = lo; lo = hi; hi = t; }
      if (in_order) { lo = (size_t)((long long)lo + moved); hi = (size_t)((long long)hi + moved); }
      if (hi > cur_len) hi = cur_len;
      if (lo > hi) lo = hi;
      client_position(cur, lo, enc, &ch[i].sl, &ch[i].sc);
      client_position(cur, hi, enc, &ch[i].el, &ch[i].ec);
      ch[i].text = ins + il;
      ch[i].len = 0;
      for (int k = (int)rnd(3); k > 0; k--) {
        const char *p = pieces[rnd(n_pieces)];
        memcpy(ins + il, p, strlen(p));
        il += strlen(p);
        ch[i].len += strlen(p);
      }
      if (in_order) {
        memmove(cur + lo + ch[i].len, cur + hi, cur_len - hi);
        memcpy(cur + lo, ch[i].text, ch[i].len);
        cur_len = cur_len - (hi - lo) + ch[i].len;
        moved += (long long)ch[i].len - (long long)(hi - lo);
      }
    }
    if (rnd(8) == 0) ch[rnd((unsigned)n)].ec += 50; /* past its line's end */
    sc_status st = in_order ? sc_document_apply_in_order(a, ch, n, enc, NULL)
                            : sc_document_apply_reversed(a, ch, n, enc, NULL);
    if (st != SC_OK) {
      refused++;
      EXPECT(st == SC_ERR_UNSUPPORTED);
      EXPECT(a->len == len && memcmp(a->text, text, len) == 0);
    } else {
      applied++;
      bool same = same_as_one_by_one(a, b, ch, n, enc);
      const char *ta, *tb;
      size_t la, lb;
      sc_syntax_snapshot *sa = parsed_snapshot(a, &ta, &la), *sb = parsed_snapshot(b, &tb, &lb);
      same = same && ta && tb && la == lb && la == a->len && memcmp(ta, a->text, la) == 0 &&
             memcmp(tb, b->text, lb) == 0;
      sc_syntax_snapshot_free(sa);
      sc_syntax_snapshot_free(sb);
      if (!same) {
        differ++;
        fprintf(stderr, "seq %d (%s, %zu changes): one pass and one by one differ\n", seq,
                sc_pos_encoding_name(enc), n);
      }
    }
    sc_document_store_free(store);
  }
  EXPECTF(differ == 0, "%d batches differ", differ);
  fprintf(stderr, "%s: %d batches in one pass, %d refused\n",
          in_order ? "in order" : "reversed", applied, refused);
  EXPECTF(applied > 700 && refused > 200, "applied %d, refused %d", applied, refused);
  free(text);
  free(ins);
  free(cur);
}

static void test_reversed_batches(void) {
  check_batches(false);
  /* A clamped end meets the change ahead of it: one by one, "X" inserted
   * at the end of line 0 moves where (0, 99) clamps, and the second change
   * takes it away ("aY\ncd\n"); in one pass it would stay ("aYX"). */
  sc_document_store *store = sc_document_store_new();
  REQUIRE(store);
  REQUIRE(sc_document_store_open(store, "file:///c.c", "c", 1, "ab\ncd\n", 6, NULL) == SC_OK);
  sc_document *d = sc_document_store_get(store, "file:///c.c");
  sc_text_change meet[2] = {{0, 2, 0, 2, "X", 1}, {0, 1, 0, 99, "Y", 1}};
  EXPECT(sc_document_apply_reversed(d, meet, 2, SC_POS_UTF16, NULL) == SC_ERR_UNSUPPORTED);
  EXPECT(d->len == 6 && memcmp(d->text, "ab\ncd\n", 6) == 0);
  sc_document_store_free(store);
}

static void test_in_order_batches(void) { check_batches(true); }

/* Batches in any order in one pass (sc_document_apply_any_order: the text
 * cut into blocks of whole lines, 4-16 KB) against the same changes one
 * by one, in texts of 150-300 KB so that the blocks are many: changes at
 * random places, ranges across blocks (up to 100 KB), inserts that grow a
 * block past its bound (up to 150 KB), the encodings, \r\n and lone \r.
 * The same text, line index and tree text; refused (nothing changed) where
 * a position is past its line's end or next to a \r. */
static void test_any_order_batches(void) {
  sc_pos_encoding encs[] = {SC_POS_UTF8, SC_POS_UTF16, SC_POS_UTF32};
  size_t big = (size_t)1 << 20;
  char *text = malloc(big), *ins = malloc(big * 4), *cur = malloc(big * 2);
  REQUIRE(text && ins && cur);
  int differ = 0, applied = 0, refused = 0;
  rng_state = 9;
  for (int seq = 0; seq < 120 && differ < 3; seq++) {
    sc_pos_encoding enc = encs[seq % 3];
    const char *const *pieces = seq % 3 == 2 ? k_pieces : k_plain;
    unsigned n_pieces = seq % 3 == 2 ? N_PIECES : N_PLAIN;
    size_t len = random_text(text, pieces, n_pieces, 0, 150000 + rnd(150000));
    sc_document *a, *b;
    sc_document_store *store = twins(text, len, &a, &b);
    REQUIRE(store);
    sc_text_change ch[48];
    size_t n = 16 + rnd(32), il = 0, cur_len = len;
    memcpy(cur, text, len);
    for (size_t i = 0; i < n; i++) {
      /* In the text as the changes before it left it, as a client writes. */
      size_t lo = random_boundary(cur, cur_len), hi = lo;
      unsigned kind = rnd(10);
      if (kind < 6) hi = lo + rnd(40);
      else if (kind < 8) hi = lo + rnd(100000); /* across blocks */
      if (hi > cur_len) hi = cur_len;
      while (!is_boundary(cur, cur_len, hi)) hi++;
      client_position(cur, lo, enc, &ch[i].sl, &ch[i].sc);
      client_position(cur, hi, enc, &ch[i].el, &ch[i].ec);
      ch[i].text = ins + il;
      ch[i].len = 0;
      if (kind == 9 && il + 150000 < big * 3) { /* grows a block past its bound */
        size_t from = random_boundary(cur, cur_len / 2), to = from + 150000;
        if (to > cur_len) to = cur_len;
        while (!is_boundary(cur, cur_len, to)) to--;
        memcpy(ins + il, cur + from, to - from);
        ch[i].len = to - from;
      } else {
        for (int k = (int)rnd(4); k > 0; k--) {
          const char *p = pieces[rnd(n_pieces)];
          memcpy(ins + il + ch[i].len, p, strlen(p));
          ch[i].len += strlen(p);
        }
      }
      il += ch[i].len;
      if (cur_len - (hi - lo) + ch[i].len > big * 2) { n = i; break; }
      memmove(cur + lo + ch[i].len, cur + hi, cur_len - hi);
      memcpy(cur + lo, ch[i].text, ch[i].len);
      cur_len = cur_len - (hi - lo) + ch[i].len;
    }
    if (rnd(8) == 0) ch[rnd((unsigned)n)].ec += 5000; /* past its line's end */
    sc_status st = sc_document_apply_any_order(a, ch, n, enc, NULL);
    if (st != SC_OK) {
      refused++;
      EXPECT(st == SC_ERR_UNSUPPORTED);
      EXPECT(a->len == len && memcmp(a->text, text, len) == 0);
    } else {
      applied++;
      bool same = same_as_one_by_one(a, b, ch, n, enc) && a->len == cur_len &&
                  memcmp(a->text, cur, cur_len) == 0;
      /* Without a tree the edits queue too (for a snapshot being parsed). */
      same = same && a->n_edits == b->n_edits && a->n_edits == n;
      for (size_t i = 0; same && i < a->n_edits; i++)
        same = a->edits[i].start == b->edits[i].start &&
               a->edits[i].old_end == b->edits[i].old_end && a->edits[i].len == b->edits[i].len &&
               memcmp(a->edits[i].text, b->edits[i].text, a->edits[i].len) == 0;
      if (!same) {
        differ++;
        fprintf(stderr, "seq %d (%s, %zu changes): in blocks and one by one differ\n", seq,
                sc_pos_encoding_name(enc), n);
      }
    }
    sc_document_store_free(store);
  }
  EXPECTF(differ == 0, "%d batches differ", differ);
  fprintf(stderr, "any order: %d batches in one pass, %d refused\n", applied, refused);
  EXPECTF(applied > 60 && refused > 20, "applied %d, refused %d", applied, refused);
  free(text);
  free(ins);
  free(cur);
}

static void test_store(void) {
  /* Open/close many documents through growth and tombstones. */
  sc_document_store *s = sc_document_store_new();
  REQUIRE(s);
  char uri[64];
  for (int i = 0; i < 1000; i++) {
    snprintf(uri, sizeof uri, "file:///f%d.c", i);
    EXPECT(sc_document_store_open(s, uri, "c", i, uri, strlen(uri), NULL) == SC_OK);
  }
  for (int i = 0; i < 1000; i += 2) {
    snprintf(uri, sizeof uri, "file:///f%d.c", i);
    EXPECT(sc_document_store_close(s, uri));
  }
  EXPECT(sc_document_store_count(s) == 500);
  for (int i = 0; i < 1000; i++) {
    snprintf(uri, sizeof uri, "file:///f%d.c", i);
    sc_document *d = sc_document_store_get(s, uri);
    EXPECT((i % 2 == 0) == (d == NULL));
    if (d) EXPECT(d->version == i && strcmp(d->text, uri) == 0);
  }
  EXPECT(!sc_document_store_close(s, "file:///missing"));
  sc_document_store_free(s);
}

/* What the reaper frees: in the order given, on its own thread, all of it
 * by the time it is freed; without a reaper, at once. */
#define N_REAPED 1000
static int g_reaped[N_REAPED];
static atomic_int g_n_reaped, g_reaped_here;
static pthread_t g_main_thread;

static void note_reaped(void *p) {
  int *v = p;
  int k = atomic_fetch_add(&g_n_reaped, 1);
  if (k < N_REAPED) g_reaped[k] = *v;
  if (pthread_equal(pthread_self(), g_main_thread)) atomic_fetch_add(&g_reaped_here, 1);
  free(v);
}

static int *boxed(int i) {
  int *v = malloc(sizeof *v);
  *v = i;
  return v;
}

static void test_reaper(void) {
  g_main_thread = pthread_self();
  sc_reaper *r = sc_reaper_new();
  REQUIRE(r);
  for (int i = 0; i < N_REAPED; i++) sc_reaper_put(r, note_reaped, boxed(i), (size_t)1 << 20);
  sc_reaper_put(r, note_reaped, NULL, 0); /* ignored */
  sc_reaper_free(r);
  EXPECT(atomic_load(&g_n_reaped) == N_REAPED);
  EXPECT(atomic_load(&g_reaped_here) == 0);
  int out_of_order = 0;
  for (int i = 0; i < N_REAPED; i++) out_of_order += g_reaped[i] != i;
  EXPECT(out_of_order == 0);
  atomic_store(&g_n_reaped, 0);
  sc_reaper_put(NULL, note_reaped, boxed(7), 0);
  EXPECT(atomic_load(&g_n_reaped) == 1 && atomic_load(&g_reaped_here) == 1);
}

int main(void) {
  RUN(test_random_sequences);
  RUN(test_reversed_batches);
  RUN(test_in_order_batches);
  RUN(test_any_order_batches);
  RUN(test_store);
  RUN(test_reaper);
  TEST_MAIN_END();
}
