/* A job with the history of its earlier runs: statistics per run, combined,
 * and the recommendation they give. Shared by `report`, `recommend` and
 * the one-line recommendation at the end of `run`. */
#ifndef RT_INSIGHT_ANALYSIS_H
#define RT_INSIGHT_ANALYSIS_H

#include "ctl.h"
#include "insight/recommend.h"
#include "insight/job_data.h"
#include "rt/varlink.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define INSIGHT_DEFAULT_HISTORY 5
#define INSIGHT_MAX_HISTORY 100

struct insight_analysis {
    struct insight_run run;      /* the job itself */
    struct insight_run *hist;    /* earlier ended runs with its name and owner, newest first */
    size_t nhist;
    struct insight_stats combined;
    struct insight_rec rec;
};

/* Load job (a Job object), up to `history` earlier runs, and recommend.
 * Returns 0 or an RT_EXIT_* code after printing why. */
int insight_analysis_load(struct rt_vl_client *c, struct json_object *job, unsigned history, bool with_charts,
                          struct insight_analysis *a);
void insight_analysis_free(struct insight_analysis *a);
/* Connect, look JOB (an id or a name) up and load it as above. */
int insight_analysis_fetch(struct ctl *ctl, const char *ref, unsigned history, bool with_charts,
                           struct rt_vl_client *c, struct insight_analysis *a);

/* The earlier runs of job: ended jobs of its owner with its name and a
 * smaller id, newest first, at most max; a new array (empty for an unnamed
 * job). NULL after printing why, with *rc set. */
struct json_object *insight_history_jobs(struct rt_vl_client *c, struct json_object *job, unsigned max, int *rc);

#endif
