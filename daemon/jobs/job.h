/* A job: a tracked cgroup or process tree (docs/jobs.md) with its metadata,
 * state and running totals.
 * The registry owns all jobs; fields below "sampler-owned" are touched only
 * by the sampler thread, the rest under the registry lock. */
#ifndef RT_JOB_H
#define RT_JOB_H

#include "cgroup/cgroup.h"
#include "jobs/summary.h"
#include "proc/ptree.h"

struct rt_figlog;
struct rt_gpu_job;
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum rt_job_state {
    RT_JOB_RUNNING,
    RT_JOB_FINISHED, /* root exited with status 0 */
    RT_JOB_FAILED,   /* root exited non-zero or was killed */
    RT_JOB_STOPPED,  /* tracking stopped on request; processes live on */
    RT_JOB_LOST,     /* the daemon restarted and the root was gone; status unknown */
    RT_JOB_ENDED,    /* the root exited, its status unknown (reaped by its parent first) */
};

const char *rt_job_state_name(enum rt_job_state s);
int rt_job_state_from_name(const char *name);


/* A running job's latest sample, for live views and exporters
 * (Job.current); present from the first sample on. */
struct rt_job_current {
    bool present;
    double sampled_at;             /* Unix seconds */
    double span_secs;              /* its interval, exactly */
    uint32_t processes;            /* the root and its descendants */
    struct rt_job_figures f;
};

struct rt_job {
    uint64_t id;
    char *name;                    /* NULL when unnamed */
    uid_t owner_uid;
    /* Whose eyes the job reads the tree with (proc/access.h): the caller of
     * StartJob, an administrator reading all. */
    gid_t owner_gid;               /* RT_GID_UNKNOWN in records from before */
    bool reads_all;
    int32_t pid;                   /* its root process; 0: a cgroup job without one */
    uint64_t starttime;            /* root's starttime, clock ticks since boot */
    char *cgroup;                  /* a cgroup job's cgroup (normalised path); NULL: a process tree */
    bool cgroup_made;              /* the daemon made it (run): removed when the job is done with it */
    char *tracking_why;            /* a command of `run` left a process tree: why */
    uint64_t memory_limit_bytes;   /* the tightest memory limit over it when it began; 0: none */
    int32_t reaper_pid;            /* the root's parent adopting its orphans (0: none) */
    uint64_t reaper_starttime;
    enum rt_job_state state;
    double started_at, ended_at;   /* Unix seconds; ended_at 0 while running */
    bool has_exit;
    int exit_code;                 /* 0..255, 128+signal when killed */
    int signal;                    /* 0 unless killed */
    double interval_secs;
    struct json_object *metadata;  /* validated JobMetadata object; NULL once ended (on disk) */
    size_t metadata_bytes;         /* its serialised size (and its file's) */
    uint64_t record_bytes;         /* size of its record file */
    struct rt_job_summary summary;
    char *name_json;               /* the name as its samples show it */
    struct rt_figlog *fig;         /* its samples in the store (store/samples.h) */
    bool samples_blocked;          /* an older daemon's samples could not be moved: none kept now */
    struct rt_job_current current;
    bool wants_upload;
    struct json_object *request;   /* checked JobRequest (what it asked for), NULL when none */
    struct json_object *notify;    /* its own notification targets (secrets: record only), NULL */
    bool adopted;                  /* the daemon made it by itself (a Slurm job, a container) */
    bool not_started;              /* run could not execute its command (126, 127): no run of its name */
    struct json_object *scheduler; /* an adopted Slurm job's facts (facts/slurm.h), or NULL */
    struct json_object *container; /* an adopted container's runtime, id, name, image, or NULL */
    struct json_object *gpus_assigned; /* UUIDs it was given (run --gpus; array), or NULL; set once at start */

    /* sampler-owned */
    int pidfd;
    bool tracking;                 /* ptree initialised */
    struct rt_ptree tree;
    uint64_t interval_ns, due_ns;  /* its own grid: the next sample at due_ns (monotonic) */
    uint64_t last_sample_mono_ns;
    uint64_t last_timestamp_ms;    /* of its latest sample: the next one is later */
    uint64_t last_host_ms;         /* the host sample's of its latest sample */
    struct rt_gpu_job *gpu_state;
    double gpu_energy_seen;        /* gpu_state's energy total already counted */
    /* Its cgroup, or a tree's memory-limited cgroup (its OOM kills), read
     * with the counters of the last sample; watched for its end (-1:
     * polled each tick). */
    struct rt_cgroup cg;
    bool cg_open;
    struct rt_cg_figures cg_last;
    int cg_watch;
    /* A cgroup job's processes at its last sample, where GPU use is read:
     * whose they are to the GPU's holders (gpuuse). */
    pid_t *cg_pids;
    size_t cg_npids, cg_pids_cap;
};

/* A job's sampling interval: any value in this range, exactly as asked. */
#define RT_JOB_INTERVAL_MIN 0.1
#define RT_JOB_INTERVAL_MAX 3600.0

/* Summary fields derived at query time. */
double rt_job_duration(const struct rt_job *j, double now);

#endif
