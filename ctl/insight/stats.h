/* Statistics of a job's run, and of several runs combined (the Python
 * tracker's stats() and aggregate_stats(), reference/python.md §3.1). */
#ifndef RT_INSIGHT_STATS_H
#define RT_INSIGHT_STATS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The job's figures come from its summary (the same numbers `status` and
 * `jobs` show); the host's during the job from its samples, which only the
 * report of the job itself reads. */
struct insight_stats {
    uint64_t id;                 /* the job; 0 for combined figures */
    double duration_secs;        /* summary */
    uint64_t samples;            /* summary */
    double cores_mean;           /* summary avg_cores (CPU time / duration) */
    double cores_peak;           /* summary peak_cores */
    double mem_mean_bytes;       /* summary avg_pss_bytes */
    double mem_peak_bytes;       /* summary peak_pss_bytes */
    double rss_peak_bytes;       /* summary peak_rss_bytes */
    bool has_gpu;                /* sampled on a host with a GPU backend */
    double gpu_mean;             /* summary gpu_avg_usage, fractional GPUs */
    double gpu_peak;             /* summary gpu_peak_usage */
    double vram_mean_bytes;      /* summary gpu_avg_vram_bytes */
    double vram_peak_bytes;      /* summary gpu_peak_vram_bytes */
    double disk_read_bytes;      /* summary: the job's */
    double disk_write_bytes;
    bool has_host;               /* the samples were read: the host's figures below */
    double net_in_bytes;         /* the host's, while the job ran */
    double net_out_bytes;
    double space_peak_bytes;     /* samples: the host's disk space used */
};

/* The summary figures of a Job object (the varlink type); false when the
 * summary lacks a mean or peak (a daemon or job record from before them):
 * the samples have it. */
bool insight_stats_from_job(struct json_object *job, struct insight_stats *st);

/* Runs combined: means and durations averaged, peaks and totals the largest
 * (the Python aggregate_stats: "mean of the means, max of the maxes"). A
 * GPU figure is averaged over the runs that had a GPU backend, a host
 * figure taken from the runs that have it. n >= 1. */
void insight_stats_combine(const struct insight_stats *runs, size_t n, struct insight_stats *out);

/* {"id", "duration_secs", "cores_mean", …}: every figure, GPU ones null
 * without a GPU backend, host ones null when unknown; id null for combined
 * figures. */
struct json_object *insight_stats_json(const struct insight_stats *s);

#endif
