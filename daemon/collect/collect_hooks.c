#include "collect/collect_hooks.h"

#include "rt/util.h"

#include <errno.h>

static uint64_t real_mono(void *ctx)
{
    (void)ctx;
    return rt_mono_ns();
}

static uint64_t real_wall(void *ctx)
{
    (void)ctx;
    return rt_real_ns();
}

static int real_statvfs(const char *path, struct statvfs *out, void *ctx)
{
    (void)ctx;
    return statvfs(path, out) == 0 ? 0 : -errno;
}

void rt_collect_hooks_resolve(struct rt_collect_hooks *out, const struct rt_collect_hooks *h)
{
    *out = h ? *h : (struct rt_collect_hooks){0};
    if (!out->mono_ns)
        out->mono_ns = real_mono;
    if (!out->real_ns)
        out->real_ns = real_wall;
    if (!out->statvfs)
        out->statvfs = real_statvfs;
}
