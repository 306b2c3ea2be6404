/* One run of a job as the report and the recommendation see it: its Job
 * object, its statistics and, for the report, its samples downsampled into
 * chart series (rt/job_series.h), made by the daemon (GetJobSeries: what
 * moves is what is drawn; a daemon from before it streams its samples), and
 * only when needed: for the charts, or when the job's summary lacks a
 * figure. */
#ifndef RT_INSIGHT_JOB_DATA_H
#define RT_INSIGHT_JOB_DATA_H

#include "rt/job_series.h"
#include "insight/stats.h"
#include "rt/sample.h"
#include "rt/varlink.h"

#include <json-c/json.h>
#include <stdbool.h>

/* Points per chart at most: a day at 1 s becomes 1000 buckets. */
#define INSIGHT_MAX_POINTS 1000

struct insight_run {
    struct json_object *job;       /* Job (a reference of our own) */
    struct insight_stats st;
    bool host_has_gpus;            /* some sample listed a GPU of the host */
    bool with_charts;
    struct rt_buckets charts; /* RT_SERIES_N series, when with_charts */
};

/* Statistics of a job from its summary and, with charts, the host's
 * figures and the charts from its first summary.samples samples. Returns 0
 * or an RT_EXIT_* code after printing why. */
int insight_run_load(struct rt_vl_client *c, struct json_object *job, bool with_charts, struct insight_run *r);
void insight_run_free(struct insight_run *r);

#endif
