/* Durable job state under the state directory:
 *   jobs/<id>/job.json       the job record, replaced atomically on changes
 *   jobs/<id>/metadata.json  its metadata, written once
 *   jobs/<id>/fig-…, host/…  its samples (store/samples.h)
 *   last-id                  the last job id handed out
 * Samples are written with one write(2) per tick (no fsync): they survive a
 * crash or kill -9 of the daemon; a state change goes into the record log
 * first (jobs/record_log.h), records are fsynced on state changes, by the
 * syncer's thread just after they are written (store/syncer.h). */
#ifndef RT_STATE_DIR_H
#define RT_STATE_DIR_H

#include "jobs/jobs.h"
#include "jobs/record_log.h"
#include "store/samples.h"
#include "store/syncer.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_state_dir {
    int dir_fd;
    int jobs_fd;
    char path[PATH_MAX];
    mode_t file_mode, dir_mode;
    uint64_t last_id;
    int last_id_fd;               /* last-id, open for rewriting */
    size_t last_id_len;
    size_t backlog_max;           /* sample bytes kept in memory per log on a full disk (0: 16 MiB) */
    struct rt_samples samples;    /* opened by rt_state_dir_load */
    bool samples_open;
    struct rt_syncer *syncer;
    struct rt_record_log log;     /* records of state changes not yet in their files */
};

/* Create or open the state directory. private: 0700/0600 (user daemons),
 * else 0750/0640. -errno with a message in err. */
int rt_state_dir_open(struct rt_state_dir *s, const char *dir, bool private_mode, char *err, size_t errlen);
void rt_state_dir_close(struct rt_state_dir *s);

/* The largest job id: the API's integers are signed 64-bit. */
#define RT_JOB_ID_MAX ((uint64_t)INT64_MAX)

/* Next job id in *id, persisted before it is returned: 0, -EOVERFLOW when every
 * id up to RT_JOB_ID_MAX has been used (ids are never reused: an id names
 * one job forever), or -errno when the counter cannot be written. */
int rt_state_dir_alloc_id(struct rt_state_dir *s, uint64_t *id);
/* A state change (a job starts, md its metadata; ends; …): its record into
 * the record log, one append, before the change is answered; the files
 * follow (rt_state_dir_create_job, rt_state_dir_save_record with sync). A new job is
 * refused (-ENOSPC) when the file system has no room for its files. */
int rt_state_dir_log_record(struct rt_state_dir *s, uint64_t id, struct json_object *record, struct json_object *md);
/* Once every logged record is in its file and synced, empty the log: now
 * if wait, else only when nothing waits for the disk. */
void rt_state_dir_settle(struct rt_state_dir *s, bool wait);
/* Create jobs/<id>/ and write its metadata and record (synced soon). */
int rt_state_dir_create_job(struct rt_state_dir *s, uint64_t id, struct json_object *record, struct json_object *md);
/* The job's metadata, or NULL when its file is missing or malformed. */
struct json_object *rt_state_dir_read_metadata(struct rt_state_dir *s, uint64_t id);
/* sync: fsync soon, off the caller's path (a logged state change); periodic
 * refreshes of totals skip it. Either way the record is written when this
 * returns. The record's length, or -errno. */
int rt_state_dir_save_record(struct rt_state_dir *s, uint64_t id, struct json_object *record, bool sync);
/* Remove a job's files (fig: its samples, or NULL). */
int rt_state_dir_remove_job(struct rt_state_dir *s, uint64_t id, struct rt_figlog *fig);
/* When the job's samples were last written (Unix seconds), 0 if never. */
double rt_state_dir_samples_mtime(struct rt_state_dir *s, uint64_t id);
/* Bytes of the job's own files: record, metadata, figures. */
uint64_t rt_state_dir_job_bytes(const struct rt_job *j);

/* Open the sample store and load every job into the registry: its samples
 * indexed, totals rebuilt from those taken after its record was saved (the
 * one rule), samples files of an older daemon moved into the store.
 * Unreadable jobs are logged and skipped. The number loaded, or -errno. */
int rt_state_dir_load(struct rt_state_dir *s, struct rt_jobs *jobs);

#endif
