/* A job's samples as `report` draws and counts them: the chart series (one
 * value per sample, bucketed, rt/buckets.h) and the figures a report takes
 * from every sample (the host's traffic, its disk space peak, the sustained
 * cores of a job whose summary lacks them …). Made in the daemon from the
 * store (GetJobSeries), so that what moves is what is drawn; a client of a
 * daemon from before it makes the same from GetJobSamples, by the same code. */
#ifndef RT_JOB_SERIES_H
#define RT_JOB_SERIES_H

#include "rt/buckets.h"
#include "rt/job_figures.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Chart series, one value per sample (NaN = unknown). Bytes and bytes per
 * second; cores and GPUs as fractional counts. */
enum rt_series {
    RT_SERIES_CORES_JOB, RT_SERIES_CORES_HOST,
    RT_SERIES_MEM_JOB, RT_SERIES_RSS_JOB, RT_SERIES_MEM_HOST,
    RT_SERIES_READ_JOB, RT_SERIES_WRITE_JOB, RT_SERIES_READ_HOST, RT_SERIES_WRITE_HOST,
    RT_SERIES_SPACE_HOST,
    RT_SERIES_NET_IN_HOST, RT_SERIES_NET_OUT_HOST,
    RT_SERIES_GPU_JOB, RT_SERIES_GPU_HOST,
    RT_SERIES_GPUS_JOB, RT_SERIES_GPUS_HOST,
    RT_SERIES_VRAM_JOB, RT_SERIES_VRAM_HOST,
    RT_SERIES_N
};

/* Their names in GetJobSeries. */
extern const char *const rt_series_names[RT_SERIES_N];

/* A run's samples, added one by one in order. */
struct rt_series_run {
    struct rt_buckets *charts;      /* RT_SERIES_N series, or NULL: the figures only */
    uint64_t n;                     /* samples added */
    double t;                       /* the end of the last: the job's start + the spans so far */
    /* Over all samples (exactly, not from the buckets). */
    uint64_t n_mem, n_gpu;
    double mem_sum, vram_sum, gpu_peak;  /* the job's memory, VRAM, highest GPU use */
    double block_core_secs, block_secs, sustained; /* rt_fig_sustained_add */
    double net_in_bytes, net_out_bytes, space_peak_bytes;
    bool host_gpus;                 /* some sample listed a GPU of the host */
};

/* One sample: the host's CSV values (rt_csv_host), its span, whether it is
 * a job's and its figures as the sample shows them. false when the host
 * values are not well-formed (the sample is not added). */
bool rt_series_add(struct rt_series_run *r, const double *host, size_t nhost, double secs, bool has_job,
                   const struct rt_job_figures *f);

/* GetJobSeries' reply: {"samples", "time": [t|null…], "series": {name: {"lo",
 * "mean", "hi": [v|null…]}}, "totals": {…}}, every number exact. And back
 * (charts: initialised here when r->charts is set); false when params is
 * not such a reply. */
void rt_series_to_json(const struct rt_series_run *r, struct json_object *params);
bool rt_series_from_json(struct json_object *params, struct rt_series_run *r);

#endif
