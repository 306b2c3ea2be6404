/* A job: a tracked process tree with its metadata, state and running totals.
 * The registry owns all jobs; fields below "sampler-owned" are touched only
 * by the sampler thread, the rest under the registry lock. */
#ifndef RT_JOB_H
#define RT_JOB_H

#include "proc/ptree.h"

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

struct rt_job_summary {
    uint64_t samples;
    double cpu_secs;
    double peak_cores;             /* highest process_cores_used of a sample */
    uint32_t peak_children;
    uint64_t peak_rss_bytes, peak_pss_bytes;
    uint64_t disk_read_bytes, disk_write_bytes;
    bool has_gpu;                  /* sampled on a host with a GPU backend */
    double gpu_avg_usage;          /* fractional GPUs, time-weighted */
    uint64_t gpu_peak_vram_bytes;
    bool has_gpu_energy;
    double gpu_energy_joules;      /* the job's share of device energy */
    struct json_object *gpus;      /* UUIDs of the GPUs the job used (array), or NULL */
    /* Sums over the samples as their lines have them, for means (reports
     * and right-sizing read them instead of every sample). means_known is
     * false for records from before these fields. */
    bool means_known;
    double pss_sum_bytes;
    double gpu_peak_usage;         /* largest GPU use of a sample, fractional GPUs */
    double gpu_vram_sum_bytes;
};

/* The figures of a running job's latest sample, for live views and
 * exporters (Job.current); present from the first sample on. */
struct rt_job_current {
    bool present;
    double sampled_at;             /* Unix seconds */
    double cores;
    uint32_t processes;            /* the root and its descendants */
    uint64_t rss_bytes, pss_bytes;
    double disk_read_bytes_per_sec, disk_write_bytes_per_sec;
    bool has_gpu;                  /* the host has a GPU backend */
    double gpu_usage;              /* fractional GPUs */
    uint64_t gpu_vram_bytes;
    uint32_t gpus_used;
};

struct rt_job {
    uint64_t id;
    char *name;                    /* NULL when unnamed */
    uid_t owner_uid;
    /* Whose eyes the job reads the tree with (proc/access.h): the caller of
     * StartJob, an administrator reading all. */
    gid_t owner_gid;               /* RT_GID_UNKNOWN in records from before */
    bool reads_all;
    int32_t pid;
    uint64_t starttime;            /* root's starttime, clock ticks since boot */
    int32_t reaper_pid;            /* the root's parent adopting its orphans (0: none) */
    uint64_t reaper_starttime;
    enum rt_job_state state;
    double started_at, ended_at;   /* Unix seconds; ended_at 0 while running */
    bool has_exit;
    int exit_code;                 /* 0..255, 128+signal when killed */
    int signal;                    /* 0 unless killed */
    double interval_secs;
    struct json_object *metadata;  /* validated JobMetadata object */
    struct rt_job_summary summary;
    struct rt_job_current current;
    uint64_t samples_bytes;        /* size of the samples file */
    /* Byte offset of every RT_JOB_CKPT-th sample line, for paging. */
    uint64_t *ckpt;
    size_t nckpt, ckpt_cap;
    bool wants_upload;

    /* sampler-owned */
    int pidfd;
    bool tracking;                 /* ptree initialised */
    struct rt_ptree tree;
    uint64_t interval_ns, due_ns;  /* its own grid: the next sample at due_ns (monotonic) */
    uint64_t last_sample_mono_ns;
    uint64_t last_timestamp_ms;    /* of its latest sample: the next one is later */
    int samples_fd;
    char *unwritten;               /* sample bytes not yet on disk (disk full) */
    size_t unwritten_len;
    bool write_warned, backlog_warned;
    struct rt_gpu_job *gpu_state;
};

#define RT_JOB_CKPT 256

/* A job's sampling interval: any value in this range, exactly as asked. */
#define RT_JOB_INTERVAL_MIN 0.1
#define RT_JOB_INTERVAL_MAX 3600.0

/* Summary fields derived at query time. */
double rt_job_duration(const struct rt_job *j, double now);

#endif
