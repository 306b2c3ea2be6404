/* status --follow: like the Rust tracker without arguments, one host sample
 * per interval, but read from the daemon's host stream. */
#include "live/follow.h"

#include "live/stream.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"

#include <stdlib.h>

static int print_csv_row(struct json_object *sample, char **buf, size_t *cap)
{
    struct rt_sample s;
    rt_sample_init(&s);
    char err[128];
    int rc = RT_EXIT_OK;
    if (rt_sample_from_json(sample, &s, err, sizeof(err)) < 0) {
        CTL_ERR("malformed host sample from the daemon: %s", err);
        rc = RT_EXIT_FAILURE;
    } else {
        size_t n = rt_sample_to_csv(&s, *buf, *cap);
        if (n >= *cap) {
            *cap = n + 1;
            *buf = rt_xrealloc(*buf, *cap);
            rt_sample_to_csv(&s, *buf, *cap);
        }
        fputs(*buf, stdout);
    }
    rt_sample_free(&s);
    return rc;
}

int ctl_follow_host(struct ctl *ctl, bool csv)
{
    struct rt_vl_client c = {.fd = -1};
    int rc = ctl_stream_open(ctl, &c, RT_VL_INTERFACE ".StreamHostSamples", NULL);
    if (rc) {
        rt_vl_client_close(&c);
        return rc;
    }
    if (csv)
        printf("%s\n", RT_CSV_HEADER);
    char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        struct json_object *reply;
        int r = ctl_stream_next(&c, &reply, -1);
        if (r == 0)
            continue;
        if (r != 1) {
            rc = r;
            break;
        }
        struct json_object *sample = rt_json_get_object(rt_vl_reply_params(reply), "sample");
        if (csv)
            rc = print_csv_row(sample, &buf, &cap);
        else
            printf("%s\n", rt_json_plain(sample));
        json_object_put(reply);
        if (rc || fflush(stdout) != 0 || ferror(stdout)) {
            rc = rc ? rc : RT_EXIT_FAILURE;
            break;
        }
    }
    free(buf);
    rt_vl_client_close(&c);
    return rc;
}
