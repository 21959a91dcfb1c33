/* stdio.c — the server on stdin/stdout, driven by a libev loop.
 * Reads never block the loop (non-blocking pipes); writes are queued and
 * flushed when stdout is writable, so a slow client cannot stall us. A
 * client that can no longer read us (EPIPE on a write, or, for a pipe, its
 * reading end closed while we are idle) ends the session: nothing we do
 * could reach it again. */
#define _POSIX_C_SOURCE 200809L
#include "lsp_impl.h"

#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct stdio_ctx {
  struct ev_loop *loop;
  ev_io in_w, out_w;
  ev_io hup_w;      /* a pipe on stdout: readable-or-error, i.e. its reader is gone */
  ev_async wake_w;
  sc_lsp_server *server;
  char *out;        /* queued output [out_start, out_len) */
  size_t out_start, out_len, out_cap;
  bool out_broken;  /* the client closed our stdout */
  bool in_closed;
} stdio_ctx;

static bool is_pipe_or_socket(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

static void set_nonblocking(int fd, bool on) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return;
  fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* The client closed our stdout: one line on stderr, and the loop ends as
 * after exit (sc_lsp_run_stdio then answers what is in flight, into the
 * void, and frees everything). */
static void out_gone(stdio_ctx *c, const char *why) {
  c->out_start = c->out_len;
  if (c->out_broken) return;
  c->out_broken = true;
  SC_LOG_ERROR("stdout: the client closed it (%s); shutting down", why);
  if (c->loop) ev_break(c->loop, EVBREAK_ALL);
}

/* Writes what it can; returns false once stdout is gone. */
static bool flush_out(stdio_ctx *c) {
  while (c->out_start < c->out_len) {
    ssize_t n = write(STDOUT_FILENO, c->out + c->out_start, c->out_len - c->out_start);
    if (n > 0) {
      c->out_start += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    out_gone(c, n < 0 ? strerror(errno) : "nothing written");
    return false;
  }
  c->out_start = c->out_len = 0;
  return true;
}

static void update_out_watcher(stdio_ctx *c) {
  bool pending = c->out_start < c->out_len && !c->out_broken;
  if (pending && !ev_is_active(&c->out_w)) ev_io_start(c->loop, &c->out_w);
  if (!pending && ev_is_active(&c->out_w)) ev_io_stop(c->loop, &c->out_w);
}

static void on_write(void *user, const char *data, size_t len) {
  stdio_ctx *c = user;
  if (c->out_broken) return;
  if (!sc_queue_append(&c->out, &c->out_start, &c->out_len, &c->out_cap, 65536, data, len)) {
    SC_LOG_ERROR("out of memory queueing %zu bytes of output", len);
    return;
  }
  flush_out(c);
  if (c->loop) update_out_watcher(c);
}

static void on_wake(void *user) {
  stdio_ctx *c = user;
  ev_async_send(c->loop, &c->wake_w);
}

/* Input waits in the pipe while the server parses a long message off the
 * loop (sc_lsp_server_wants_input): our memory holds one message, not
 * whatever the client sends meanwhile. */
static void update_in_watcher(stdio_ctx *c) {
  if (c->in_closed) return;
  bool want = sc_lsp_server_wants_input(c->server);
  if (want && !ev_is_active(&c->in_w)) ev_io_start(c->loop, &c->in_w);
  if (!want && ev_is_active(&c->in_w)) ev_io_stop(c->loop, &c->in_w);
}

static void check_done(stdio_ctx *c) {
  if (sc_lsp_server_done(c->server, NULL)) ev_break(c->loop, EVBREAK_ALL);
}

static void in_cb(struct ev_loop *loop, ev_io *w, int revents) {
  stdio_ctx *c = w->data;
  char buf[65536];
  ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
  if (n > 0) {
    sc_lsp_server_feed(c->server, buf, (size_t)n);
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    if (n < 0) SC_LOG_ERROR("reading stdin: %s", strerror(errno));
    ev_io_stop(loop, w);
    c->in_closed = true;
    sc_lsp_server_eof(c->server);
  }
  update_in_watcher(c);
  update_out_watcher(c);
  check_done(c);
}

static void out_cb(struct ev_loop *loop, ev_io *w, int revents) {
  stdio_ctx *c = w->data;
  flush_out(c);
  update_out_watcher(c);
}

/* stdout is a pipe: it never becomes readable, so this fires only when
 * poll reports an error on it, which for a pipe means no reader is left. */
static void hup_cb(struct ev_loop *loop, ev_io *w, int revents) {
  stdio_ctx *c = w->data;
  struct pollfd p = {STDOUT_FILENO, POLLOUT, 0};
  if (poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP))) {
    ev_io_stop(loop, w);
    out_gone(c, strerror(EPIPE));
  } else {
    ev_io_stop(loop, w); /* not what we watch for: do not spin on it */
  }
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents) {
  stdio_ctx *c = w->data;
  sc_lsp_server_drain(c->server);
  update_in_watcher(c);
  update_out_watcher(c);
  check_done(c);
}

int sc_lsp_run_stdio(const sc_lsp_options *opts) {
  /* A client that goes away must not kill us mid-write: EPIPE is handled. */
  signal(SIGPIPE, SIG_IGN);
  stdio_ctx c;
  memset(&c, 0, sizeof c);
  c.loop = ev_loop_new(EVFLAG_AUTO);
  if (!c.loop) {
    SC_LOG_ERROR("cannot create the event loop");
    return 1;
  }
  bool in_nb = is_pipe_or_socket(STDIN_FILENO), out_nb = is_pipe_or_socket(STDOUT_FILENO);
  if (in_nb) set_nonblocking(STDIN_FILENO, true);
  if (out_nb) set_nonblocking(STDOUT_FILENO, true);

  /* Decided once at start so that the user sees in the log where model work
   * will run (and why not on the GPU, when it was asked for). */
  sc_device_choice device;
  sc_device_select(opts->device, &device);
  SC_LOG_INFO("sculpt %s; device %s", sc_version(), device.description);

  c.server = sc_lsp_server_new(opts, on_write, on_wake, &c);
  if (!c.server) {
    SC_LOG_ERROR("out of memory starting the server");
    ev_loop_destroy(c.loop);
    return 1;
  }
  sc_lsp__set_loop(c.server, c.loop); /* the remote backend's HTTP runs on it */
  ev_io_init(&c.in_w, in_cb, STDIN_FILENO, EV_READ);
  ev_io_init(&c.out_w, out_cb, STDOUT_FILENO, EV_WRITE);
  ev_async_init(&c.wake_w, wake_cb);
  c.in_w.data = c.out_w.data = c.wake_w.data = &c;
  ev_io_start(c.loop, &c.in_w);
  ev_async_start(c.loop, &c.wake_w);
  struct stat st_out;
  if (fstat(STDOUT_FILENO, &st_out) == 0 && S_ISFIFO(st_out.st_mode)) {
    /* Only a pipe: a socket on stdout is usually stdin's too (its EOF ends
     * us), and a write to a closed one fails with EPIPE like a pipe's. */
    ev_io_init(&c.hup_w, hup_cb, STDOUT_FILENO, EV_READ);
    c.hup_w.data = &c;
    ev_io_start(c.loop, &c.hup_w);
  }

  ev_run(c.loop, 0);

  int code = 1; /* also when stdout broke: the client left without exit */
  sc_lsp_server_done(c.server, &code);
  sc_lsp_server_finish(c.server);
  /* Whatever is still queued goes out before we leave. */
  if (out_nb) set_nonblocking(STDOUT_FILENO, false);
  flush_out(&c);
  sc_lsp_server_free(c.server);
  if (in_nb) set_nonblocking(STDIN_FILENO, false);
  ev_loop_destroy(c.loop);
  free(c.out);
  return code;
}
