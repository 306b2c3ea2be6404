/* One run of a job as the report and the recommendation see it: its Job
 * object, its statistics and, for the report, its samples downsampled into
 * chart series. Samples come from GetJobSamples, streamed page by page and
 * never kept whole, and only when needed: for the charts, or when the
 * job's summary lacks a figure. */
#ifndef RT_INSIGHT_JOB_DATA_H
#define RT_INSIGHT_JOB_DATA_H

#include "insight/buckets.h"
#include "insight/stats.h"
#include "rt/sample.h"
#include "rt/varlink.h"

#include <json-c/json.h>
#include <stdbool.h>

/* Chart series, one value per sample (NaN = unknown). Bytes and bytes per
 * second; cores and GPUs as fractional counts. */
enum insight_series {
    INSIGHT_CORES_JOB, INSIGHT_CORES_HOST,
    INSIGHT_MEM_JOB, INSIGHT_RSS_JOB, INSIGHT_MEM_HOST,
    INSIGHT_READ_JOB, INSIGHT_WRITE_JOB, INSIGHT_READ_HOST, INSIGHT_WRITE_HOST,
    INSIGHT_SPACE_HOST,
    INSIGHT_NET_IN_HOST, INSIGHT_NET_OUT_HOST,
    INSIGHT_GPU_JOB, INSIGHT_GPU_HOST,
    INSIGHT_GPUS_JOB, INSIGHT_GPUS_HOST,
    INSIGHT_VRAM_JOB, INSIGHT_VRAM_HOST,
    INSIGHT_SERIES
};

/* Points per chart at most: a day at 1 s becomes 1000 buckets. */
#define INSIGHT_MAX_POINTS 1000

struct insight_run {
    struct json_object *job;       /* Job (a reference of our own) */
    struct insight_stats st;
    bool host_has_gpus;            /* some sample listed a GPU of the host */
    bool with_charts;
    struct insight_buckets charts; /* INSIGHT_SERIES series, when with_charts */
};

/* The series values of one job sample (byte counts of the interval become
 * rates over its length). */
void insight_sample_values(const struct rt_sample *s, double *v);

/* Statistics of a job from its summary and, with charts, the host's
 * figures and the charts from its first summary.samples samples. Returns 0
 * or an RT_EXIT_* code after printing why. */
int insight_run_load(struct rt_vl_client *c, struct json_object *job, bool with_charts, struct insight_run *r);
void insight_run_free(struct insight_run *r);

#endif
