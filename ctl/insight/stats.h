/* Statistics of a job's run, and of several runs combined (the Python
 * tracker's stats() and aggregate_stats(), reference/python.md §3.1). */
#ifndef RT_INSIGHT_STATS_H
#define RT_INSIGHT_STATS_H

#include "rt/job_figures.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The job's figures come from its summary (the same numbers `status` and
 * `jobs` show): every rt_fig_totals row with a statistics name (stat); the
 * host's during the job from its samples, which only the report of the job
 * itself reads. */
struct insight_stats {
    uint64_t id;                 /* the job; 0 for combined figures */
    double duration_secs;        /* summary */
    uint64_t samples;            /* summary */
    double fig[64];              /* by rt_fig_totals row */
    bool has_fig[64];            /* false: null in the summary (no GPU backend, unknown) */
    bool has_host;               /* the samples were read: the host's figures below */
    double net_in_bytes;         /* the host's, while the job ran */
    double net_out_bytes;
    double space_peak_bytes;     /* samples: the host's disk space used */
};

/* A figure by its summary key; 0 (false) when the run lacks it. */
double insight_fig(const struct insight_stats *st, const char *key);
bool insight_has(const struct insight_stats *st, const char *key);
void insight_set(struct insight_stats *st, const char *key, double v);
/* The memory a run could not do without (memory_peak_bytes; the peak PSS
 * of runs recorded before it). */
double insight_memory_peak(const struct insight_stats *st);
/* The run was sampled on a host with a GPU backend: it has GPU figures. */
bool insight_has_gpu(const struct insight_stats *st);

/* The summary figures of a Job object (the varlink type); false when the
 * summary lacks a mean or peak (a daemon or job record from before them):
 * the samples have it. */
bool insight_stats_from_job(struct json_object *job, struct insight_stats *st);

/* Runs combined: means and durations averaged, peaks and totals the largest
 * (the Python aggregate_stats: "mean of the means, max of the maxes"). A
 * figure is averaged over the runs that have it (GPU figures: the runs
 * with a GPU backend), a host figure taken from the runs that have it.
 * n >= 1. */
void insight_stats_combine(const struct insight_stats *runs, size_t n, struct insight_stats *out);

/* {"id", "duration_secs", "cores_mean", …}: every figure by its statistics
 * name, null where the run lacks it; host ones null when unknown; id null
 * for combined figures. */
struct json_object *insight_stats_json(const struct insight_stats *s);

#endif
