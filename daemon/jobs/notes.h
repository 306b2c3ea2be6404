/* Requested against used: a job's efficiency as seff computes it, and notes
 * that say what to change, in the spirit of Princeton's jobstats. Pure: from
 * the job's summary (the object GetJob shows) and its request, by the rules
 * documented in docs/efficiency.md; thresholds come from the configuration
 * (notes.* keys).
 *
 * The summary is read by key, and a rule whose figure a job lacks (null:
 * a process tree has no pressure) stays silent:
 *   duration_secs, cpu_secs, avg_cores, peak_cores, gpu_avg_usage, gpu_peak_usage
 *   memory_peak_bytes      what the job could not do without (docs/jobs.md); else peak_rss_bytes
 *   oom_kills              processes the OOM killer killed
 *   throttled_pct          % of the job's life throttled by its CPU quota
 *   pressure.memory_some_pct  % of the job's life some task waited for memory */
#ifndef RT_JOB_NOTES_H
#define RT_JOB_NOTES_H

#include "config/config.h"
#include "rt/request.h"

#include <json-c/json.h>

/* Thresholds, in percent (0 turns a rule off) and seconds. */
struct rt_notes_rules {
    unsigned cpu_efficiency_below;  /* CPU efficiency under this: ask for fewer CPUs */
    unsigned memory_usage_below;    /* peak memory under this % of the request: ask for less */
    unsigned gpu_usage_below;       /* GPU efficiency under this: ask for fewer GPUs */
    unsigned throttled_above;       /* throttled by the CPU quota at least this % of the time */
    unsigned memory_pressure_above; /* memory pressure (some) at least this % of the time */
    unsigned min_duration_secs;     /* shorter jobs get no efficiency notes (too short to judge) */
};

/* The thresholds of a configuration (its notes.* keys). */
void rt_notes_rules_from_config(const struct rt_config *c, struct rt_notes_rules *out);

/* {"cpu_pct", "memory_pct", "gpu_pct"}: used over asked, in percent (one
 * decimal), each null where nothing was asked for or the use is not known;
 * NULL (JSON null) when the request is empty. */
struct json_object *rt_job_efficiency(struct json_object *summary, const struct rt_request *req);

/* The notes that apply, most urgent first: an array of
 *   {"id": "cpu_efficiency", "text": "CPU efficiency 24%: …; ask for 2 (cpus=2).",
 *    "suggest": {"cpus": 2}}
 * ("suggest" a JobRequest of what to ask for instead, where a rule has one).
 * Ids: oom_killed, memory_pressure, cpu_throttled, cpu_efficiency,
 * memory_unused, gpu_unused, gpu_efficiency. Never NULL (an empty array). */
struct json_object *rt_job_notes(struct json_object *summary, const struct rt_request *req,
                                 const struct rt_notes_rules *rules);

#endif
