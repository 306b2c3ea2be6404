/* Helpers for collector tests: fixture trees (copied to a temp dir before a
 * test changes them), a controllable monotonic clock, fake statvfs results
 * and a capture of what the code logs to stderr. Include after cmocka.h. */
#ifndef RT_TEST_FIXTURE_H
#define RT_TEST_FIXTURE_H

#include "collect/collect_hooks.h"
#include "system/log.h"
#include "collect/roots.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline const char *fx_fixtures(void)
{
    const char *f = getenv("RT_FIXTURES");
    assert_non_null(f);
    return f;
}

/* $RT_FIXTURES/<name> */
static inline char *fx_path(const char *name)
{
    return rt_xasprintf("%s/%s", fx_fixtures(), name);
}

static inline void fx_sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("command failed (%d): %s", rc, cmd);
}

/* A private copy of fixture <name> in a new temp dir; free with fx_rmtree. */
static inline char *fx_copy(const char *name)
{
    char tmpl[] = "/tmp/rt-fixture-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char *cmd = rt_xasprintf("cp -a '%s/%s/.' '%s/'", fx_fixtures(), name, tmpl);
    fx_sh(cmd);
    free(cmd);
    return rt_xstrdup(tmpl);
}

static inline void fx_rmtree(char *dir)
{
    char *cmd = rt_xasprintf("rm -rf '%s'", dir);
    fx_sh(cmd);
    free(cmd);
    free(dir);
}

/* Write <dir>/<rel> (parents created), replacing it atomically like the
 * kernel's files appear to a reader. */
static inline void fx_write(const char *dir, const char *rel, const char *content)
{
    char *cmd = rt_xasprintf("mkdir -p \"$(dirname '%s/%s')\"", dir, rel);
    fx_sh(cmd);
    free(cmd);
    char *tmp = rt_xasprintf("%s/%s.tmp", dir, rel), *path = rt_xasprintf("%s/%s", dir, rel);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    assert_int_equal(fputs(content, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, path), 0);
    free(tmp);
    free(path);
}

static inline void fx_remove(const char *dir, const char *rel)
{
    char *cmd = rt_xasprintf("rm -rf '%s/%s'", dir, rel);
    fx_sh(cmd);
    free(cmd);
}

/* Open roots <base>/proc and <base>/sys. */
static inline void fx_roots(struct rt_roots *r, const char *base)
{
    char *p = rt_xasprintf("%s/proc", base), *s = rt_xasprintf("%s/sys", base);
    assert_int_equal(rt_roots_open(r, p, s), 0);
    free(p);
    free(s);
}

/* ---- the clock ---- */

static uint64_t fx_now_ns = 1000000000ULL;

static inline uint64_t fx_mono(void *ctx)
{
    (void)ctx;
    return fx_now_ns;
}

static inline uint64_t fx_real(void *ctx)
{
    (void)ctx;
    return 1795310334ULL * RT_NSEC_PER_SEC + 999999999ULL;
}

/* ---- statvfs results by mount point ---- */

struct fx_fs {
    const char *mount_point;
    unsigned long frsize, bsize;
    fsblkcnt_t blocks, bfree, bavail;
    int err; /* -errno to fail */
};

static const struct fx_fs *fx_fs_table;
static unsigned fx_statvfs_calls;

static inline int fx_statvfs(const char *path, struct statvfs *out, void *ctx)
{
    (void)ctx;
    fx_statvfs_calls++;
    for (const struct fx_fs *f = fx_fs_table; f && f->mount_point; f++) {
        if (strcmp(f->mount_point, path) != 0)
            continue;
        if (f->err)
            return f->err;
        memset(out, 0, sizeof(*out));
        out->f_frsize = f->frsize;
        out->f_bsize = f->bsize;
        out->f_blocks = f->blocks;
        out->f_bfree = f->bfree;
        out->f_bavail = f->bavail;
        return 0;
    }
    return -ENOENT;
}

static const struct rt_collect_hooks fx_hooks = {
    .mono_ns = fx_mono, .real_ns = fx_real, .statvfs = fx_statvfs, .ctx = NULL,
};

/* ---- stderr capture (rt_log writes there outside systemd) ---- */

static int fx_saved_stderr = -1;
static char fx_capture_file[64];

static inline void fx_capture_start(void)
{
    fflush(stderr);
    rt_strlcpy(fx_capture_file, "/tmp/rt-stderr-XXXXXX", sizeof(fx_capture_file));
    int fd = mkstemp(fx_capture_file);
    assert_true(fd >= 0);
    fx_saved_stderr = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* Everything logged since fx_capture_start; free() it. */
static inline char *fx_capture_end(void)
{
    fflush(stderr);
    dup2(fx_saved_stderr, STDERR_FILENO);
    close(fx_saved_stderr);
    char *buf = rt_xmalloc(65536);
    int fd = open(fx_capture_file, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, 65535) : -1;
    buf[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
    unlink(fx_capture_file);
    fputs(buf, stderr); /* keep it visible in the test log */
    return buf;
}

static inline int fx_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

#endif
