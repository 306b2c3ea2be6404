/* The job registry: every job the daemon knows, running or ended. */
#ifndef RT_JOBS_H
#define RT_JOBS_H

#include "jobs/job.h"

#include <pthread.h>
#include <stddef.h>

struct rt_jobs {
    pthread_mutex_t lock;
    struct rt_job **v;   /* ordered by id */
    size_t n, cap;
};

void rt_jobs_init(struct rt_jobs *r);
/* Frees every job. */
void rt_jobs_free(struct rt_jobs *r);
void rt_jobs_lock(struct rt_jobs *r);
void rt_jobs_unlock(struct rt_jobs *r);

/* The caller holds the lock for the functions below. */
void rt_jobs_add(struct rt_jobs *r, struct rt_job *j);
void rt_jobs_remove(struct rt_jobs *r, struct rt_job *j);
struct rt_job *rt_jobs_find(struct rt_jobs *r, uint64_t id);
/* owner's job of that name: a running one, else the newest. *running counts
 * owner's running jobs of that name (more than one: the name is ambiguous,
 * and the newest running one is returned). Names are labels: any number of
 * jobs may share one. */
struct rt_job *rt_jobs_find_name(struct rt_jobs *r, const char *name, uid_t owner, size_t *running);
size_t rt_jobs_running_for(struct rt_jobs *r, uid_t uid);
/* Samples per second that uid's running jobs sampled faster than base_secs
 * (the daemon's interval) take together. */
double rt_jobs_fast_rate_for(struct rt_jobs *r, uid_t uid, double base_secs);

struct rt_job *rt_job_new(void);
void rt_job_free(struct rt_job *j);
/* Record where sample number `index` starts in the samples file. */
void rt_job_note_sample(struct rt_job *j, uint64_t index, uint64_t offset);

/* A sample's cores used, for the peak: the highest of all samples. (A
 * sample's cores are its CPU time over at least RT_CORES_MIN_SPAN_SECS, so
 * a short one cannot read high from a single clock tick.) */
void rt_job_summary_note_cores(struct rt_job_summary *s, double cores);

/* CPU time moves in clock ticks (10 ms): cores are measured over at least
 * ten of them. */
#define RT_CORES_MIN_SPAN_SECS 0.1

/* The varlink Job object (see the IDL). Caller holds the lock. */
struct json_object *rt_job_to_json(const struct rt_job *j, double now);
/* Persistent form: rt_job_to_json plus the fields needed to resume. */
struct json_object *rt_job_to_record(const struct rt_job *j);
/* Rebuild a job from its record; NULL when malformed. */
struct rt_job *rt_job_from_record(struct json_object *o);

/* Check a JobMetadata object from a client; NULL when valid, else the
 * offending parameter name. */
const char *rt_job_metadata_check(struct json_object *md);

#endif
