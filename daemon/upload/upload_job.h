/* One job's upload state, shared by the worker (worker.c) and its persistence
 * (upload_job.c). Fields are written only under the worker's mutex; the
 * network side (run id, credentials, pending/sent lists) only by the worker
 * thread, which may therefore read them without the lock. */
#ifndef RT_UPLOAD_JOB_H
#define RT_UPLOAD_JOB_H

#include "upload/s3.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_batch {
    uint64_t seq, bytes;
    int64_t sealed_at;           /* Unix ms: the spool cap drops the oldest first */
};

struct rt_u64_list {
    uint64_t *v;
    size_t n, cap;
};

struct rt_upload_job {
    uint64_t id;
    int dirfd;                   /* <spool>/<id>, -1 once done */
    int rows_fd;                 /* append fd of rows.<seg>, -1 when closed */
    uint64_t seg;                /* current rows segment = sequence number of its batch */
    uint64_t seg_bytes;
    uint64_t next_cut_ms;        /* monotonic */
    bool write_failed;           /* a rows append failed (logged once) */
    char *token;
    char *api_url;               /* NULL = the worker's */
    uint64_t interval_ms;        /* 0 = the worker's */
    struct json_object *run_fields;
    struct json_object *omitted; /* names of fields POST /runs refused: sent without them */
    /* run state */
    char *run_id, *uri_prefix;
    char *bucket, *key_prefix;   /* from uri_prefix; NULL = no S3 (inline only) */
    struct rt_s3_creds creds;
    bool has_creds, creds_stale;
    struct rt_batch *pending;    /* sorted by seq */
    size_t n_pending, cap_pending;
    struct rt_u64_list sent, dropped;
    struct rt_u64_list unsealed; /* rows segments whose sealing failed: retried */
    bool stop_sealed;            /* sealed once for the shutdown */
    /* lifecycle */
    bool ended, finished, done, resumed_running;
    bool abandoned;              /* done without /finish accepted: given up */
    int exit_code;               /* RT_UPLOAD_EXIT_UNKNOWN: not known (yet) */
    int64_t finished_at;         /* Unix seconds of the job's end */
    uint64_t exit_wait_until_ms; /* monotonic: /finish without a status not before */
    /* retry state */
    unsigned failures, s3_failures, rejections;
    bool in_episode;
    uint64_t retry_at_ms;
    char last_error[256];
    struct rt_upload_job *next;
};

void rt_u64_list_add(struct rt_u64_list *l, uint64_t v);
bool rt_u64_list_has(const struct rt_u64_list *l, uint64_t v);
void rt_u64_list_remove(struct rt_u64_list *l, uint64_t v);

/* Capped exponential backoff with jitter for the n-th consecutive failure:
 * uniform in [d/2, d], d = min(base·2^(n-1), max); rnd is any random number. */
uint64_t rt_upload_backoff_ms(unsigned base_ms, unsigned max_ms, unsigned failures, uint64_t rnd);

struct rt_upload_job *rt_upload_job_alloc(uint64_t id);
void rt_upload_job_destroy(struct rt_upload_job *j);
void rt_upload_job_add_pending(struct rt_upload_job *j, uint64_t seq, uint64_t bytes, int64_t sealed_at);
void rt_upload_job_remove_pending(struct rt_upload_job *j, uint64_t seq);
uint64_t rt_upload_job_pending_bytes(const struct rt_upload_job *j);
/* Sets run_id, uri_prefix (parsing bucket/prefix) and credentials. */
void rt_upload_job_set_run(struct rt_upload_job *j, const char *run_id, const char *uri_prefix,
                           const struct rt_s3_creds *creds);

/* meta.json text (holds the token: written 0600 only). Caller frees. */
char *rt_upload_job_meta(const struct rt_upload_job *j);
/* Loads <spool>/<name>: meta, leftover rows sealed into batches, pending
 * batches listed, sequence resumed. NULL when the directory holds no job
 * (then it has been removed). */
struct rt_upload_job *rt_upload_job_load(int spool_fd, const char *name);
/* Removes the job's files (meta first: it is the commit point) and its
 * directory; closes dirfd. */
void rt_upload_job_remove_files(struct rt_upload_job *j, int spool_fd);

#endif
