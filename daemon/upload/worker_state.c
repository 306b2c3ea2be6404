/* Per-job bookkeeping of the worker: meta.json writes, failures and
 * backoff, and forgetting a job once it is done. */
#include "upload/worker.h"

#include "system/log.h"
#include "upload/spool.h"
#include "upload/upload_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rt_upload_job *rt_upload_find_job(struct rt_upload_worker *w, uint64_t id)
{
    for (struct rt_upload_job *j = w->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

/* Everything of an ended job is sealed: /finish may go once it is sent. */
bool rt_upload_all_sealed(const struct rt_upload_job *j)
{
    return j->ended && j->rows_fd < 0 && j->unsealed.n == 0;
}

bool rt_upload_exit_settled(const struct rt_upload_job *j, uint64_t now_ms)
{
    return j->exit_code >= 0 || now_ms >= j->exit_wait_until_ms;
}

/* 0 when written (or nothing to write: the job is done), else -errno. */
static int write_meta_locked(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    /* meta_mu held: the dirfd cannot be closed meanwhile (rt_upload_done takes it). */
    pthread_mutex_lock(&w->mu);
    char *meta = j && !j->done && j->dirfd >= 0 ? rt_upload_job_meta(j) : NULL;
    int dirfd = meta ? j->dirfd : -1;
    uint64_t id = j ? j->id : 0;
    pthread_mutex_unlock(&w->mu);
    if (!meta)
        return 0;
    /* Then its copy: a meta.json damaged on disk does not cost the job's
     * upload (its token and what was sent are only here). */
    const char *file = RT_SPOOL_META;
    int rc = rt_write_file_at(dirfd, file, meta, strlen(meta), 0600, RT_SYNC_FULL);
    if (rc == 0)
        rc = rt_write_file_at(dirfd, file = RT_SPOOL_META_COPY, meta, strlen(meta), 0600, RT_SYNC_FULL);
    if (rc < 0)
        rt_warn("upload: job %llu: cannot write %s: %s", (unsigned long long)id, file, strerror(-rc));
    explicit_bzero(meta, strlen(meta)); /* holds the token */
    free(meta);
    return rc;
}

/* For the worker thread and for jobs not yet published (j stays valid). */
int rt_upload_save_meta(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    pthread_mutex_lock(&w->meta_mu);
    int rc = write_meta_locked(w, j);
    pthread_mutex_unlock(&w->meta_mu);
    return rc;
}

/* For other threads: the worker may finish and free the job meanwhile. */
int rt_upload_save_meta_id(struct rt_upload_worker *w, uint64_t id)
{
    pthread_mutex_lock(&w->meta_mu);
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = rt_upload_find_job(w, id);
    pthread_mutex_unlock(&w->mu);
    int rc = write_meta_locked(w, j); /* only the worker frees jobs, and only under meta_mu */
    pthread_mutex_unlock(&w->meta_mu);
    return rc;
}

/* ---- retry bookkeeping ---- */

static uint64_t next_rand(struct rt_upload_worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static uint64_t backoff_ms(struct rt_upload_worker *w, unsigned failures)
{
    return rt_upload_backoff_ms(w->backoff_base_ms, w->backoff_max_ms, failures, next_rand(w));
}

void rt_upload_failed(struct rt_upload_worker *w, struct rt_upload_job *j, const char *what, const char *error)
{
    pthread_mutex_lock(&w->mu);
    j->failures++;
    if (snprintf(j->last_error, sizeof(j->last_error), "%s: %s", what, error) >= (int)sizeof(j->last_error))
        rt_debug("upload: job %llu: error message truncated", (unsigned long long)j->id);
    j->retry_at_ms = rt_upload_now_ms() + backoff_ms(w, j->failures);
    bool first = !j->in_episode;
    j->in_episode = true;
    pthread_mutex_unlock(&w->mu);
    if (first)
        rt_upload_on_failed(j->id, j->run_id, what, error);
}

void rt_upload_succeeded(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    pthread_mutex_lock(&w->mu);
    bool recovered = j->in_episode;
    unsigned failures = j->failures;
    j->in_episode = false;
    j->failures = 0;
    j->rejections = 0;
    j->last_error[0] = '\0';
    j->retry_at_ms = 0;
    pthread_mutex_unlock(&w->mu);
    if (recovered)
        rt_upload_on_recovered(j->id, j->run_id, failures);
}

/* A 4xx that retrying will not fix (not auth, timeout, conflict, rate limit). */
bool rt_upload_is_rejection(long status)
{
    return status >= 400 && status < 500 && status != 401 && status != 403 && status != 408 &&
           status != 409 && status != 429;
}

/* The job needs nothing more: its spool goes; finished = /finish accepted. */
void rt_upload_done(struct rt_upload_worker *w, struct rt_upload_job *j, bool finished)
{
    pthread_mutex_lock(&w->meta_mu);
    pthread_mutex_lock(&w->mu);
    j->done = true;
    j->abandoned = !finished; /* with done, under the same lock: never "finishing" meanwhile */
    j->n_pending = 0;
    j->seg_bytes = 0;
    if (j->rows_fd >= 0)
        close(j->rows_fd);
    j->rows_fd = -1;
    pthread_mutex_unlock(&w->mu);
    rt_upload_job_remove_files(j, w->spool_fd);
    pthread_mutex_lock(&w->mu);
    j->finished = finished; /* status says finished only once the spool is clean */
    /* Forget the oldest finished jobs beyond RT_UPLOAD_MAX_DONE_JOBS (never j: the
     * caller still holds it). */
    size_t n_done = 0;
    for (struct rt_upload_job *x = w->jobs; x; x = x->next)
        n_done += x->done;
    while (n_done > RT_UPLOAD_MAX_DONE_JOBS) {
        struct rt_upload_job **pp = &w->jobs, **oldest = NULL;
        for (; *pp; pp = &(*pp)->next)
            if ((*pp)->done && *pp != j)
                oldest = pp; /* new jobs are pushed at the head: the last one is the oldest */
        struct rt_upload_job *victim = *oldest;
        *oldest = victim->next;
        rt_upload_job_destroy(victim);
        n_done--;
    }
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&w->meta_mu);
}

void rt_upload_rejected(struct rt_upload_worker *w, struct rt_upload_job *j, const char *what,
                         const struct rt_http_resp *resp)
{
    rt_upload_failed(w, j, what, resp->error);
    if (++j->rejections >= RT_UPLOAD_MAX_REJECTIONS) {
        /* Logged once it is true: the spool is gone. */
        rt_upload_done(w, j, false);
        rt_upload_on_abandoned(j->id, j->run_id, j->last_error);
    }
}
