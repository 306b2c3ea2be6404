/* libcurl's process-wide initialisation. curl_global_init() is not safe to
 * race with other threads using libcurl, so main() calls
 * rt_http_global_init() once before it starts any thread (cloud discovery,
 * upload worker). Later calls are no-ops, so every curl user may call it
 * defensively from the thread that creates its own threads. */
#ifndef RT_HTTP_GLOBAL_H
#define RT_HTTP_GLOBAL_H

#include <stdbool.h>

/* true when libcurl is usable. */
bool rt_http_global_init(void);
/* At exit, after every curl-using thread has been joined. */
void rt_http_global_cleanup(void);

#endif
