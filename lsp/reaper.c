/* reaper.c — frees what the loop lets go of, on a thread of its own.
 * Freeing a syntax tree walks every node: a 2 MB document's took the loop
 * 75-170 ms of CPU in one call (test_draft_bounds), a stall the user feels
 * as a dropped keystroke when it lands on didChange or didClose. The loop
 * hands such things here instead; they are freed in the order given.
 *
 * Freed is not returned: glibc keeps a freed tree's pages in its arenas, so
 * a server that had a 2 MB document open stayed at 437 MB after closing it
 * (31 MB before). Once what was freed adds up to SC_REAPER_TRIM_BYTES, the
 * reaper gives the arenas' free pages back (malloc_trim) after a second
 * with nothing new to free: one trim after a burst of closes or full-text
 * changes, not one per keystroke (a trim walks every arena, 13-78 ms with a
 * 2 MB document's tree, holding each arena's lock in turn). */
#define _POSIX_C_SOURCE 200809L
#include "lsp_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define SC_REAPER_TRIM_BYTES ((size_t)4 << 20)
#define SC_REAPER_TRIM_IDLE_S 1

typedef struct reap_item {
  struct reap_item *next;
  void (*free_fn)(void *);
  void *p;
} reap_item;

struct sc_reaper {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;      /* on CLOCK_MONOTONIC */
  reap_item *head, *tail; /* waiting, oldest first */
  size_t untrimmed;       /* the weights freed since the last trim */
  bool stop;
};

static void trim_heap(void) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

static void *reaper_main(void *arg) {
  sc_reaper *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    if (!r->head) {
      if (r->stop) break; /* a pending trim is moot at exit */
      if (r->untrimmed < SC_REAPER_TRIM_BYTES) {
        pthread_cond_wait(&r->cv, &r->mu);
        continue;
      }
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_sec += SC_REAPER_TRIM_IDLE_S;
      if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT && !r->head && !r->stop) {
        r->untrimmed = 0;
        pthread_mutex_unlock(&r->mu);
        trim_heap();
        pthread_mutex_lock(&r->mu);
      }
      continue;
    }
    reap_item *batch = r->head;
    r->head = r->tail = NULL;
    pthread_mutex_unlock(&r->mu);
    while (batch) {
      reap_item *next = batch->next;
      batch->free_fn(batch->p);
      free(batch);
      batch = next;
    }
    pthread_mutex_lock(&r->mu);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

sc_reaper *sc_reaper_new(void) {
  sc_reaper *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, &ca);
  pthread_condattr_destroy(&ca);
  /* Freeing a tree is iterative (tree-sitter keeps its own stack): 256 KB
   * leaves room. */
  if (sc_thread_start(&r->thread, (size_t)256 << 10, reaper_main, r) != 0) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
    return NULL;
  }
  return r;
}

void sc_reaper_put(sc_reaper *r, void (*free_fn)(void *), void *p, size_t weight) {
  if (!p) return;
  reap_item *it = r ? malloc(sizeof *it) : NULL;
  if (!it) { /* no thread, or no memory for the note: free it here */
    free_fn(p);
    return;
  }
  *it = (reap_item){NULL, free_fn, p};
  pthread_mutex_lock(&r->mu);
  if (r->tail) r->tail->next = it;
  else r->head = it;
  r->tail = it;
  r->untrimmed = weight > SIZE_MAX - r->untrimmed ? SIZE_MAX : r->untrimmed + weight;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

void sc_reaper_free(sc_reaper *r) {
  if (!r) return;
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->thread, NULL); /* it frees what waits before it ends */
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
}
