#include "upload/upload_job.h"

#include "system/log.h"
#include "rt/json.h"
#include "rt/util.h"
#include "upload/sentinel.h"
#include "upload/spool.h"
#include "upload/upload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void rt_u64_list_add(struct rt_u64_list *l, uint64_t v)
{
    if (rt_u64_list_has(l, v))
        return;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = rt_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    size_t i = l->n++;
    for (; i > 0 && l->v[i - 1] > v; i--) /* kept sorted: URIs go out in order */
        l->v[i] = l->v[i - 1];
    l->v[i] = v;
}

bool rt_u64_list_has(const struct rt_u64_list *l, uint64_t v)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return true;
    return false;
}

void rt_u64_list_remove(struct rt_u64_list *l, uint64_t v)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i] == v) {
            memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(*l->v));
            l->n--;
            return;
        }
    }
}

uint64_t rt_upload_backoff_ms(unsigned base_ms, unsigned max_ms, unsigned failures, uint64_t rnd)
{
    uint64_t d = base_ms;
    for (unsigned i = 1; i < failures && d < max_ms; i++)
        d *= 2;
    if (d > max_ms)
        d = max_ms;
    return d / 2 + rnd % (d / 2 + 1);
}

struct rt_upload_job *rt_upload_job_alloc(uint64_t id)
{
    struct rt_upload_job *j = rt_xcalloc(1, sizeof(*j));
    j->id = id;
    j->dirfd = -1;
    j->rows_fd = -1;
    return j;
}

void rt_upload_job_destroy(struct rt_upload_job *j)
{
    if (!j)
        return;
    if (j->rows_fd >= 0)
        close(j->rows_fd);
    if (j->dirfd >= 0)
        close(j->dirfd);
    if (j->token) {
        explicit_bzero(j->token, strlen(j->token));
        free(j->token);
    }
    free(j->api_url);
    json_object_put(j->run_fields);
    json_object_put(j->omitted);
    free(j->run_id);
    free(j->uri_prefix);
    free(j->bucket);
    free(j->key_prefix);
    rt_s3_creds_free(&j->creds);
    free(j->pending);
    free(j->sent.v);
    free(j->dropped.v);
    free(j->unsealed.v);
    free(j);
}

void rt_upload_job_add_pending(struct rt_upload_job *j, uint64_t seq, uint64_t bytes, int64_t sealed_at)
{
    if (j->n_pending == j->cap_pending) {
        j->cap_pending = j->cap_pending ? j->cap_pending * 2 : 16;
        j->pending = rt_xrealloc(j->pending, j->cap_pending * sizeof(*j->pending));
    }
    size_t i = j->n_pending++;
    for (; i > 0 && j->pending[i - 1].seq > seq; i--)
        j->pending[i] = j->pending[i - 1];
    j->pending[i] = (struct rt_batch){seq, bytes, sealed_at};
}

void rt_upload_job_remove_pending(struct rt_upload_job *j, uint64_t seq)
{
    for (size_t i = 0; i < j->n_pending; i++) {
        if (j->pending[i].seq == seq) {
            memmove(&j->pending[i], &j->pending[i + 1], (j->n_pending - i - 1) * sizeof(*j->pending));
            j->n_pending--;
            return;
        }
    }
}

uint64_t rt_upload_job_pending_bytes(const struct rt_upload_job *j)
{
    uint64_t n = j->seg_bytes;
    for (size_t i = 0; i < j->n_pending; i++)
        n += j->pending[i].bytes;
    return n;
}

void rt_upload_job_set_run(struct rt_upload_job *j, const char *run_id, const char *uri_prefix,
                           const struct rt_s3_creds *creds)
{
    free(j->run_id);
    free(j->uri_prefix);
    free(j->bucket);
    free(j->key_prefix);
    j->run_id = rt_xstrdup(run_id);
    j->uri_prefix = uri_prefix ? rt_xstrdup(uri_prefix) : NULL;
    j->bucket = j->key_prefix = NULL;
    if (uri_prefix && rt_s3_parse_uri(uri_prefix, &j->bucket, &j->key_prefix) != 0)
        j->bucket = j->key_prefix = NULL;
    rt_s3_creds_free(&j->creds);
    j->has_creds = creds != NULL;
    if (creds)
        rt_s3_creds_copy(&j->creds, creds);
}

static struct json_object *u64_array(const struct rt_u64_list *l)
{
    struct json_object *a = json_object_new_array_ext((int)l->n);
    for (size_t i = 0; i < l->n; i++)
        json_object_array_add(a, json_object_new_uint64(l->v[i]));
    return a;
}

char *rt_upload_job_meta(const struct rt_upload_job *j)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "version", json_object_new_int(1));
    json_object_object_add(o, "job_id", json_object_new_uint64(j->id));
    json_object_object_add(o, "token", json_object_new_string(j->token));
    json_object_object_add(o, "api_url", rt_json_string_or_null(j->api_url));
    json_object_object_add(o, "interval_ms", json_object_new_uint64(j->interval_ms));
    json_object_object_add(o, "run_fields", json_object_get(j->run_fields));
    json_object_object_add(o, "omitted_fields", json_object_get(j->omitted));
    json_object_object_add(o, "run_id", rt_json_string_or_null(j->run_id));
    json_object_object_add(o, "upload_uri_prefix", rt_json_string_or_null(j->uri_prefix));
    if (j->has_creds) {
        struct json_object *c = json_object_new_object();
        json_object_object_add(c, "access_key", json_object_new_string(j->creds.access_key));
        json_object_object_add(c, "secret_key", json_object_new_string(j->creds.secret_key));
        json_object_object_add(c, "session_token", rt_json_string_or_null(j->creds.session_token));
        json_object_object_add(c, "expires_at", json_object_new_int64(j->creds.expires_at));
        json_object_object_add(o, "credentials", c);
    }
    json_object_object_add(o, "sent", u64_array(&j->sent));
    json_object_object_add(o, "dropped", u64_array(&j->dropped));
    json_object_object_add(o, "ended", json_object_new_boolean(j->ended));
    json_object_object_add(o, "exit_code", j->exit_code >= 0 ? json_object_new_int(j->exit_code) : NULL);
    json_object_object_add(o, "finished_at", json_object_new_int64(j->finished_at));
    char *s = rt_xstrdup(rt_json_plain(o));
    json_object_put(o);
    return s;
}

static void load_u64_array(struct json_object *o, const char *key, struct rt_u64_list *l)
{
    struct json_object *a = rt_json_get_array(o, key);
    for (size_t i = 0; a && i < json_object_array_length(a); i++) {
        struct json_object *e = json_object_array_get_idx(a, i);
        if (json_object_is_type(e, json_type_int) && json_object_get_int64(e) >= 0)
            rt_u64_list_add(l, json_object_get_uint64(e));
    }
}

static int parse_meta(struct rt_upload_job *j, const char *text)
{
    struct json_object *o = json_tokener_parse(text);
    const char *token = rt_json_get_string(o, "token");
    if (!o || !token || !*token) {
        json_object_put(o);
        return -EINVAL;
    }
    j->token = rt_xstrdup(token);
    const char *url = rt_json_get_string(o, "api_url");
    j->api_url = url ? rt_xstrdup(url) : NULL;
    rt_json_get_u64(o, "interval_ms", &j->interval_ms);
    struct json_object *f = rt_json_get_object(o, "run_fields");
    j->run_fields = f ? json_object_get(f) : json_object_new_object();
    struct json_object *om = rt_json_get_array(o, "omitted_fields");
    j->omitted = om ? json_object_get(om) : NULL;
    const char *run_id = rt_json_get_string(o, "run_id");
    if (run_id) {
        struct json_object *c = rt_json_get_object(o, "credentials");
        struct rt_s3_creds creds = {0};
        bool has = c && rt_sentinel_parse_creds(c, &creds) == 0;
        if (has)
            rt_json_get_i64(c, "expires_at", &creds.expires_at);
        rt_upload_job_set_run(j, run_id, rt_json_get_string(o, "upload_uri_prefix"), has ? &creds : NULL);
        rt_s3_creds_free(&creds);
    }
    load_u64_array(o, "sent", &j->sent);
    load_u64_array(o, "dropped", &j->dropped);
    rt_json_get_bool(o, "ended", &j->ended);
    int64_t v = 0;
    j->exit_code = rt_json_get_i64(o, "exit_code", &v) && v >= 0 && v <= 255 ? (int)v : RT_UPLOAD_EXIT_UNKNOWN;
    rt_json_get_i64(o, "finished_at", &j->finished_at);
    json_object_put(o);
    return 0;
}

/* "000012.csv.gz" / "rows.000012" -> 12 */
static bool parse_seq(const char *s, size_t digits_end, uint64_t *seq)
{
    char buf[32];
    if (digits_end == 0 || digits_end >= sizeof(buf))
        return false;
    memcpy(buf, s, digits_end);
    buf[digits_end] = '\0';
    return rt_str_all_digits(buf) && rt_parse_u64(buf, seq);
}

static void remove_dir(int spool_fd, const char *name, int dirfd)
{
    DIR *d = rt_opendir_at(dirfd);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.')
                unlinkat(dirfd, e->d_name, 0);
        closedir(d);
    }
    unlinkat(spool_fd, name, AT_REMOVEDIR);
    fsync(spool_fd);
}

/* Parses one meta file: 0, -ENOENT when it is not there, -EBADMSG when it
 * cannot be read or parsed (j is left as it was: parse_meta fills it only
 * once the file is whole). */
static int read_meta(struct rt_upload_job *j, int dirfd, const char *file)
{
    char *text = NULL;
    size_t len = 0;
    int rc = rt_spool_read_file(dirfd, file, &text, &len);
    if (rc == 0 && parse_meta(j, text) < 0)
        rc = -EBADMSG;
    if (text) {
        explicit_bzero(text, len); /* holds the token */
        free(text);
    }
    return rc == 0 || rc == -ENOENT ? rc : -EBADMSG;
}

/* meta.json, else its copy. A damaged meta.json is set aside (quarantine/
 * <id>-meta.json) and the copy takes its place: the job's upload goes on.
 * 0; -ENOENT when neither exists (a finished job: both go first, the copy
 * before meta.json); -EBADMSG when no whole one is left. */
static int load_meta(struct rt_upload_job *j, int spool_fd, int dirfd, const char *name)
{
    int rc = read_meta(j, dirfd, RT_SPOOL_META);
    if (rc == 0)
        return 0;
    int copy = read_meta(j, dirfd, RT_SPOOL_META_COPY);
    if (rc == -ENOENT && copy == -ENOENT)
        return -ENOENT;
    if (copy < 0)
        return -EBADMSG; /* the whole directory is set aside */
    char as[64];
    snprintf(as, sizeof(as), "%s-%s", name, RT_SPOOL_META);
    int moved = rc == -ENOENT ? 0 : rt_spool_quarantine(spool_fd, dirfd, RT_SPOOL_META, as);
    if (rc == -ENOENT)
        rt_err("upload: spool %s: %s is missing; the job goes on from %s", name, RT_SPOOL_META, RT_SPOOL_META_COPY);
    else if (moved < 0)
        rt_err("upload: spool %s: %s is damaged and cannot be set aside (%s); the job goes on from %s", name,
               RT_SPOOL_META, strerror(-moved), RT_SPOOL_META_COPY);
    else
        rt_err("upload: spool %s: %s is damaged; kept as %s/%s, the job goes on from %s", name, RT_SPOOL_META,
               RT_SPOOL_QUARANTINE, as, RT_SPOOL_META_COPY);
    char *meta = rt_upload_job_meta(j);
    int w = rt_write_file_at(dirfd, RT_SPOOL_META, meta, strlen(meta), 0600, RT_SYNC_FULL);
    explicit_bzero(meta, strlen(meta));
    free(meta);
    if (w < 0)
        rt_warn("upload: spool %s: cannot write %s back: %s", name, RT_SPOOL_META, strerror(-w));
    return 0;
}

struct rt_upload_job *rt_upload_job_load(int spool_fd, const char *name)
{
    uint64_t id;
    if (!rt_str_all_digits(name) || !rt_parse_u64(name, &id))
        return NULL;
    int dirfd = rt_spool_open_dir(spool_fd, name);
    if (dirfd < 0)
        return NULL;
    struct rt_upload_job *j = rt_upload_job_alloc(id);
    int rc = load_meta(j, spool_fd, dirfd, name);
    if (rc == -EBADMSG) {
        /* Its token is only there: the upload cannot go on. Set aside whole
         * (the rows are also in the job store), never deleted. */
        int moved = rt_spool_quarantine(spool_fd, spool_fd, name, name);
        if (moved < 0)
            rt_err("upload: spool %s: neither %s nor %s can be read, and it cannot be set aside (%s): the job's "
                   "upload cannot go on", name, RT_SPOOL_META, RT_SPOOL_META_COPY, strerror(-moved));
        else
            rt_err("upload: spool %s: neither %s nor %s can be read: the job's upload cannot go on; kept as %s/%s",
                   name, RT_SPOOL_META, RT_SPOOL_META_COPY, RT_SPOOL_QUARANTINE, name);
        close(dirfd);
        rt_upload_job_destroy(j);
        return NULL;
    }
    if (rc < 0) {
        /* No meta: the job was finished (meta goes first) or never began. */
        remove_dir(spool_fd, name, dirfd);
        close(dirfd);
        rt_upload_job_destroy(j);
        return NULL;
    }
    j->dirfd = dirfd;

    DIR *d = rt_opendir_at(dirfd);
    struct rt_u64_list rows = {0};
    uint64_t max_seq = 0;
    bool any = false;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *n = e->d_name;
        size_t nl = strlen(n);
        uint64_t seq;
        if (nl > 4 && strcmp(n + nl - 4, ".tmp") == 0) {
            unlinkat(dirfd, n, 0); /* a write that never completed */
        } else if (rt_str_starts_with(n, "rows.") && parse_seq(n + 5, nl - 5, &seq)) {
            rt_u64_list_add(&rows, seq);
        } else if (nl > 7 && strcmp(n + nl - 7, ".csv.gz") == 0 && parse_seq(n, nl - 7, &seq)) {
            struct stat st;
            if (rt_u64_list_has(&j->sent, seq) || rt_u64_list_has(&j->dropped, seq)) {
                unlinkat(dirfd, n, 0); /* uploaded; the crash came before the unlink */
            } else if (fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                rt_upload_job_add_pending(j, seq, (uint64_t)st.st_size,
                                          (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000);
            }
            if (!any || seq > max_seq)
                max_seq = seq;
            any = true;
        }
    }
    if (d)
        closedir(d);
    for (size_t i = 0; i < rows.n; i++) {
        uint64_t seq = rows.v[i], nrows, bytes;
        char bname[32], rname[32];
        rt_spool_batch_name(seq, bname);
        rt_spool_rows_name(seq, rname);
        if (faccessat(dirfd, bname, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || rt_u64_list_has(&j->sent, seq)) {
            rt_spool_unlink(dirfd, rname); /* sealed before the crash: counted with its batch */
            continue;
        }
        rc = rt_spool_seal(dirfd, seq, &nrows, &bytes);
        if (rc == 1)
            rt_upload_job_add_pending(j, seq, bytes, (int64_t)(rt_real_ns() / 1000000));
        else if (rc < 0) {
            rt_warn("upload: job %llu: cannot seal %s: %s", (unsigned long long)id, rname, strerror(-rc));
            rt_u64_list_add(&j->unsealed, seq); /* retried by the worker */
        }
        /* An empty segment (a clean stop opens one) became no object: its
         * number is free, so keys stay contiguous. */
        if (rc != 0 && (!any || seq > max_seq))
            max_seq = seq, any = true;
    }
    free(rows.v);
    for (size_t i = 0; i < j->sent.n; i++)
        if (!any || j->sent.v[i] > max_seq)
            max_seq = j->sent.v[i], any = true;
    for (size_t i = 0; i < j->dropped.n; i++)
        if (!any || j->dropped.v[i] > max_seq)
            max_seq = j->dropped.v[i], any = true;
    j->seg = any ? max_seq + 1 : 0;
    j->resumed_running = !j->ended;
    return j;
}

void rt_upload_job_remove_files(struct rt_upload_job *j, int spool_fd)
{
    char name[32];
    snprintf(name, sizeof(name), "%llu", (unsigned long long)j->id);
    if (j->dirfd < 0)
        return;
    rt_spool_unlink(j->dirfd, RT_SPOOL_META_COPY);
    rt_spool_unlink(j->dirfd, RT_SPOOL_META);
    remove_dir(spool_fd, name, j->dirfd);
    close(j->dirfd);
    j->dirfd = -1;
}
