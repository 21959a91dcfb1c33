/* reaper.c — frees what the loop lets go of, on a thread of its own.
 * Freeing a syntax tree walks every node: a 2 MB document's took the loop
 * 25-55 ms of CPU in one call (test_draft_bounds), a stall the user feels
 * as a dropped keystroke when it lands on didChange or didClose. The loop
 * hands such things here instead; they are freed in the order given. */
#define _POSIX_C_SOURCE 200809L
#include "lsp_impl.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct reap_item {
  struct reap_item *next;
  void (*free_fn)(void *);
  void *p;
} reap_item;

struct sc_reaper {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  reap_item *head, *tail; /* waiting, oldest first */
  bool stop;
};

static void *reaper_main(void *arg) {
  sc_reaper *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->head && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
    reap_item *batch = r->head;
    if (!batch) break; /* stopped with nothing left */
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
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  /* Freeing a tree is iterative (tree-sitter keeps its own stack): the
   * smallest stack glibc's defaults allow would do; 256 KB leaves room. */
  if (sc_thread_start(&r->thread, (size_t)256 << 10, reaper_main, r) != 0) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
    return NULL;
  }
  return r;
}

void sc_reaper_put(sc_reaper *r, void (*free_fn)(void *), void *p) {
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
