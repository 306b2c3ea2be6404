/* Whose a cgroup is, from its path alone: a Slurm job's, a container's or a
 * systemd unit's. What the layouts look like is in docs/cgroups.md
 * ("Recognised cgroups"); a caller uses this to leave alone a cgroup whose
 * limits or accounting someone else depends on. Nothing here reads files. */
#ifndef RT_CGROUP_CLASSIFY_H
#define RT_CGROUP_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rt_cg_kind {
    RT_CG_KIND_NONE,
    RT_CG_KIND_SLURM,     /* v1 /slurm[_NODE]/uid_U/job_N/…; v2 …/[NODE_]slurmstepd.scope/job_N|SLUID/… */
    RT_CG_KIND_CONTAINER, /* docker-ID.scope, /docker/ID, libpod-ID.scope, cri-containerd-ID.scope, … */
    RT_CG_KIND_UNIT,      /* the innermost *.service or *.scope (systemd, or a user's manager) */
};

struct rt_cg_class {
    enum rt_cg_kind kind;
    size_t len;       /* path[0..len) is the cgroup of the job, the container or the unit */
    char name[256];   /* Slurm: the job's directory ("job_42" or a SLUID); container: its
                         runtime ("docker", "podman", "containerd", "cri-o", "kubernetes");
                         unit: its name ("nginx.service") */
    char id[65];      /* container: its id (64 hex digits) */
    uint64_t job;     /* Slurm: the job id when the path names it (job_N), else 0 */
    int64_t uid;      /* Slurm v1 uid_U, a user's slice or manager (user-U.slice,
                         user@U.service); -1 when the path does not say */
};

/* Classify a normalised path (cgroup/hier.h). A Slurm job wins over a
 * container, a container over a unit (a container's scope is a unit too);
 * of several containers the outermost. Returns out->kind. */
enum rt_cg_kind rt_cg_classify(const char *path, struct rt_cg_class *out);

/* Whether s is a container id: exactly 64 lowercase hex digits. */
bool rt_cg_is_container_id(const char *s, size_t len);

#endif
