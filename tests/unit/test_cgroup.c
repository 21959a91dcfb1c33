/* test_cgroup.c — sc_cgroup_available, the memory a container or a service
 * leaves the process, on copies of /proc/self/cgroup and /sys/fs/cgroup
 * written under a temporary root: cgroup v2 (Docker's default since
 * Debian 11 and most distributions), v1, the hybrid layout, nested limits,
 * "max" and v1's "no limit" number, and broken files. The layouts follow
 * the kernel's Documentation/admin-guide/cgroup-v1/memory.rst and
 * cgroup-v2.rst; tests/cli/test_weights.py covers the one this machine
 * has, with a real limit. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_impl.h"
#include "sc_test.h"
#include "sc_test_tmp.h"

static char g_root[256];

static void fresh_root(void) {
  if (g_root[0]) sc_test_remove_tree(g_root);
  if (!sc_test_mkdtemp(g_root, sizeof g_root, "sc-cgroup")) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    exit(1);
  }
}

/* Writes text at g_root/rel, making the folders above it. */
static void put(const char *rel, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", g_root, rel);
  for (char *s = p + strlen(g_root) + 1; (s = strchr(s, '/')); s++) {
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) fprintf(stderr, "mkdir %s failed\n", p);
    *s = '/';
  }
  if (!sc_test_write_at(g_root, rel, text)) fprintf(stderr, "could not write %s\n", p);
}

/* One cgroup's three files under dir (relative to g_root): v2's names, or
 * v1's memory controller's. */
static void group(bool v1, const char *dir, const char *limit, const char *usage,
                  const char *stat) {
  const char *names[3] = {v1 ? "memory.limit_in_bytes" : "memory.max",
                          v1 ? "memory.usage_in_bytes" : "memory.current", "memory.stat"};
  const char *texts[3] = {limit, usage, stat};
  for (int i = 0; i < 3; i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    put(p, texts[i]);
  }
}
#define v2_group(...) group(false, __VA_ARGS__)
#define v1_group(...) group(true, __VA_ARGS__)

#define MiB(x) ((uint64_t)(x) << 20)

/* docker run --memory 1g on a v2 host: a private cgroup namespace, so the
 * process sees "0::/" and its own cgroup mounted at /sys/fs/cgroup. The
 * page cache ("file") counts as free: the kernel reclaims it first. */
static void test_v2_container(void) {
  fresh_root();
  put("proc/self/cgroup", "0::/\n");
  v2_group("sys/fs/cgroup", "1073741824\n", "314572800\n",
           "anon 209715200\nfile 104857600\nkernel 1048576\nfile_mapped 0\n");
  EXPECTF(sc_cgroup_available(g_root) == MiB(1024 - 300 + 100), "%llu",
          (unsigned long long)sc_cgroup_available(g_root));
}

/* A systemd service on a v2 host (MemoryMax= on its slice): the limit sits
 * on a cgroup above the process's, the smallest room wins, "max" is no
 * limit, and a key that only starts like "file" is not the page cache. */
static void test_v2_nested(void) {
  fresh_root();
  put("proc/self/cgroup", "0::/work.slice/sculpt.service\n");
  v2_group("sys/fs/cgroup/work.slice/sculpt.service", "max\n", "104857600\n",
           "file_mapped 0\nfile 0\n");
  v2_group("sys/fs/cgroup/work.slice", "524288000\n", "209715200\n",
           "file_mapped 999999999\nfile 52428800\n");
  /* the host's root cgroup has no memory.max */
  put("sys/fs/cgroup/memory.stat", "file 1\n");
  EXPECT(sc_cgroup_available(g_root) == MiB(500 - 200 + 50));
  /* a tighter limit on the service itself */
  v2_group("sys/fs/cgroup/work.slice/sculpt.service", "209715200\n", "104857600\n",
           "file 10485760\n");
  EXPECT(sc_cgroup_available(g_root) == MiB(200 - 100 + 10));
  /* usage past the limit (the cache already reclaimed): no room, not a
   * wrapped-around huge number */
  v2_group("sys/fs/cgroup/work.slice/sculpt.service", "104857600\n", "157286400\n",
           "file 0\n");
  EXPECT(sc_cgroup_available(g_root) == 0);
}

/* No limit anywhere: v2 "max" on every level, v1's "no limit" number. */
static void test_unlimited(void) {
  fresh_root();
  put("proc/self/cgroup", "0::/user.slice\n");
  v2_group("sys/fs/cgroup/user.slice", "max\n", "104857600\n", "file 0\n");
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
  fresh_root();
  put("proc/self/cgroup", "11:memory:/\n");
  v1_group("sys/fs/cgroup/memory", "9223372036854771712\n", "104857600\n", "total_cache 0\n");
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
}

/* docker --memory on a v1 host without a cgroup namespace: the process's
 * path names the host's cgroup, but the container's own cgroup is mounted
 * at the controller's root, so the walk up finds the limit there. v1
 * counts the page cache of the whole subtree as total_cache ("cache" is
 * this group's own and is not used). */
static void test_v1_container(void) {
  fresh_root();
  put("proc/self/cgroup",
      "12:pids:/docker/0123abc\n"
      "9:cpu,cpuacct:/docker/0123abc\n"
      "4:memory:/docker/0123abc\n"
      "1:name=systemd:/docker/0123abc\n");
  v1_group("sys/fs/cgroup/memory", "2147483648\n", "1073741824\n",
           "cache 1\nrss 536870912\ntotal_cache 536870912\n");
  EXPECT(sc_cgroup_available(g_root) == MiB(2048 - 1024 + 512));
}

/* The hybrid layout (systemd's default on older hosts): memory on v1, and
 * a v2 tree at /sys/fs/cgroup/unified without the memory controller; the
 * memory controller listed among others on one line. */
static void test_hybrid(void) {
  fresh_root();
  put("proc/self/cgroup",
      "5:blkio,memory,devices:/svc\n"
      "0::/svc\n");
  v1_group("sys/fs/cgroup/memory/svc", "314572800\n", "104857600\n", "total_cache 0\n");
  put("sys/fs/cgroup/unified/svc/cgroup.procs", "1\n");
  EXPECT(sc_cgroup_available(g_root) == MiB(300 - 100));
  /* "memoryx" is not the memory controller */
  put("proc/self/cgroup", "5:memoryx:/svc\n0::/svc\n");
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
}

/* What cannot be read is no limit, never a crash or a made-up number: no
 * /proc/self/cgroup, lines without their colons, a path longer than the
 * buffers, empty or non-numeric files, no memory.stat (then no cache). */
static void test_broken(void) {
  fresh_root();
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
  char longpath[2100] = "0::/";
  memset(longpath + 4, 'a', 2000);
  longpath[2004] = '\n';
  longpath[2005] = 0;
  put("proc/self/cgroup", longpath);
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
  put("proc/self/cgroup", "garbage\n:\n4:memory\n\n0::\n");
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
  put("proc/self/cgroup", "0::/a\n");
  v2_group("sys/fs/cgroup/a", "\n", "1\n", "file 0\n");
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
  v2_group("sys/fs/cgroup/a", "1048576\n", "not a number\n", "file 0\n");
  EXPECT(sc_cgroup_available(g_root) == UINT64_MAX);
  char p[512];
  snprintf(p, sizeof p, "%s/sys/fs/cgroup/a/memory.stat", g_root);
  v2_group("sys/fs/cgroup/a", "2097152\n", "1048576\n", "");
  unlink(p);
  EXPECT(sc_cgroup_available(g_root) == MiB(1));
}

/* This machine's own answer is either no limit or at most its memory. */
static void test_this_machine(void) {
  const uint64_t a = sc_cgroup_available("");
  fprintf(stderr, "  this machine's cgroup room: %s%llu\n", a == UINT64_MAX ? "none, " : "",
          (unsigned long long)a);
  EXPECT(a == UINT64_MAX || a < ((uint64_t)1 << 50));
}

int main(void) {
  RUN(test_v2_container);
  RUN(test_v2_nested);
  RUN(test_unlimited);
  RUN(test_v1_container);
  RUN(test_hybrid);
  RUN(test_broken);
  RUN(test_this_machine);
  if (g_root[0]) sc_test_remove_tree(g_root);
  TEST_MAIN_END();
}
