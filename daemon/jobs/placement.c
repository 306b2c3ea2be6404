#include "jobs/placement.h"

#include "cgroup/cgroup.h"
#include "cgroup/classify.h"
#include "cgroup/make.h"
#include "cgroup/place.h"
#include "rt/util.h"
#include "system/sdunit.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

/* systemd answers in milliseconds; the command waits meanwhile, and so do
 * the daemon's other clients. */
#define SCOPE_TIMEOUT_USEC (3 * 1000000ull)

/* Why a process tree, in a few words (truncated where they do not fit). */
__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

static bool ends_with(const char *s, const char *lit)
{
    size_t n = strlen(s), l = strlen(lit);
    return n > l && strcmp(s + n - l, lit) == 0;
}

/* Whose cgroup the process is in, when it is someone else's to keep: a
 * Slurm job's or a container's. */
static bool foreign(const struct rt_cg_paths *p, char *why, size_t size)
{
    for (int k = 0; k < RT_CG_NHIER; k++) {
        struct rt_cg_class c;
        if (!p->path[k] || rt_cg_classify(p->path[k], &c) == RT_CG_KIND_NONE || c.kind == RT_CG_KIND_UNIT)
            continue;
        if (c.kind == RT_CG_KIND_SLURM)
            say(why, size, "it runs in Slurm job %s, whose cgroup's limits and accounting stay in force", c.name);
        else
            say(why, size, "it runs in a %s container, whose cgroup's limits stay in force", c.name);
        return true;
    }
    return false;
}

/* Whether at is stays or above it: a limit there holds after the move. */
static bool above(const char *at, const char *stays)
{
    size_t n = strlen(at);
    return stays && (strcmp(at, "/") == 0 || (strncmp(at, stays, n) == 0 && (stays[n] == '\0' || stays[n] == '/')));
}

/* Whether a limit of the process's cgroups (a unit's, a slice's) would no
 * longer hold once it is moved under stays (NULL: out of them all). */
static bool limited(const struct rt_cg_host *h, const struct rt_cg_paths *p, const char *stays, char *why,
                    size_t size)
{
    struct rt_cg_limits l;
    if (rt_cg_limits_of(h, p, &l) < 0)
        return false;
    const char *at = l.mem_max_at && !above(l.mem_max_at, stays)     ? l.mem_max_at
                     : l.mem_high_at && !above(l.mem_high_at, stays) ? l.mem_high_at
                     : l.cpu_at && !above(l.cpu_at, stays)           ? l.cpu_at
                                                                     : NULL;
    if (at)
        say(why, size, "its cgroup %s has limits that must keep holding", at);
    rt_cg_limits_free(&l);
    return at != NULL;
}

/* Where systemd runs the host, its units own the tree: the command gets a
 * transient scope (as systemd-run --scope makes one) in the slice it runs in
 * now, so the slice's limits keep holding, on the manager that owns that
 * slice. Only out of a scope: a service's processes are the service's, which
 * systemd accounts for and stops together. */
static int systemd_scope(const struct rt_cg_host *h, const struct rt_cg_paths *p, const struct rt_config *cfg,
                         pid_t pid, pid_t keeper, uint64_t job_id, struct rt_placement *out)
{
    const char *path = p->path[RT_CG_V2];
    for (int k = 0; !path && k < RT_CG_NHIER; k++)
        path = p->path[k];
    struct rt_cg_class c;
    if (!path || rt_cg_classify(path, &c) != RT_CG_KIND_UNIT) {
        say(out->why, sizeof(out->why), "it runs in no systemd unit");
        return 0;
    }
    if (!ends_with(c.name, ".scope")) {
        say(out->why, sizeof(out->why), "it runs in %s, whose processes systemd accounts for and stops together",
            c.name);
        return 0;
    }
    /* The slice: the scope's parent, owned by the user's manager when it is
     * under user@UID.service, else by the system's. */
    char slice[256];
    const char *end = path + c.len;
    while (end > path && end[-1] != '/')
        end--;
    end -= end > path; /* the '/' before the scope's name */
    const char *start = end;
    while (start > path && start[-1] != '/')
        start--;
    bool user_tree = strstr(path, "/user@") && strstr(path, "/user@") < start;
    snprintf(slice, sizeof(slice), "%.*s", (int)(end - start), start);
    if (!ends_with(slice, ".slice")) {
        say(out->why, sizeof(out->why), "its scope %s is in no slice", c.name);
        return 0;
    }
    char stays[4096];
    snprintf(stays, sizeof(stays), "%.*s", (int)(end - path), path);
    if (limited(h, p, stays, out->why, sizeof(out->why)))
        return 0;
    if (user_tree != cfg->user_mode) {
        say(out->why, sizeof(out->why), cfg->user_mode ? "it runs in a unit of the system's service manager, which a "
                                                         "per-user daemon cannot ask to move it"
                                                       : "it runs in a unit of its user's own service manager");
        return 0;
    }
    char unit[64], desc[64];
    snprintf(unit, sizeof(unit), "resource-tracker-job-%" PRIu64 ".scope", job_id);
    snprintf(desc, sizeof(desc), "resource-tracker job %" PRIu64, job_id);
    char *cgroup = NULL, *why = NULL;
    pid_t pids[] = {pid, keeper};
    int r = rt_sd_start_scope(cfg->user_mode ? RT_SD_USER : RT_SD_SYSTEM, unit, slice, desc, pids, keeper > 0 ? 2 : 1,
                              h->mode == RT_CG_MODE_LEGACY ? RT_SD_CPU_ACCOUNTING : 0, SCOPE_TIMEOUT_USEC,
                              &cgroup, &why);
    if (r < 0) {
        say(out->why, sizeof(out->why), "systemd did not make the scope %s: %s", unit, why ? why : strerror(-r));
        free(why);
        return r == -ESRCH ? r : 0;
    }
    free(why);
    char norm[4096];
    if (rt_cg_path_normalize(h, cgroup, norm, sizeof(norm)) == 0)
        out->cgroup = rt_xstrdup(norm);
    else
        say(out->why, sizeof(out->why), "systemd made the scope %s in a cgroup out of sight: %s", unit, cgroup);
    free(cgroup);
    return 0;
}

int rt_place_command(const struct rt_cg_host *h, const struct rt_roots *roots, const struct rt_config *cfg,
                     pid_t pid, pid_t keeper, uint64_t job_id, struct rt_placement *out)
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
    if (foreign(&p, out->why, sizeof(out->why))) {
        rt_cg_paths_free(&p);
        return 0;
    }
    if (sd_booted() > 0) {
        r = systemd_scope(h, &p, cfg, pid, keeper, job_id, out);
        rt_cg_paths_free(&p);
        return r;
    }
    bool keep = limited(h, &p, NULL, out->why, sizeof(out->why));
    rt_cg_paths_free(&p);
    if (keep)
        return 0;
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
    if (r == 0 && (r = rt_cgroup_open_dirs(&cg, h, path)) == 0) {
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
