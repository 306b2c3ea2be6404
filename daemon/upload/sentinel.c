#include "upload/sentinel.h"

#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const META_KEYS[] = {
    "job_name", "project_name", "stage_name", "task_name", "team", "env", "language",
    "orchestrator", "executor", "external_run_id", "container_image",
};
static const char *const HOST_KEYS[] = {
    "host_id", "host_hostname", "host_ip", "host_server_allocation", "host_vcpus", "host_cpu_model",
    "host_memory_mib", "host_gpu_model", "host_gpu_count", "host_gpu_memory_mib", "host_storage_gb",
};
static const char *const CLOUD_KEYS[] = {
    "cloud_vendor_id", "cloud_account_id", "cloud_region_id", "cloud_zone_id", "cloud_instance_type",
};

static bool in_list(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, list[i]) == 0)
            return true;
    return false;
}

/* One "k=v" into the tags object (a tag without '=' has an empty value). */
static void add_tag(struct json_object *out, const char *kv)
{
    const char *eq = strchr(kv, '=');
    char *key = eq ? rt_xasprintf("%.*s", (int)(eq - kv), kv) : rt_xstrdup(kv);
    json_object_object_add(out, key, json_object_new_string(eq ? eq + 1 : ""));
    free(key);
}

/* tags as the Python client sends them: an object key -> value. The ctl's
 * ["k=v", …] (the Rust client's shape) is converted; a later key wins. */
static struct json_object *tags_object(struct json_object *v)
{
    struct json_object *out = json_object_new_object();
    if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            struct json_object *e = json_object_array_get_idx(v, i);
            if (json_object_is_type(e, json_type_string))
                add_tag(out, json_object_get_string(e));
        }
    } else if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, k, tv) json_object_object_add(
            out, k, json_object_new_string(json_object_is_type(tv, json_type_string) ? json_object_get_string(tv)
                                                                                      : rt_json_plain(tv)));
    } else if (json_object_is_type(v, json_type_string)) {
        add_tag(out, json_object_get_string(v));
    }
    if (json_object_object_length(out) == 0) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

/* command must be a JSON string holding a JSON array (a bare array is a 422). */
static struct json_object *command_string(struct json_object *v)
{
    if (json_object_is_type(v, json_type_array))
        return json_object_new_string(rt_json_plain(v));
    if (!json_object_is_type(v, json_type_string))
        return NULL;
    struct json_object *parsed = json_tokener_parse(json_object_get_string(v));
    bool is_array = parsed && json_object_is_type(parsed, json_type_array);
    json_object_put(parsed);
    if (is_array)
        return json_object_get(v);
    struct json_object *arr = json_object_new_array();
    json_object_array_add(arr, json_object_get(v));
    struct json_object *s = json_object_new_string(rt_json_plain(arr));
    json_object_put(arr);
    return s;
}

struct json_object *rt_sentinel_runs_body(struct json_object *fields, unsigned *dropped)
{
    struct json_object *body = json_object_new_object(), *v;
    unsigned n_dropped = 0;
    if (!json_object_is_type(fields, json_type_object))
        fields = NULL;
    for (size_t i = 0; i < RT_ARRAY_SIZE(META_KEYS); i++)
        if (fields && json_object_object_get_ex(fields, META_KEYS[i], &v) &&
            json_object_is_type(v, json_type_string))
            json_object_object_add(body, META_KEYS[i], json_object_get(v));
    if (fields && json_object_object_get_ex(fields, "tags", &v) && (v = tags_object(v)))
        json_object_object_add(body, "tags", v);
    if (fields && json_object_object_get_ex(fields, "command", &v) && (v = command_string(v)))
        json_object_object_add(body, "command", v);
    for (size_t i = 0; i < RT_ARRAY_SIZE(HOST_KEYS); i++) {
        v = NULL;
        if (fields)
            json_object_object_get_ex(fields, HOST_KEYS[i], &v);
        json_object_object_add(body, HOST_KEYS[i], json_object_get(v));
    }
    for (size_t i = 0; i < RT_ARRAY_SIZE(CLOUD_KEYS); i++) {
        v = NULL;
        if (fields)
            json_object_object_get_ex(fields, CLOUD_KEYS[i], &v);
        json_object_object_add(body, CLOUD_KEYS[i], json_object_get(v));
    }
    if (fields) {
        json_object_object_foreach(fields, k, fv) {
            (void)fv;
            if (!json_object_object_get_ex(body, k, NULL) && !in_list(k, META_KEYS, RT_ARRAY_SIZE(META_KEYS)) &&
                strcmp(k, "tags") != 0 && strcmp(k, "command") != 0)
                n_dropped++; /* pid, typos: the API answers 422 to unknown keys */
        }
    }
    if (dropped)
        *dropped = n_dropped;
    return body;
}

/* Is name, as a whole word, in text? */
static bool mentions(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        bool start = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        bool end = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (start && end)
            return true;
    }
    return false;
}

size_t rt_sentinel_refused_fields(const char *reply, struct json_object *sent, struct json_object *names)
{
    size_t n = 0;
    struct json_object *o = reply ? json_tokener_parse(reply) : NULL, *detail = NULL;
    /* FastAPI: {"detail": [{"loc": ["body", "tags", …], "msg": …}, …]} */
    if (json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "detail", &detail) &&
        json_object_is_type(detail, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(detail); i++) {
            struct json_object *loc = rt_json_get_array(json_object_array_get_idx(detail, i), "loc");
            const char *where = loc ? json_object_get_string(json_object_array_get_idx(loc, 0)) : NULL;
            const char *field = loc ? json_object_get_string(json_object_array_get_idx(loc, 1)) : NULL;
            if (where && field && strcmp(where, "body") == 0 && json_object_object_get_ex(sent, field, NULL)) {
                json_object_array_add(names, json_object_new_string(field));
                n++;
            }
        }
    } else if (reply) {
        /* Any other shape: the fields it names, as words. */
        json_object_object_foreach(sent, k, v) {
            (void)v;
            if (mentions(reply, k)) {
                json_object_array_add(names, json_object_new_string(k));
                n++;
            }
        }
    }
    json_object_put(o);
    return n;
}

/* Marks the objects whose key (the URI after "s3://bucket/") text names. */
static size_t uris_in_text(const char *text, const char *const *uris, size_t n, bool *bad)
{
    size_t named = 0;
    for (size_t i = 0; text && i < n; i++) {
        const char *key = strncmp(uris[i], "s3://", 5) == 0 ? strchr(uris[i] + 5, '/') : NULL;
        if (key && key[1] && strstr(text, key + 1) && !bad[i]) {
            bad[i] = true;
            named++;
        }
    }
    return named;
}

size_t rt_sentinel_refused_uris(const char *reply, const char *const *uris, size_t n, bool *bad)
{
    size_t named = 0, by_text = 0;
    bool *text_bad = rt_xcalloc(n ? n : 1, sizeof(*text_bad));
    struct json_object *o = reply ? json_tokener_parse(reply) : NULL, *detail = NULL;
    if (json_object_is_type(o, json_type_object))
        json_object_object_get_ex(o, "detail", &detail);
    if (json_object_is_type(detail, json_type_string))
        by_text = uris_in_text(json_object_get_string(detail), uris, n, text_bad);
    for (size_t i = 0; json_object_is_type(detail, json_type_array) && i < json_object_array_length(detail); i++) {
        struct json_object *e = json_object_array_get_idx(detail, i);
        struct json_object *loc = rt_json_get_array(e, "loc");
        struct json_object *at = loc ? json_object_array_get_idx(loc, 2) : NULL;
        const char *where = loc ? json_object_get_string(json_object_array_get_idx(loc, 0)) : NULL;
        const char *field = loc ? json_object_get_string(json_object_array_get_idx(loc, 1)) : NULL;
        int64_t k = json_object_is_type(at, json_type_int) ? json_object_get_int64(at) : -1;
        if (where && field && strcmp(where, "body") == 0 && strcmp(field, "data_uris") == 0 && k >= 0 &&
            (uint64_t)k < n && !bad[k]) {
            bad[k] = true;
            named++;
        }
        by_text += uris_in_text(rt_json_get_string(e, "msg"), uris, n, text_bad);
    }
    json_object_put(o);
    if (by_text && !(n > 1 && by_text == n)) {
        for (size_t i = 0; i < n; i++) {
            named += text_bad[i] && !bad[i];
            bad[i] |= text_bad[i];
        }
    }
    free(text_bad);
    return named;
}

struct json_object *rt_sentinel_finish_body(int exit_code, const char *finished_at, const char *const *uris,
                                            size_t n_uris, const char *data_csv)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "exit_code", json_object_new_int(exit_code));
    json_object_object_add(o, "run_status", json_object_new_string(exit_code == 0 ? "finished" : "failed"));
    json_object_object_add(o, "finished_at", json_object_new_string(finished_at));
    if (data_csv) {
        json_object_object_add(o, "data_source", json_object_new_string("inline"));
        json_object_object_add(o, "data_csv", json_object_new_string(data_csv));
    } else {
        struct json_object *a = json_object_new_array_ext((int)n_uris);
        for (size_t i = 0; i < n_uris; i++)
            json_object_array_add(a, json_object_new_string(uris[i]));
        json_object_object_add(o, "data_source", json_object_new_string("s3"));
        json_object_object_add(o, "data_uris", a);
    }
    return o;
}

bool rt_parse_iso8601(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                     &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
        return false;
    const char *p = s + n;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    long offset = 0;
    if (*p == 'Z' && p[1] == '\0') {
        /* UTC */
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int hh, mm;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
            return false;
        offset = (*p == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
    } else {
        return false;
    }
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (int64_t)timegm(&tm) - offset;
    return true;
}

void rt_format_iso8601(int64_t secs, char out[32])
{
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static char *dup_string(struct json_object *o, const char *key)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    if (json_object_is_type(v, json_type_string))
        return rt_xstrdup(json_object_get_string(v));
    if (json_object_is_type(v, json_type_int))
        return rt_xstrdup(json_object_get_string(v));
    return NULL;
}

int rt_sentinel_parse_creds(struct json_object *o, struct rt_s3_creds *out)
{
    memset(out, 0, sizeof(*out));
    if (!json_object_is_type(o, json_type_object))
        return -EBADMSG;
    out->access_key = dup_string(o, "access_key");
    out->secret_key = dup_string(o, "secret_key");
    out->session_token = dup_string(o, "session_token");
    const char *exp = rt_json_get_string(o, "expiration");
    if (!exp)
        exp = rt_json_get_string(o, "expires_at");
    if (!exp)
        out->expires_at = RT_SENTINEL_NO_EXPIRY;
    else if (!rt_parse_iso8601(exp, &out->expires_at))
        out->expires_at = 0; /* unknown: refresh before every use, like the Rust port */
    if (!out->access_key || !out->secret_key) {
        rt_s3_creds_free(out);
        return -EBADMSG;
    }
    return 0;
}

int rt_sentinel_parse_run(const char *body, struct rt_sentinel_run *out)
{
    memset(out, 0, sizeof(*out));
    struct json_object *o = body ? json_tokener_parse(body) : NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !(out->run_id = dup_string(o, "run_id")) ||
        !*out->run_id) {
        json_object_put(o);
        rt_sentinel_run_free(out);
        return -EBADMSG;
    }
    out->upload_uri_prefix = dup_string(o, "upload_uri_prefix");
    out->has_creds = rt_sentinel_parse_creds(rt_json_get_object(o, "upload_credentials"), &out->creds) == 0;
    json_object_put(o);
    return 0;
}

void rt_sentinel_run_free(struct rt_sentinel_run *r)
{
    free(r->run_id);
    free(r->upload_uri_prefix);
    rt_s3_creds_free(&r->creds);
    memset(r, 0, sizeof(*r));
}

int rt_sentinel_parse_refresh(const char *body, struct rt_s3_creds *out)
{
    struct json_object *o = body ? json_tokener_parse(body) : NULL;
    int rc = rt_sentinel_parse_creds(rt_json_get_object(o, "upload_credentials"), out);
    json_object_put(o);
    return rc;
}

char *rt_sentinel_run_path(const char *run_id, const char *what)
{
    char *enc = curl_easy_escape(NULL, run_id, 0);
    char *p = rt_xasprintf("/runs/%s/%s", enc ? enc : "", what);
    curl_free(enc);
    return p;
}

int rt_sentinel_post(struct rt_http *h, const char *base, const char *path, const char *token,
                     const char *body, struct rt_http_resp *resp)
{
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    char *url = rt_xasprintf("%.*s%s", (int)n, base, path);
    rt_http_prepare(h, url, resp);
    free(url);
    char *auth = rt_xasprintf("Authorization: Bearer %s", token);
    struct curl_slist *hdr = curl_slist_append(NULL, auth);
    explicit_bzero(auth, strlen(auth));
    free(auth);
    hdr = curl_slist_append(hdr, "Accept: application/json");
    /* Plain JSON: the API (FastAPI) rejects gzip request bodies. */
    hdr = curl_slist_append(hdr, body ? "Content-Type: application/json" : "Content-Type:");
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
    int rc = rt_http_perform(h, resp);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
    rt_http_free_headers(hdr); /* holds the token */
    return rc;
}
