#include "jobs/jobs.h"

#include "collect/gpu/gpu.h"
#include "notice/target.h"
#include "rt/request.h"
#include "store/job_sample.h"
#include "store/samples.h"

#include "rt/json.h"
#include "rt/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const state_names[] = {"running", "finished", "failed", "stopped", "lost", "ended"};

const char *rt_job_state_name(enum rt_job_state s)
{
    return (unsigned)s < RT_ARRAY_SIZE(state_names) ? state_names[s] : "unknown";
}

int rt_job_state_from_name(const char *name)
{
    for (size_t i = 0; name && i < RT_ARRAY_SIZE(state_names); i++)
        if (strcmp(name, state_names[i]) == 0)
            return (int)i;
    return -1;
}

double rt_job_duration(const struct rt_job *j, double now)
{
    double end = j->state == RT_JOB_RUNNING ? now : j->ended_at;
    return end > j->started_at ? end - j->started_at : 0;
}

void rt_jobs_init(struct rt_jobs *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
}

void rt_jobs_free(struct rt_jobs *r)
{
    for (size_t i = 0; i < r->n; i++)
        rt_job_free(r->v[i]);
    free(r->v);
    pthread_mutex_destroy(&r->lock);
    memset(r, 0, sizeof(*r));
}

void rt_jobs_lock(struct rt_jobs *r) { pthread_mutex_lock(&r->lock); }
void rt_jobs_unlock(struct rt_jobs *r) { pthread_mutex_unlock(&r->lock); }

void rt_jobs_add(struct rt_jobs *r, struct rt_job *j)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->v = rt_xrealloc(r->v, r->cap * sizeof(*r->v));
    }
    /* Keep ids ascending (jobs loaded from disk arrive in any order). */
    size_t i = r->n;
    while (i > 0 && r->v[i - 1]->id > j->id) {
        r->v[i] = r->v[i - 1];
        i--;
    }
    r->v[i] = j;
    r->n++;
}

void rt_jobs_remove(struct rt_jobs *r, struct rt_job *j)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i] == j) {
            memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
            r->n--;
            return;
        }
    }
}

struct rt_job *rt_jobs_find(struct rt_jobs *r, uint64_t id)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->v[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->v[lo]->id == id ? r->v[lo] : NULL;
}

struct rt_job *rt_jobs_find_name(struct rt_jobs *r, const char *name, uid_t owner, size_t *running)
{
    struct rt_job *newest = NULL, *live = NULL;
    *running = 0;
    for (size_t i = r->n; i-- > 0;) { /* newest first */
        struct rt_job *j = r->v[i];
        if (j->owner_uid != owner || !j->name || strcmp(j->name, name) != 0)
            continue;
        if (!newest)
            newest = j;
        if (j->state == RT_JOB_RUNNING && !(*running)++)
            live = j;
    }
    return live ? live : newest;
}

double rt_jobs_fast_rate_for(struct rt_jobs *r, uid_t uid, double base_secs)
{
    double rate = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct rt_job *j = r->v[i];
        if (j->state == RT_JOB_RUNNING && j->owner_uid == uid && j->interval_secs > 0 &&
            j->interval_secs < base_secs)
            rate += 1 / j->interval_secs;
    }
    return rate;
}

struct rt_job *rt_jobs_find_tracking(struct rt_jobs *r, int32_t pid, uint64_t starttime, const char *cgroup)
{
    for (size_t i = 0; i < r->n; i++) {
        struct rt_job *j = r->v[i];
        if (j->state == RT_JOB_RUNNING &&
            (cgroup ? j->cgroup && strcmp(j->cgroup, cgroup) == 0 : j->pid == pid && j->starttime == starttime))
            return j;
    }
    return NULL;
}

size_t rt_jobs_running_for(struct rt_jobs *r, uid_t uid)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->v[i]->state == RT_JOB_RUNNING && r->v[i]->owner_uid == uid;
    return n;
}

struct rt_job *rt_job_new(void)
{
    struct rt_job *j = rt_xcalloc(1, sizeof(*j));
    j->pidfd = -1;
    j->cg_watch = -1;
    j->owner_gid = RT_GID_UNKNOWN;
    return j;
}

void rt_job_free(struct rt_job *j)
{
    if (!j)
        return;
    if (j->pidfd >= 0)
        close(j->pidfd);
    if (j->tracking && !j->cgroup)
        rt_ptree_free(&j->tree);
    free(j->name);
    free(j->name_json);
    free(j->cgroup);
    free(j->tracking_why);
    if (j->cg_open)
        rt_cgroup_close(&j->cg);
    free(j->cg_pids);
    rt_figlog_unref(j->fig);
    json_object_put(j->metadata);
    json_object_put(j->request);
    json_object_put(j->notify);
    json_object_put(j->gpus_assigned);
    json_object_put(j->scheduler);
    json_object_put(j->container);
    rt_job_summary_free(&j->summary);
    rt_gpu_job_free(j->gpu_state);
    free(j);
}

static void add(struct json_object *o, const char *k, struct json_object *v)
{
    json_object_object_add(o, k, v);
}

/* Job.current: the latest sample of a running job. */
static struct json_object *current_json(const struct rt_job *j)
{
    const struct rt_job_current *c = &j->current;
    if (j->state != RT_JOB_RUNNING || !c->present)
        return NULL;
    struct json_object *o = json_object_new_object();
    add(o, "sampled_at", rt_json_double(c->sampled_at, 3));
    add(o, "processes", json_object_new_int64(c->processes));
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        double v;
        if (!r->now)
            continue;
        struct json_object *x = NULL;
        if (rt_fig_sample_value(&c->f, i, &v) && r->now_form == RT_NOW_RATE)
            x = rt_json_double(v / c->span_secs, r->now_decimals);
        else if (rt_fig_sample_value(&c->f, i, &v))
            x = r->type == RT_FT_F64 ? rt_json_double(v, r->now_decimals) : rt_json_u64(rt_fig_u64(v));
        add(o, r->now, x);
    }
    return o;
}

/* The one builder of a job's JSON: the varlink Job object, or the record. */
static struct json_object *job_json(const struct rt_job *j, double now, bool record)
{
    struct json_object *o = json_object_new_object();
    add(o, "id", rt_json_u64(j->id));
    add(o, "name", rt_json_string_or_null(j->name));
    add(o, "owner_uid", json_object_new_int64(j->owner_uid));
    add(o, "pid", j->pid || record ? json_object_new_int64(j->pid) : NULL);
    add(o, "state", json_object_new_string(rt_job_state_name(j->state)));
    /* The record keeps exact times: durations must not change across a restart. */
    add(o, "started_at", record ? json_object_new_double(j->started_at) : rt_json_double(j->started_at, 3));
    if (j->state != RT_JOB_RUNNING)
        add(o, "ended_at", record ? json_object_new_double(j->ended_at) : rt_json_double(j->ended_at, 3));
    else if (!record)
        add(o, "ended_at", NULL);
    add(o, "exit_code", j->has_exit ? json_object_new_int64(j->exit_code) : NULL);
    add(o, "signal", j->has_exit && j->signal ? json_object_new_int64(j->signal) : NULL);
    if (j->not_started || !record)
        add(o, "not_started", json_object_new_boolean(j->not_started));
    add(o, "interval_secs", rt_json_double(j->interval_secs, 3));
    add(o, "summary", rt_job_summary_json(&j->summary, rt_job_duration(j, now)));
    add(o, "request", j->request ? json_object_get(j->request) : NULL);
    add(o, "gpus_assigned", j->gpus_assigned ? json_object_get(j->gpus_assigned) : NULL);
    add(o, "scheduler", j->scheduler ? json_object_get(j->scheduler) : NULL);
    add(o, "container", j->container ? json_object_get(j->container) : NULL);
    if (!record) {
        struct json_object *t = json_object_new_object();
        add(t, "kind", json_object_new_string(j->cgroup ? "cgroup" : "process-tree"));
        add(t, "cgroup", rt_json_string_or_null(j->cgroup));
        add(t, "why", rt_json_string_or_null(j->tracking_why));
        add(t, "adopted", json_object_new_boolean(j->adopted));
        add(o, "tracking", t);
        add(o, "memory_limit_bytes", j->memory_limit_bytes ? rt_json_u64(j->memory_limit_bytes) : NULL);
        add(o, "notify_targets", json_object_new_int64(j->notify ? (int64_t)json_object_array_length(j->notify) : 0));
        add(o, "metadata", j->metadata ? json_object_get(j->metadata) : NULL);
        add(o, "current", current_json(j));
        add(o, "upload", NULL);
        return o;
    }
    /* The metadata is a file of its own, written once. */
    add(o, "metadata_bytes", rt_json_u64(j->metadata_bytes));
    add(o, "starttime", rt_json_u64(j->starttime));
    if (j->reaper_pid > 0) {
        add(o, "reaper_pid", json_object_new_int64(j->reaper_pid));
        add(o, "reaper_starttime", rt_json_u64(j->reaper_starttime));
    }
    /* Exact totals, not the rounded ones of the summary view. */
    add(o, "totals", rt_job_summary_to_record(&j->summary));
    add(o, "wants_upload", json_object_new_boolean(j->wants_upload));
    if (j->cgroup) {
        add(o, "cgroup", json_object_new_string(j->cgroup));
        add(o, "cgroup_made", json_object_new_boolean(j->cgroup_made));
    }
    if (j->tracking_why)
        add(o, "tracking_why", json_object_new_string(j->tracking_why));
    if (j->memory_limit_bytes)
        add(o, "memory_limit_bytes", rt_json_u64(j->memory_limit_bytes));
    if (j->notify)
        add(o, "notify", json_object_get(j->notify)); /* secrets: the record (root's) only */
    if (j->adopted)
        add(o, "adopted", json_object_new_boolean(1));
    if (j->owner_gid != RT_GID_UNKNOWN)
        add(o, "owner_gid", json_object_new_int64(j->owner_gid));
    add(o, "reads_all", json_object_new_boolean(j->reads_all));
    return o;
}

struct json_object *rt_job_to_json(const struct rt_job *j, double now)
{
    return job_json(j, now, false);
}

struct json_object *rt_job_to_record(const struct rt_job *j)
{
    return job_json(j, 0, true);
}

bool rt_job_gpus_check(struct json_object *a)
{
    size_t n = json_object_array_length(a);
    if (n > RT_JOB_GPUS_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(a, i);
        if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0 ||
            json_object_get_string_len(v) >= 96)
            return false;
    }
    return true;
}

bool rt_job_interval_valid(double secs)
{
    return secs >= RT_JOB_INTERVAL_MIN && secs <= RT_JOB_INTERVAL_MAX; /* false for NaN */
}

size_t rt_job_metadata_size(struct json_object *md)
{
    size_t len = 0;
    json_object_to_json_string_length(md, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    return len;
}

struct rt_job *rt_job_from_record(struct json_object *o, const char **repaired)
{
    *repaired = NULL;
    uint64_t id, starttime;
    int64_t uid, pid;
    const char *state = rt_json_get_string(o, "state");
    if (!rt_json_get_u64(o, "id", &id) || !id || !rt_json_get_i64(o, "owner_uid", &uid) ||
        !rt_json_get_i64(o, "pid", &pid) || !rt_json_get_u64(o, "starttime", &starttime) ||
        rt_job_state_from_name(state) < 0)
        return NULL;
    struct rt_job *j = rt_job_new();
    j->id = id;
    j->owner_uid = (uid_t)uid;
    /* Records from before: root reads all, anyone else by uid alone. */
    int64_t gid;
    j->owner_gid = rt_json_get_i64(o, "owner_gid", &gid) && gid >= 0 && gid < RT_GID_UNKNOWN ? (gid_t)gid
                                                                                            : RT_GID_UNKNOWN;
    j->reads_all = uid == 0;
    rt_json_get_bool(o, "reads_all", &j->reads_all);
    const char *cgroup = rt_json_get_string(o, "cgroup");
    if (pid < 0 || pid > INT32_MAX) {
        rt_job_free(j);
        return NULL;
    }
    j->pid = (int32_t)pid;
    j->starttime = starttime;
    if (cgroup && cgroup[0] == '/') {
        j->cgroup = rt_xstrdup(cgroup);
        rt_json_get_bool(o, "cgroup_made", &j->cgroup_made);
    }
    rt_json_get_u64(o, "memory_limit_bytes", &j->memory_limit_bytes);
    const char *why = rt_json_get_string(o, "tracking_why");
    j->tracking_why = why ? rt_xstrdup(why) : NULL;
    int64_t rp;
    if (rt_json_get_i64(o, "reaper_pid", &rp) && rp > 0 && rp <= INT32_MAX &&
        rt_json_get_u64(o, "reaper_starttime", &j->reaper_starttime))
        j->reaper_pid = (int32_t)rp;
    j->state = (enum rt_job_state)rt_job_state_from_name(state);
    const char *name = rt_json_get_string(o, "name");
    j->name = name ? rt_xstrdup(name) : NULL;
    j->name_json = rt_job_name_json(j->name);
    rt_json_get_double(o, "started_at", &j->started_at);
    rt_json_get_double(o, "ended_at", &j->ended_at);
    int64_t v;
    if (rt_json_get_i64(o, "exit_code", &v)) {
        j->has_exit = true;
        j->exit_code = (int)v;
        if (rt_json_get_i64(o, "signal", &v))
            j->signal = (int)v;
    }
    j->interval_secs = 1;
    if (rt_json_get_double(o, "interval_secs", &j->interval_secs) && !rt_job_interval_valid(j->interval_secs)) {
        j->interval_secs = 1;
        *repaired = "interval_secs";
    }
    struct json_object *md = rt_json_get_object(o, "metadata");
    if (md) {
        j->metadata = !rt_job_metadata_check(md) ? json_object_get(md) : json_object_new_object();
        j->metadata_bytes = rt_job_metadata_size(j->metadata);
    } else {
        uint64_t n = 0;
        rt_json_get_u64(o, "metadata_bytes", &n);
        j->metadata_bytes = (size_t)n;
    }
    rt_json_get_bool(o, "wants_upload", &j->wants_upload);
    /* A request or targets that do not check out are dropped, not trusted. */
    struct json_object *req = rt_json_get_object(o, "request");
    if (req && !rt_request_from_json(req, NULL))
        j->request = json_object_get(req);
    else if (req)
        *repaired = "request";
    rt_json_get_bool(o, "adopted", &j->adopted);
    rt_json_get_bool(o, "not_started", &j->not_started);
    /* What Slurm or a container's runtime said of it, as the daemon wrote it. */
    j->scheduler = json_object_get(rt_json_get_object(o, "scheduler"));
    j->container = json_object_get(rt_json_get_object(o, "container"));
    struct json_object *notify = rt_json_get_array(o, "notify");
    if (notify && rt_notice_targets_check(notify, NULL, 0) == 0)
        j->notify = json_object_get(notify);
    else if (notify)
        *repaired = "notify";
    struct json_object *given = rt_json_get_array(o, "gpus_assigned");
    if (given && rt_job_gpus_check(given))
        j->gpus_assigned = json_object_get(given);
    else if (given)
        *repaired = "gpus_assigned";
    struct json_object *t = rt_json_get_object(o, "totals");
    if (t)
        rt_job_summary_from_record(&j->summary, t, j->interval_secs);
    return j;
}

#define MD_MAX_STRING 4096
#define MD_MAX_ITEMS 1024

static const char *const md_strings[] = {
    "project_name", "stage_name", "task_name", "team", "env", "language",
    "orchestrator", "executor", "external_run_id", "container_image",
};

static bool valid_string(struct json_object *v)
{
    return json_object_is_type(v, json_type_string) && json_object_get_string_len(v) <= MD_MAX_STRING;
}

const char *rt_job_metadata_check(struct json_object *md)
{
    if (!json_object_is_type(md, json_type_object))
        return "metadata";
    json_object_object_foreach(md, key, val) {
        if (!val)
            continue; /* null = unset */
        bool known = false;
        for (size_t i = 0; i < RT_ARRAY_SIZE(md_strings); i++) {
            if (strcmp(key, md_strings[i]) == 0) {
                if (!valid_string(val))
                    return md_strings[i];
                known = true;
            }
        }
        if (strcmp(key, "tags") == 0 || strcmp(key, "command") == 0) {
            if (!json_object_is_type(val, json_type_array) || json_object_array_length(val) > MD_MAX_ITEMS)
                return strcmp(key, "tags") == 0 ? "tags" : "command";
            for (size_t i = 0; i < json_object_array_length(val); i++)
                if (!valid_string(json_object_array_get_idx(val, i)))
                    return strcmp(key, "tags") == 0 ? "tags" : "command";
            known = true;
        }
        if (!known)
            return "metadata";
    }
    return NULL;
}
