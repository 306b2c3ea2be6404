/* Internals shared by the upload worker's files:
 *   worker_state.c  meta writes, retry bookkeeping, finishing a job
 *   worker_net.c    the network steps of one job (runs, PUTs, finish)
 *   worker.c        sealing, the spool cap, scheduling, the thread
 *   upload_api.c    the public API (upload.h)
 * Locking: mu guards the job list and every job field; meta_mu serialises
 * meta.json writes and the removal of a job's directory. Only the worker
 * thread changes run state and frees jobs. */
#ifndef RT_UPLOAD_WORKER_H
#define RT_UPLOAD_WORKER_H

#include "upload/http.h"
#include "rt/util.h"
#include "upload/upload.h"
#include "upload/upload_job.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RT_UPLOAD_MAX_DONE_JOBS 256        /* finished jobs kept for status queries */
#define RT_UPLOAD_MAX_REJECTIONS 5         /* consecutive 4xx answers before a job is given up */
#define RT_UPLOAD_INLINE_MAX_BYTES (1u << 20) /* spooled gzip; the inline CSV is ~10x that */

struct region_cache {
    char bucket[64], region[64];
};

struct rt_upload_worker {
    /* configuration (immutable) */
    char *spool_dir, *api_url, *default_token, *s3_endpoint, *s3_region, *probe_url;
    uint64_t interval_ms, spool_max;
    unsigned backoff_base_ms, backoff_max_ms, refresh_margin_s, inline_after, exit_wait_ms;
    void (*complete_run_fields)(struct json_object *fields, void *ctx);
    void *complete_ctx;
    int spool_fd;
    /* shared state */
    pthread_mutex_t mu;          /* jobs and every job field */
    pthread_mutex_t meta_mu;     /* serialises meta.json writes */
    pthread_cond_t cond;
    struct rt_upload_job *jobs;
    bool stopping, stopped, started;
    bool unterminated_warned;    /* rows without '\n' seen (logged once) */
    uint64_t stop_deadline_ms;
    _Atomic uint64_t abort_at_ms;
    pthread_t thread;
    /* worker thread only */
    struct rt_http http;
    bool full_warned;
    uint64_t rng;
    struct region_cache regions[8];
    size_t n_regions;
};

static inline uint64_t rt_upload_interval(const struct rt_upload_worker *w, const struct rt_upload_job *j)
{
    return j->interval_ms ? j->interval_ms : w->interval_ms;
}

static inline const char *rt_upload_api_url(const struct rt_upload_worker *w, const struct rt_upload_job *j)
{
    return j->api_url ? j->api_url : w->api_url;
}

static inline uint64_t rt_upload_now_ms(void) { return rt_mono_ns() / 1000000; }
static inline int64_t rt_upload_now_unix(void) { return (int64_t)(rt_real_ns() / RT_NSEC_PER_SEC); }

/* worker_state.c (callers hold no lock unless said) */
struct rt_upload_job *rt_upload_find_job(struct rt_upload_worker *w, uint64_t id); /* mu held */
bool rt_upload_all_sealed(const struct rt_upload_job *j);                          /* mu held or worker */
/* /finish may go as far as the exit status is concerned (known, or waited for). */
bool rt_upload_exit_settled(const struct rt_upload_job *j, uint64_t now_ms);       /* mu held or worker */
/* meta.json written atomically: 0, or -errno (warned; the old file stays). */
int rt_upload_save_meta(struct rt_upload_worker *w, struct rt_upload_job *j);
int rt_upload_save_meta_id(struct rt_upload_worker *w, uint64_t id);
void rt_upload_failed(struct rt_upload_worker *w, struct rt_upload_job *j, const char *what, const char *error);
void rt_upload_succeeded(struct rt_upload_worker *w, struct rt_upload_job *j);
bool rt_upload_is_rejection(long status);
void rt_upload_rejected(struct rt_upload_worker *w, struct rt_upload_job *j, const char *what,
                        const struct rt_http_resp *resp);
void rt_upload_done(struct rt_upload_worker *w, struct rt_upload_job *j, bool finished);

/* worker_net.c (worker thread) */
bool rt_upload_start_run(struct rt_upload_worker *w, struct rt_upload_job *j);
bool rt_upload_send_batches(struct rt_upload_worker *w, struct rt_upload_job *j);
bool rt_upload_finish_inline(struct rt_upload_worker *w, const struct rt_upload_job *j, bool sealed);
void rt_upload_finish_run(struct rt_upload_worker *w, struct rt_upload_job *j);

/* worker.c */
void rt_upload_enforce_cap(struct rt_upload_worker *w);
void *rt_upload_worker_main(void *arg);

#endif
