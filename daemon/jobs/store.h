/* Durable job state under the state directory:
 *   jobs/<id>/job.json       the job record, replaced atomically on changes
 *   jobs/<id>/samples.jsonl  one JSON sample per line, appended as taken
 *   last-id                  the last job id handed out
 * Samples are written with one write(2) per tick (no fsync): they survive a
 * crash or kill -9 of the daemon; records are fsynced on state changes. */
#ifndef RT_STORE_H
#define RT_STORE_H

#include "jobs/jobs.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_store {
    int dir_fd;
    int jobs_fd;
    char path[PATH_MAX];
    mode_t file_mode, dir_mode;
    uint64_t last_id;
};

/* Create or open the state directory. private: 0700/0600 (user daemons),
 * else 0750/0640. -errno with a message in err. */
int rt_store_open(struct rt_store *s, const char *dir, bool private_mode, char *err, size_t errlen);
void rt_store_close(struct rt_store *s);

/* The largest job id: the API's integers are signed 64-bit. */
#define RT_JOB_ID_MAX ((uint64_t)INT64_MAX)

/* Next job id in *id, persisted before it is returned: 0, -EOVERFLOW when every
 * id up to RT_JOB_ID_MAX has been used (ids are never reused: an id names
 * one job forever), or -errno when the counter cannot be written. */
int rt_store_alloc_id(struct rt_store *s, uint64_t *id);
/* Create jobs/<id>/ and write its record. */
int rt_store_create_job(struct rt_store *s, uint64_t id, struct json_object *record);
/* sync: fsync (state changes); periodic refreshes of totals skip it. */
int rt_store_save_record(struct rt_store *s, uint64_t id, struct json_object *record, bool sync);
/* Append-only fd of the job's samples file. */
int rt_store_open_samples(struct rt_store *s, uint64_t id);
/* Read-only fd of the job's samples file, or -errno. */
int rt_store_read_samples(struct rt_store *s, uint64_t id);
int rt_store_remove_job(struct rt_store *s, uint64_t id);
/* Modification time of the job's samples file (Unix seconds), 0 if none. */
double rt_store_samples_mtime(struct rt_store *s, uint64_t id);
/* Bytes used by one job on disk. */
uint64_t rt_store_job_bytes(struct rt_store *s, uint64_t id);

/* Load every job into the registry: counts and indexes their samples, drops
 * a torn last line, and rebuilds totals from samples written after the last
 * record update. Unreadable jobs are logged and skipped. */
int rt_store_load(struct rt_store *s, struct rt_jobs *jobs);

/* Add one sample line (without newline) to a job's totals. */
void rt_job_summary_add_line(struct rt_job_summary *sum, const char *line, size_t len);

#endif
