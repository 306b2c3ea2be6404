#include "jobs/placement.h"

#include "cgroup/cgroup.h"
#include "cgroup/classify.h"
#include "cgroup/make.h"
#include "cgroup/place.h"
#include "rt/util.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

/* Why a process tree, in a few words (truncated where they do not fit). */
__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* Whose cgroup the process is in, when it is someone else's to keep: a
 * Slurm job's, a container's, or one with limits (a unit, a slice). */
static bool held(const struct rt_cg_host *h, const struct rt_cg_paths *p, char *why, size_t size)
{
    for (int k = 0; k < RT_CG_NHIER; k++) {
        struct rt_cg_class c;
        if (!p->path[k] || rt_cg_classify(p->path[k], &c) == RT_CG_KIND_NONE || c.kind == RT_CG_KIND_UNIT)
            continue;
        if (c.kind == RT_CG_KIND_SLURM)
            say(why, size, "it runs in Slurm job %s, whose cgroup's limits and accounting stay in force",
                     c.name);
        else
            say(why, size, "it runs in a %s container, whose cgroup's limits stay in force", c.name);
        return true;
    }
    struct rt_cg_limits l;
    if (rt_cg_limits_of(h, p, &l) < 0)
        return false;
    bool limited = l.mem_max != RT_CG_UNLIMITED || l.mem_high != RT_CG_UNLIMITED || l.cpu_quota_usec != RT_CG_UNLIMITED;
    if (limited)
        say(why, size, "its cgroup %s has limits that must keep holding",
                 l.mem_max_at ? l.mem_max_at : l.mem_high_at ? l.mem_high_at : l.cpu_at);
    rt_cg_limits_free(&l);
    return limited;
}

int rt_place_command(const struct rt_cg_host *h, const struct rt_roots *roots, const struct rt_config *cfg,
                     pid_t pid, uint64_t job_id, struct rt_placement *out)
{
    memset(out, 0, sizeof(*out));
    if (!cfg->cgroup_run) {
        say(out->why, sizeof(out->why), "cgroups.run is false");
        return 0;
    }
    if (h->mode == RT_CG_MODE_NONE) {
        say(out->why, sizeof(out->why), "no cgroup file system is mounted");
        return 0;
    }
    struct rt_cg_paths p;
    int r = rt_cg_pid_paths(roots, pid, &p);
    if (r < 0)
        return r;
    bool keep = held(h, &p, out->why, sizeof(out->why));
    rt_cg_paths_free(&p);
    if (keep)
        return 0;
    if (sd_booted() > 0) {
        say(out->why, sizeof(out->why), "systemd owns the cgroup tree here and this daemon does not ask it "
                                             "for transient scopes yet");
        return 0;
    }
    if (geteuid() != 0) {
        say(out->why, sizeof(out->why), "a daemon that is not root cannot make cgroups without systemd");
        return 0;
    }
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/job-%" PRIu64, strcmp(cfg->cgroup_parent, "/") == 0 ? "" : cfg->cgroup_parent,
                 job_id) >= (int)sizeof(path)) {
        say(out->why, sizeof(out->why), "cgroups.parent is too long");
        return 0;
    }
    r = rt_cg_make(h, path);
    if (r == -EEXIST) { /* left by an earlier daemon with the same job id: cannot be ours */
        rt_cg_remove(h, path);
        r = rt_cg_make(h, path);
    }
    struct rt_cgroup cg;
    if (r == 0 && (r = rt_cgroup_open(&cg, h, path)) == 0) {
        r = rt_cg_attach(&cg, pid);
        rt_cgroup_close(&cg);
    }
    if (r < 0) {
        rt_cg_remove(h, path);
        say(out->why, sizeof(out->why), "cannot make the cgroup %s: %s", path, strerror(-r));
        return r == -ESRCH ? r : 0;
    }
    char norm[4096];
    rt_cg_path_normalize(h, path, norm, sizeof(norm));
    out->cgroup = rt_xstrdup(norm);
    out->made = true;
    return 0;
}

void rt_placement_free(struct rt_placement *p)
{
    free(p->cgroup);
    p->cgroup = NULL;
}
