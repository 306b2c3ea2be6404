/* A job's totals (struct rt_job_summary, include/rt/job_figures.h) and the
 * one rule that sums them. The sampler adds each sample's figures as it
 * takes them; a restart adds the figures stored after the last saved record
 * with the same function, so the totals of a resumed job are the totals it
 * would have had without the restart. */
#ifndef RT_JOB_SUMMARY_H
#define RT_JOB_SUMMARY_H

#include "rt/job_figures.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* The rule: add one sample's figures. */
void rt_job_summary_add(struct rt_job_summary *s, const struct rt_job_figures *f);

/* A peak seen outside the samples (the root's ru_maxrss): total key is at
 * least v from now on, and there (gate on). */
void rt_job_summary_note_peak(struct rt_job_summary *s, const char *key, uint32_t gate, double v);

/* Add GPU UUIDs the job used to its set; true when the set grew (the
 * record is saved then, so that a restart keeps it). */
bool rt_job_summary_note_gpus(struct rt_job_summary *s, const char *const *uuids, size_t n);

/* Job.summary: {"duration_secs", "samples", every total, "gpus"}. */
struct json_object *rt_job_summary_json(const struct rt_job_summary *s, double duration_secs);

/* The exact totals as the job record keeps them, and back. from_record
 * fills only what the object has (records written before a field existed). */
struct json_object *rt_job_summary_to_record(const struct rt_job_summary *s);
void rt_job_summary_from_record(struct rt_job_summary *s, struct json_object *t, double interval_secs);

void rt_job_summary_free(struct rt_job_summary *s);

#endif
