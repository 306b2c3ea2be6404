/* The upload worker thread: seals rows into batches every interval, keeps
 * the spool under its cap, and runs each job's due work (worker_net.c). */
#include "upload/worker.h"

#include "system/log.h"
#include "upload/spool.h"
#include "upload/upload_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* rows.<seq> -> batch; a failure (disk full) is retried with backoff and
 * holds back /finish until it succeeds. */
static void seal_rows(struct rt_upload_worker *w, struct rt_upload_job *j, uint64_t seq)
{
    uint64_t rows = 0, bytes = 0;
    int rc = rt_spool_seal(j->dirfd, seq, &rows, &bytes);
    pthread_mutex_lock(&w->mu);
    if (rc == 1)
        rt_upload_job_add_pending(j, seq, bytes, (int64_t)(rt_real_ns() / 1000000));
    if (rc < 0)
        rt_u64_list_add(&j->unsealed, seq);
    else
        rt_u64_list_remove(&j->unsealed, seq);
    pthread_mutex_unlock(&w->mu);
    if (rc < 0) {
        char err[96];
        snprintf(err, sizeof(err), "cannot seal batch %llu: %s", (unsigned long long)seq, strerror(-rc));
        rt_upload_failed(w, j, "spool", err);
    }
    if (rc == 1)
        rt_upload_enforce_cap(w);
}

/* Cuts the current rows segment into a batch. final: the job ended, no new
 * segment is opened. */
static void seal_segment(struct rt_upload_worker *w, struct rt_upload_job *j, bool final)
{
    pthread_mutex_lock(&w->mu);
    j->next_cut_ms = rt_upload_now_ms() + rt_upload_interval(w, j);
    if (j->rows_fd < 0 || (j->seg_bytes == 0 && !final)) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    uint64_t seq = j->seg;
    int old_fd = j->rows_fd;
    if (w->stopping)
        j->stop_sealed = true;
    if (!final) {
        int fd = rt_spool_open_rows(j->dirfd, seq + 1);
        if (fd < 0) {
            pthread_mutex_unlock(&w->mu);
            rt_warn("upload: job %llu: cannot open a rows file: %s", (unsigned long long)j->id, strerror(-fd));
            return;
        }
        j->rows_fd = fd;
    } else {
        j->rows_fd = -1;
    }
    j->seg = seq + 1;
    j->seg_bytes = 0;
    pthread_mutex_unlock(&w->mu);

    close(old_fd);
    seal_rows(w, j, seq);
}

struct victim {
    struct rt_upload_job *job;
    struct rt_batch batch;
};

/* Records one job's drops in meta.json, then deletes their files; when the
 * record fails they are not dropped after all (a restart would resend or
 * reuse the sequence numbers of files deleted unrecorded). */
static void drop_batches(struct rt_upload_worker *w, struct victim *v, size_t nv, size_t first)
{
    struct rt_upload_job *j = v[first].job;
    uint64_t n = 0, bytes = 0;
    int rc = rt_upload_save_meta(w, j);
    if (rc < 0) {
        pthread_mutex_lock(&w->mu);
        for (size_t k = first; k < nv; k++) {
            if (v[k].job != j)
                continue;
            rt_u64_list_remove(&j->dropped, v[k].batch.seq);
            rt_upload_job_add_pending(j, v[k].batch.seq, v[k].batch.bytes, v[k].batch.sealed_at);
        }
        pthread_mutex_unlock(&w->mu);
        rt_warn("upload: job %llu: spool over its cap, but the drops cannot be recorded (%s): nothing dropped",
                (unsigned long long)j->id, strerror(-rc));
    }
    for (size_t k = first; k < nv; k++) {
        if (v[k].job != j)
            continue;
        if (rc == 0) {
            char name[32];
            rt_spool_batch_name(v[k].batch.seq, name);
            unlinkat(j->dirfd, name, 0);
            n++, bytes += v[k].batch.bytes;
        }
        v[k].job = NULL;
    }
    if (n)
        rt_upload_on_dropped(j->id, j->run_id, n, bytes);
}

/* Over the cap: drop the oldest sealed batches, finished jobs' first. */
void rt_upload_enforce_cap(struct rt_upload_worker *w)
{
    if (!w->spool_max)
        return;
    struct victim *v = NULL;
    size_t nv = 0;
    bool warn = false;
    uint64_t total = 0;
    pthread_mutex_lock(&w->mu);
    for (struct rt_upload_job *j = w->jobs; j; j = j->next)
        if (!j->done)
            total += rt_upload_job_pending_bytes(j);
    if (total <= w->spool_max) {
        if (total < w->spool_max / 10 * 9)
            w->full_warned = false;
        pthread_mutex_unlock(&w->mu);
        return;
    }
    if (!w->full_warned)
        warn = w->full_warned = true;
    uint64_t was = total;
    while (total > w->spool_max) {
        struct rt_upload_job *best = NULL;
        for (struct rt_upload_job *j = w->jobs; j; j = j->next) {
            if (j->done || j->n_pending == 0)
                continue;
            if (!best || (j->ended && !best->ended) ||
                (j->ended == best->ended && (j->pending[0].sealed_at < best->pending[0].sealed_at ||
                                             (j->pending[0].sealed_at == best->pending[0].sealed_at &&
                                              j->id < best->id))))
                best = j;
        }
        if (!best)
            break; /* only unsealed rows left */
        struct rt_batch b = best->pending[0];
        rt_upload_job_remove_pending(best, b.seq);
        rt_u64_list_add(&best->dropped, b.seq);
        total -= b.bytes;
        v = rt_xrealloc(v, (nv + 1) * sizeof(*v));
        v[nv++] = (struct victim){best, b};
    }
    pthread_mutex_unlock(&w->mu);
    if (warn)
        rt_upload_on_spool_full(was, w->spool_max);
    for (size_t i = 0; i < nv; i++)
        if (v[i].job)
            drop_batches(w, v, nv, i);
    free(v);
}

/* ---- scheduling ---- */

static bool needs_network(struct rt_upload_worker *w, const struct rt_upload_job *j)
{
    if (j->done)
        return false;
    if (!j->run_id || j->unsealed.n)
        return true;
    bool sealed = rt_upload_all_sealed(j);
    if (j->n_pending && !rt_upload_finish_inline(w, j, sealed))
        return true;
    return sealed && (j->n_pending == 0 || rt_upload_finish_inline(w, j, sealed)) &&
           rt_upload_exit_settled(j, rt_upload_now_ms());
}

static bool seal_due(struct rt_upload_worker *w, const struct rt_upload_job *j, uint64_t now)
{
    if (j->done || j->rows_fd < 0)
        return false;
    return j->ended || (j->seg_bytes && (now >= j->next_cut_ms || (w->stopping && !j->stop_sealed)));
}

/* Runs one job's due work. Called without the lock; what other threads
 * change (ended, rows) is read under it. */
static void step(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    pthread_mutex_lock(&w->mu);
    uint64_t now = rt_upload_now_ms();
    bool seal = seal_due(w, j, now), final = j->ended;
    pthread_mutex_unlock(&w->mu);
    if (seal)
        seal_segment(w, j, final);
    pthread_mutex_lock(&w->mu);
    bool go = !j->done && now >= j->retry_at_ms && needs_network(w, j);
    bool sealed = rt_upload_all_sealed(j);
    pthread_mutex_unlock(&w->mu);
    if (!go)
        return;
    for (size_t i = j->unsealed.n; i-- > 0;) {
        seal_rows(w, j, j->unsealed.v[i]);
        if (j->unsealed.n > i)
            return; /* still failing: backed off */
    }
    if (!j->run_id) {
        /* Everything this job had was dropped before a run existed. */
        if (sealed && j->n_pending == 0 && j->dropped.n) {
            rt_upload_done(w, j, false);
            return;
        }
        if (!rt_upload_start_run(w, j))
            return;
    }
    if (!rt_upload_finish_inline(w, j, sealed) && !rt_upload_send_batches(w, j))
        return;
    if (sealed && (j->n_pending == 0 || rt_upload_finish_inline(w, j, sealed)) &&
        rt_upload_exit_settled(j, rt_upload_now_ms()))
        rt_upload_finish_run(w, j);
}

/* The first job with work due now; else *wake_ms = the earliest future due time. */
static struct rt_upload_job *due_job(struct rt_upload_worker *w, uint64_t now, uint64_t *wake_ms)
{
    uint64_t wake = UINT64_MAX;
    for (struct rt_upload_job *j = w->jobs; j; j = j->next) {
        if (j->done)
            continue;
        if (seal_due(w, j, now))
            return j;
        if (needs_network(w, j)) {
            if (now >= j->retry_at_ms)
                return j;
            if (j->retry_at_ms < wake)
                wake = j->retry_at_ms;
        } else if (!rt_upload_exit_settled(j, now) && j->exit_wait_until_ms < wake) {
            wake = j->exit_wait_until_ms; /* /finish, status or not */
        }
        if (j->rows_fd >= 0 && j->seg_bytes == 0 && j->next_cut_ms <= now)
            j->next_cut_ms = now + rt_upload_interval(w, j); /* nothing to cut: next interval */
        if (j->rows_fd >= 0 && j->next_cut_ms < wake)
            wake = j->next_cut_ms;
    }
    *wake_ms = wake;
    return NULL;
}

static void wait_until(struct rt_upload_worker *w, uint64_t wake_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = rt_upload_now_ms();
    uint64_t delta = wake_ms > now ? wake_ms - now : 0;
    if (delta > 3600 * 1000)
        delta = 3600 * 1000;
    ts.tv_sec += (time_t)(delta / 1000);
    ts.tv_nsec += (long)(delta % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cond, &w->mu, &ts);
}

void *rt_upload_worker_main(void *arg)
{
    struct rt_upload_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        uint64_t now = rt_upload_now_ms(), wake;
        if (w->stopping && now >= w->stop_deadline_ms)
            break;
        struct rt_upload_job *j = due_job(w, now, &wake);
        if (!j) {
            if (w->stopping && wake >= w->stop_deadline_ms)
                break; /* nothing more can happen in the shutdown budget */
            wait_until(w, w->stopping && w->stop_deadline_ms < wake ? w->stop_deadline_ms : wake);
            continue;
        }
        pthread_mutex_unlock(&w->mu);
        step(w, j);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
