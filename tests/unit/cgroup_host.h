/* A fixture tree's cgroup hierarchies (tests/fixtures/cgroup/) for the
 * cgroup tests. Include after fixture.h. */
#ifndef RT_TEST_CGROUP_HOST_H
#define RT_TEST_CGROUP_HOST_H

#include "cgroup/hier.h"

struct host {
    struct rt_roots roots;
    struct rt_cg_host h;
};

/* The hierarchies of <dir>/proc/self/mountinfo, under <dir>/sys. */
static inline void open_host(struct host *x, const char *dir)
{
    fx_roots(&x->roots, dir);
    assert_int_equal(rt_cg_host_open(&x->h, &x->roots), 0);
}

/* The same for $RT_FIXTURES/<name>. */
static inline void open_fixture(struct host *x, const char *name)
{
    char *dir = fx_path(name);
    open_host(x, dir);
    free(dir);
}

static inline void close_host(struct host *x)
{
    rt_cg_host_close(&x->h);
    rt_roots_close(&x->roots);
}

#endif
