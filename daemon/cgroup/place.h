/* Where a process is: its cgroup in each hierarchy, and the limits that hold
 * it there (the nearest memory limit and CPU quota up the tree), so a caller
 * can tell that its cgroup's limits or accounting belong to someone else.
 * Nothing here knows what a job is. Errors are negative errno. */
#ifndef RT_CGROUP_PLACE_H
#define RT_CGROUP_PLACE_H

#include "cgroup/hier.h"

#include <stdint.h>
#include <sys/types.h>

struct rt_cg_paths {
    char *path[RT_CG_NHIER]; /* NULL where PROC/PID/cgroup has no line for it */
};

/* A process's cgroups from PROC/PID/cgroup (under roots->proc): the v2
 * "0::PATH" line and the v1 lines of the memory, cpuacct, cpu, blkio and
 * pids controllers ("4:memory:PATH", "3:cpu,cpuacct:PATH"), as normalised
 * paths; a cgroup outside our cgroup namespace ("/../x") is left out. The
 * first line of a hierarchy counts (cgroup names may hold a
 * newline: a later line could be forged, an earlier one cannot). -ENOENT
 * (ESRCH) when the process is gone. Free with rt_cg_paths_free. */
int rt_cg_pid_paths(const struct rt_roots *roots, pid_t pid, struct rt_cg_paths *out);
void rt_cg_paths_free(struct rt_cg_paths *p);

/* The tightest limits from a cgroup up to the root: the smallest value met,
 * and the cgroup that sets it (the nearest one of equals). */
struct rt_cg_limits {
    uint64_t mem_max;  /* v2 memory.max, v1 memory.limit_in_bytes; RT_CG_UNLIMITED: none */
    char *mem_max_at;  /* NULL when unlimited */
    uint64_t mem_high; /* v2 memory.high (v1 has none: unlimited) */
    char *mem_high_at;
    uint64_t cpu_quota_usec, cpu_period_usec; /* the smallest quota/period (v2 cpu.max, v1
                                                 cpu.cfs_quota_us/cfs_period_us); quota
                                                 RT_CG_UNLIMITED: none */
    char *cpu_at;
};

/* The limits over a process's cgroups: memory in the hierarchy that has the
 * memory controller (v1 memory where mounted, else v2), CPU likewise (v1 cpu,
 * else v2). A hierarchy the process has no path in, or whose path is not
 * visible, adds no limit. 0 or -errno; free with rt_cg_limits_free. */
int rt_cg_limits_of(const struct rt_cg_host *h, const struct rt_cg_paths *p, struct rt_cg_limits *out);
/* The same for one cgroup path, taken in every hierarchy (the hybrid rule). */
int rt_cg_limits_of_path(const struct rt_cg_host *h, const char *path, struct rt_cg_limits *out);
void rt_cg_limits_free(struct rt_cg_limits *l);

#endif
