/* The network steps of one job, run by the worker thread without the lock:
 * POST /runs, credential refresh, PUT of each batch, POST /finish. */
#include "upload/worker.h"

#include "system/log.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "upload/s3.h"
#include "upload/sentinel.h"
#include "upload/spool.h"
#include "upload/upload_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 4xx to POST /runs that names fields of the body: the job's data is not
 * given up for an optional field (a shape the API does not take, say): the
 * run is started without them. False when the reply names none. */
static bool omit_refused(struct rt_upload_worker *w, struct rt_upload_job *j, struct json_object *body,
                         const struct rt_http_resp *resp)
{
    struct json_object *names = json_object_new_array();
    if (!rt_sentinel_refused_fields(resp->body, body, names)) {
        json_object_put(names);
        return false;
    }
    pthread_mutex_lock(&w->mu);
    if (!j->omitted)
        j->omitted = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(names); i++)
        json_object_array_add(j->omitted, json_object_get(json_object_array_get_idx(names, i)));
    j->retry_at_ms = 0;
    pthread_mutex_unlock(&w->mu);
    rt_warn("upload: job %llu: POST /runs refused %s (HTTP %ld); starting the run without %s",
            (unsigned long long)j->id, rt_json_plain(names), resp->status,
            json_object_array_length(names) == 1 ? "it" : "them");
    json_object_put(names);
    rt_upload_save_meta(w, j);
    return true;
}

bool rt_upload_start_run(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    pthread_mutex_lock(&w->mu);
    struct json_object *fields = NULL;
    if (json_object_deep_copy(j->run_fields, &fields, NULL) != 0)
        fields = json_object_new_object();
    pthread_mutex_unlock(&w->mu);
    if (w->complete_run_fields)
        w->complete_run_fields(fields, w->complete_ctx);
    unsigned dropped = 0;
    struct json_object *body = rt_sentinel_runs_body(fields, &dropped);
    json_object_put(fields);
    if (dropped)
        rt_notice("upload: job %llu: %u fields not in the API's schema left out of POST /runs",
                  (unsigned long long)j->id, dropped);
    for (size_t i = 0; j->omitted && i < json_object_array_length(j->omitted); i++)
        json_object_object_del(body, json_object_get_string(json_object_array_get_idx(j->omitted, i)));
    struct rt_http_resp resp;
    int rc = rt_sentinel_post(&w->http, rt_upload_api_url(w, j), "/runs", j->token, rt_json_plain(body), &resp);
    if (rc != 0 && rt_upload_is_rejection(resp.status) && omit_refused(w, j, body, &resp)) {
        json_object_put(body);
        rt_http_resp_free(&resp);
        return false; /* again at once, without them */
    }
    json_object_put(body);
    struct rt_sentinel_run run;
    bool unusable = rc == 0 && rt_sentinel_parse_run(resp.body, &run) != 0;
    if (unusable) {
        snprintf(resp.error, sizeof(resp.error), "unusable reply (%zu bytes)", resp.len);
        rc = -1;
    }
    if (rc != 0) {
        /* A 2xx without a run id may each time have created a run: give up
         * after as many as for a 4xx rather than make orphans forever. */
        if (unusable || rt_upload_is_rejection(resp.status))
            rt_upload_rejected(w, j, "start run", &resp);
        else
            rt_upload_failed(w, j, "start run", resp.error);
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
    rt_upload_save_meta(w, j);
    rt_upload_succeeded(w, j);
    return true;
}

/* Refreshes when due; false when the credentials cannot be used. */
static bool fresh_credentials(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    int64_t now = rt_upload_now_unix();
    if (!j->creds_stale && j->creds.expires_at - now >= (int64_t)w->refresh_margin_s)
        return true;
    char *path = rt_sentinel_run_path(j->run_id, "refresh-credentials");
    struct rt_http_resp resp;
    int rc = rt_sentinel_post(&w->http, rt_upload_api_url(w, j), path, j->token, NULL, &resp);
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
            rt_upload_failed(w, j, "refresh credentials", resp.error);
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
    rt_upload_save_meta(w, j);
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

/* A pending batch that cannot go as it is (unreadable, or damaged on disk:
 * not the gzip and CSV the spool sealed) is never PUT (the API would refuse
 * the run's /finish for it): recorded as dropped, then set aside as
 * quarantine/<job>-<seq>.csv.gz. False when the drop cannot be recorded: it
 * stays pending, tried again after the backoff. */
static bool drop_damaged(struct rt_upload_worker *w, struct rt_upload_job *j, struct rt_batch b, int err)
{
    char name[32];
    rt_spool_batch_name(b.seq, name);
    pthread_mutex_lock(&w->mu);
    rt_upload_job_remove_pending(j, b.seq);
    rt_u64_list_add(&j->dropped, b.seq);
    pthread_mutex_unlock(&w->mu);
    int rc = rt_upload_save_meta(w, j);
    if (rc < 0) {
        pthread_mutex_lock(&w->mu);
        rt_u64_list_remove(&j->dropped, b.seq);
        rt_upload_job_add_pending(j, b.seq, b.bytes, b.sealed_at);
        pthread_mutex_unlock(&w->mu);
        char msg[96];
        snprintf(msg, sizeof(msg), "cannot record damaged batch %llu as dropped: %s", (unsigned long long)b.seq,
                 strerror(-rc));
        rt_upload_failed(w, j, "spool", msg);
        return false;
    }
    char as[64];
    snprintf(as, sizeof(as), "%llu-%s", (unsigned long long)j->id, name);
    int moved = err == -ENOENT ? -ENOENT : rt_spool_quarantine(w->spool_fd, j->dirfd, name, as);
    const char *what = err == -EBADMSG ? "damaged (not the gzip CSV the spool sealed)" : strerror(-err);
    if (moved == 0)
        rt_err("upload: job %llu (run %s): batch %s is %s: not sent, dropped; kept as %s/%s",
               (unsigned long long)j->id, j->run_id, name, what, RT_SPOOL_QUARANTINE, as);
    else
        rt_err("upload: job %llu (run %s): batch %s is %s: not sent, dropped", (unsigned long long)j->id, j->run_id,
               name, what);
    return true;
}

/* A pending batch's bytes, checked (with csv: its plain text too); -errno
 * (-EBADMSG: damaged). */
static int read_batch(struct rt_upload_job *j, uint64_t seq, char **data, size_t *len, char **csv, size_t *csvlen)
{
    char name[32];
    rt_spool_batch_name(seq, name);
    int rc = rt_spool_read_file(j->dirfd, name, data, len);
    if (rc == 0 && rt_spool_check_batch(*data, *len, csv, csvlen) < 0) {
        free(*data);
        rc = -EBADMSG;
    }
    return rc;
}

/* PUTs pending batches in order; false after a failure. */
bool rt_upload_send_batches(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    while (j->n_pending && !j->done) {
        if (!fresh_credentials(w, j))
            return false;
        struct rt_batch batch = j->pending[0];
        uint64_t seq = batch.seq;
        char name[32];
        rt_spool_batch_name(seq, name);
        char *data;
        size_t len;
        int rc = read_batch(j, seq, &data, &len, NULL, NULL);
        if (rc < 0) {
            if (!drop_damaged(w, j, batch, rc))
                return false;
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
            rt_upload_failed(w, j, "upload", resp.error);
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
        rc = rt_upload_save_meta(w, j);
        if (rc < 0) {
            /* Unrecorded (disk full?): keep it pending with its file, so no
             * restart forgets the object or reuses its key; the retry PUTs the
             * same bytes to the same key. */
            pthread_mutex_lock(&w->mu);
            rt_u64_list_remove(&j->sent, seq);
            rt_upload_job_add_pending(j, seq, batch.bytes, batch.sealed_at);
            pthread_mutex_unlock(&w->mu);
            char err[96];
            snprintf(err, sizeof(err), "cannot record batch %llu as sent: %s", (unsigned long long)seq,
                     strerror(-rc));
            rt_upload_failed(w, j, "spool", err);
            return false;
        }
        rt_spool_unlink(j->dirfd, name);
        rt_upload_succeeded(w, j);
    }
    return true;
}

/* Nothing was uploaded and S3 is unusable (or kept failing after the end):
 * the rows go inline in /finish instead. */
bool rt_upload_finish_inline(struct rt_upload_worker *w, const struct rt_upload_job *j, bool sealed)
{
    if (j->sent.n)
        return false;
    if (!j->bucket || !j->has_creds)
        return true;
    return sealed && j->s3_failures >= w->inline_after &&
           rt_upload_job_pending_bytes(j) <= RT_UPLOAD_INLINE_MAX_BYTES;
}

/* header + the rows of every pending batch, in order (a damaged one is
 * dropped); NULL when a drop could not be recorded. */
static char *inline_csv(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    size_t len = strlen(RT_CSV_HEADER) + 1, cap = len + 1;
    char *csv = rt_xmalloc(cap);
    memcpy(csv, RT_CSV_HEADER, len - 1);
    csv[len - 1] = '\n';
    for (size_t i = 0; i < j->n_pending;) {
        char *gz, *plain;
        size_t gzlen, plen;
        int rc = read_batch(j, j->pending[i].seq, &gz, &gzlen, &plain, &plen);
        if (rc < 0) {
            if (!drop_damaged(w, j, j->pending[i], rc)) {
                free(csv);
                return NULL;
            }
            continue; /* the next batch is at i now */
        }
        free(gz);
        const char *rows = memchr(plain, '\n', plen) + 1; /* after the header: checked */
        size_t n = (size_t)(plain + plen - rows);
        if (len + n + 1 > cap)
            csv = rt_xrealloc(csv, cap = (len + n) * 2 + 1);
        memcpy(csv + len, rows, n);
        len += n;
        free(plain);
        i++;
    }
    csv[len] = '\0';
    return csv;
}

/* The objects a refused /finish names as bad (uris[i] is sent.v[i]): moved
 * from sent to dropped, one error each, so the run finishes with the others;
 * /finish goes again at once (after the backoff when the drop cannot be
 * recorded). False when it names none. */
static bool drop_refused(struct rt_upload_worker *w, struct rt_upload_job *j, const char *reply,
                         char *const *uris, size_t n)
{
    bool *bad = rt_xcalloc(n ? n : 1, sizeof(*bad));
    struct rt_u64_list gone = {0};
    if (rt_sentinel_refused_uris(reply, (const char *const *)uris, n, bad))
        for (size_t i = 0; i < n; i++)
            if (bad[i])
                rt_u64_list_add(&gone, j->sent.v[i]);
    free(bad);
    if (!gone.n)
        return false;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < gone.n; i++) {
        rt_u64_list_remove(&j->sent, gone.v[i]);
        rt_u64_list_add(&j->dropped, gone.v[i]);
    }
    pthread_mutex_unlock(&w->mu);
    int rc = rt_upload_save_meta(w, j);
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; rc < 0 && i < gone.n; i++) {
        rt_u64_list_remove(&j->dropped, gone.v[i]);
        rt_u64_list_add(&j->sent, gone.v[i]);
    }
    if (rc == 0)
        j->retry_at_ms = 0;
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; rc == 0 && i < gone.n; i++)
        rt_err("upload: job %llu (run %s): the API refuses batch %06llu in /finish; dropped, the run finishes "
               "without it", (unsigned long long)j->id, j->run_id, (unsigned long long)gone.v[i]);
    if (rc < 0) {
        char msg[96];
        snprintf(msg, sizeof(msg), "cannot record refused batches as dropped: %s", strerror(-rc));
        rt_upload_failed(w, j, "spool", msg);
    }
    free(gone.v);
    return true;
}

void rt_upload_finish_run(struct rt_upload_worker *w, struct rt_upload_job *j)
{
    bool inl = rt_upload_finish_inline(w, j, true);
    char finished_at[32];
    rt_format_iso8601(j->finished_at, finished_at);
    struct json_object *body;
    char **uris = NULL;
    size_t n_uris = inl ? 0 : j->sent.n;
    if (inl) {
        char *csv = inline_csv(w, j);
        if (!csv)
            return;
        body = rt_sentinel_finish_body(j->exit_code, finished_at, NULL, 0, csv);
        free(csv);
    } else {
        uris = rt_xcalloc(n_uris ? n_uris : 1, sizeof(*uris));
        for (size_t i = 0; i < n_uris; i++) {
            char *key = rt_s3_object_key(j->key_prefix, j->run_id, j->sent.v[i]);
            uris[i] = rt_xasprintf("s3://%s/%s", j->bucket, key);
            free(key);
        }
        body = rt_sentinel_finish_body(j->exit_code, finished_at, (const char *const *)uris, n_uris, NULL);
    }
    char *path = rt_sentinel_run_path(j->run_id, "finish");
    struct rt_http_resp resp;
    int rc = rt_sentinel_post(&w->http, rt_upload_api_url(w, j), path, j->token, rt_json_plain(body), &resp);
    free(path);
    json_object_put(body);
    /* Any 2xx is success (the Rust port's 200-only would resend an accepted
     * finish forever); 409 = already finished by an earlier attempt whose
     * reply was lost. */
    bool ok = rc == 0 || resp.status == 409;
    if (!ok) {
        if (!rt_upload_is_rejection(resp.status))
            rt_upload_failed(w, j, "finish run", resp.error);
        else if (!drop_refused(w, j, resp.body, uris, n_uris)) /* a refusal naming objects costs only those */
            rt_upload_rejected(w, j, "finish run", &resp);
    }
    for (size_t i = 0; i < n_uris; i++)
        free(uris[i]);
    free(uris);
    rt_http_resp_free(&resp);
    if (!ok)
        return;
    rt_upload_succeeded(w, j);
    rt_upload_on_finished(j->id, j->run_id, inl ? "inline" : "s3", j->sent.n);
    rt_upload_done(w, j, true);
}
