/* The drill-down of top: the processes of one job (GetJobProcesses, once
 * per refresh, on the connection the GPU panel uses), with the CPU each
 * used since the last look. */
#include "live/top.h"

#include "rt/json.h"
#include "rt/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M(name) RT_VL_INTERFACE "." name
#define CALL_TIMEOUT_MS 2000

/* The CPU seconds pid had at the last look, or -1. */
static double seen_before(const struct top *t, int32_t pid)
{
    for (size_t i = 0; i < t->nprocs; i++)
        if (t->procs[i].pid == pid)
            return t->procs[i].cpu_secs;
    return -1;
}

void top_refresh_procs(struct top *t)
{
    if (!t->drill || !t->calls)
        return;
    struct json_object *reply = NULL, *p = json_object_new_object();
    json_object_object_add(p, "id", rt_json_u64(t->drill));
    int e = rt_vl_client_call(t->calls, M("GetJobProcesses"), p, &reply, CALL_TIMEOUT_MS); /* takes p */
    const char *err = e == 0 ? rt_vl_reply_error(reply) : NULL;
    if (e != 0 || err) {
        /* An ended job has no processes; another failure keeps the last look. */
        if (err && strcmp(err, M("JobNotRunning")) == 0) {
            t->drill_ended = true;
            t->nprocs = 0;
        }
        json_object_put(reply);
        return;
    }
    struct json_object *list = rt_json_get_array(rt_vl_reply_params(reply), "processes");
    size_t n = list ? json_object_array_length(list) : 0;
    double now = (double)rt_mono_ns() / 1e9, span = now - t->procs_at;
    struct top_proc *v = rt_xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = json_object_array_get_idx(list, i);
        int64_t pid = 0;
        const char *state = rt_json_get_string(o, "state"), *cmd = rt_json_get_string(o, "command");
        rt_json_get_i64(o, "pid", &pid);
        v[i].pid = (int32_t)pid;
        v[i].uid = -1;
        rt_json_get_i64(o, "uid", &v[i].uid);
        v[i].state = state && state[0] ? state[0] : '?';
        rt_json_get_double(o, "cpu_secs", &v[i].cpu_secs);
        rt_json_get_double(o, "rss_bytes", &v[i].rss);
        snprintf(v[i].command, sizeof(v[i].command), "%s", cmd ? cmd : "");
        double before = seen_before(t, v[i].pid);
        v[i].cores = before >= 0 && span > 0 ? (v[i].cpu_secs - before) / span : -1;
    }
    free(t->procs);
    t->procs = v;
    t->nprocs = n;
    t->procs_at = now;
    t->drill_ended = false;
    json_object_put(reply);
}

/* PID, USER, S, CORES, RSS, then the command in what is left. */
enum { PID_W = 7, USER_W = 8, STATE_W = 1, CORES_W = 6, RSS_W = 9 };
#define FIXED (PID_W + USER_W + STATE_W + CORES_W + RSS_W + 5) /* and their separators */

static void row(const char *const cell[6], int width, char *buf, size_t size)
{
    static const int w[5] = {PID_W, USER_W, STATE_W, CORES_W, RSS_W};
    static const bool left[5] = {false, true, true, false, false};
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < 5; i++)
        at = top_field(buf, size, at, cell[i], w[i], left[i], false);
    top_field(buf, size, at, cell[5], width - FIXED, true, true);
}

void top_format_proc_header(int width, char *buf, size_t size)
{
    row((const char *const[6]){"PID", "USER", "S", "CORES", "RSS", "COMMAND"}, width, buf, size);
}

void top_format_proc(const struct top_proc *p, int width, char *buf, size_t size)
{
    char pid[16], user[64], state[2] = {p->state, 0}, cores[16], rss[32];
    snprintf(pid, sizeof(pid), "%d", (int)p->pid);
    if (p->uid >= 0)
        ctl_fmt_user(p->uid, user, sizeof(user));
    else
        snprintf(user, sizeof(user), "?");
    if (p->cores >= 0)
        snprintf(cores, sizeof(cores), "%.2f", p->cores);
    else
        snprintf(cores, sizeof(cores), "-");
    ctl_fmt_bytes(rss, sizeof(rss), p->rss);
    row((const char *const[6]){pid, user, state, cores, rss, p->command[0] ? p->command : "(hidden)"}, width, buf,
        size);
}
