/* The upload worker's public API (upload.h): called from the daemon's
 * threads, it only touches the spool and the job list; the network is the
 * worker thread's. */
#include "upload/worker.h"

#include "system/http_global.h"
#include "system/log.h"
#include "upload/spool.h"
#include "rt/paths.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

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
        /* What is left of the wait for a late exit status, from its end. */
        int64_t left_s = j->finished_at + (int64_t)(w->exit_wait_ms / 1000) - rt_upload_now_unix();
        j->exit_wait_until_ms = rt_upload_now_ms() + (left_s > 0 ? (uint64_t)left_s * 1000 : 0);
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
    /* Its parent as named (the state directory); the spool itself, and all
     * in it, without following a link (rt_open_beneath). */
    int pfd = rt_open_parent(cfg->spool_dir);
    int fd = pfd < 0 ? pfd : rt_spool_open_dir(pfd, rt_path_base(cfg->spool_dir));
    if (pfd >= 0)
        close(pfd);
    if (fd < 0) {
        rt_err("upload: cannot open the spool %s: %s", cfg->spool_dir, rt_beneath_strerror(fd));
        return NULL;
    }
    if (!rt_http_global_init()) {
        rt_err("upload: libcurl cannot be initialised; nothing is uploaded");
        close(fd);
        return NULL;
    }
    struct rt_upload_worker *w = rt_xcalloc(1, sizeof(*w));
    w->spool_fd = fd;
    w->spool_dir = rt_xstrdup(cfg->spool_dir);
    w->api_url = rt_xstrdup(cfg->api_url);
    w->default_token = dup_or_null(cfg->default_token);
    w->s3_endpoint = dup_or_null(cfg->s3_endpoint);
    w->s3_region = rt_xstrdup(cfg->s3_region && *cfg->s3_region ? cfg->s3_region : "us-east-1");
    w->probe_url = rt_xstrdup(cfg->region_probe_url ? cfg->region_probe_url : "http://%s.s3.amazonaws.com/");
    w->interval_ms = cfg->upload_interval_ms ? cfg->upload_interval_ms : 60000;
    w->complete_run_fields = cfg->complete_run_fields;
    w->complete_ctx = cfg->complete_ctx;
    w->spool_max = cfg->spool_max_bytes;
    w->backoff_base_ms = cfg->backoff_base_ms ? cfg->backoff_base_ms : 1000;
    w->backoff_max_ms = cfg->backoff_max_ms ? cfg->backoff_max_ms : 300000;
    if (w->backoff_max_ms < w->backoff_base_ms)
        w->backoff_max_ms = w->backoff_base_ms;
    w->refresh_margin_s = cfg->refresh_margin_s ? cfg->refresh_margin_s : 300;
    w->inline_after = cfg->inline_after_failures ? cfg->inline_after_failures : 3;
    w->exit_wait_ms = cfg->exit_wait_ms ? cfg->exit_wait_ms : 30000;
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
    rt_upload_enforce_cap(w);
    int rc = pthread_create(&w->thread, NULL, rt_upload_worker_main, w);
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
    return rt_upload_job_begin_opts(w, job_id, token, run_fields, NULL);
}

int rt_upload_job_begin_opts(struct rt_upload_worker *w, uint64_t job_id, const char *token,
                             struct json_object *run_fields, const struct rt_upload_job_opts *opts)
{
    const char *tok = token && *token ? token : w->default_token;
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = rt_upload_find_job(w, job_id);
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
            j->next_cut_ms = rt_upload_now_ms() + rt_upload_interval(w, j);
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
    if (opts && opts->api_url && *opts->api_url)
        j->api_url = rt_xstrdup(opts->api_url);
    if (opts)
        j->interval_ms = opts->upload_interval_ms;
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
    rt_upload_save_meta(w, j);
    pthread_mutex_lock(&w->mu);
    j->next_cut_ms = rt_upload_now_ms() + rt_upload_interval(w, j);
    j->next = w->jobs;
    w->jobs = j;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void rt_upload_job_rows(struct rt_upload_worker *w, uint64_t job_id, const char *csv_rows, size_t len)
{
    if (!csv_rows || !len)
        return;
    /* A caller's row without its '\n' would merge with the next one. */
    bool nl = csv_rows[len - 1] == '\n';
    struct iovec iov[2] = {{(void *)(uintptr_t)csv_rows, len}, {(void *)(uintptr_t)"\n", 1}};
    size_t total = len + !nl;
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = rt_upload_find_job(w, job_id);
    if (j && !j->ended && j->rows_fd >= 0) {
        if (!nl && !w->unterminated_warned) {
            w->unterminated_warned = true;
            rt_warn("upload: job %llu: rows without a final newline; one added", (unsigned long long)job_id);
        }
        ssize_t n = writev(j->rows_fd, iov, nl ? 1 : 2);
        if (n == (ssize_t)total) {
            j->seg_bytes += total;
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
    struct rt_upload_job *j = rt_upload_find_job(w, job_id);
    if (!j || j->ended || j->done) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    j->ended = true;
    j->resumed_running = false;
    j->exit_code = exit_code >= 0 ? exit_code : RT_UPLOAD_EXIT_UNKNOWN;
    j->finished_at = rt_upload_now_unix();
    j->exit_wait_until_ms = rt_upload_now_ms() + w->exit_wait_ms;
    pthread_mutex_unlock(&w->mu);
    rt_upload_save_meta_id(w, job_id);
    pthread_mutex_lock(&w->mu);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

void rt_upload_job_set_exit(struct rt_upload_worker *w, uint64_t job_id, int exit_code)
{
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = rt_upload_find_job(w, job_id);
    bool set = j && j->ended && !j->done && j->exit_code < 0 && exit_code >= 0;
    if (set)
        j->exit_code = exit_code;
    pthread_mutex_unlock(&w->mu);
    if (!set)
        return;
    rt_upload_save_meta_id(w, job_id);
    pthread_mutex_lock(&w->mu);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

bool rt_upload_busy(struct rt_upload_worker *w)
{
    bool busy = false;
    pthread_mutex_lock(&w->mu);
    for (struct rt_upload_job *j = w->jobs; j && !busy; j = j->next)
        busy = !j->done;
    pthread_mutex_unlock(&w->mu);
    return busy;
}

void rt_upload_job_status(struct rt_upload_worker *w, uint64_t job_id, struct rt_upload_status *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&w->mu);
    struct rt_upload_job *j = rt_upload_find_job(w, job_id);
    if (j) {
        out->tracked = true;
        out->ended = j->ended;
        out->finished = j->finished;
        out->abandoned = j->abandoned;
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

void rt_upload_queue(struct rt_upload_worker *w, uint64_t *batches_pending, bool *failing)
{
    *batches_pending = 0;
    *failing = false;
    pthread_mutex_lock(&w->mu);
    for (struct rt_upload_job *j = w->jobs; j; j = j->next) {
        if (j->done)
            continue;
        *batches_pending += j->n_pending;
        *failing |= j->failures > 0;
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
    w->stop_deadline_ms = rt_upload_now_ms() + (uint64_t)timeout_ms;
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
    rt_http_cleanup(&w->http); /* libcurl's global state is main()'s (rt_http_global_cleanup) */
    if (w->spool_fd >= 0)
        close(w->spool_fd);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->meta_mu);
    pthread_mutex_destroy(&w->mu);
    free(w->spool_dir);
    free(w->api_url);
    if (w->default_token) {
        explicit_bzero(w->default_token, strlen(w->default_token));
        free(w->default_token);
    }
    free(w->s3_endpoint);
    free(w->s3_region);
    free(w->probe_url);
    free(w);
}
