/* Jobs that appear by themselves (docs/admin.md, "Adoption"): every Slurm
 * job, every docker and podman container, and the cgroups that configured
 * globs match, each tracked as a cgroup job of the cgroup's user with what
 * its scheduler or runtime says of it. Found by listing the few directories
 * where such cgroups appear (never a walk of the whole tree). Main thread;
 * the daemon registers and starts the jobs made here. */
#ifndef RT_JOBS_ADOPT_H
#define RT_JOBS_ADOPT_H

#include "cgroup/hier.h"
#include "jobs/job.h"

#include <stdbool.h>
#include <stddef.h>

struct rt_adopt_rules {
    bool slurm;         /* adopt.slurm */
    bool containers;    /* adopt.containers */
    const char *globs;  /* adopt.cgroups: cgroup path patterns separated by spaces */
};

static inline bool rt_adopt_any(const struct rt_adopt_rules *r)
{
    return r->slurm || r->containers || (r->globs && *r->globs);
}

/* The cgroups (normalised paths) the rules match now, each once, in a
 * malloc'd array of *n malloc'd strings (rt_adopt_free). A Slurm job's is
 * its job cgroup (not a step's), a container's its own. */
char **rt_adopt_candidates(const struct rt_cg_host *h, const struct rt_adopt_rules *rules, size_t *n);
void rt_adopt_free(char **paths, size_t n);

/* A job for cgroup path, not yet registered (no id): a cgroup job owned by
 * the cgroup's user (a Slurm job's user; root for a container unless a
 * user's manager runs it), named and described by Slurm's facts (the job's
 * name, job.scheduler, its request) or the runtime's (the container's
 * name, job.container, its limits as request), else by the cgroup's last
 * component. NULL when the cgroup holds no process (or is gone). */
struct rt_job *rt_adopt_job(const struct rt_cg_host *h, const struct rt_roots *roots, const char *path);

/* Whether globs is a valid adopt.cgroups: at most RT_ADOPT_MAX_GLOBS
 * absolute patterns without "." or ".." components; why says what is wrong. */
#define RT_ADOPT_MAX_GLOBS 16
bool rt_adopt_globs_valid(const char *globs, char *why, size_t whylen);

#endif
