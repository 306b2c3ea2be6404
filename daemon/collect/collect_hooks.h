/* Injection points for the host collectors: the clocks and statvfs. The
 * daemon passes NULL (real clocks, real statvfs); fixture tests pass their own
 * so rates and mount sizes come out as exact numbers. */
#ifndef RT_COLLECT_HOOKS_H
#define RT_COLLECT_HOOKS_H

#include <stdint.h>
#include <sys/statvfs.h>

struct rt_collect_hooks {
    uint64_t (*mono_ns)(void *ctx);   /* CLOCK_MONOTONIC, ns */
    uint64_t (*real_ns)(void *ctx);   /* wall clock, ns since the epoch */
    /* statvfs(2) of a mount point: 0, or -errno. */
    int (*statvfs)(const char *path, struct statvfs *out, void *ctx);
    void *ctx;
};

/* Copy h into out, filling every NULL member (or everything, when h is NULL)
 * with the real implementation. */
void rt_collect_hooks_resolve(struct rt_collect_hooks *out, const struct rt_collect_hooks *h);

#endif
