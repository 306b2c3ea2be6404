/* State of the GPU ownership view shared by its files (gpuuse/ only). The
 * fields after "sampler thread only" are touched by the tick alone. */
#ifndef RT_GPUUSE_INTERNAL_H
#define RT_GPUUSE_INTERNAL_H

#include "gpuuse/gpuuse.h"

#include <pthread.h>

struct gpuuse_pidjob {
    int32_t pid;
    size_t job;          /* index in the tick's jobs */
};

/* A process on a GPU: since when (by pid and start time). */
struct gpuuse_seen {
    char uuid[96];
    int32_t pid;
    uint64_t starttime;
    double since;
    uint64_t tick;       /* last seen */
};

/* A GPU or MIG instance: since when it is held at low use; its energy at
 * the last tick (for the share of processes in no job). */
struct gpuuse_unit {
    char uuid[96];
    uint64_t low_since_mono;  /* 0: not low */
    double low_since_real;
    bool reported;            /* the journal knows of this idle spell */
    bool has_energy;
    double energy_j;
    uint64_t tick;
};

/* A GPU given to a job: since when none of its processes is on it. */
struct gpuuse_unused {
    uint64_t job_id;
    char uuid[96];
    uint64_t since_mono;      /* 0: used */
    double since_real;
    bool reported;
    uint64_t tick;
};

/* An hour of a user's processes in no job. */
struct gpuuse_bucket {
    uid_t uid;
    int64_t hour;             /* Unix seconds / 3600 */
    struct rt_gpuuse_usage u;
};

/* A GPU process in no job: its CPU time at the last tick. */
struct gpuuse_cpu {
    int32_t pid;
    uint64_t starttime, ticks;
    uint64_t tick;
};

struct rt_gpuuse {
    pthread_mutex_t mu;       /* cfg, snap, ledger */
    struct rt_gpuuse_config cfg;
    struct rt_gpuuse_snap *snap;
    struct gpuuse_bucket *ledger; /* oldest first */
    size_t n_ledger, cap_ledger;

    /* sampler thread only */
    uint64_t tick;
    struct gpuuse_pidjob *map;
    size_t n_map, map_cap;
    struct gpuuse_seen *seen;
    size_t n_seen, cap_seen;
    struct gpuuse_unit *units;
    size_t n_units, cap_units;
    struct gpuuse_unused *unused;
    size_t n_unused, cap_unused;
    struct gpuuse_cpu *cpu;
    size_t n_cpu, cap_cpu;
    uint64_t last_mono;       /* the previous tick */
};

/* holders.c: the state of a GPU or MIG instance by UUID (made when new). */
struct gpuuse_unit *gpuuse_unit(struct rt_gpuuse *u, const char *uuid);
/* ledger.c: add to uid's hour of now (under mu). */
void gpuuse_ledger_add(struct rt_gpuuse *u, uid_t uid, double now, const struct rt_gpuuse_usage *add);
/* account.c: the tick's usage of the processes in no job, into the ledger. */
void gpuuse_account(struct rt_gpuuse *u, const struct rt_gpuuse_snap *s, struct rt_proc_cache *cache, double secs,
                    double now);

/* health.c: the XID events of this tick, each said in the journal for the
 * jobs on its GPU (or for none). */
void gpuuse_xids(struct rt_gpuuse *u, struct rt_gpu_collector *c, const struct rt_gpuuse_snap *s);

#endif
