/* S3 side of the upload: object keys and URLs, SigV4 PUT through libcurl's
 * CURLOPT_AWS_SIGV4, bucket region discovery. */
#ifndef RT_UPLOAD_S3_H
#define RT_UPLOAD_S3_H

#include "upload/http.h"

#include <stddef.h>
#include <stdint.h>

#define RT_S3_FALLBACK_REGION "eu-central-1"

struct rt_s3_creds {
    char *access_key, *secret_key, *session_token;
    int64_t expires_at;          /* Unix seconds; 0 = unknown (refresh before use) */
};

void rt_s3_creds_free(struct rt_s3_creds *c);
void rt_s3_creds_copy(struct rt_s3_creds *dst, const struct rt_s3_creds *src);

/* "s3://bucket/some/prefix/" -> bucket "bucket", prefix "some/prefix" (trailing
 * slashes dropped, may be ""). -1 when not s3:// or the bucket name is not a
 * valid S3 bucket name. */
int rt_s3_parse_uri(const char *uri, char **bucket, char **prefix);
/* "<prefix>/<run_id>/<seq:06>.csv.gz" (no leading "/" when prefix is ""). */
char *rt_s3_object_key(const char *prefix, const char *run_id, uint64_t seq);
/* Percent-encodes everything but RFC 3986 unreserved characters and '/':
 * S3 canonicalises the path this way and curl signs the path as given. */
char *rt_s3_encode_path(const char *key);
/* endpoint set: <endpoint>/<bucket>/<key> (path style). AWS: virtual-host
 * style, path style for bucket names with dots (TLS wildcard certificates). */
char *rt_s3_object_url(const char *endpoint, const char *region, const char *bucket, const char *key);

/* PUT body with Content-Type application/gzip, x-amz-content-sha256 and
 * x-amz-security-token, signed with SigV4. 0 on 200/201; resp->error names
 * the S3 error code otherwise. */
int rt_s3_put(struct rt_http *h, const char *url, const char *region, const struct rt_s3_creds *creds,
              const void *body, size_t len, struct rt_http_resp *resp);

/* HEAD probe_url (2 s), region from x-amz-bucket-region (sent even on 301/403);
 * RT_S3_FALLBACK_REGION on any failure. */
void rt_s3_discover_region(struct rt_http *h, const char *probe_url, char *out, size_t size);

#endif
