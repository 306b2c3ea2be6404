/* Where the command of `run` is tracked: in a cgroup of its own when one
 * can be had, so that its figures are the kernel's (docs/jobs.md, "Cgroup
 * jobs"); never out of a cgroup whose limits or accounting someone else
 * depends on. Main thread, at StartJob, while the command is held by its
 * parent and runs nothing of its own yet. */
#ifndef RT_JOBS_PLACEMENT_H
#define RT_JOBS_PLACEMENT_H

#include "cgroup/hier.h"
#include "config/config.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_placement {
    char *cgroup;     /* its cgroup (normalised path), or NULL: its process tree */
    bool made;        /* the daemon made it: removed once the job is done with it */
    char why[256];    /* a process tree: why, for people */
};

/* Decide, and move pid into the cgroup made for job_id. keeper (0: none),
 * the command's parent that reports its end: under systemd it joins the
 * scope too, so that the scope, which systemd removes once empty, outlives
 * the command until its last figures are read. A process tree is no error:
 * out->why says why. -errno only for what the caller must report (the
 * process is gone). */
int rt_place_command(const struct rt_cg_host *h, const struct rt_roots *roots, const struct rt_config *cfg,
                     pid_t pid, pid_t keeper, uint64_t job_id, struct rt_placement *out);
void rt_placement_free(struct rt_placement *p);

#endif
