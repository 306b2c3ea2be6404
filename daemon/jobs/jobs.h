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
/* The running job that tracks this root (pid and start time) or, when
 * cgroup is not NULL, this cgroup; NULL if none. */
struct rt_job *rt_jobs_find_tracking(struct rt_jobs *r, int32_t pid, uint64_t starttime, const char *cgroup);
/* Samples per second that uid's running jobs sampled faster than base_secs
 * (the daemon's interval) take together. */
double rt_jobs_fast_rate_for(struct rt_jobs *r, uid_t uid, double base_secs);

struct rt_job *rt_job_new(void);
void rt_job_free(struct rt_job *j);

/* The varlink Job object (see the IDL), its upload null (the API fills it
 * in). Caller holds the lock. Its metadata is null when the job does not
 * hold it in memory (an ended job: the state directory has it,
 * rt_state_dir_read_metadata). */
struct json_object *rt_job_to_json(const struct rt_job *j, double now);
/* Persistent form: the Job object with exact times and totals, without the
 * metadata (a file of its own, written once) and live fields, plus the
 * fields needed to resume. */
struct json_object *rt_job_to_record(const struct rt_job *j);
/* Rebuild a job from its record; NULL when malformed. A value out of range
 * is replaced by its default and named in *repaired (else NULL). Records
 * from before the metadata file keep their metadata in j->metadata. */
struct rt_job *rt_job_from_record(struct json_object *o, const char **repaired);

/* A job's given GPUs as its record keeps them: at most RT_JOB_GPUS_MAX
 * UUIDs, each 1 to 95 bytes. */
#define RT_JOB_GPUS_MAX 64
bool rt_job_gpus_check(struct json_object *a);

/* What StartJob accepts: RT_JOB_INTERVAL_MIN .. _MAX. */
bool rt_job_interval_valid(double secs);
/* A job's metadata, serialised, is at most this long (LimitExceeded
 * "metadata_bytes"): ended jobs, kept on disk, must not fill it. */
#define RT_JOB_METADATA_MAX (64 * 1024)
size_t rt_job_metadata_size(struct json_object *md);

/* Check a JobMetadata object from a client; NULL when valid, else the
 * offending parameter name. */
const char *rt_job_metadata_check(struct json_object *md);

#endif
