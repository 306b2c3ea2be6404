/* Facts of a Slurm job, read by the root daemon from the job's cgroup path,
 * its processes' environment and the cgroups Slurm set up: no plugin, no
 * Slurm library, nothing to rebuild per Slurm release. Knows nothing of
 * tracked jobs (adoption, with the job life cycle, calls it). Which cgroup
 * is a Slurm job's comes from the cgroup layer (cgroup/classify.h).
 *
 * Layouts (docs/admin.md):
 *   cgroup/v1  /slurm[_NODE]/uid_UID/job_ID/step_STEP/task_N      (each v1 hierarchy)
 *   cgroup/v2  …/[NODE_]slurmstepd.scope/job_ID/step_STEP/{slurm,user/task_N}
 *              …/[NODE_]slurmstepd.scope/SLUID/step_STEP/…       (Slurm 26.05+ unless
 *                                                                 CgroupJobIdPaths=yes)
 * STEP is a number, "batch", "extern" or "interactive". */
#ifndef RT_FACTS_SLURM_H
#define RT_FACTS_SLURM_H

#include "cgroup/hier.h"
#include "rt/request.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A job's facts. name, account, partition and user are "" when unknown. */
struct rt_slurm_job {
    uint64_t job_id;
    char sluid[16];
    char name[256], account[128], partition[128], user[64];
    bool has_uid;
    uint32_t uid;
    struct rt_request request;     /* cpus and memory on this node, GPUs */
    char gpu_ids[256];             /* the GPUs as Slurm lists them ("0,1"), or "" */
    struct json_object *gpu_uuids; /* array when the environment names GPUs by UUID, else NULL */
};

void rt_slurm_job_free(struct rt_slurm_job *j);

/* Read the job's facts from one of its processes' environment (the bytes of
 * /proc/PID/environ: NUL-separated NAME=VALUE). Fills what it finds: the
 * SLURM_JOB_* names, CPUs (SLURM_CPUS_ON_NODE, else this node's share of
 * SLURM_JOB_CPUS_PER_NODE), memory (SLURM_MEM_PER_NODE, else
 * SLURM_MEM_PER_CPU x CPUs; MiB), GPUs (SLURM_JOB_GPUS, SLURM_STEP_GPUS,
 * CUDA_VISIBLE_DEVICES; UUIDs where given). false when it holds no
 * SLURM_JOB_ID (a step_extern process, or not a job's process at all). */
bool rt_slurm_env_parse(const char *env, size_t len, struct rt_slurm_job *out);

/* The facts of the Slurm job whose cgroup is `cgroup` (a path of either
 * layout, as rt_cg_path_normalize takes it; NULL: the job holding pid): the
 * environment of pid, else of the job's other processes (its steps' tasks
 * first, step_extern last); what the environment lacks from the job's own
 * files: the id from slurmstepd's title ("slurmstepd: [ID.STEP]"), the user
 * from the v1 path or the processes' owner, memory from the job cgroup's
 * limit and (v2) CPUs from its cpuset, both set by Slurm's task/cgroup. 0,
 * -ENOENT when it is not a Slurm job's (or pid is gone), or -errno. Call
 * rt_slurm_job_free after either. */
int rt_slurm_job_read(const struct rt_cg_host *h, const struct rt_roots *roots, const char *cgroup, pid_t pid,
                      struct rt_slurm_job *out);

/* {"kind": "slurm", "job_id", "name", "account", "partition", "user"}: the
 * job's `scheduler` (unknown names null; "sluid" when Slurm gave one). */
struct json_object *rt_slurm_job_scheduler_json(const struct rt_slurm_job *j);

#endif
