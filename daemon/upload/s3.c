#include "upload/s3.h"

#include "rt/util.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_s3_creds_free(struct rt_s3_creds *c)
{
    free(c->access_key);
    /* do not leave the secrets in freed memory */
    if (c->secret_key)
        explicit_bzero(c->secret_key, strlen(c->secret_key));
    free(c->secret_key);
    if (c->session_token)
        explicit_bzero(c->session_token, strlen(c->session_token));
    free(c->session_token);
    memset(c, 0, sizeof(*c));
}

void rt_s3_creds_copy(struct rt_s3_creds *dst, const struct rt_s3_creds *src)
{
    dst->access_key = src->access_key ? rt_xstrdup(src->access_key) : NULL;
    dst->secret_key = src->secret_key ? rt_xstrdup(src->secret_key) : NULL;
    dst->session_token = src->session_token ? rt_xstrdup(src->session_token) : NULL;
    dst->expires_at = src->expires_at;
}

static int valid_bucket(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' || b[i] == '-'))
            return 0;
    return 1;
}

int rt_s3_parse_uri(const char *uri, char **bucket, char **prefix)
{
    if (!uri || strncmp(uri, "s3://", 5) != 0)
        return -EINVAL;
    const char *b = uri + 5, *slash = strchr(b, '/');
    size_t bn = slash ? (size_t)(slash - b) : strlen(b);
    if (!valid_bucket(b, bn))
        return -EINVAL;
    const char *p = slash ? slash + 1 : "";
    while (*p == '/')
        p++;
    size_t pn = strlen(p);
    while (pn && p[pn - 1] == '/')
        pn--;
    *bucket = rt_xasprintf("%.*s", (int)bn, b);
    *prefix = rt_xasprintf("%.*s", (int)pn, p);
    return 0;
}

char *rt_s3_object_key(const char *prefix, const char *run_id, uint64_t seq)
{
    return rt_xasprintf("%s%s%s/%06llu.csv.gz", prefix, *prefix ? "/" : "", run_id, (unsigned long long)seq);
}

char *rt_s3_encode_path(const char *key)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = rt_xmalloc(strlen(key) * 3 + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~' || *p == '/') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

char *rt_s3_object_url(const char *endpoint, const char *region, const char *bucket, const char *key)
{
    char *path = rt_s3_encode_path(key), *url;
    if (endpoint) {
        size_t n = strlen(endpoint);
        while (n && endpoint[n - 1] == '/')
            n--;
        url = rt_xasprintf("%.*s/%s/%s", (int)n, endpoint, bucket, path);
    } else if (strchr(bucket, '.')) {
        url = rt_xasprintf("https://s3.%s.amazonaws.com/%s/%s", region, bucket, path);
    } else {
        url = rt_xasprintf("https://%s.s3.%s.amazonaws.com/%s", bucket, region, path);
    }
    free(path);
    return url;
}

struct body_reader {
    const char *data;
    size_t len, pos;
};

static size_t read_body(char *buf, size_t size, size_t n, void *arg)
{
    struct body_reader *r = arg;
    size_t want = size * n, left = r->len - r->pos;
    if (want > left)
        want = left;
    memcpy(buf, r->data + r->pos, want);
    r->pos += want;
    return want;
}

static int seek_body(void *arg, curl_off_t offset, int origin)
{
    struct body_reader *r = arg;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > r->len)
        return CURL_SEEKFUNC_FAIL;
    r->pos = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

/* "<Code>SignatureDoesNotMatch</Code>" -> error text, so the log says why. */
static void s3_error_code(struct rt_http_resp *resp)
{
    const char *b = resp->body ? strstr(resp->body, "<Code>") : NULL;
    const char *e = b ? strstr(b, "</Code>") : NULL;
    if (b && e && e - b - 6 < 64)
        snprintf(resp->error, sizeof(resp->error), "HTTP %ld %.*s", resp->status, (int)(e - b - 6), b + 6);
}

int rt_s3_put(struct rt_http *h, const char *url, const char *region, const struct rt_s3_creds *creds,
              const void *body, size_t len, struct rt_http_resp *resp)
{
    char hash[65], sigv4[96];
    sha256_hex(body, len, hash);
    rt_http_prepare(h, url, resp);
    struct body_reader rd = {body, len, 0};
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/gzip");
    char *line = rt_xasprintf("x-amz-content-sha256: %s", hash);
    hdr = curl_slist_append(hdr, line);
    free(line);
    if (creds->session_token && *creds->session_token) {
        line = rt_xasprintf("x-amz-security-token: %s", creds->session_token);
        hdr = curl_slist_append(hdr, line);
        explicit_bzero(line, strlen(line));
        free(line);
    }
    snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", region);
    CURL *c = h->curl;
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(c, CURLOPT_READDATA, &rd);
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, seek_body);
    curl_easy_setopt(c, CURLOPT_SEEKDATA, &rd);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4);
    curl_easy_setopt(c, CURLOPT_USERNAME, creds->access_key ? creds->access_key : "");
    curl_easy_setopt(c, CURLOPT_PASSWORD, creds->secret_key ? creds->secret_key : "");
    int rc = rt_http_perform(h, resp);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    rt_http_free_headers(hdr); /* holds the session token */
    if (rc == 0 && resp->status != 200 && resp->status != 201) {
        snprintf(resp->error, sizeof(resp->error), "HTTP %ld", resp->status);
        rc = -1;
    }
    if (rc != 0 && resp->status)
        s3_error_code(resp);
    return rc;
}

void rt_s3_discover_region(struct rt_http *h, const char *probe_url, char *out, size_t size)
{
    struct rt_http_resp resp;
    rt_http_prepare(h, probe_url, &resp);
    curl_easy_setopt(h->curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, 2000L);
    rt_http_perform(h, &resp); /* 301/403 still carry the header */
    rt_strlcpy(out, resp.region[0] ? resp.region : RT_S3_FALLBACK_REGION, size);
    rt_http_resp_free(&resp);
}
