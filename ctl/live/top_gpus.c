/* The GPU panel of top: who holds each GPU (its users and their memory,
 * from GetGpus once per refresh, on a connection of its own) and whether it
 * is idle but held or busy but stalled. */
#include "live/top.h"

#include "rt/json.h"

#include <stdio.h>
#include <string.h>

#define M(name) RT_VL_INTERFACE "." name
#define CALL_TIMEOUT_MS 2000

void top_refresh_gpus(struct top *t)
{
    if (!t->calls || !t->have_host || !t->host.has_gpu_backend)
        return;
    struct json_object *reply = NULL;
    int e = rt_vl_client_call(t->calls, M("GetGpus"), NULL, &reply, CALL_TIMEOUT_MS);
    if (e == 0 && !rt_vl_reply_error(reply)) {
        json_object_put(t->gpus);
        t->gpus = json_object_get(rt_json_get_array(rt_vl_reply_params(reply), "gpus"));
    }
    json_object_put(reply); /* a failed call keeps the last list: the panel is not worth an error */
}

/* The GetGpus entry of the host sample's GPU with this UUID. */
static struct json_object *find(const struct top *t, const char *uuid)
{
    for (size_t i = 0; t->gpus && uuid && i < json_object_array_length(t->gpus); i++) {
        struct json_object *g = json_object_array_get_idx(t->gpus, i);
        const char *u = rt_json_get_string(g, "uuid");
        if (u && strcmp(u, uuid) == 0)
            return g;
    }
    return NULL;
}

void top_gpu_holders(const struct top *t, const char *uuid, char *buf, size_t size)
{
    struct json_object *g = find(t, uuid);
    buf[0] = '\0';
    if (!g)
        return;
    struct holder {
        int64_t uid; /* -1: hidden */
        double vram;
    } users[16];
    size_t n = 0, at = 0;
    struct json_object *procs = rt_json_get_array(g, "processes");
    for (size_t i = 0; procs && i < json_object_array_length(procs); i++) {
        struct json_object *p = json_object_array_get_idx(procs, i);
        int64_t uid = -1;
        double vram = 0;
        rt_json_get_i64(p, "uid", &uid);
        rt_json_get_double(p, "vram_bytes", &vram);
        size_t k = 0;
        while (k < n && users[k].uid != uid)
            k++;
        if (k == n && n == sizeof(users) / sizeof(users[0]))
            continue;
        if (k == n)
            users[n++] = (struct holder){uid, 0};
        users[k].vram += vram;
    }
    bool idle = false, stalled = false;
    rt_json_get_bool(g, "idle", &idle);
    rt_json_get_bool(g, "busy_but_stalled", &stalled);
    if (idle)
        at += (size_t)snprintf(buf + at, size - at, "IDLE ");
    if (stalled && at < size)
        at += (size_t)snprintf(buf + at, size - at, "STALLED ");
    for (size_t k = 0; k < n && at < size; k++) {
        char user[64], mem[32];
        if (users[k].uid >= 0)
            ctl_fmt_user(users[k].uid, user, sizeof(user));
        else
            snprintf(user, sizeof(user), "(hidden)");
        ctl_fmt_bytes(mem, sizeof(mem), users[k].vram);
        at += (size_t)snprintf(buf + at, size - at, "%s%s %s", k ? ", " : "", user, mem);
    }
}
