/* Each user's own notification targets (notice/defaults.h): set and read
 * by that user only, for their jobs that name none. */
#include "api/call.h"
#include "api/methods.h"
#include "daemon.h"
#include "notice/defaults.h"
#include "notice/target.h"
#include "rt/util.h"

#include <string.h>

struct set_args {
    struct json_object *targets;
};

static const char *check_targets(struct json_object *v)
{
    return rt_notice_targets_check(v, NULL, 0) < 0 ? "targets" : NULL;
}

static void m_set_notify_defaults(struct rt_call *c)
{
    const struct set_args *a = rt_call_args(c);
    struct rt_daemon *d = rt_call_daemon(c);
    int r = rt_notice_defaults_set(d->state.dir_fd, rt_call_peer(c)->uid, a->targets);
    if (r < 0) {
        rt_call_error_reason(c, RT_E_PREFIX "InternalError", strerror(-r));
        return;
    }
    rt_call_reply(c, json_object_new_object());
}

static void m_get_notify_defaults(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    struct json_object *t = rt_notice_defaults_get(d->state.dir_fd, rt_call_peer(c)->uid);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "targets", t ? t : json_object_new_array());
    rt_call_reply(c, p);
}

static const struct rt_method methods[] = {
    {.name = "SetNotifyDefaults", .fn = m_set_notify_defaults, .args_size = sizeof(struct set_args),
     .params = {RT_ARG(struct set_args, targets, RT_P_STRINGS, .required = true, .check = check_targets)}},
    {.name = "GetNotifyDefaults", .fn = m_get_notify_defaults},
};

const struct rt_method_table rt_notify_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
