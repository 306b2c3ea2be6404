/* The record log (<state>/records.log): a job's record when it starts or
 * ends, appended with one write before StartJob or FinishJob answer, so that
 * a crash of the daemon at any moment after the answer keeps it; the job's
 * own files (directory, job.json, metadata.json) are written after the
 * answer, off its path (file creations and replacements cost ext4 0.1–0.3 ms
 * each). The log is emptied once every record in it is in its file and
 * synced, and replayed at start before the jobs are loaded
 * (docs/jobs.md, "Durability"). */
#ifndef RT_JOBS_RECORD_LOG_H
#define RT_JOBS_RECORD_LOG_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_record_log {
    int fd;
    bool dirty;          /* appended to since it was last emptied */
};

/* Open (create) the log in dir_fd. 0 or -errno. */
int rt_record_log_open(struct rt_record_log *l, int dir_fd, mode_t mode);
void rt_record_log_close(struct rt_record_log *l);
/* One line: {"id":…,"record":…[,"metadata":…]}. 0 or -errno. */
int rt_record_log_append(struct rt_record_log *l, uint64_t id, struct json_object *record, struct json_object *md);

/* The last whole entry of each job, in the order written: a line cut short
 * by a crash, or one that is no entry, is skipped. */
typedef void rt_record_log_fn(void *ctx, uint64_t id, struct json_object *record, struct json_object *md);
void rt_record_log_replay(struct rt_record_log *l, rt_record_log_fn *fn, void *ctx);
/* Empty the log. 0 or -errno. */
int rt_record_log_clear(struct rt_record_log *l);

#endif
