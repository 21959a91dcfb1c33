/* exec.c — the executor: untrusted Python programs (a model's middle inside
 * HumanEval's prompt, suffix and tests), each run once in its own process,
 * several at a time, and judged (eval.h, sc_eval_execute).
 *
 * The rules are openai/human-eval-infilling's (README and execution.py,
 * read, not copied): the program is prompt + completion + suffix + "\n" +
 * test + "\n" + "check(entry_point)", 3 s per program, the result "passed",
 * "timed out" or "failed: ...". How it is run is ours:
 *
 *   sculpt ── fork ── A ── unshare(user?, mount, net, PID, IPC, UTS) ── fork ── B
 *   B: mounts /proc, as root drops to its slot's uid, exec python3 -I -B -c HARNESS
 *
 * A makes the namespaces: every mount read-only (mount_setattr, recursive)
 * but the program's folder, a tmpfs of disk_bytes; no network (a new
 * network namespace has only a loopback that is down); B is PID 1 of a new
 * PID namespace, so when it ends the kernel kills every process it left. A
 * waits for B and exits with its status. As root, B runs as a uid of its
 * own (one per job slot, from a range no account uses), so RLIMIT_NPROC
 * bounds a fork bomb per slot and it owns nothing outside its folder; as
 * another user, A first makes a user namespace that maps that user to uid
 * 1000 inside (the capabilities it gets there end at exec). Where the
 * kernel refuses namespaces (probed once per process), the program runs
 * with the rlimits and a process group only, in a plain temp folder, and
 * sc_eval_sandbox() says so.
 *
 * Limits in B: RLIMIT_CPU (the timeout plus one second), RLIMIT_AS
 * (memory_bytes), RLIMIT_FSIZE (disk_bytes), RLIMIT_NPROC, RLIMIT_NOFILE,
 * no core files, no new privileges. The wall clock is ours: the harness
 * says "S" when it starts, and timeout_s later its process group is killed
 * ("timed out"), as the harness's time_limit around exec() would.
 *
 * The verdict: the harness reads a nonce on stdin (16 random bytes, hex),
 * puts /dev/null in its place, and after exec() of the program returns
 * writes "P" + nonce on fd 3, a pipe of ours, then exits 0; an exception
 * (SystemExit included) writes "F" + its name and exits 1. A program passes
 * only on exactly "S", "P" + nonce and exit status 0. What it prints goes
 * to /dev/null and is never read, and without the nonce it cannot write a
 * pass; the nonce lives in the harness's memory, which a program that
 * inspects its caller's frames could read: that is the residual risk,
 * beyond what a model's middle does by accident. Setup errors travel on a
 * close-on-exec pipe, so that a program cannot fake one either. */
#define _GNU_SOURCE
#include "eval.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_S 3.0
#define DEFAULT_MEMORY (1ul << 30)
#define DEFAULT_DISK (16ul << 20)
#define START_GRACE_MS 10000.0 /* interpreter start, before the harness says "S" */
#define NPROC_LIMIT 32
#define INSIDE_UID 1000        /* the program's uid inside a user namespace */
/* As root: job slot k runs as SLOT_UID_BASE + k, a range no account uses
 * (uid_t is 32 bits; 2^32 - 1 is the invalid uid). */
#define SLOT_UID_BASE 4000000000u
#define SETUP_FAILED 125

/* The harness, run as `python3 -I -B -c HARNESS` in the program's folder. */
static const char k_harness[] =
    "import os, sys\n"
    "def _sculpt_main():\n"
    "    res = os.fdopen(3, 'wb', buffering=0)\n"
    "    os.set_inheritable(3, False)\n"
    "    res.write(b'S')\n"
    "    nonce = sys.stdin.buffer.readline().strip()\n"
    "    fd = os.open(os.devnull, os.O_RDONLY)\n"
    "    os.dup2(fd, 0)\n"
    "    os.close(fd)\n"
    "    with open('program.py', encoding='utf-8', errors='surrogateescape') as f:\n"
    "        src = f.read()\n"
    "    try:\n"
    "        exec(compile(src, 'program.py', 'exec'), {'__name__': '__main__'})\n"
    "    except BaseException as e:\n"
    "        why = type(e).__name__ + (': ' + str(e) if str(e) else '')\n"
    "        res.write(b'F' + why[:150].encode('utf-8', 'replace').replace(b'\\n', b' '))\n"
    "        os._exit(1)\n"
    "    res.write(b'P' + nonce)\n"
    "    os._exit(0)\n"
    "_sculpt_main()\n";

typedef enum level { LEVEL_UNKNOWN = 0, LEVEL_NAMESPACES, LEVEL_NONE } level;
static _Atomic int g_level = LEVEL_UNKNOWN;
static char g_none_why[160];

const char *sc_eval_sandbox(void) {
  static char buf[320];
  switch (atomic_load(&g_level)) {
  case LEVEL_NAMESPACES:
    return geteuid() == 0
               ? "namespaces (mount, PID, network, IPC): read-only file system but a tmpfs "
                 "folder, no network, a uid per job"
               : "namespaces (user, mount, PID, network, IPC): read-only file system but a "
                 "tmpfs folder, no network";
  case LEVEL_NONE:
    snprintf(buf, sizeof buf,
             "rlimits and a process group only (%s): the file system and the network are "
             "open to the programs",
             g_none_why);
    return buf;
  default:
    return "not used yet";
  }
}

/* What one child needs; filled before fork (the child reads its copy). */
typedef struct spec {
  const char *program;
  size_t len;
  const char *python; /* absolute */
  const char *dir;
  char nonce[40];
  int res_w, err_w; /* pipe ends the child writes (result: fd 3; errors: cloexec) */
  double timeout_s;
  size_t memory, disk;
  uid_t uid;   /* as root: the job slot's uid */
  uid_t outer_uid;
  gid_t outer_gid;
  level lvl;
  long user_procs; /* the user's processes when the run began (no namespaces) */
  int jobs;
  bool probe;  /* set up, then exit 0 without running anything */
} spec;

/* ---- the child (after fork: async-signal-safe calls only) ------------------------------- */

static __attribute__((noreturn)) void child_fail(int fd, const char *what) {
  char buf[200];
  int n = snprintf(buf, sizeof buf, "%s: %s", what, strerror(errno));
  if (n > 0 && write(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0) {
  }
  _exit(SETUP_FAILED);
}

static bool write_file(const char *path, const char *s) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t n = strlen(s);
  bool ok = write(fd, s, n) == (ssize_t)n;
  close(fd);
  return ok;
}

static bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* A: the namespaces and the mounts. Returns in B (or in A's only process
 * without namespaces); A itself ends here with B's status. */
static void enter_sandbox(const spec *s) {
  int fd_err = s->err_w;
  bool as_root = s->outer_uid == 0;
  int flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
  if (!as_root) flags |= CLONE_NEWUSER;
  if (unshare(flags) != 0) child_fail(fd_err, "unshare");
  if (!as_root) {
    /* Map this user to INSIDE_UID: the only mapping an unprivileged
     * process may write for itself. */
    char map[64];
    snprintf(map, sizeof map, "%u %u 1\n", INSIDE_UID, (unsigned)s->outer_uid);
    if (!write_file("/proc/self/uid_map", map)) child_fail(fd_err, "uid_map");
    if (!write_file("/proc/self/setgroups", "deny")) child_fail(fd_err, "setgroups");
    snprintf(map, sizeof map, "%u %u 1\n", INSIDE_UID, (unsigned)s->outer_gid);
    if (!write_file("/proc/self/gid_map", map)) child_fail(fd_err, "gid_map");
  }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) child_fail(fd_err, "mount private");
  /* Not nodev: /dev/null must still open. */
  struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID};
  if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof ro) != 0)
    child_fail(fd_err, "read-only mounts");
  char opts[96];
  snprintf(opts, sizeof opts, "size=%zu,nr_inodes=4096,mode=0700,uid=%u,gid=%u", s->disk,
           as_root ? (unsigned)s->uid : INSIDE_UID, as_root ? (unsigned)s->uid : INSIDE_UID);
  if (mount("tmpfs", s->dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
    child_fail(fd_err, "tmpfs");
  pid_t b = fork();
  if (b < 0) child_fail(fd_err, "fork");
  if (b > 0) {
    /* A: only waits. Its copies of the pipes go, so that their ends are
     * B's alone. */
    close(s->res_w);
    close(s->err_w);
    int st = 0;
    while (waitpid(b, &st, 0) < 0 && errno == EINTR) {
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
  }
  /* B, PID 1 of the new namespace: its own /proc, so that it sees and
   * signals only its own processes (best effort: a /proc with parts masked
   * by the container refuses it). */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

static void drop_privileges(const spec *s) {
  if (s->outer_uid != 0) return; /* a user namespace, or an ordinary user already */
  gid_t g = (gid_t)s->uid;
  if (setgroups(0, NULL) != 0 || setresgid(g, g, g) != 0 || setresuid(s->uid, s->uid, s->uid) != 0)
    child_fail(s->err_w, "setuid");
}

static void set_limit(int fd_err, int what, rlim_t soft, rlim_t hard) {
  struct rlimit r = {soft, hard};
  if (setrlimit(what, &r) != 0) child_fail(fd_err, "setrlimit");
}

static __attribute__((noreturn)) void run_child(const spec *s) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (s->lvl == LEVEL_NAMESPACES) enter_sandbox(s);
  /* Into the folder before dropping to the program's uid: a private
   * TMPDIR (mode 0700 on the way) is ours to enter, not its. */
  if (chdir(s->dir) != 0) child_fail(s->err_w, "chdir");
  drop_privileges(s);
  if (s->probe) _exit(0);
  int fd = open("program.py", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || !write_all(fd, s->program, s->len) || close(fd) != 0)
    child_fail(s->err_w, "program.py");
  /* stdin: the nonce; fd 3: the result; 1 and 2: nowhere. Both pipe ends
   * first move above the low numbers, so that no dup2 below clobbers one. */
  int err_fd = fcntl(s->err_w, F_DUPFD_CLOEXEC, 10);
  int res_fd = err_fd >= 0 ? fcntl(s->res_w, F_DUPFD_CLOEXEC, 10) : -1;
  if (res_fd < 0) child_fail(s->err_w, "fcntl");
  int in[2];
  if (pipe(in) != 0) child_fail(err_fd, "pipe");
  size_t nl = strlen(s->nonce);
  if (!write_all(in[1], s->nonce, nl) || !write_all(in[1], "\n", 1)) child_fail(err_fd, "nonce");
  close(in[1]);
  int null = open("/dev/null", O_RDWR);
  /* dup2 to another number clears close-on-exec on the copy. */
  if (null < 0 || dup2(in[0], 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
      dup2(res_fd, 3) < 0)
    child_fail(err_fd, "dup2");
  for (int f = 4; f < 1024; f++)
    if (f != err_fd) close(f);
  /* The program's limits. */
  rlim_t cpu = (rlim_t)s->timeout_s + 1;
  set_limit(err_fd, RLIMIT_CPU, cpu, cpu + 1);
  set_limit(err_fd, RLIMIT_AS, s->memory, s->memory);
  set_limit(err_fd, RLIMIT_FSIZE, s->disk, s->disk);
  set_limit(err_fd, RLIMIT_CORE, 0, 0);
  set_limit(err_fd, RLIMIT_NOFILE, 256, 256);
  /* Processes are counted per user (per user namespace): a slot's uid or
   * the namespace's have the program's alone; an ordinary user's own
   * without namespaces has all of theirs, so the bound is what they had
   * when the run began plus the programs' share. */
  rlim_t nproc = s->lvl == LEVEL_NAMESPACES || s->outer_uid == 0
                     ? NPROC_LIMIT : (rlim_t)s->user_procs + NPROC_LIMIT * (rlim_t)s->jobs;
  set_limit(err_fd, RLIMIT_NPROC, nproc, nproc);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail(err_fd, "no_new_privs");
  char env_home[256];
  snprintf(env_home, sizeof env_home, "HOME=%s", s->dir);
  char env_tmp[256];
  snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", s->dir);
  char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", env_home, env_tmp, "LANG=C.UTF-8",
                  "LC_ALL=C.UTF-8", NULL};
  char *argv[] = {(char *)s->python, "-I", "-B", "-c", (char *)k_harness, NULL};
  execve(s->python, argv, envp);
  child_fail(err_fd, "exec");
}

/* ---- the parent ---------------------------------------------------------------------- */

typedef struct job {
  pid_t pid;       /* 0: the slot is free */
  size_t idx;
  int res_r, err_r;
  char res[256];
  size_t res_len;
  char err[256];
  size_t err_len;
  bool res_eof, err_eof, exited, timed_out, started;
  int status;
  double t_fork, t_start;
  char dir[4096];
  char nonce[40];
} job;

static bool make_nonce(char out[40]) {
  unsigned char r[16];
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) return false;
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", r[i]);
  return true;
}

/* Whether path (resolved) is a file others may execute, in folders others
 * may enter: what a program's own uid needs when we run as root and drop
 * to it (a python3 under /root, e.g. a pyenv shim, is not). */
static bool others_can_run(const char *path) {
  char real[4096];
  if (!realpath(path, real)) return false;
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXOTH)) return false;
  for (char *p = strrchr(real, '/'); p && p > real; p = strrchr(real, '/')) {
    *p = '\0';
    if (stat(real, &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
  }
  return true;
}

static bool can_run(const char *path, bool as_root) {
  return access(path, X_OK) == 0 && (!as_root || others_can_run(path));
}

/* The interpreter's absolute path: name itself when it has a slash, else
 * the first match on $PATH that the program's uid can run. malloc'd; NULL
 * when there is none. */
static char *find_python(const char *name, bool as_root) {
  if (strchr(name, '/')) return can_run(name, as_root) ? strdup(name) : NULL;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char buf[4096];
    if (n > 0 && n + strlen(name) + 2 < sizeof buf) {
      snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, name);
      if (can_run(buf, as_root)) return strdup(buf);
    }
    p += n + (e ? 1 : 0);
  }
  return NULL;
}

/* The processes uid has now (the owners of /proc's entries). */
static long count_processes(uid_t uid) {
  DIR *d = opendir("/proc");
  long n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char p[64];
    struct stat st;
    snprintf(p, sizeof p, "/proc/%s", e->d_name);
    if (stat(p, &st) == 0 && st.st_uid == uid) n++;
  }
  if (d) closedir(d);
  return n;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (type == FTW_DP) rmdir(path);
  else unlink(path);
  return 0;
}

/* The program's folder after it ran: empty where a tmpfs held its files
 * (it went with the namespace); else removed with what is in it, links
 * not followed. */
static void remove_dir(const char *dir) {
  if (rmdir(dir) == 0) return;
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void drain(int *fd, char *buf, size_t *len, size_t cap, bool *eof) {
  while (*fd >= 0) {
    char tmp[256];
    ssize_t r = read(*fd, tmp, sizeof tmp);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) return;
    if (r <= 0) {
      close(*fd);
      *fd = -1;
      *eof = true;
      return;
    }
    size_t take = (size_t)r < cap - 1 - *len ? (size_t)r : cap - 1 - *len;
    memcpy(buf + *len, tmp, take);
    *len += take;
    buf[*len] = '\0';
  }
}

static sc_status start_job(job *j, spec *s, const char *tmp_root, size_t slot, sc_error *err) {
  memset(j, 0, sizeof *j);
  j->res_r = j->err_r = -1;
  snprintf(j->dir, sizeof j->dir, "%s/sculpt-eval-XXXXXX", tmp_root);
  if (!mkdtemp(j->dir))
    return sc_error_set(err, SC_ERR_IO, "cannot make a folder in %s: %s", tmp_root,
                        strerror(errno));
  if (s->outer_uid == 0 && s->lvl == LEVEL_NONE) {
    /* Its own uid owns its folder (there is no tmpfs to own). */
    if (chown(j->dir, SLOT_UID_BASE + (uid_t)slot, SLOT_UID_BASE + (gid_t)slot) != 0) {
      rmdir(j->dir);
      return sc_error_set(err, SC_ERR_IO, "chown %s: %s", j->dir, strerror(errno));
    }
  }
  if (!make_nonce(j->nonce)) {
    rmdir(j->dir);
    return sc_error_set(err, SC_ERR_IO, "getrandom: %s", strerror(errno));
  }
  int res[2], er[2];
  if (pipe2(res, O_CLOEXEC) != 0) {
    rmdir(j->dir);
    return sc_error_set(err, SC_ERR_IO, "pipe: %s", strerror(errno));
  }
  if (pipe2(er, O_CLOEXEC) != 0) {
    close(res[0]);
    close(res[1]);
    rmdir(j->dir);
    return sc_error_set(err, SC_ERR_IO, "pipe: %s", strerror(errno));
  }
  s->dir = j->dir;
  memcpy(s->nonce, j->nonce, sizeof s->nonce);
  s->res_w = res[1];
  s->err_w = er[1];
  s->uid = SLOT_UID_BASE + (uid_t)slot;
  j->t_fork = sc_now_ms();
  pid_t pid = fork();
  if (pid == 0) run_child(s); /* never returns */
  close(res[1]);
  close(er[1]);
  if (pid < 0) {
    close(res[0]);
    close(er[0]);
    rmdir(j->dir);
    return sc_error_set(err, SC_ERR_IO, "fork: %s", strerror(errno));
  }
  fcntl(res[0], F_SETFL, O_NONBLOCK);
  fcntl(er[0], F_SETFL, O_NONBLOCK);
  j->pid = pid;
  j->res_r = res[0];
  j->err_r = er[0];
  return SC_OK;
}

static void kill_job(job *j) {
  if (j->pid > 0) {
    kill(-j->pid, SIGKILL);
    kill(j->pid, SIGKILL);
  }
}

static const char *signal_words(int sig) {
  switch (sig) {
  case SIGKILL: return "killed (SIGKILL)";
  case SIGXCPU: return "killed by its CPU time limit (SIGXCPU)";
  case SIGXFSZ: return "killed by its file size limit (SIGXFSZ)";
  case SIGSEGV: return "crashed (SIGSEGV)";
  case SIGABRT: return "aborted (SIGABRT)";
  default: return NULL;
  }
}

/* The verdict of a finished job; false with err for a setup failure. */
static bool judge(job *j, sc_eval_verdict *v, sc_error *err) {
  v->ms = sc_now_ms() - j->t_fork;
  if (j->err_len > 0) {
    sc_error_set(err, SC_ERR_INTERNAL, "the sandbox could not start a program: %s", j->err);
    return false;
  }
  if (j->timed_out) {
    v->passed = false;
    snprintf(v->result, sizeof v->result, "timed out");
    return true;
  }
  int code = WIFEXITED(j->status) ? WEXITSTATUS(j->status) : 128 + WTERMSIG(j->status);
  char pass[64];
  snprintf(pass, sizeof pass, "SP%s", j->nonce);
  if (code == 0 && strcmp(j->res, pass) == 0) {
    v->passed = true;
    snprintf(v->result, sizeof v->result, "passed");
    return true;
  }
  v->passed = false;
  if (j->res_len >= 2 && j->res[0] == 'S' && j->res[1] == 'F' && code == 1) {
    snprintf(v->result, sizeof v->result, "failed: %s", j->res + 2);
  } else if (code >= 128) {
    const char *w = signal_words(code - 128);
    if (w) snprintf(v->result, sizeof v->result, "failed: %s", w);
    else snprintf(v->result, sizeof v->result, "failed: killed by signal %d", code - 128);
  } else {
    snprintf(v->result, sizeof v->result,
             "failed: exited with status %d before its tests ran to the end", code);
  }
  return true;
}

/* One child that sets the namespaces up and exits: they work here or not. */
static level probe_level(spec base, const char *tmp_root) {
  base.lvl = LEVEL_NAMESPACES;
  base.probe = true;
  job j;
  if (start_job(&j, &base, tmp_root, 0, NULL) != SC_OK) return LEVEL_NONE;
  int st = 0;
  while (waitpid(j.pid, &st, 0) < 0 && errno == EINTR) {
  }
  fcntl(j.err_r, F_SETFL, 0);
  drain(&j.err_r, j.err, &j.err_len, sizeof j.err, &j.err_eof);
  if (j.res_r >= 0) close(j.res_r);
  remove_dir(j.dir);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && j.err_len == 0) return LEVEL_NAMESPACES;
  snprintf(g_none_why, sizeof g_none_why, "%s", j.err_len ? j.err : "the probe failed");
  return LEVEL_NONE;
}

sc_status sc_eval_execute(const sc_eval_exec_options *o, const char *const *programs,
                          const size_t *lens, size_t n, sc_eval_verdict *out, sc_error *err) {
  sc_eval_exec_options d = {0};
  if (!o) o = &d;
  const char *py_name = o->python ? o->python : getenv("SCULPT_PYTHON");
  if (!py_name || !*py_name) py_name = "python3";
  char *python = find_python(py_name, geteuid() == 0);
  SC_CHECK(python, err, SC_ERR_UNSUPPORTED,
           "no %s that the tests' own uid may run (on $PATH, outside folders only their "
           "owner may enter; set SCULPT_PYTHON)",
           py_name);
  const char *tmp_root = getenv("TMPDIR");
  if (!tmp_root || !*tmp_root) tmp_root = "/tmp";
  spec base = {0};
  base.python = python;
  base.timeout_s = o->timeout_s > 0 ? o->timeout_s : DEFAULT_TIMEOUT_S;
  base.memory = o->memory_bytes ? o->memory_bytes : DEFAULT_MEMORY;
  base.disk = o->disk_bytes ? o->disk_bytes : DEFAULT_DISK;
  base.outer_uid = geteuid();
  base.outer_gid = getegid();
  if (atomic_load(&g_level) == LEVEL_UNKNOWN) {
    /* SCULPT_EVAL_NO_NAMESPACES=1 takes the way a kernel without them
     * leaves (tests/eval/test_executor.py runs both). */
    const char *no_ns = getenv("SCULPT_EVAL_NO_NAMESPACES");
    if (no_ns && strcmp(no_ns, "1") == 0) {
      snprintf(g_none_why, sizeof g_none_why, "SCULPT_EVAL_NO_NAMESPACES=1");
      atomic_store(&g_level, LEVEL_NONE);
    } else {
      atomic_store(&g_level, probe_level(base, tmp_root));
    }
  }
  base.lvl = (level)atomic_load(&g_level);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int jobs = o->jobs > 0 ? o->jobs : (cpus > 0 ? (int)cpus : 1);
  if (jobs > 64) jobs = 64;
  base.jobs = jobs;
  if (base.lvl == LEVEL_NONE && base.outer_uid != 0)
    base.user_procs = count_processes(base.outer_uid);
  job *slots = calloc((size_t)jobs, sizeof *slots);
  struct pollfd *pfd = calloc((size_t)jobs * 2, sizeof *pfd);
  if (!slots || !pfd) {
    free(slots);
    free(pfd);
    free(python);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  sc_status st = SC_OK;
  size_t next = 0, done = 0;
  int active = 0;
  double timeout_ms = base.timeout_s * 1000.0;
  while ((next < n && st == SC_OK) || active > 0) {
    bool stop = st != SC_OK || (o->cancel && atomic_load(o->cancel));
    if (stop && st == SC_OK) st = sc_error_set(err, SC_ERR_CANCELLED, "cancelled");
    for (int k = 0; k < jobs && !stop && next < n; k++) {
      if (slots[k].pid) continue;
      spec s = base;
      s.program = programs[next];
      s.len = lens[next];
      if ((st = start_job(&slots[k], &s, tmp_root, (size_t)k, err)) != SC_OK) break;
      slots[k].idx = next++;
      active++;
    }
    /* Wait for output or the nearest deadline (at most 50 ms, to reap). */
    int np = 0;
    double now = sc_now_ms(), wait_ms = 50;
    for (int k = 0; k < jobs; k++) {
      job *j = &slots[k];
      if (!j->pid) continue;
      if (j->res_r >= 0) pfd[np++] = (struct pollfd){j->res_r, POLLIN, 0};
      if (j->err_r >= 0) pfd[np++] = (struct pollfd){j->err_r, POLLIN, 0};
      double deadline = j->started ? j->t_start + timeout_ms : j->t_fork + START_GRACE_MS;
      if (deadline - now < wait_ms) wait_ms = deadline - now;
    }
    if (np > 0) poll(pfd, (nfds_t)np, wait_ms > 0 ? (int)wait_ms + 1 : 0);
    else if (active > 0) usleep(1000);
    now = sc_now_ms();
    for (int k = 0; k < jobs; k++) {
      job *j = &slots[k];
      if (!j->pid) continue;
      drain(&j->res_r, j->res, &j->res_len, sizeof j->res, &j->res_eof);
      drain(&j->err_r, j->err, &j->err_len, sizeof j->err, &j->err_eof);
      if (!j->started && j->res_len > 0) {
        j->started = true;
        j->t_start = now;
      }
      if (!j->exited) {
        int status = 0;
        pid_t w = waitpid(j->pid, &status, WNOHANG);
        if (w == j->pid) {
          j->exited = true;
          j->status = status;
          /* What it left in the group (no PID namespace) goes with it. */
          kill(-j->pid, SIGKILL);
        }
      }
      double deadline = j->started ? j->t_start + timeout_ms : j->t_fork + START_GRACE_MS;
      if (!j->exited && now > deadline) {
        j->timed_out = true;
        kill_job(j);
        int status = 0;
        while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR) {
        }
        j->exited = true;
        j->status = status;
      }
      if (!j->exited) continue;
      /* Exited: what is left in the pipes is read at once (a writer that
       * outlived it, without a PID namespace, is not waited for). */
      if (j->res_r >= 0) fcntl(j->res_r, F_SETFL, O_NONBLOCK);
      drain(&j->res_r, j->res, &j->res_len, sizeof j->res, &j->res_eof);
      drain(&j->err_r, j->err, &j->err_len, sizeof j->err, &j->err_eof);
      if (j->res_r >= 0) close(j->res_r);
      if (j->err_r >= 0) close(j->err_r);
      j->res_r = j->err_r = -1;
      if (st == SC_OK && !judge(j, &out[j->idx], err)) st = SC_ERR_INTERNAL;
      remove_dir(j->dir);
      j->pid = 0;
      active--;
      done++;
      if (o->progress && st == SC_OK) o->progress(o->user, done, n);
    }
    if (st != SC_OK) {
      /* Stop the rest at once. */
      for (int k = 0; k < jobs; k++)
        if (slots[k].pid) kill_job(&slots[k]);
    }
  }
  free(slots);
  free(pfd);
  free(python);
  return st;
}
