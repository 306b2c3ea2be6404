/* Who holds each GPU, who wastes it: every process on every GPU attributed to
 * its user and, when it is in one, its job; GPUs idle but held; GPUs given to
 * a job that none of its processes uses. The sampler thread feeds it once per
 * tick (rt_gpuuse_tick) and publishes an immutable snapshot; the main thread
 * reads snapshots for the API (view.c) and picks GPUs for new jobs (pick.c).
 * See docs/gpu.md, "Who holds each GPU". */
#ifndef RT_GPUUSE_H
#define RT_GPUUSE_H

#include "collect/gpu/gpu.h"
#include "proc/proccache.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_gpuuse_config {
    unsigned idle_after_secs;
    unsigned idle_util_max;      /* percent */
    uint64_t idle_vram_min;      /* bytes held on the GPU */
};

/* A running job as the tick sees it: its processes as of its last sample. */
struct rt_gpuuse_job {
    uint64_t id;
    const char *name;            /* NULL when unnamed */
    uid_t owner;
    const int32_t *pids;
    size_t npids;
    struct json_object *assigned; /* the UUIDs it was given (array), or NULL */
};

/* ---- the snapshot (immutable once published) ---- */

struct rt_gpuuse_proc {
    int32_t pid;
    bool has_creds;              /* its ids could be read */
    struct rt_pcreds creds;
    uid_t owner_uid;             /* owner of /proc/PID (hidepid's check) */
    gid_t owner_gid;
    uint64_t job_id;             /* 0: in no job */
    uid_t job_owner;
    char *job_name;              /* NULL when unnamed */
    uint64_t vram_bytes;
    bool has_sm;
    double sm_pct;
    double since;                /* Unix seconds: first seen on this GPU */
    int unit;                    /* MIG instance (index in mig[]), -1 for the whole GPU */
};

/* Idle but held, or given to a job and unused: since when (Unix seconds). */
struct rt_gpuuse_idle {
    bool idle;                   /* flagged: the condition held for idle_after */
    bool judged;                 /* its use is known: idle is false, not unknown */
    double since;                /* when the condition began */
    uint64_t vram_held;
};

struct rt_gpuuse_dev {
    bool nvidia;
    unsigned index;
    struct rt_gpu_dev d;         /* procs: NULL, see below */
    struct rt_gpuuse_idle idle;  /* the whole GPU (without MIG) */
    struct rt_gpuuse_idle mig_idle[RT_GPU_MAX_MIG];
    bool has_stalled;            /* use and GPM SM activity both known */
    bool stalled;                /* busy but stalled: use >= 90 % while SM activity < 5 % */
    struct rt_gpuuse_proc *procs;
    size_t n_procs;
};

/* A GPU (or MIG instance) given to a running job. */
struct rt_gpuuse_given {
    uint64_t job_id;
    uid_t owner;
    char uuid[96];
    bool unused;                 /* none of the job's processes is on it now */
    bool idle;                   /* … for idle_after: flagged */
    double since;                /* when it became unused */
};

struct rt_gpuuse_snap {
    int refs;                    /* atomic */
    double taken_at;             /* Unix seconds */
    bool has_backend;
    struct rt_gpuuse_config cfg;
    struct rt_gpuuse_dev *devs;
    size_t n;
    struct rt_gpuuse_given *given;
    size_t n_given;
};

struct rt_gpuuse;

struct rt_gpuuse *rt_gpuuse_new(const struct rt_gpuuse_config *cfg);
void rt_gpuuse_free(struct rt_gpuuse *u);
/* Any thread (a reload): applies from the next tick. */
void rt_gpuuse_set_config(struct rt_gpuuse *u, const struct rt_gpuuse_config *cfg);

/* Sampler thread, once per tick after the jobs' samples: attribute every
 * process on every GPU, judge idleness, send the journal records, publish a
 * snapshot. cache: this tick's process cache. */
void rt_gpuuse_tick(struct rt_gpuuse *u, struct rt_gpu_collector *c, struct rt_proc_cache *cache,
                    const struct rt_gpuuse_job *jobs, size_t njobs);

/* Any thread: the latest snapshot (a reference), or NULL before the first tick. */
struct rt_gpuuse_snap *rt_gpuuse_snapshot(struct rt_gpuuse *u);
void rt_gpuuse_snap_unref(struct rt_gpuuse_snap *s);

/* ---- usage outside jobs (ledger.c) ---- */

/* What a user's (or a job's) GPU processes used: GPU-seconds held (a GPU
 * their processes are on, a MIG instance by its share of the card's memory),
 * busy (their use x time), idle but held; CPU seconds; memory byte-seconds;
 * energy (their share of the GPUs' energy). */
struct rt_gpuuse_usage {
    double gpu_held_secs, gpu_busy_secs, gpu_idle_secs, cpu_secs, memory_byte_secs, energy_joules;
};
void rt_gpuuse_usage_add(struct rt_gpuuse_usage *to, const struct rt_gpuuse_usage *u);

/* Main thread: fn(uid, usage) for each hour of processes in no job that
 * overlaps [since, now]. */
void rt_gpuuse_untracked(struct rt_gpuuse *u, double since, void (*fn)(uid_t, const struct rt_gpuuse_usage *, void *),
                         void *data);
/* Sampler thread: read the ledger from the state directory (at start), write
 * it (sync: wait for the disk), drop the hours that end before `before`. */
int rt_gpuuse_load(struct rt_gpuuse *u, int dir_fd);
int rt_gpuuse_save(struct rt_gpuuse *u, int dir_fd, mode_t mode, bool sync);
void rt_gpuuse_prune(struct rt_gpuuse *u, double before);

/* ---- views (view.c) ---- */

/* Who asks. A process the caller may not see in /proc (hidepid) is shown
 * without pid, user or job. */
struct rt_gpuuse_viewer {
    uid_t uid;
    gid_t gid;
    bool admin;                  /* root or the admin group: every job */
    bool sees_all_pids;          /* /proc shows the caller every process */
};

/* How many of a job's GPUs are idle but held or given and unused. */
uint32_t rt_gpuuse_job_idle_count(const struct rt_gpuuse_snap *s, uint64_t job_id);
/* The "gpus" array of GetGpus. */
struct json_object *rt_gpuuse_json(const struct rt_gpuuse_snap *s, const struct rt_gpuuse_viewer *v);
/* A job's GPUs idle but held or unused (the Job object's gpu_idle), [] when
 * none; NULL without a snapshot with a GPU backend. */
struct json_object *rt_gpuuse_job_idle_json(const struct rt_gpuuse_snap *s, uint64_t job_id);

/* ---- picking GPUs for a new job (pick.c) ---- */

struct rt_gpuuse_choice {
    char uuid[96];
    bool nvidia;
    unsigned index;              /* NVML index, or the card's rank among AMD cards */
    bool free;                   /* no process on it, and its use below idle_util_max */
};

/* The n least busy GPUs (or MIG instances) into out, the free ones first,
 * then by free memory, then by use; GPUs already given to running jobs
 * (taken, n_taken UUIDs) count as busy. The number chosen (fewer when the
 * host has fewer). */
size_t rt_gpuuse_pick(const struct rt_gpuuse_snap *s, unsigned n, const char *const *taken, size_t n_taken,
                      struct rt_gpuuse_choice *out);

#endif
