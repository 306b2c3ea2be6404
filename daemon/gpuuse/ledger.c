/* The usage of GPU processes in no job, per user and hour: GPU-seconds held,
 * busy and idle but held, CPU seconds, memory byte-seconds and energy. Kept
 * in <state>/gpu-usage.json, replaced whole like a job record: every minute
 * without waiting for the disk, and synced when the daemon stops (a crash
 * loses at most the last minute, as a running job's record does). Hours
 * older than the retention age are dropped, and at most LEDGER_MAX are kept
 * (the oldest go first). A file that cannot be read is kept aside as
 * gpu-usage.json.broken and the ledger starts empty. */
#include "gpuuse/internal.h"

#include "rt/json.h"
#include "rt/varlink.h"
#include "rt/util.h"
#include "system/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEDGER_FILE "gpu-usage.json"
#define LEDGER_MAX 200000
#define LEDGER_FILE_MAX (64 * 1024 * 1024)

static const char *const fields[] = {"gpu_held_secs", "gpu_busy_secs", "gpu_idle_secs", "cpu_secs",
                                     "memory_byte_secs", "energy_joules"};

static double *field(struct rt_gpuuse_usage *u, size_t i)
{
    double *f[] = {&u->gpu_held_secs, &u->gpu_busy_secs, &u->gpu_idle_secs, &u->cpu_secs, &u->memory_byte_secs,
                   &u->energy_joules};
    return f[i];
}

void rt_gpuuse_usage_add(struct rt_gpuuse_usage *to, const struct rt_gpuuse_usage *u)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(fields); i++)
        *field(to, i) += *field((struct rt_gpuuse_usage *)u, i);
}

/* Under u->mu. */
void gpuuse_ledger_add(struct rt_gpuuse *u, uid_t uid, double now, const struct rt_gpuuse_usage *add)
{
    int64_t hour = (int64_t)(now / 3600);
    for (size_t i = u->n_ledger; i-- > 0;) { /* the current hour's are last */
        struct gpuuse_bucket *b = &u->ledger[i];
        if (b->hour != hour)
            break;
        if (b->uid == uid) {
            rt_gpuuse_usage_add(&b->u, add);
            return;
        }
    }
    if (u->n_ledger == LEDGER_MAX) { /* the oldest hour goes */
        memmove(u->ledger, u->ledger + 1, (u->n_ledger - 1) * sizeof(*u->ledger));
        u->n_ledger--;
    }
    if (u->n_ledger == u->cap_ledger) {
        u->cap_ledger = u->cap_ledger ? 2 * u->cap_ledger : 64;
        u->ledger = rt_xrealloc(u->ledger, u->cap_ledger * sizeof(*u->ledger));
    }
    u->ledger[u->n_ledger++] = (struct gpuuse_bucket){.uid = uid, .hour = hour, .u = *add};
}

void rt_gpuuse_untracked(struct rt_gpuuse *u, double since, void (*fn)(uid_t, const struct rt_gpuuse_usage *, void *),
                         void *data)
{
    pthread_mutex_lock(&u->mu);
    for (size_t i = 0; i < u->n_ledger; i++)
        if ((double)(u->ledger[i].hour + 1) * 3600 > since) /* the hour overlaps [since, now] */
            fn(u->ledger[i].uid, &u->ledger[i].u, data);
    pthread_mutex_unlock(&u->mu);
}

void rt_gpuuse_prune(struct rt_gpuuse *u, double before)
{
    pthread_mutex_lock(&u->mu);
    size_t w = 0;
    for (size_t i = 0; i < u->n_ledger; i++)
        if ((double)(u->ledger[i].hour + 1) * 3600 > before)
            u->ledger[w++] = u->ledger[i];
    u->n_ledger = w;
    pthread_mutex_unlock(&u->mu);
}

static bool bucket_from(struct json_object *o, struct gpuuse_bucket *b)
{
    int64_t uid, hour;
    if (!json_object_is_type(o, json_type_object) || !rt_json_get_i64(o, "uid", &uid) || uid < 0 ||
        uid >= (int64_t)UINT32_MAX || !rt_json_get_i64(o, "hour", &hour) || hour < 0)
        return false;
    *b = (struct gpuuse_bucket){.uid = (uid_t)uid, .hour = hour};
    for (size_t k = 0; k < RT_ARRAY_SIZE(fields); k++) {
        double v = 0;
        if (rt_json_get_double(o, fields[k], &v) && !(v >= 0 && v < 1e18))
            return false;
        *field(&b->u, k) = v;
    }
    return true;
}

int rt_gpuuse_load(struct rt_gpuuse *u, int dir_fd)
{
    char *buf = rt_xmalloc(LEDGER_FILE_MAX);
    ssize_t n = rt_read_file_at(dir_fd, LEDGER_FILE, buf, LEDGER_FILE_MAX);
    if (n == -ENOENT) {
        free(buf);
        return 0;
    }
    char err[128] = "";
    struct json_object *root = n >= 0 && n < LEDGER_FILE_MAX - 1 ? rt_vl_parse(buf, (size_t)n, err, sizeof(err)) : NULL;
    free(buf);
    struct json_object *hours = root ? rt_json_get_array(root, "untracked") : NULL;
    bool ok = hours != NULL;
    size_t nh = hours ? json_object_array_length(hours) : 0;
    pthread_mutex_lock(&u->mu);
    for (size_t i = 0; ok && i < nh; i++) {
        struct gpuuse_bucket b;
        if (!(ok = bucket_from(json_object_array_get_idx(hours, i), &b)))
            break;
        gpuuse_ledger_add(u, b.uid, (double)b.hour * 3600, &b.u);
    }
    if (!ok)
        u->n_ledger = 0;
    pthread_mutex_unlock(&u->mu);
    json_object_put(root);
    if (ok)
        return 0;
    /* Nothing is thrown away: the file is kept for a person to look at. */
    if (renameat(dir_fd, LEDGER_FILE, dir_fd, LEDGER_FILE ".broken") < 0)
        rt_warn("%s cannot be read and cannot be kept aside (%s)", LEDGER_FILE, strerror(errno));
    else
        rt_warn("%s cannot be read (%s); kept as %s.broken, GPU usage outside jobs starts anew", LEDGER_FILE,
                n < 0 ? strerror((int)-n) : err[0] ? err : "not a usage ledger", LEDGER_FILE);
    return n < 0 ? (int)n : -EINVAL;
}

int rt_gpuuse_save(struct rt_gpuuse *u, int dir_fd, mode_t mode, bool sync)
{
    struct json_object *root = json_object_new_object(), *hours = json_object_new_array();
    json_object_object_add(root, "version", json_object_new_int(1));
    pthread_mutex_lock(&u->mu);
    for (size_t i = 0; i < u->n_ledger; i++) {
        struct gpuuse_bucket *b = &u->ledger[i];
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "uid", json_object_new_int64(b->uid));
        json_object_object_add(o, "hour", json_object_new_int64(b->hour));
        for (size_t k = 0; k < RT_ARRAY_SIZE(fields); k++)
            json_object_object_add(o, fields[k], json_object_new_double(*field(&b->u, k)));
        json_object_array_add(hours, o);
    }
    pthread_mutex_unlock(&u->mu);
    json_object_object_add(root, "untracked", hours);
    size_t len;
    const char *txt = json_object_to_json_string_length(root, JSON_C_TO_STRING_PLAIN, &len);
    int r = rt_write_file_at(dir_fd, LEDGER_FILE, txt, len, mode, sync ? RT_SYNC_FULL : RT_SYNC_NONE);
    json_object_put(root);
    return r;
}
