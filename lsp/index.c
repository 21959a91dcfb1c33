/* index.c — the workspace index behind repository context: built by a job
 * on the background lane at start (a large tree delays nothing; requests are
 * served meanwhile on the old index, or none), installed between requests
 * on the model lane, then kept up to date file by file: saves and
 * watched-file events re-read a file from disk, edits to an open document
 * refresh its entry from the buffer (at most every 2 s per document).
 * Updates made while the index is built are replayed on the new one. Its
 * state ("indexing", "ready", "failed"), how many files came unchanged from
 * the index kept on disk and whether a bound (indexMaxFiles) left files out
 * go out in sculpt/status, its build in $/progress; a completion's data
 * carries the state at its request (prompt.c). The build starts from the
 * index kept on disk and writes it back (sc_workspace_index); the updates
 * made since are written at exit, so a restart starts warm.
 *
 * Threads: c->ws belongs to the model lane (prompt builds and updates run
 * there); root, pending and the index state are the loop's. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct index_arg {
  sc_completer *c;
  char *root;
  sc_workspace *ws; /* built on the background worker, until installed (owned) */
  sc_workspace_stats stats;
  int pause_ms; /* test hook: wait this long first (SCULPT_TEST_INDEX_PAUSE_MS) */
  size_t max_files; /* the indexMaxFiles setting (0: the default bound) */
  int generation; /* c->index_generation when it started: a newer root supersedes it */
  int progress;   /* its $/progress token (sc_lsp__progress_begin), or 0 */
} index_arg;

static void index_arg_free(void *p) {
  index_arg *a = p;
  sc_workspace_free(a->ws);
  free(a->root);
  free(a);
}

/* On the background worker: requests are served meanwhile, on the old index
 * (or none). */
static json_t *index_job(sc_job *job, void *argp, sc_error *err) {
  index_arg *a = argp;
  if (!sc_job_wait(job, a->pause_ms))
    return sc_error_set(err, SC_ERR_CANCELLED, "indexing cancelled"), NULL;
  sc_workspace_options o = {0};
  o.cancel = &job->cancel; /* exit does not wait for a big tree */
  o.max_files = a->max_files;
  if (sc_workspace_index(a->root, &o, &a->ws, err) != SC_OK) return NULL;
  a->stats = sc_workspace_get_stats(a->ws);
  return json_null();
}

/* On the request worker, between requests: the prompt builds and per-file
 * updates there use c->ws without a lock, so only it may replace it. */
static json_t *install_index_job(sc_job *job, void *argp, sc_error *err) {
  index_arg *a = argp;
  sc_workspace_free(a->c->ws);
  a->c->ws = a->ws;
  a->c->ws_epoch++; /* pinned prompts built from the old one are rebuilt */
  a->ws = NULL;
  a->c->index_disk_updates = 0; /* the build wrote what it read */
  return json_null();
}

static void install_index_done(sc_lsp_server *s, sc_job *job) {
  sc_completer *c = sc_lsp__feature(s);
  index_arg *a = job->arg;
  if (!job->result) return; /* cancelled at exit */
  if (a->generation != c->index_generation) return; /* another root is being indexed */
  c->index_state = "ready";
  c->index_files = a->stats.files;
  c->index_cached = a->stats.cached;
  c->index_partial = a->stats.partial;
  if (a->stats.partial)
    SC_LOG_WARN("index: partial (%zu files over indexMaxFiles left out, or the chunk cap "
                "reached): context may miss definitions",
                a->stats.skipped_limit);
  sc_cpl__send_status(s, c);
}

static void post_update(sc_lsp_server *s, sc_completer *c, const char *uri, const char *text,
                        size_t len, bool remove);
static void pending_clear(sc_completer *c);

static void index_done(sc_lsp_server *s, sc_job *job) {
  sc_completer *c = sc_lsp__feature(s);
  index_arg *a = job->arg;
  /* Copied first: a moves to the install job (freed at once if that post
   * fails for lack of memory). */
  sc_workspace_stats stats = a->stats;
  int progress = a->progress;
  if (a->generation != c->index_generation) {
    /* Superseded by the index of another root (sc_cpl__on_open): only its
     * progress ends. */
    sc_lsp__progress_end(s, progress, "superseded: the workspace moved");
    return;
  }
  c->indexing = false;
  c->index_job = NULL;
  if (job->result && a->ws && sc_job_cancelled(job) == SC_JOB_LIVE) {
    /* The job's arg moves to the install job. */
    job->arg = NULL;
    job->free_arg = NULL;
    sc_lsp__post_job(s, NULL, "sculpt/installIndex", NULL, install_index_job, a,
                     index_arg_free, install_index_done);
    /* Updates made while it was built went to the old index: redo them on
     * the new one, after the install (the request worker runs in order).
     * An open document's entry comes from its buffer as it is now. */
    if (c->pending_lost) SC_LOG_WARN("index: some edits made while indexing may be missing");
    for (size_t i = 0; i < c->n_pending; i++) {
      struct pending_update *u = &c->pending[i];
      sc_document *d = u->buffer ? sc_document_store_get(sc_lsp__documents(s), u->uri) : NULL;
      if (d) post_update(s, c, u->uri, d->text, d->len, false);
      else post_update(s, c, u->uri, NULL, 0, u->remove);
    }
  } else if (sc_job_cancelled(job) == SC_JOB_LIVE) {
    c->index_state = "failed";
    sc_cpl__send_status(s, c);
  }
  pending_clear(c);
  c->last_index_ms = sc_now_ms();
  char msg[160];
  if (job->result) {
    snprintf(msg, sizeof msg, "%zu files (%zu from the index kept on disk), %zu definitions in "
             "%.0f ms%s", stats.files, stats.cached, stats.definitions, stats.ms,
             stats.partial ? ", partial" : "");
    SC_LOG_INFO("index: %s", msg);
  } else {
    snprintf(msg, sizeof msg, "not indexed: %s", job->err.msg);
    SC_LOG_INFO("index: %s", msg);
  }
  sc_lsp__progress_end(s, progress, msg);
}

void sc_cpl__start_index(sc_lsp_server *s, sc_completer *c) {
  if (!c->root) return;
  index_arg *a = calloc(1, sizeof *a);
  if (!a || !(a->root = strdup(c->root))) {
    free(a);
    return;
  }
  /* A build of another root still running stops between files; its
   * answer is ignored (index_done). */
  if (c->indexing && c->index_job)
    atomic_store(&c->index_job->cancel, (int)SC_JOB_CANCELLED);
  a->c = c;
  a->max_files = (size_t)c->set.index_max_files;
  a->generation = ++c->index_generation;
  const char *pause = getenv("SCULPT_TEST_INDEX_PAUSE_MS");
  if (sc_lsp__options(s)->test_hooks && pause) a->pause_ms = atoi(pause);
  c->indexing = true;
  if (!c->index_state || strcmp(c->index_state, "ready") != 0) {
    c->index_state = "indexing";
    sc_cpl__send_status(s, c);
  }
  a->progress = sc_lsp__progress_begin(s, "index", "sculpt: indexing", c->root, -1);
  c->index_job =
      sc_lsp__post_background_job(s, "sculpt/index", index_job, a, index_arg_free, index_done);
  if (!c->index_job) { /* a is freed */
    c->indexing = false;
    c->index_state = "failed";
  }
}

/* initialize's folder: indexed from the start when it is, or lies in, a
 * git work tree; otherwise (a folder above several repositories, or none)
 * the root waits for the first document (sc_cpl__on_open). */
void sc_cpl__set_root(sc_lsp_server *s, const char *root_uri) {
  sc_completer *c = sc_lsp__feature(s);
  free(c->client_root);
  c->client_root = sc_path_from_file_uri(root_uri);
  char *tree = c->client_root ? sc_workspace_find_root(c->client_root) : NULL;
  free(c->root);
  c->root = tree && c->client_root ? strdup(c->client_root) : NULL;
  free(tree);
}

/* A document opened outside the workspace being indexed (or with none: the
 * client gave no folder, or one above the repositories) moves the
 * workspace to the file's git work tree (libgit2 finds it) or its folder
 * (sc_context_index_root): the editor's folder is only a hint. Once a
 * workspace is indexed, only another work tree moves it: a file in none
 * (VS Code's own settings.json, a header under /usr/include, a scratch
 * file) leaves it where the user's code is, for the documents still open
 * there (didOpen is the only time a root is chosen). */
void sc_cpl__on_open(sc_lsp_server *s, sc_document *d) {
  sc_completer *c = sc_lsp__feature(s);
  char *path = sc_path_from_file_uri(d->uri);
  if (!path) return;
  char *want = sc_context_index_root(path, c->root ? c->root : c->client_root);
  free(path);
  if (!want || (c->root && strcmp(want, c->root) == 0)) {
    free(want);
    return;
  }
  if (c->root) {
    char *tree = sc_workspace_find_root(want);
    bool is_tree = tree != NULL;
    free(tree);
    if (!is_tree) {
      SC_LOG_DEBUG("index: %s is in no git work tree: the workspace stays %s", d->uri, c->root);
      free(want);
      return;
    }
  }
  SC_LOG_INFO("index: the workspace is now %s (for %s)", want, d->uri);
  free(c->root);
  c->root = want;
  c->index_state = "indexing"; /* what the status said was another folder's */
  c->index_files = c->index_cached = 0;
  c->index_partial = false;
  /* Before initialized, the start indexes it. */
  if (c->started) sc_cpl__start_index(s, c);
}

/* uri as the index names it: relative to the root when inside it, else the
 * absolute path, or the URI itself when it is not a file (owned). */
char *sc_cpl__rel_path_of(const sc_completer *c, const char *uri) {
  char *fp = sc_path_from_file_uri(uri);
  if (!fp) return strdup(uri);
  size_t rl = c->root ? strlen(c->root) : 0;
  if (c->root && strncmp(fp, c->root, rl) == 0 && fp[rl] == '/') {
    char *rel = strdup(fp + rl + 1);
    free(fp);
    return rel;
  }
  return fp;
}

typedef struct update_arg {
  sc_completer *c;
  char *rel;
  char *text; /* the buffer, or NULL: read from disk */
  size_t len;
  bool remove;
  bool indexed;
} update_arg;

static void update_arg_free(void *p) {
  update_arg *a = p;
  free(a->rel);
  free(a->text);
  free(a);
}

static json_t *update_job(sc_job *job, void *argp, sc_error *err) {
  update_arg *a = argp;
  /* No index: none was asked for, or building it failed. (While one is
   * built on the background worker, index_done replays the updates that
   * came meanwhile after installing it.) */
  if (!a->c->ws) return json_null();
  if (!a->text) a->c->index_disk_updates++;
  if (a->remove) {
    a->indexed = false;
    sc_workspace_remove_file(a->c->ws, a->rel);
    return json_null();
  }
  if (sc_workspace_update_file(a->c->ws, a->rel, a->text, a->len, &a->indexed, err) != SC_OK)
    return NULL;
  return json_null();
}

static void update_done(sc_lsp_server *s, sc_job *job) {
  update_arg *a = job->arg;
  if (job->result)
    SC_LOG_DEBUG("index: %s %s%s", a->remove ? "removed" : "updated", a->rel,
                 a->remove || a->indexed ? "" : " (not indexed)");
  else if (sc_job_cancelled(job) != SC_JOB_LIVE)
    SC_LOG_DEBUG("index: the update of %s was cancelled (shutdown or a newer edit)", a->rel);
  else
    SC_LOG_WARN("index: %s: %s", a->rel, job->err.msg);
}

static void pending_clear(sc_completer *c) {
  for (size_t i = 0; i < c->n_pending; i++) free(c->pending[i].uri);
  c->n_pending = 0;
  c->pending_lost = false;
}

/* While the index is built, an update is also remembered (the latest per
 * file), to be redone after the install. */
static void remember_update(sc_completer *c, const char *uri, bool buffer, bool remove) {
  for (size_t i = 0; i < c->n_pending; i++)
    if (strcmp(c->pending[i].uri, uri) == 0) {
      c->pending[i].remove = remove;
      c->pending[i].buffer = buffer;
      return;
    }
  if (c->n_pending == c->cap_pending) {
    size_t cap = c->cap_pending ? c->cap_pending * 2 : 16;
    struct pending_update *np = realloc(c->pending, cap * sizeof *np);
    if (!np) {
      c->pending_lost = true;
      return;
    }
    c->pending = np;
    c->cap_pending = cap;
  }
  char *u = strdup(uri);
  if (!u) {
    c->pending_lost = true;
    return;
  }
  c->pending[c->n_pending++] = (struct pending_update){u, remove, buffer};
}

/* Queues an update of uri's index entry (text: borrowed, copied; NULL to
 * read the file from disk) or its removal. Files outside the root are not
 * indexed. */
static void post_update(sc_lsp_server *s, sc_completer *c, const char *uri, const char *text,
                        size_t len, bool remove) {
  if (!c->root) return;
  if (c->indexing) remember_update(c, uri, text != NULL, remove);
  char *rel = sc_cpl__rel_path_of(c, uri);
  if (!rel || rel[0] == '/' || strstr(uri, "file:") != uri) {
    free(rel);
    return;
  }
  update_arg *a = calloc(1, sizeof *a);
  if (!a || (text && !(a->text = malloc(len + 1)))) {
    free(a);
    free(rel);
    return;
  }
  if (text) memcpy(a->text, text, len), a->text[len] = '\0';
  a->c = c;
  a->rel = rel;
  a->len = len;
  a->remove = remove;
  sc_lsp__post_job(s, NULL, "sculpt/indexFile", NULL, update_job, a, update_arg_free,
                   update_done);
}

/* An open document's index entry follows its buffer, at most every 2 s. */
#define INDEX_REFRESH_MS 2000.0
void sc_cpl__maybe_refresh_index(sc_lsp_server *s, sc_completer *c, sc_document *d) {
  double now = sc_now_ms();
  if (!d->index_dirty || !d->lang || d->len > (1u << 20) || now - d->last_index_ms < INDEX_REFRESH_MS)
    return;
  d->index_dirty = false;
  d->last_index_ms = now;
  post_update(s, c, d->uri, d->text, d->len, false);
}

void sc_cpl__on_save(sc_lsp_server *s, const char *uri) {
  post_update(s, sc_lsp__feature(s), uri, NULL, 0, false);
}

void sc_cpl__on_file_changed(sc_lsp_server *s, const char *uri, int type) {
  post_update(s, sc_lsp__feature(s), uri, NULL, 0, type == 3);
}

/* At exit, after the workers stopped: when files were re-read from disk
 * since the index was built (saves, watched files), the index is written
 * to its place on disk so that the next start reuses those files too. Not
 * for buffer refreshes alone: a save leaves their entries out
 * (sc_workspace_save), and the kept index still has those files as on disk. */
void sc_cpl__index_free(sc_completer *c) {
  sc_error err = {0};
  if (c->ws && c->index_disk_updates && sc_workspace_save(c->ws, &err) != SC_OK)
    SC_LOG_WARN("index: not kept for the next start: %s", err.msg);
  sc_workspace_free(c->ws);
  pending_clear(c);
  free(c->pending);
  free(c->root);
  free(c->client_root);
}
