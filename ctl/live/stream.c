/* Reading the daemon's streams. */
#include "live/stream.h"

#include <errno.h>
#include <string.h>

int ctl_stream_open(struct ctl *ctl, struct rt_vl_client *c, const char *method,
                    struct json_object *params)
{
    int rc = ctl_connect(ctl, c);
    if (rc) {
        json_object_put(params);
        return rc;
    }
    if (rt_vl_client_send(c, method, params, RT_VL_MORE) < 0) {
        CTL_ERR("lost the connection to the daemon");
        return RT_EXIT_UNREACHABLE;
    }
    return 0;
}

int ctl_stream_next(struct rt_vl_client *c, struct json_object **reply, int timeout_ms)
{
    *reply = NULL;
    int e = rt_vl_client_recv(c, reply, timeout_ms);
    if (e == -ETIMEDOUT || e == -EINTR)
        return 0;
    if (e < 0) {
        CTL_ERR("lost the connection to the daemon: %s", strerror(-e));
        return RT_EXIT_UNREACHABLE;
    }
    if (rt_vl_reply_error(*reply)) {
        int rc = ctl_report_error(*reply);
        json_object_put(*reply);
        *reply = NULL;
        return rc;
    }
    if (!rt_vl_reply_continues(*reply)) {
        /* These streams end only when the daemon shuts down. */
        CTL_ERR("the daemon ended the stream (it is shutting down)");
        json_object_put(*reply);
        *reply = NULL;
        return RT_EXIT_UNREACHABLE;
    }
    return 1;
}
