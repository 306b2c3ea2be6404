/* HTTP GET for the Keeper lookup (keeper.c), in the module ctl-http.so
 * (ctl/module.h) so that only a report that asks for prices maps libcurl.
 * The module calls nothing of the client: libcurl and libc only. */
#ifndef RT_INSIGHT_HTTP_H
#define RT_INSIGHT_HTTP_H

#include <stddef.h>

struct insight_http;

/* A session (connections are reused between its GETs); NULL with why. */
typedef struct insight_http *insight_http_open_fn(char *err, size_t errlen);
/* GET url within timeout_ms with the given header lines (NULL-terminated):
 * the body (malloc'd, NUL-terminated, at most max_body bytes) on a 2xx, else
 * NULL and why. */
typedef char *insight_http_get_fn(struct insight_http *h, const char *url, const char *const *headers,
                                  long timeout_ms, size_t max_body, char *err, size_t errlen);
typedef void insight_http_close_fn(struct insight_http *h);

insight_http_open_fn insight_http_open;
insight_http_get_fn insight_http_get;
insight_http_close_fn insight_http_close;

#endif
