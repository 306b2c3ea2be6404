#include "system/http_global.h"

#include "system/log.h"

#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool ok;

static void init_once(void)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    ok = rc == CURLE_OK;
    if (!ok)
        rt_err("libcurl initialisation failed: %s", curl_easy_strerror(rc));
}

bool rt_http_global_init(void)
{
    pthread_once(&once, init_once);
    return ok;
}

void rt_http_global_cleanup(void)
{
    if (ok)
        curl_global_cleanup();
    ok = false;
}
