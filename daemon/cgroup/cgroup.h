/* One cgroup, opened by its path in every hierarchy where that path exists
 * (cgroup/hier.h), and its figures: the kernel's own accounting, which
 * counts every process under it (descendant cgroups included) however it
 * forked. docs/cgroups.md names each figure's v2 and v1 source.
 *
 * Cheap by design: rt_cgroup_open finds, once, which file gives each figure
 * (the v2 file where the v2 tree has it, else the v1 one) and keeps those
 * files open; rt_cgroup_read then reads each of them from offset 0 into a
 * buffer on the stack: no path lookup, no allocation. A cgroup removed under
 * an open handle reads as gone (-ENODEV), never as zeros.
 *
 * Nothing here knows what a job is. Errors are negative errno. */
#ifndef RT_CGROUP_CGROUP_H
#define RT_CGROUP_CGROUP_H

#include "cgroup/hier.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A limit that is not set ("max"; v1's huge "unlimited" value). */
#define RT_CG_UNLIMITED UINT64_MAX

/* Figure groups, as bits of rt_cg_figures.have: a group's fields hold a
 * value only where its bit is set; absent is null, never 0. */
enum {
    RT_CGF_CPU = 1u << 0,           /* cpu_usage_usec */
    RT_CGF_CPU_SPLIT = 1u << 1,     /* cpu_user_usec, cpu_system_usec */
    RT_CGF_THROTTLE = 1u << 2,      /* nr_periods, nr_throttled, throttled_usec */
    RT_CGF_MEM = 1u << 3,           /* mem_current */
    RT_CGF_MEM_PEAK = 1u << 4,      /* mem_peak */
    RT_CGF_MEM_STAT = 1u << 5,      /* mem_anon, mem_file, mem_shmem */
    RT_CGF_MEM_KERNEL = 1u << 6,    /* mem_kernel */
    RT_CGF_SWAP = 1u << 7,          /* swap_current */
    RT_CGF_SWAP_PEAK = 1u << 8,     /* swap_peak */
    RT_CGF_OOM_KILL = 1u << 9,      /* ev_oom_kill */
    RT_CGF_MEM_EV_MAX = 1u << 10,   /* ev_max */
    RT_CGF_MEM_EV = 1u << 11,       /* ev_high, ev_oom (v2 only) */
    RT_CGF_MEM_MAX = 1u << 12,      /* mem_max */
    RT_CGF_MEM_HIGH = 1u << 13,     /* mem_high (v2 only) */
    RT_CGF_CPU_MAX = 1u << 14,      /* cpu_quota_usec, cpu_period_usec */
    RT_CGF_IO = 1u << 15,           /* io_rbytes, io_wbytes, io_rios, io_wios */
    RT_CGF_PIDS = 1u << 16,         /* pids_current */
    RT_CGF_PIDS_PEAK = 1u << 17,    /* pids_peak */
    RT_CGF_PSI_CPU = 1u << 18,      /* psi_cpu.some_usec (v2 only, as all PSI) */
    RT_CGF_PSI_CPU_FULL = 1u << 19, /* psi_cpu.full_usec (kernel 5.13+) */
    RT_CGF_PSI_MEM = 1u << 20,      /* psi_mem.some_usec, psi_mem.full_usec */
    RT_CGF_PSI_IO = 1u << 21,       /* psi_io.some_usec, psi_io.full_usec */
    RT_CGF_POPULATED = 1u << 22,    /* populated (v2 only: rt_cgroup_populated for v1) */
};

struct rt_cg_psi {
    uint64_t some_usec, full_usec; /* total time stalled, µs, since the cgroup was made */
};

/* Counters are the cgroup's totals since it was made, not since it was
 * opened: callers take deltas. Bytes unless named otherwise. */
struct rt_cg_figures {
    uint32_t have; /* RT_CGF_* */
    uint64_t cpu_usage_usec, cpu_user_usec, cpu_system_usec;
    uint64_t nr_periods, nr_throttled, throttled_usec;
    uint64_t mem_current, mem_peak;
    uint64_t mem_anon, mem_file, mem_shmem, mem_kernel;
    uint64_t swap_current, swap_peak;
    uint64_t ev_high, ev_max, ev_oom, ev_oom_kill; /* memory events: counts */
    uint64_t mem_max, mem_high;                    /* limits; RT_CG_UNLIMITED: none */
    uint64_t cpu_quota_usec, cpu_period_usec;      /* quota RT_CG_UNLIMITED: none */
    uint64_t io_rbytes, io_wbytes, io_rios, io_wios; /* all devices together */
    uint64_t pids_current, pids_peak;
    struct rt_cg_psi psi_cpu, psi_mem, psi_io;
    bool populated;
};

/* Whether every bit of `group` is set. */
static inline bool rt_cg_has(const struct rt_cg_figures *f, uint32_t group)
{
    return (f->have & group) == group;
}

#define RT_CG_NSRC 32

struct rt_cgroup {
    char *path;             /* normalised: "/system.slice/x.scope" */
    int dir[RT_CG_NHIER];   /* its directory in each hierarchy; -1 where absent */
    int src[RT_CG_NSRC][2]; /* the open files of each figure source; -1: not used */
    uint32_t use[RT_CG_NSRC]; /* what each source gives (RT_CGF_*) */
    uint32_t rw;            /* sources open for writing: the v2 peaks (rt_cgroup_reset_peak) */
};

/* Open the cgroup at `path` (any form rt_cg_path_normalize takes) in every
 * hierarchy where it exists. 0; -ENOENT when it exists in none; -EINVAL or
 * -ENAMETOOLONG for a bad path; -EMFILE. The handle refers to the
 * directories opened now: a cgroup made again at the same path is another. */
int rt_cgroup_open(struct rt_cgroup *cg, const struct rt_cg_host *h, const char *path);
/* The same, its directories alone: enough to move a process in
 * (rt_cg_attach), without finding the files of its figures. */
int rt_cgroup_open_dirs(struct rt_cgroup *cg, const struct rt_cg_host *h, const char *path);
void rt_cgroup_close(struct rt_cgroup *cg);

/* Whether it was opened in hierarchy `hier`. */
static inline bool rt_cgroup_in(const struct rt_cgroup *cg, enum rt_cg_hier hier)
{
    return cg->dir[hier] >= 0;
}

/* Read every figure the open files give into *out (the have bits say which).
 * 0; -ENODEV when the cgroup was removed in some hierarchy (what could still
 * be read is in *out). */
int rt_cgroup_read(struct rt_cgroup *cg, struct rt_cg_figures *out);

/* Whether a process is left in the cgroup or below it: 1, 0, or -ENODEV when
 * it was removed. v2: cgroup.events "populated". A cgroup in v1 only:
 * pids.current of the v1 pids hierarchy (tasks not yet reaped count), else
 * cgroup.procs of it and its descendants (at most 4096 directories; more
 * count as populated). */
int rt_cgroup_populated(struct rt_cgroup *cg);
/* The same for a cgroup not opened (`path` normalised), cheaply: v2's
 * cgroup.events, else the first v1 hierarchy that has it, walked. 1, 0,
 * -ENOENT when it exists nowhere. */
int rt_cg_path_populated(const struct rt_cg_host *h, const char *path);

/* Watch the v2 cgroup.events with inotify_fd (IN_MODIFY: the kernel
 * signals every change of "populated"; IN_IGNORED follows the cgroup's
 * removal). The watch descriptor, or -EOPNOTSUPP for a cgroup that is not in
 * the v2 tree (v1 only: poll rt_cgroup_populated each tick instead). */
int rt_cgroup_watch(const struct rt_cgroup *cg, int inotify_fd);

/* The processes in the cgroup and its descendants, from cgroup.procs in
 * every hierarchy it is open in, sorted and without duplicates. At most max
 * of them and 4096 directories: -E2BIG beyond (pids then holds the first
 * max). 0 or -errno; *n is their number. */
int rt_cgroup_pids(const struct rt_cgroup *cg, pid_t *pids, size_t max, size_t *n);

/* The owner of the cgroup's directories. -ENOTUNIQ when they differ between
 * hierarchies. */
int rt_cgroup_owner(const struct rt_cgroup *cg, uid_t *uid);

/* Kill every process in it and below it at once (v2 cgroup.kill, Linux
 * 5.14+). -EOPNOTSUPP without it. */
int rt_cgroup_kill(const struct rt_cgroup *cg);

/* From now on mem_peak and swap_peak read the peak since this call (v2
 * memory.peak written through this handle's own descriptor, Linux 6.12+;
 * others reading the file are not affected). -EOPNOTSUPP where the kernel
 * or the hierarchy cannot (v1's max_usage_in_bytes is shared by all its
 * readers: never reset here). */
int rt_cgroup_reset_peak(struct rt_cgroup *cg);

#endif
