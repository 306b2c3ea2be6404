/* The upload worker thread and the API the daemon calls (upload.h).
 * Per job: POST /runs, seal rows into batches every interval, PUT each batch,
 * refresh credentials, POST /finish; every failure backs off and retries. */
#include "upload.h"

#include "http.h"
#include "log.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/util.h"
#include "s3.h"
#include "sentinel.h"
#include "spool.h"
#include "upload_events.h"
#include "upload_job.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define MAX_DONE_JOBS 256        /* finished jobs kept for status queries */
#define MAX_REJECTIONS 5         /* consecutive 4xx answers before a job is given up */
#define INLINE_MAX_BYTES (1u << 20) /* spooled gzip; the inline CSV is ~10x that */

struct region_cache {
    char bucket[64], region[64];
};

struct rt_upload_worker {
    /* configuration (immutable) */
    char *spool_dir, *api_url, *default_token, *s3_endpoint, *s3_region, *probe_url;
    uint64_t interval_ms, spool_max;
    unsigned backoff_base_ms, backoff_max_ms, refresh_margin_s, inline_after;
    int spool_fd;
    /* shared state */
    pthread_mutex_t mu;          /* jobs and every job field */
    pthread_mutex_t meta_mu;     /* serialises meta.json writes */
    pthread_cond_t cond;
    struct rt_upload_job *jobs;
    bool stopping, stopped, started;
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

static uint64_t now_ms(void) { return rt_mono_ns() / 1000000; }
static int64_t now_unix(void) { return (int64_t)(rt_real_ns() / RT_NSEC_PER_SEC); }

static struct rt_upload_job *find_job(struct rt_upload_worker *w, uint64_t id)
{
    for (struct rt_upload_job *j = w->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

/* Everything of an ended job is sealed: /finish may go once it is sent. */
static bool all_sealed(const struct rt_upload_job *j)
{
    return j->ended && j->rows_fd < 0 && j->unsealed.n == 0;
}

static void write_meta_locked(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    /* meta_mu held: the dirfd cannot be closed meanwhile (job_done takes it). */
    pthread_mutex_lock(&w->mu);
    char *meta = j && !j->done && j->dirfd >= 0 ? rt_upload_job_meta(j) : NULL;
    int dirfd = meta ? j->dirfd : -1;
    uint64_t id = j ? j->id : 0;
    pthread_mutex_unlock(&w->mu);
    if (!meta)
        return;
    int rc = rt_spool_write_atomic(dirfd, RT_SPOOL_META, meta, strlen(meta));
    if (rc < 0)
        rt_warn("upload: job %llu: cannot write %s: %s", (unsigned long long)id, RT_SPOOL_META, strerror(-rc));
    memset(meta, 0, strlen(meta)); /* holds the token */
    free(meta);
}

/* For the worker thread and for jobs not yet published (j stays valid). */
static void save_meta(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    pthread_mutex_lock(&w->meta_mu);
    write_meta_locked(w, j);
    pthread_mutex_unlock(&w->meta_mu);
}

/* For other threads: the worker may finish and free the job meanwhile. */
static void save_meta_id(struct rt_upload_worker *w, uint64_t id)
{
    pthread_mutex_lock(&w->meta_mu);
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = find_job(w, id);
    pthread_mutex_unlock(&w->mu);
    write_meta_locked(w, j); /* only the worker frees jobs, and only under meta_mu */
    pthread_mutex_unlock(&w->meta_mu);
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

static void job_failed(struct rt_upload_worker *w, struct rt_upload_job *j, const char *what, const char *error)
{
    pthread_mutex_lock(&w->mu);
    j->failures++;
    snprintf(j->last_error, sizeof(j->last_error), "%s: %s", what, error);
    j->retry_at_ms = now_ms() + backoff_ms(w, j->failures);
    bool first = !j->in_episode;
    j->in_episode = true;
    pthread_mutex_unlock(&w->mu);
    if (first)
        rt_upload_on_failed(j->id, j->run_id, what, error);
}

static void job_succeeded(struct rt_upload_worker *w, struct rt_upload_job *j)
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
static bool is_rejection(long status)
{
    return status >= 400 && status < 500 && status != 401 && status != 403 && status != 408 &&
           status != 409 && status != 429;
}

/* The job needs nothing more: its spool goes; finished = /finish accepted. */
static void job_done(struct rt_upload_worker *w, struct rt_upload_job *j, bool finished)
{
    pthread_mutex_lock(&w->meta_mu);
    pthread_mutex_lock(&w->mu);
    j->done = true;
    j->n_pending = 0;
    j->seg_bytes = 0;
    if (j->rows_fd >= 0)
        close(j->rows_fd);
    j->rows_fd = -1;
    pthread_mutex_unlock(&w->mu);
    rt_upload_job_remove_files(j, w->spool_fd);
    pthread_mutex_lock(&w->mu);
    j->finished = finished; /* status says finished only once the spool is clean */
    /* Forget the oldest finished jobs beyond MAX_DONE_JOBS (never j: the
     * caller still holds it). */
    size_t n_done = 0;
    for (struct rt_upload_job *x = w->jobs; x; x = x->next)
        n_done += x->done;
    while (n_done > MAX_DONE_JOBS) {
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

static void job_rejected(struct rt_upload_worker *w, struct rt_upload_job *j, const char *what,
                         const struct rt_http_resp *resp)
{
    job_failed(w, j, what, resp->error);
    if (++j->rejections >= MAX_REJECTIONS) {
        rt_upload_on_abandoned(j->id, j->run_id, j->last_error);
        job_done(w, j, false);
    }
}

/* ---- sealing and the spool cap ---- */

static void enforce_cap(struct rt_upload_worker *w);

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
        job_failed(w, j, "spool", err);
    }
    if (rc == 1)
        enforce_cap(w);
}

/* Cuts the current rows segment into a batch. final: the job ended, no new
 * segment is opened. */
static void seal_segment(struct rt_upload_worker *w, struct rt_upload_job *j, bool final)
{
    pthread_mutex_lock(&w->mu);
    j->next_cut_ms = now_ms() + w->interval_ms;
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
    uint64_t seq, bytes;
};

/* Over the cap: drop the oldest sealed batches, finished jobs' first. */
static void enforce_cap(struct rt_upload_worker *w)
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
        v[nv++] = (struct victim){best, b.seq, b.bytes};
    }
    pthread_mutex_unlock(&w->mu);
    if (warn)
        rt_upload_on_spool_full(was, w->spool_max);
    /* Per job: one record, the drops recorded in meta.json, then the files
     * deleted (a crash in between leaves a batch the loader knows to skip). */
    for (size_t i = 0; i < nv; i++) {
        struct rt_upload_job *j = v[i].job;
        if (!j)
            continue;
        uint64_t n = 0, bytes = 0;
        for (size_t k = i; k < nv; k++)
            if (v[k].job == j)
                n++, bytes += v[k].bytes;
        rt_upload_on_dropped(j->id, j->run_id, n, bytes);
        save_meta(w, j);
        for (size_t k = i; k < nv; k++) {
            if (v[k].job != j)
                continue;
            char name[32];
            rt_spool_batch_name(v[k].seq, name);
            unlinkat(j->dirfd, name, 0);
            v[k].job = NULL;
        }
    }
    free(v);
}

/* ---- network steps (worker thread, no lock held) ---- */

static bool start_run(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    pthread_mutex_lock(&w->mu);
    unsigned dropped = 0;
    struct json_object *body = rt_sentinel_runs_body(j->run_fields, &dropped);
    pthread_mutex_unlock(&w->mu);
    if (dropped)
        rt_notice("upload: job %llu: %u fields not in the API's schema left out of POST /runs",
                  (unsigned long long)j->id, dropped);
    struct rt_http_resp resp;
    int rc = rt_sentinel_post(&w->http, w->api_url, "/runs", j->token, rt_json_plain(body), &resp);
    json_object_put(body);
    struct rt_sentinel_run run;
    if (rc == 0 && rt_sentinel_parse_run(resp.body, &run) != 0) {
        snprintf(resp.error, sizeof(resp.error), "unusable reply (%zu bytes)", resp.len);
        rc = -1;
    }
    if (rc != 0) {
        if (is_rejection(resp.status))
            job_rejected(w, j, "start run", &resp);
        else
            job_failed(w, j, "start run", resp.error);
        rt_http_resp_free(&resp);
        return false;
    }
    rt_http_resp_free(&resp);
    pthread_mutex_lock(&w->mu);
    rt_upload_job_set_run(j, run.run_id, run.upload_uri_prefix, run.has_creds ? &run.creds : NULL);
    pthread_mutex_unlock(&w->mu);
    if (!j->bucket || !j->has_creds)
        rt_warn("upload: job %llu (run %s): no usable upload prefix or credentials; data goes inline with /finish",
                (unsigned long long)j->id, j->run_id);
    rt_sentinel_run_free(&run);
    save_meta(w, j);
    job_succeeded(w, j);
    return true;
}

/* Refreshes when due; false when the credentials cannot be used. */
static bool fresh_credentials(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    int64_t now = now_unix();
    if (!j->creds_stale && j->creds.expires_at - now >= (int64_t)w->refresh_margin_s)
        return true;
    char *path = rt_sentinel_run_path(j->run_id, "refresh-credentials");
    struct rt_http_resp resp;
    int rc = rt_sentinel_post(&w->http, w->api_url, path, j->token, NULL, &resp);
    free(path);
    struct rt_s3_creds creds;
    if (rc == 0 && rt_sentinel_parse_refresh(resp.body, &creds) != 0) {
        snprintf(resp.error, sizeof(resp.error), "unusable reply (%zu bytes)", resp.len);
        rc = -1;
    }
    if (rc != 0) {
        /* Unknown expiry (0): like the Rust port, try the old ones. */
        bool usable = !j->creds_stale && (j->creds.expires_at == 0 || j->creds.expires_at > now);
        if (!usable)
            job_failed(w, j, "refresh credentials", resp.error);
        else
            rt_debug("upload: job %llu: refresh failed (%s); old credentials still valid",
                     (unsigned long long)j->id, resp.error);
        rt_http_resp_free(&resp);
        return usable;
    }
    rt_http_resp_free(&resp);
    pthread_mutex_lock(&w->mu);
    rt_s3_creds_free(&j->creds);
    j->creds = creds;
    j->has_creds = true;
    j->creds_stale = false;
    pthread_mutex_unlock(&w->mu);
    save_meta(w, j);
    return true;
}

static const char *bucket_region(struct rt_upload_worker *w, const char *bucket)
{
    if (w->s3_endpoint)
        return w->s3_region;
    for (size_t i = 0; i < w->n_regions; i++)
        if (strcmp(w->regions[i].bucket, bucket) == 0)
            return w->regions[i].region;
    struct region_cache *c = &w->regions[w->n_regions < RT_ARRAY_SIZE(w->regions) ? w->n_regions++ : 0];
    rt_strlcpy(c->bucket, bucket, sizeof(c->bucket));
    char *url = rt_xasprintf(w->probe_url, bucket);
    rt_s3_discover_region(&w->http, url, c->region, sizeof(c->region));
    free(url);
    rt_info("upload: bucket %s is in region %s", bucket, c->region);
    return c->region;
}

/* A wrong-region error (301, 400) names the bucket's region: believe it. */
static void update_region(struct rt_upload_worker *w, const char *bucket, const char *region)
{
    if (w->s3_endpoint || !region[0])
        return;
    for (size_t i = 0; i < w->n_regions; i++) {
        if (strcmp(w->regions[i].bucket, bucket) == 0 && strcmp(w->regions[i].region, region) != 0) {
            rt_info("upload: bucket %s is in region %s, not %s", bucket, region, w->regions[i].region);
            rt_strlcpy(w->regions[i].region, region, sizeof(w->regions[i].region));
        }
    }
}

/* PUTs pending batches in order; false after a failure. */
static bool upload_batches(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    while (j->n_pending && !j->done) {
        if (!fresh_credentials(w, j))
            return false;
        uint64_t seq = j->pending[0].seq;
        char name[32];
        rt_spool_batch_name(seq, name);
        char *data;
        size_t len;
        int rc = rt_spool_read_file(j->dirfd, name, &data, &len);
        if (rc < 0) {
            rt_err("upload: job %llu: batch %s unreadable (%s): dropped", (unsigned long long)j->id, name,
                   strerror(-rc));
            pthread_mutex_lock(&w->mu);
            rt_upload_job_remove_pending(j, seq);
            rt_u64_list_add(&j->dropped, seq);
            pthread_mutex_unlock(&w->mu);
            save_meta(w, j);
            continue;
        }
        char *key = rt_s3_object_key(j->key_prefix, j->run_id, seq);
        const char *region = bucket_region(w, j->bucket);
        char *url = rt_s3_object_url(w->s3_endpoint, region, j->bucket, key);
        struct rt_http_resp resp;
        rc = rt_s3_put(&w->http, url, region, &j->creds, data, len, &resp);
        free(url);
        free(key);
        free(data);
        if (rc != 0) {
            pthread_mutex_lock(&w->mu);
            j->s3_failures++;
            if (resp.status == 400 || resp.status == 403)
                j->creds_stale = true; /* expired or rotated: ask for new ones first */
            pthread_mutex_unlock(&w->mu);
            update_region(w, j->bucket, resp.region);
            job_failed(w, j, "upload", resp.error);
            rt_http_resp_free(&resp);
            return false;
        }
        rt_http_resp_free(&resp);
        /* Record first, then delete: a crash in between re-sends the same
         * object to the same key, which is harmless. */
        pthread_mutex_lock(&w->mu);
        rt_upload_job_remove_pending(j, seq);
        rt_u64_list_add(&j->sent, seq);
        j->s3_failures = 0;
        pthread_mutex_unlock(&w->mu);
        save_meta(w, j);
        rt_spool_unlink(j->dirfd, name);
        job_succeeded(w, j);
    }
    return true;
}

/* Nothing was uploaded and S3 is unusable (or kept failing after the end):
 * the rows go inline in /finish instead. */
static bool finish_inline(struct rt_upload_worker *w, const struct rt_upload_job *j, bool sealed)
{
    if (j->sent.n)
        return false;
    if (!j->bucket || !j->has_creds)
        return true;
    return sealed && j->s3_failures >= w->inline_after &&
           rt_upload_job_pending_bytes(j) <= INLINE_MAX_BYTES;
}

/* header + the rows of every pending batch, in order. */
static char *inline_csv(struct rt_upload_job *j)
{
    size_t len = strlen(RT_CSV_HEADER) + 1, cap = len + 1;
    char *csv = rt_xmalloc(cap);
    memcpy(csv, RT_CSV_HEADER, len - 1);
    csv[len - 1] = '\n';
    for (size_t i = 0; i < j->n_pending; i++) {
        char name[32], *gz, *plain;
        size_t gzlen, plen;
        rt_spool_batch_name(j->pending[i].seq, name);
        if (rt_spool_read_file(j->dirfd, name, &gz, &gzlen) < 0)
            continue;
        int rc = rt_gunzip(gz, gzlen, &plain, &plen);
        free(gz);
        if (rc < 0)
            continue;
        const char *rows = memchr(plain, '\n', plen);
        rows = rows ? rows + 1 : plain + plen;
        size_t n = (size_t)(plain + plen - rows);
        if (len + n + 1 > cap)
            csv = rt_xrealloc(csv, cap = (len + n) * 2 + 1);
        memcpy(csv + len, rows, n);
        len += n;
        free(plain);
    }
    csv[len] = '\0';
    return csv;
}

static void finish_run(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    bool inl = finish_inline(w, j, true);
    char finished_at[32];
    rt_format_iso8601(j->finished_at, finished_at);
    struct json_object *body;
    if (inl) {
        char *csv = inline_csv(j);
        body = rt_sentinel_finish_body(j->exit_code, finished_at, NULL, 0, csv);
        free(csv);
    } else {
        char **uris = rt_xcalloc(j->sent.n ? j->sent.n : 1, sizeof(*uris));
        for (size_t i = 0; i < j->sent.n; i++) {
            char *key = rt_s3_object_key(j->key_prefix, j->run_id, j->sent.v[i]);
            uris[i] = rt_xasprintf("s3://%s/%s", j->bucket, key);
            free(key);
        }
        body = rt_sentinel_finish_body(j->exit_code, finished_at, (const char *const *)uris, j->sent.n, NULL);
        for (size_t i = 0; i < j->sent.n; i++)
            free(uris[i]);
        free(uris);
    }
    char *path = rt_sentinel_run_path(j->run_id, "finish");
    struct rt_http_resp resp;
    int rc = rt_sentinel_post(&w->http, w->api_url, path, j->token, rt_json_plain(body), &resp);
    free(path);
    json_object_put(body);
    /* Only 200 is success (rust-port §4.5); 409 = already finished by an
     * earlier attempt whose reply was lost. */
    bool ok = resp.status == 200 || resp.status == 409;
    if (!ok) {
        if (rc == 0)
            snprintf(resp.error, sizeof(resp.error), "HTTP %ld", resp.status);
        if (is_rejection(resp.status))
            job_rejected(w, j, "finish run", &resp);
        else
            job_failed(w, j, "finish run", resp.error);
        rt_http_resp_free(&resp);
        return;
    }
    rt_http_resp_free(&resp);
    job_succeeded(w, j);
    rt_upload_on_finished(j->id, j->run_id, inl ? "inline" : "s3", j->sent.n);
    job_done(w, j, true);
}

/* ---- scheduling ---- */

static bool needs_network(struct rt_upload_worker *w, const struct rt_upload_job *j)
{
    if (j->done)
        return false;
    if (!j->run_id || j->unsealed.n)
        return true;
    bool sealed = all_sealed(j);
    if (j->n_pending && !finish_inline(w, j, sealed))
        return true;
    return sealed && (j->n_pending == 0 || finish_inline(w, j, sealed));
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
    uint64_t now = now_ms();
    bool seal = seal_due(w, j, now), final = j->ended;
    pthread_mutex_unlock(&w->mu);
    if (seal)
        seal_segment(w, j, final);
    pthread_mutex_lock(&w->mu);
    bool go = !j->done && now >= j->retry_at_ms && needs_network(w, j);
    bool sealed = all_sealed(j);
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
            job_done(w, j, false);
            return;
        }
        if (!start_run(w, j))
            return;
    }
    if (!finish_inline(w, j, sealed) && !upload_batches(w, j))
        return;
    if (sealed && (j->n_pending == 0 || finish_inline(w, j, sealed)))
        finish_run(w, j);
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
        }
        if (j->rows_fd >= 0 && j->seg_bytes == 0 && j->next_cut_ms <= now)
            j->next_cut_ms = now + w->interval_ms; /* nothing to cut: next interval */
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
    uint64_t now = now_ms();
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

static void *worker_main(void *arg)
{
    struct rt_upload_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        uint64_t now = now_ms(), wake;
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

/* ---- public API ---- */

static char *dup_or_null(const char *s) { return s && *s ? rt_xstrdup(s) : NULL; }

static void load_spool(struct rt_upload_worker *w)
{
    DIR *d = rt_opendir_at(w->spool_fd);
    struct dirent *e;
    size_t n = 0;
    while (d && (e = readdir(d))) {
        struct rt_upload_job *j = rt_upload_job_load(w->spool_fd, e->d_name);
        if (!j)
            continue;
        j->next = w->jobs;
        w->jobs = j;
        n++;
    }
    if (d)
        closedir(d);
    if (n)
        rt_info("upload: resumed %zu jobs from the spool %s", n, w->spool_dir);
}

struct rt_upload_worker *rt_upload_worker_new(const struct rt_upload_config *cfg)
{
    if (!cfg->spool_dir || !cfg->api_url) {
        rt_err("upload: spool directory and API URL are required");
        return NULL;
    }
    if (mkdir(cfg->spool_dir, 0700) < 0 && errno != EEXIST) {
        rt_err("upload: cannot create the spool %s: %m", cfg->spool_dir);
        return NULL;
    }
    int fd = rt_spool_open_dir(AT_FDCWD, cfg->spool_dir);
    if (fd < 0) {
        rt_err("upload: cannot open the spool %s: %s", cfg->spool_dir, strerror(-fd));
        return NULL;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct rt_upload_worker *w = rt_xcalloc(1, sizeof(*w));
    w->spool_fd = fd;
    w->spool_dir = rt_xstrdup(cfg->spool_dir);
    w->api_url = rt_xstrdup(cfg->api_url);
    w->default_token = dup_or_null(cfg->default_token);
    w->s3_endpoint = dup_or_null(cfg->s3_endpoint);
    w->s3_region = rt_xstrdup(cfg->s3_region && *cfg->s3_region ? cfg->s3_region : "us-east-1");
    w->probe_url = rt_xstrdup(cfg->region_probe_url ? cfg->region_probe_url : "http://%s.s3.amazonaws.com/");
    w->interval_ms = cfg->upload_interval_ms ? cfg->upload_interval_ms : 60000;
    w->spool_max = cfg->spool_max_bytes;
    w->backoff_base_ms = cfg->backoff_base_ms ? cfg->backoff_base_ms : 1000;
    w->backoff_max_ms = cfg->backoff_max_ms ? cfg->backoff_max_ms : 300000;
    if (w->backoff_max_ms < w->backoff_base_ms)
        w->backoff_max_ms = w->backoff_base_ms;
    w->refresh_margin_s = cfg->refresh_margin_s ? cfg->refresh_margin_s : 300;
    w->inline_after = cfg->inline_after_failures ? cfg->inline_after_failures : 3;
    w->rng = rt_real_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)w;
    if (!w->rng)
        w->rng = 88172645463325252ULL;
    pthread_mutex_init(&w->mu, NULL);
    pthread_mutex_init(&w->meta_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (rt_http_init(&w->http, cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000,
                     cfg->request_timeout_ms ? cfg->request_timeout_ms : 30000, &w->abort_at_ms) != 0) {
        rt_err("upload: cannot create a curl handle");
        rt_upload_worker_free(w);
        return NULL;
    }
    load_spool(w);
    enforce_cap(w);
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    if (rc != 0) {
        rt_err("upload: cannot start the worker thread: %s", strerror(rc));
        rt_upload_worker_free(w);
        return NULL;
    }
    w->started = true;
    return w;
}

int rt_upload_job_begin(struct rt_upload_worker *w, uint64_t job_id, const char *token,
                        struct json_object *run_fields)
{
    const char *tok = token && *token ? token : w->default_token;
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = find_job(w, job_id);
    if (j && !j->done) { /* resumed from the spool: it has its token */
        int rc = 0;
        if (j->ended) {
            pthread_mutex_unlock(&w->mu);
            rt_warn("upload: job %llu: its id is still in use by an ended job being uploaded; not uploading it",
                    (unsigned long long)job_id);
            return -EEXIST;
        }
        if (j->rows_fd < 0) { /* continue: same run, next sequence number */
            j->rows_fd = rt_spool_open_rows(j->dirfd, j->seg);
            rc = j->rows_fd < 0 ? j->rows_fd : 0;
            j->resumed_running = false;
            j->next_cut_ms = now_ms() + w->interval_ms;
        }
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    pthread_mutex_unlock(&w->mu);
    if (!tok)
        return 0; /* no token: this job never touches the network */

    char name[32];
    snprintf(name, sizeof(name), "%llu", (unsigned long long)job_id);
    int dirfd = rt_spool_open_dir(w->spool_fd, name);
    if (dirfd < 0) {
        rt_warn("upload: job %llu: cannot create its spool directory: %s", (unsigned long long)job_id,
                strerror(-dirfd));
        return dirfd;
    }
    j = rt_upload_job_alloc(job_id);
    j->dirfd = dirfd;
    j->token = rt_xstrdup(tok);
    j->run_fields = json_object_is_type(run_fields, json_type_object) ? NULL : json_object_new_object();
    if (!j->run_fields && json_object_deep_copy(run_fields, &j->run_fields, NULL) != 0)
        j->run_fields = json_object_new_object();
    j->rows_fd = rt_spool_open_rows(dirfd, 0);
    if (j->rows_fd < 0) {
        int rc = j->rows_fd;
        rt_warn("upload: job %llu: cannot create its rows file: %s", (unsigned long long)job_id, strerror(-rc));
        rt_upload_job_remove_files(j, w->spool_fd);
        rt_upload_job_destroy(j);
        return rc;
    }
    save_meta(w, j);
    pthread_mutex_lock(&w->mu);
    j->next_cut_ms = now_ms() + w->interval_ms;
    j->next = w->jobs;
    w->jobs = j;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void rt_upload_job_rows(struct rt_upload_worker *w, uint64_t job_id, const char *csv_rows, size_t len)
{
    if (!len)
        return;
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = find_job(w, job_id);
    if (j && !j->ended && j->rows_fd >= 0) {
        ssize_t n = write(j->rows_fd, csv_rows, len);
        if (n == (ssize_t)len) {
            j->seg_bytes += len;
            j->write_failed = false;
        } else {
            if (n > 0 && ftruncate(j->rows_fd, (off_t)j->seg_bytes) < 0)
                n = -1; /* the sealer drops a torn last row anyway */
            if (!j->write_failed)
                rt_warn("upload: job %llu: cannot spool rows (%s): rows are lost until it can",
                        (unsigned long long)job_id, n < 0 ? strerror(errno) : "short write");
            j->write_failed = true;
        }
    }
    pthread_mutex_unlock(&w->mu);
}

void rt_upload_job_end(struct rt_upload_worker *w, uint64_t job_id, int exit_code)
{
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = find_job(w, job_id);
    if (!j || j->ended || j->done) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    j->ended = true;
    j->resumed_running = false;
    j->exit_code = exit_code;
    j->finished_at = now_unix();
    pthread_mutex_unlock(&w->mu);
    save_meta_id(w, job_id);
    pthread_mutex_lock(&w->mu);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

void rt_upload_job_status(struct rt_upload_worker *w, uint64_t job_id, struct rt_upload_status *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = find_job(w, job_id);
    if (j) {
        out->tracked = true;
        out->ended = j->ended;
        out->finished = j->finished;
        rt_strlcpy(out->run_id, j->run_id ? j->run_id : "", sizeof(out->run_id));
        out->batches_sent = j->sent.n;
        out->batches_pending = j->n_pending + (j->seg_bytes ? 1 : 0);
        out->batches_dropped = j->dropped.n;
        out->bytes_pending = j->done ? 0 : rt_upload_job_pending_bytes(j);
        out->failures = j->failures;
        rt_strlcpy(out->last_error, j->last_error, sizeof(out->last_error));
    }
    pthread_mutex_unlock(&w->mu);
}

size_t rt_upload_resumed_running(struct rt_upload_worker *w, uint64_t **ids)
{
    size_t n = 0;
    pthread_mutex_lock(&w->mu);
    for (struct rt_upload_job *j = w->jobs; j; j = j->next)
        n += j->resumed_running && !j->done;
    *ids = rt_xcalloc(n ? n : 1, sizeof(**ids));
    n = 0;
    for (struct rt_upload_job *j = w->jobs; j; j = j->next)
        if (j->resumed_running && !j->done)
            (*ids)[n++] = j->id;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void rt_upload_worker_stop(struct rt_upload_worker *w, int timeout_ms)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    if (w->stopped || !w->started) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    if (timeout_ms < 0)
        timeout_ms = 0;
    w->stopping = true;
    w->stop_deadline_ms = now_ms() + (uint64_t)timeout_ms;
    atomic_store(&w->abort_at_ms, w->stop_deadline_ms ? w->stop_deadline_ms : 1);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
    /* Tell systemd the stop takes longer than usual (no-op outside systemd). */
    sd_notifyf(0, "EXTEND_TIMEOUT_USEC=%llu", ((unsigned long long)timeout_ms + 5000) * 1000ULL);
    pthread_join(w->thread, NULL);
    pthread_mutex_lock(&w->mu);
    w->stopped = true;
    pthread_mutex_unlock(&w->mu);
}

void rt_upload_worker_free(struct rt_upload_worker *w)
{
    if (!w)
        return;
    rt_upload_worker_stop(w, 0);
    while (w->jobs) {
        struct rt_upload_job *j = w->jobs;
        w->jobs = j->next;
        rt_upload_job_destroy(j);
    }
    rt_http_cleanup(&w->http);
    curl_global_cleanup();
    if (w->spool_fd >= 0)
        close(w->spool_fd);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->meta_mu);
    pthread_mutex_destroy(&w->mu);
    free(w->spool_dir);
    free(w->api_url);
    if (w->default_token) {
        memset(w->default_token, 0, strlen(w->default_token));
        free(w->default_token);
    }
    free(w->s3_endpoint);
    free(w->s3_region);
    free(w->probe_url);
    free(w);
}
