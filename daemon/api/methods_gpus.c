/* GPU methods: who holds each GPU (GetGpus), the usage ledger (GetUsage). */
#include "api/call.h"
#include "api/job_access.h"
#include "api/methods.h"
#include "daemon.h"
#include "gpuuse/gpuuse.h"
#include "proc/hidepid.h"
#include "rt/json.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

/* Who asks, and whether /proc would show them every process. */
static struct rt_gpuuse_viewer viewer_of(const struct rt_call *c)
{
    const struct rt_peer *peer = rt_call_peer(c);
    struct rt_gpuuse_viewer v = {.uid = peer->uid, .gid = peer->gid, .admin = peer->admin};
    struct rt_hidepid h;
    if (peer->admin)
        v.sees_all_pids = true; /* root, and the admin group who see every job and its pids anyway */
    else if (rt_hidepid_read(rt_call_daemon(c)->roots.proc_fd, &h) == 0)
        v.sees_all_pids = h.level == 0 || (h.has_gid && rt_peer_in_group(c->conn->fd, peer->gid, h.gid));
    return v;
}

static void m_get_gpus(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    struct rt_gpuuse_viewer v = viewer_of(c);
    struct rt_gpuuse_snap *s = d->sampler ? rt_gpuuse_snapshot(rt_sampler_gpuuse(d->sampler)) : NULL;
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "gpus", rt_gpuuse_json(s, &v));
    json_object_object_add(p, "taken_at", s ? rt_json_double(s->taken_at, 3) : NULL);
    json_object_object_add(p, "idle_after_secs", json_object_new_int64(d->cfg.gpu_idle_after_secs));
    json_object_object_add(p, "idle_util_max_pct", json_object_new_int64(d->cfg.gpu_idle_util_max));
    json_object_object_add(p, "idle_vram_min_bytes", rt_json_u64(d->cfg.gpu_idle_vram_min_bytes));
    json_object_object_add(p, "all_processes_shown", json_object_new_boolean(v.sees_all_pids));
    rt_gpuuse_snap_unref(s);
    rt_call_reply(c, p);
}

/* ---- GetUsage ---- */

#define USAGE_ROWS_MAX 10000

enum by { BY_USER, BY_NAME, BY_JOB };

struct usage_row {
    uid_t uid;
    const char *name;            /* by name: the jobs' (NULL: unnamed or untracked) */
    uint64_t job_id;             /* by job: 0 for processes in no job */
    bool untracked;              /* processes in no job (by name and job) */
    uint64_t jobs;
    struct rt_gpuuse_usage u;
};

struct usage {
    enum by by;
    const struct rt_peer *peer;
    bool one_uid;
    uid_t uid;
    struct usage_row *v;
    size_t n, cap;
    bool truncated;
};

static bool same(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* The row of (uid, name or job): found, or added (NULL past the cap). */
static struct usage_row *row(struct usage *q, uid_t uid, const char *name, uint64_t job, bool untracked)
{
    untracked = untracked && q->by != BY_USER; /* by user, a user's row holds both */
    if (q->by != BY_JOB || untracked)
        for (size_t i = 0; i < q->n; i++) {
            struct usage_row *r = &q->v[i];
            if (r->uid == uid && r->untracked == untracked && (q->by != BY_NAME || same(r->name, name)))
                return r;
        }
    if (q->n == USAGE_ROWS_MAX) {
        q->truncated = true;
        return NULL;
    }
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 32;
        q->v = rt_xrealloc(q->v, q->cap * sizeof(*q->v));
    }
    q->v[q->n] = (struct usage_row){.uid = uid, .name = q->by != BY_USER ? name : NULL,
                                    .job_id = q->by == BY_JOB ? job : 0, .untracked = untracked};
    return &q->v[q->n++];
}

static bool wanted(const struct usage *q, uid_t uid)
{
    return (q->peer->admin || uid == q->peer->uid) && (!q->one_uid || uid == q->uid);
}

static void add_untracked(uid_t uid, const struct rt_gpuuse_usage *u, void *data)
{
    struct usage *q = data;
    struct usage_row *r = wanted(q, uid) ? row(q, uid, NULL, 0, true) : NULL;
    if (r)
        rt_gpuuse_usage_add(&r->u, u);
}

/* A job's own totals, as its summary sums them. */
static void add_job(struct usage *q, const struct rt_job *j)
{
    const struct rt_job_summary *s = &j->summary;
    struct usage_row *r = row(q, j->owner_uid, j->name, j->id, false);
    if (!r)
        return;
    struct rt_gpuuse_usage u = {.gpu_held_secs = s->gpu_held_secs, .gpu_busy_secs = s->gpu_usage_secs,
                                .gpu_idle_secs = s->gpu_idle_secs, .cpu_secs = s->cpu_secs,
                                .memory_byte_secs = s->memory_byte_secs, .energy_joules = s->gpu_energy_joules};
    rt_gpuuse_usage_add(&r->u, &u);
    r->jobs++;
}

static int cmp_row(const void *pa, const void *pb)
{
    const struct usage_row *a = pa, *b = pb;
    if (a->uid != b->uid)
        return a->uid < b->uid ? -1 : 1;
    if (a->untracked != b->untracked)
        return a->untracked ? -1 : 1;
    if (a->job_id != b->job_id)
        return a->job_id < b->job_id ? -1 : 1;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

static struct json_object *row_json(const struct usage_row *r)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "uid", json_object_new_int64(r->uid));
    json_object_object_add(o, "untracked", json_object_new_boolean(r->untracked));
    json_object_object_add(o, "name", rt_json_string_or_null(r->name));
    json_object_object_add(o, "job_id", r->job_id ? rt_json_u64(r->job_id) : NULL);
    json_object_object_add(o, "jobs", rt_json_u64(r->jobs));
    json_object_object_add(o, "gpu_held_secs", rt_json_double(r->u.gpu_held_secs, 3));
    json_object_object_add(o, "gpu_busy_secs", rt_json_double(r->u.gpu_busy_secs, 3));
    json_object_object_add(o, "gpu_idle_secs", rt_json_double(r->u.gpu_idle_secs, 3));
    json_object_object_add(o, "cpu_secs", rt_json_double(r->u.cpu_secs, 3));
    json_object_object_add(o, "memory_byte_secs", rt_json_double(r->u.memory_byte_secs, 0));
    json_object_object_add(o, "energy_joules", rt_json_double(r->u.energy_joules, 3));
    return o;
}

struct usage_args {
    const char *by;
    double since;
    int64_t owner_uid;
};

static void m_get_usage(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    const struct usage_args *a = rt_call_args(c);
    struct usage q = {.peer = rt_call_peer(c), .one_uid = rt_call_has(c, "owner_uid"), .uid = (uid_t)a->owner_uid};
    q.by = !a->by || !strcmp(a->by, "user") ? BY_USER : !strcmp(a->by, "name") ? BY_NAME : BY_JOB;
    if (q.one_uid && q.uid != q.peer->uid && !q.peer->admin) {
        rt_call_error_reason(c, RT_E_PREFIX "PermissionDenied", "only administrators may see another user's usage");
        return;
    }
    rt_jobs_lock(&d->jobs);
    for (size_t i = 0; i < d->jobs.n; i++) {
        const struct rt_job *j = d->jobs.v[i];
        if (wanted(&q, j->owner_uid) && j->started_at >= a->since)
            add_job(&q, j);
    }
    /* The names point into the registry: the rows are made under its lock. */
    if (d->sampler)
        rt_gpuuse_untracked(rt_sampler_gpuuse(d->sampler), a->since, add_untracked, &q);
    if (q.n > 1)
        qsort(q.v, q.n, sizeof(*q.v), cmp_row);
    struct json_object *rows = json_object_new_array();
    for (size_t i = 0; i < q.n; i++)
        json_object_array_add(rows, row_json(&q.v[i]));
    rt_jobs_unlock(&d->jobs);
    free(q.v);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "rows", rows);
    json_object_object_add(p, "truncated", json_object_new_boolean(q.truncated));
    rt_call_reply(c, p);
}

static const char *const bys[] = {"user", "name", "job", NULL};

#define USAGE(m, ...) RT_ARG(struct usage_args, m, __VA_ARGS__)

static const struct rt_method methods[] = {
    {.name = "GetGpus", .fn = m_get_gpus},
    {.name = "GetUsage", .fn = m_get_usage, .args_size = sizeof(struct usage_args),
     .params = {USAGE(by, RT_P_STRING, .choices = bys), USAGE(since, RT_P_FLOAT, RT_RANGE(0, 1e12)),
                USAGE(owner_uid, RT_P_INT, RT_RANGE(0, UINT32_MAX - 1.0))}},
};

const struct rt_method_table rt_gpu_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
