/* The upload worker: streams each job's CSV rows to the Sentinel API and S3
 * through a durable spool (docs/upload.md).
 *
 * Threads: rt_upload_job_rows() is called from the sampler thread every tick;
 * it appends to a spool file and never touches the network. Everything that
 * talks to the network runs on the worker's own thread. All functions are
 * thread-safe. */
#ifndef RT_UPLOAD_H
#define RT_UPLOAD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_upload_config {
    const char *spool_dir;          /* created 0700; survives restarts */
    const char *api_url;            /* Sentinel base URL, e.g. https://api.sentinel.sparecores.net */
    const char *default_token;      /* for jobs without their own token; NULL/"" = none */
    unsigned upload_interval_ms;    /* batch cadence; 0 = 60 s */
    uint64_t spool_max_bytes;       /* 0 = unlimited */
    /* S3 endpoint override (tests, S3-compatible stores): path-style
     * <endpoint>/<bucket>/<key> signed for s3_region; no region discovery. */
    const char *s3_endpoint;
    const char *s3_region;          /* NULL = us-east-1 */
    const char *region_probe_url;   /* test knob: "%s" = bucket; NULL = http://%s.s3.amazonaws.com/ */
    /* Knobs with production defaults when 0. */
    unsigned backoff_base_ms;       /* 1000 */
    unsigned backoff_max_ms;        /* 300000 */
    unsigned refresh_margin_s;      /* refresh credentials this long before expiry: 300 */
    unsigned connect_timeout_ms;    /* 10000 */
    unsigned request_timeout_ms;    /* 30000 */
    unsigned inline_after_failures; /* ended job, nothing uploaded: go inline after N S3 failures: 3 */
    unsigned exit_wait_ms;          /* a job ended with no exit status: wait this long for one: 30000 */
    /* Called on the worker thread just before POST /runs with a copy of the
     * job's run fields, to add what is known only later (host and cloud
     * facts); it may block for a few seconds. NULL = none. */
    void (*complete_run_fields)(struct json_object *fields, void *ctx);
    void *complete_ctx;
};

/* Per-job settings; zero/NULL fields take the worker's configuration. */
struct rt_upload_job_opts {
    const char *api_url;
    unsigned upload_interval_ms;
};

struct rt_upload_status {
    bool tracked;                   /* the worker handles this job (it has a token) */
    bool ended;                     /* rt_upload_job_end() was called */
    bool finished;                  /* /finish was accepted: nothing left to do */
    bool abandoned;                 /* given up (the API kept refusing it): nothing more is sent */
    char run_id[128];               /* "" until POST /runs succeeded */
    uint64_t batches_sent, batches_pending, batches_dropped;
    uint64_t bytes_pending;         /* spool bytes of this job (batches + unsealed rows) */
    unsigned failures;              /* consecutive failed attempts */
    char last_error[256];           /* "" when the last attempt succeeded */
};

struct rt_upload_worker;

/* Creates the spool, resumes every job found in it and starts the thread.
 * NULL (error logged) when the spool cannot be created or the thread fails. */
struct rt_upload_worker *rt_upload_worker_new(const struct rt_upload_config *cfg);

/* Starts uploading a job. token NULL/"" falls back to the default token; with
 * neither the job is ignored (returns 0, no network traffic, nothing spooled).
 * run_fields: metadata + host + cloud fields for POST /runs (borrowed; a copy
 * is kept). Calling it for a job resumed from the spool continues that job
 * (same run, next sequence number, its spooled token: token may be NULL). Writes the job's meta file (one fsync).
 * 0 on success (or ignored), -EEXIST when the id belongs to an ended job still
 * being uploaded, -errno on spool errors. */
int rt_upload_job_begin(struct rt_upload_worker *w, uint64_t job_id, const char *token,
                        struct json_object *run_fields);
/* The same with per-job settings (NULL = the worker's). */
int rt_upload_job_begin_opts(struct rt_upload_worker *w, uint64_t job_id, const char *token,
                             struct json_object *run_fields, const struct rt_upload_job_opts *opts);

/* Appends complete LF-terminated CSV rows (no header). Cheap: one write(2) to
 * the page cache, no fsync, no network. Ignored for unknown or ended jobs. */
void rt_upload_job_rows(struct rt_upload_worker *w, uint64_t job_id, const char *csv_rows, size_t len);

/* No exit status is known (lost, or reaped by its parent before the daemon
 * saw it). Never sent as 0: /finish says "failed" with exit_code -1. */
#define RT_UPLOAD_EXIT_UNKNOWN (-1)
/* The exit code a job's run finishes with: a stop of tracking is a success,
 * as both reference clients finish it (its processes went on); else the
 * status, or RT_UPLOAD_EXIT_UNKNOWN. */
static inline int rt_upload_exit_of(bool stopped, bool has_exit, int exit_code)
{
    return stopped ? 0 : has_exit ? exit_code : RT_UPLOAD_EXIT_UNKNOWN;
}

/* The job ended: its last rows are sealed into a batch, everything is sent,
 * then POST /finish (run_status from exit_code). Writes the meta file. With
 * RT_UPLOAD_EXIT_UNKNOWN, /finish waits up to exit_wait_ms for a late status
 * (rt_upload_job_set_exit: a `run` client reconnecting after a restart). */
void rt_upload_job_end(struct rt_upload_worker *w, uint64_t job_id, int exit_code);
/* The exit status of an ended job whose status was unknown; ignored once
 * /finish has gone or when a status was known already. */
void rt_upload_job_set_exit(struct rt_upload_worker *w, uint64_t job_id, int exit_code);
/* Work left that a private daemon must not idle out on: a job not done. */
bool rt_upload_busy(struct rt_upload_worker *w);

void rt_upload_job_status(struct rt_upload_worker *w, uint64_t job_id, struct rt_upload_status *out);
/* Sealed batches waiting to be sent over all jobs, and whether any job's
 * last attempt failed (for the service's STATUS line). */
void rt_upload_queue(struct rt_upload_worker *w, uint64_t *batches_pending, bool *failing);

/* Jobs resumed from the spool that were still running when the previous
 * process stopped: the daemon calls rt_upload_job_begin (continue) or
 * rt_upload_job_end (it ended meanwhile) for each. Returns a malloc'ed array. */
size_t rt_upload_resumed_running(struct rt_upload_worker *w, uint64_t **ids);

/* Seals open rows into batches, keeps sending until nothing is due or
 * timeout_ms passed (transfers in flight are aborted then), and joins the
 * thread. Unsent batches stay in the spool for the next start. Also sends
 * EXTEND_TIMEOUT_USEC to systemd for the duration. Idempotent. */
void rt_upload_worker_stop(struct rt_upload_worker *w, int timeout_ms);
/* Stops (when not yet stopped, with a 0 ms budget) and frees. */
void rt_upload_worker_free(struct rt_upload_worker *w);

#endif
