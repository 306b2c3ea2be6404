/* Finding and talking to the daemon. */
#include "ctl.h"

#include "args.h"

#include "rt/json.h"
#include "rt/paths.h"
#include "rt/util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALL_TIMEOUT_MS 30000
#define LIST_PAGE_MAX 10000 /* ListJobs' largest limit */

/* A private daemon's socket is reached through its directory, opened and
 * checked to be ours first (rt_user_socket_dir_open): another user renaming
 * a directory of theirs into the path meanwhile is never followed. Every
 * connection also checks who answers (root or us). */
int ctl_connect_path(struct rt_vl_client *c, const char *path, bool private)
{
    if (!private)
        return rt_vl_client_connect(c, path);
    int dir = rt_user_socket_dir_open(path, false);
    if (dir < 0) {
        *c = (struct rt_vl_client){.fd = -1, .peer_uid = (uid_t)-1};
        return dir;
    }
    int r = rt_vl_client_connect_at(c, dir, rt_path_base(path));
    close(dir);
    return r;
}

int ctl_connect_used(struct ctl *ctl, struct rt_vl_client *c)
{
    return ctl_connect_path(c, ctl->used_socket, ctl->used_private);
}

static bool try_connect(struct ctl *ctl, struct rt_vl_client *c, const char *path, bool private, int *err)
{
    *err = ctl_connect_path(c, path, private);
    if (*err == 0) {
        rt_strlcpy(ctl->used_socket, path, sizeof(ctl->used_socket));
        ctl->used_private = private;
        return true;
    }
    if (*err == -EPERM && c->peer_uid != (uid_t)-1)
        CTL_ERR("warn: %s is served by uid %u, neither root nor you: not talking to it", path,
                (unsigned)c->peer_uid);
    rt_vl_client_close(c);
    return false;
}

static int connect_to_daemon(struct ctl *ctl, struct rt_vl_client *c, bool autostart)
{
    int err = 0;
    /* A socket named by --socket or the environment is that daemon or none:
     * starting a private one there would hide a typo or a dead daemon. */
    if (ctl->socket) {
        if (try_connect(ctl, c, ctl->socket, false, &err))
            return 0;
        CTL_ERR("cannot reach the daemon at %s: %s", ctl->socket, strerror(-err));
        return RT_EXIT_UNREACHABLE;
    }
    if (try_connect(ctl, c, RT_SYSTEM_SOCKET, false, &err))
        return 0;
    /* No system daemon: the user's own, started when it is not running, so
     * that every verb reaches the user's history. Its directory in /tmp may
     * turn out to be another user's (-EPERM) only when we open it: then the
     * fallback under our state directory. */
    char user[PATH_MAX];
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((attempt ? rt_user_socket_fallback : rt_user_socket_path)(user, sizeof(user)) < 0 ||
            (attempt && strcmp(user, ctl->used_socket) == 0)) {
            ctl->blocked = true;
            CTL_ERR("no daemon is running and there is no place for a private one");
            return RT_EXIT_UNREACHABLE;
        }
        rt_strlcpy(ctl->used_socket, user, sizeof(ctl->used_socket)); /* tried */
        if (try_connect(ctl, c, user, true, &err))
            return 0;
        if (err == -EPERM)
            continue;
        if (!autostart) {
            CTL_ERR("cannot reach the daemon at %s or %s: %s", RT_SYSTEM_SOCKET, user, strerror(-err));
            return RT_EXIT_UNREACHABLE;
        }
        ctl->blocked = false;
        int rc = ctl_autostart(ctl, c, user);
        if (!ctl->blocked)
            return rc;
    }
    return RT_EXIT_UNREACHABLE;
}

int ctl_connect(struct ctl *ctl, struct rt_vl_client *c)
{
    return connect_to_daemon(ctl, c, true);
}

int ctl_connect_running(struct ctl *ctl, struct rt_vl_client *c)
{
    return connect_to_daemon(ctl, c, false);
}

int ctl_reconnect(struct ctl *ctl, struct rt_vl_client *c)
{
    char path[sizeof(ctl->used_socket)];
    rt_strlcpy(path, ctl->used_socket, sizeof(path));
    int err;
    if (try_connect(ctl, c, path, ctl->used_private, &err))
        return 0;
    if (!ctl->used_private)
        return RT_EXIT_UNREACHABLE; /* that daemon comes back, or not */
    ctl->quiet = true; /* the caller retries and says so once */
    int rc = ctl_autostart(ctl, c, path);
    ctl->quiet = false;
    return rc;
}

static struct {
    bool on;
    char text[4096]; /* lines held, each ending in '\n' */
    size_t len, last; /* bytes held; where the last line starts */
} held;

void ctl_err(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (!held.on) {
        fprintf(stderr, "resource-trackerctl: %s\n", line);
        return;
    }
    size_t n = strlen(line);
    if (held.len + n + 1 >= sizeof(held.text))
        held.len = 0; /* the last ones matter */
    held.last = held.len;
    memcpy(held.text + held.len, line, n);
    held.text[held.len + n] = '\n';
    held.len += n + 1;
    held.text[held.len] = '\0';
}

void ctl_err_hold(bool on)
{
    held.on = on;
    if (on)
        return;
    for (char *line = held.text, *end; held.len && (end = strchr(line, '\n')); line = end + 1) {
        *end = '\0';
        fprintf(stderr, "resource-trackerctl: %s\n", line);
    }
    held.len = held.last = 0;
}

bool ctl_err_holding(void)
{
    return held.on;
}

const char *ctl_err_take_last(void)
{
    if (!held.len)
        return "";
    held.text[held.len - 1] = '\0';
    held.len = 0;
    return held.text + held.last;
}

int ctl_report_error(struct json_object *reply)
{
    const char *err = rt_vl_reply_error(reply);
    struct json_object *p = rt_vl_reply_params(reply);
    const char *reason = rt_json_get_string(p, "reason");
    const char *tail = err ? strrchr(err, '.') : NULL;
    tail = tail ? tail + 1 : "";
    int64_t v;
    if (strcmp(tail, "PermissionDenied") == 0) {
        CTL_ERR("permission denied%s%s", reason ? ": " : "", reason ? reason : "");
        return RT_EXIT_DENIED;
    }
    if (strcmp(tail, "NoSuchJob") == 0) {
        const char *name = rt_json_get_string(p, "name");
        if (name)
            CTL_ERR("no such job: %s", name);
        else if (rt_json_get_i64(p, "id", &v))
            CTL_ERR("no such job: %lld", (long long)v);
        else
            CTL_ERR("no such job");
        return RT_EXIT_NOT_FOUND;
    }
    if (strcmp(tail, "NoSuchProcess") == 0) {
        rt_json_get_i64(p, "pid", &v);
        CTL_ERR("no such process: %lld", (long long)v);
        return RT_EXIT_NOT_FOUND;
    }
    if (strcmp(tail, "NoSuchCgroup") == 0) {
        const char *what = rt_json_get_string(p, "unit") ? "unit" : rt_json_get_string(p, "container") ? "container" : "cgroup";
        CTL_ERR("no such %s: %s (%s)", what, rt_json_get_string(p, what) ? rt_json_get_string(p, what) : "?",
                reason ? reason : "?");
        return RT_EXIT_NOT_FOUND;
    }
    if (strcmp(tail, "AmbiguousJobName") == 0) {
        char ids[256] = "";
        struct json_object *a = rt_json_get_array(p, "ids");
        size_t len = 0;
        for (size_t i = 0; a && i < json_object_array_length(a) && len < sizeof(ids); i++)
            len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%s", i ? ", " : "",
                                    json_object_get_string(json_object_array_get_idx(a, i)));
        CTL_ERR("%s names more than one running job (ids %s): give the id", rt_json_get_string(p, "name"), ids);
        return RT_EXIT_USAGE;
    }
    if (strcmp(tail, "AlreadyTracked") == 0) {
        if (rt_json_get_i64(p, "id", &v))
            CTL_ERR("already tracked, by job %lld: a process tree or cgroup is one job's at a time (stop job %lld "
                    "to track it anew)", (long long)v, (long long)v);
        else
            CTL_ERR("already tracked, by a job of another user: a process tree or cgroup is one job's at a time");
        return RT_EXIT_FAILURE;
    }
    if (strcmp(tail, "JobNotRunning") == 0) {
        CTL_ERR("the job is not running");
        return RT_EXIT_FAILURE;
    }
    if (strcmp(tail, "LimitExceeded") == 0) {
        rt_json_get_i64(p, "max", &v);
        const char *limit = rt_json_get_string(p, "limit");
        if (limit && strcmp(limit, "sample_rate_per_user") == 0)
            CTL_ERR("limit reached: your running jobs sampled faster than the daemon's interval may take at "
                    "most %lld samples per second together (a job at interval S takes 1/S); use a longer interval",
                    (long long)v);
        else
            CTL_ERR("limit reached: %s (at most %lld)", limit ? limit : "?", (long long)v);
        return RT_EXIT_FAILURE;
    }
    if (strcmp(tail, "InvalidParameter") == 0) {
        ctl_args_report_param(rt_json_get_string(p, "parameter"));
        return RT_EXIT_USAGE;
    }
    CTL_ERR("%s%s%s", err ? err : "malformed reply", reason ? ": " : "", reason ? reason : "");
    return RT_EXIT_FAILURE;
}

int ctl_call(struct rt_vl_client *c, const char *method, struct json_object *params,
             struct json_object **reply, struct json_object **out_params)
{
    return ctl_call_fd(c, method, params, -1, reply, out_params);
}

int ctl_call_fd(struct rt_vl_client *c, const char *method, struct json_object *params, int fd,
                struct json_object **reply, struct json_object **out_params)
{
    *reply = NULL;
    if (out_params)
        *out_params = NULL;
    /* Command lines, file names and TRACKER_* values need not be UTF-8;
     * the protocol is: their stray bytes go as \xHH. */
    rt_json_utf8_escape(params);
    int r = rt_vl_client_send_fds(c, method, params, 0, &fd, fd >= 0 ? 1 : 0);
    if (r >= 0)
        r = rt_vl_client_recv(c, reply, CALL_TIMEOUT_MS);
    else if ((r == -EPIPE || r == -ECONNRESET) && rt_vl_client_recv(c, reply, 1000) == 0)
        r = 0; /* a refused connection: the daemon said why, unasked, and closed */
    if (r < 0) {
        CTL_ERR("lost the connection to the daemon: %s", strerror(-r));
        return RT_EXIT_UNREACHABLE;
    }
    if (rt_vl_reply_error(*reply)) {
        int code = ctl_report_error(*reply);
        json_object_put(*reply);
        *reply = NULL;
        return code;
    }
    if (out_params)
        *out_params = rt_vl_reply_params(*reply);
    return 0;
}

int ctl_simple_call(struct ctl *ctl, const char *method, struct json_object *params, struct rt_vl_client *c,
                    struct json_object **reply, struct json_object **p)
{
    *reply = NULL;
    int rc = ctl_connect(ctl, c);
    if (rc) {
        json_object_put(params);
        return rc;
    }
    return ctl_call(c, method, params, reply, p);
}

int ctl_job_ref(const struct ctl *ctl, struct json_object *params, const char *arg)
{
    uint64_t id;
    if (rt_parse_u64(arg, &id)) {
        json_object_object_add(params, "id", rt_json_u64(id));
        return 0;
    }
    json_object_object_add(params, "name", json_object_new_string(arg));
    if (!ctl->user)
        return 0;
    int64_t uid;
    if (!ctl_parse_user(ctl->user, &uid)) {
        CTL_ERR("no such user: %s", ctl->user);
        return RT_EXIT_USAGE;
    }
    json_object_object_add(params, "owner_uid", json_object_new_int64(uid));
    return 0;
}

int ctl_list_jobs(struct rt_vl_client *c, struct json_object *filter, struct json_object **jobs)
{
    *jobs = json_object_new_array();
    struct json_object *page = filter;
    int64_t want = 0; /* 0: all */
    rt_json_get_i64(filter, "limit", &want);
    for (;;) {
        size_t have = json_object_array_length(*jobs);
        if (want > 0) {
            int64_t left = want - (int64_t)have;
            json_object_object_add(page, "limit", json_object_new_int64(left < LIST_PAGE_MAX ? left : LIST_PAGE_MAX));
        }
        struct json_object *reply, *rp;
        int rc = ctl_call(c, RT_VL_INTERFACE ".ListJobs", json_object_get(page), &reply, &rp);
        if (rc) {
            json_object_put(page);
            json_object_put(*jobs);
            *jobs = NULL;
            return rc;
        }
        struct json_object *got = rt_json_get_array(rp, "jobs");
        for (size_t i = 0; got && i < json_object_array_length(got); i++)
            json_object_array_add(*jobs, json_object_get(json_object_array_get_idx(got, i)));
        uint64_t next;
        bool more = rt_json_get_u64(rp, "next_before_id", &next) &&
                    (want <= 0 || (int64_t)json_object_array_length(*jobs) < want);
        json_object_put(reply);
        if (!more) {
            json_object_put(page);
            return 0;
        }
        json_object_object_add(page, "before_id", rt_json_u64(next));
    }
}
