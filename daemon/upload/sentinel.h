/* Sentinel API client: request bodies exactly as the live API accepts them
 * (the Rust port's wire format, shared/reference/rust-port.md §4), response
 * parsing, and the POSTs. */
#ifndef RT_UPLOAD_SENTINEL_H
#define RT_UPLOAD_SENTINEL_H

#include "upload/http.h"
#include "upload/s3.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Expiry assumed when the API sends none (as the Rust port does). */
#define RT_SENTINEL_NO_EXPIRY 4070908800LL /* 2099-01-01T00:00:00Z */

struct rt_sentinel_run {
    char *run_id;
    char *upload_uri_prefix;     /* NULL when absent */
    bool has_creds;
    struct rt_s3_creds creds;
};

/* POST /runs body from the daemon's fields: metadata (strings, omitted when
 * unset), tags as an object key -> value (the Python client's shape; the
 * ctl's "k=v" strings are split at the first '='), command as a JSON *string*
 * holding a JSON array, then every host_* and cloud_* field (null when
 * unknown). pid and unknown keys are dropped; *dropped (may be NULL) counts
 * them. Returns a new object. */
struct json_object *rt_sentinel_runs_body(struct json_object *fields, unsigned *dropped);

/* The fields of the body sent that a 4xx reply says it refused: FastAPI's
 * detail[].loc ["body", FIELD, …], else sent keys the reply names as words.
 * Appends their names to names (an array); returns how many. */
size_t rt_sentinel_refused_fields(const char *reply, struct json_object *sent, struct json_object *names);

/* The objects of a /finish (uris[0..n), "s3://bucket/key") that a 4xx reply
 * says are bad: FastAPI's detail[].loc ["body", "data_uris", INDEX], or a
 * detail entry's msg (or a detail that is a string) naming an object's key.
 * Never from "input" (a body-level error echoes the whole body), and a text
 * naming every object (more than one) names none: an echo, not a verdict.
 * Sets bad[i]; returns how many. */
size_t rt_sentinel_refused_uris(const char *reply, const char *const *uris, size_t n, bool *bad);

/* POST /runs/{id}/finish body with exactly exit_code, run_status,
 * finished_at, data_source and data_uris (S3) or data_csv (inline, when
 * data_csv is not NULL). */
struct json_object *rt_sentinel_finish_body(int exit_code, const char *finished_at, const char *const *uris,
                                            size_t n_uris, const char *data_csv);

/* Parse a POST /runs reply; 0, or -1 without run_id. Never logs the body. */
int rt_sentinel_parse_run(const char *body, struct rt_sentinel_run *out);
void rt_sentinel_run_free(struct rt_sentinel_run *r);
/* {"access_key",…,"expiration"|"expires_at"} -> creds; -1 without keys. */
int rt_sentinel_parse_creds(struct json_object *o, struct rt_s3_creds *out);
/* Parse a refresh-credentials reply {"upload_credentials":{…}}. */
int rt_sentinel_parse_refresh(const char *body, struct rt_s3_creds *out);

/* "YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)" -> Unix seconds; false on garbage. */
bool rt_parse_iso8601(const char *s, int64_t *out);
/* Unix seconds -> "YYYY-MM-DDTHH:MM:SSZ". */
void rt_format_iso8601(int64_t secs, char out[32]);

/* POST {base}{path} with Authorization: Bearer <token>; body NULL = empty
 * body without Content-Type (refresh), else JSON. 0 on a 2xx. */
int rt_sentinel_post(struct rt_http *h, const char *base, const char *path, const char *token,
                     const char *body, struct rt_http_resp *resp);
/* "/runs/<url-encoded run_id>/<what>" */
char *rt_sentinel_run_path(const char *run_id, const char *what);

#endif
