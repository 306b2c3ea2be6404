#include "api/job_access.h"

#include "daemon.h"
#include "jobs/notes.h"
#include "proc/procfs.h"
#include "rt/request.h"
#include "rt/json.h"
#include "rt/util.h"
#include "upload/upload.h"

#include <errno.h>
#include <string.h>

bool rt_api_can_see(const struct rt_peer *peer, const struct rt_job *j)
{
    return peer->admin || j->owner_uid == peer->uid;
}

const char *rt_api_may_track_cgroup(const struct rt_peer *peer, const struct rt_roots *roots,
                                    const struct rt_cgroup *cg)
{
    if (peer->admin)
        return NULL;
    uid_t owner;
    if (rt_cgroup_owner(cg, &owner) < 0 || owner != peer->uid)
        return "the cgroup is not the caller's (only administrators may track another user's or root's cgroup)";
    pid_t pids[4096];
    size_t n = 0;
    if (rt_cgroup_pids(cg, pids, RT_ARRAY_SIZE(pids), &n) < 0)
        return "the cgroup holds too many processes to check that they are all the caller's";
    for (size_t i = 0; i < n; i++) {
        struct rt_pcreds creds;
        int r = rt_pcreds_read(roots->proc_fd, pids[i], &creds);
        if (r == 0 && creds.uid[0] != peer->uid)
            return "another user's process is in the cgroup";
        if (r < 0 && r != -ENOENT)
            return "a process of the cgroup cannot be checked";
    }
    return NULL;
}

static void no_such_job(struct rt_call *c)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", json_object_get(rt_call_object(c, "id")));
    json_object_object_add(p, "name", json_object_get(rt_call_object(c, "name")));
    rt_call_error(c, RT_E_PREFIX "NoSuchJob", p);
}

static void ambiguous_name(struct rt_call *c, struct rt_jobs *jobs, const char *name, uid_t owner)
{
    struct json_object *ids = json_object_new_array();
    for (size_t i = 0; i < jobs->n; i++) {
        const struct rt_job *j = jobs->v[i];
        if (j->owner_uid == owner && j->state == RT_JOB_RUNNING && j->name && strcmp(j->name, name) == 0)
            json_object_array_add(ids, rt_json_u64(j->id));
    }
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "name", json_object_new_string(name));
    json_object_object_add(p, "ids", ids);
    rt_call_error(c, RT_E_PREFIX "AmbiguousJobName", p);
}

/* Whose jobs a name is looked up among: the caller's, or (administrators
 * only) owner_uid's. False after replying the error. */
static bool name_owner(struct rt_call *c, uid_t *owner)
{
    const struct rt_peer *peer = rt_call_peer(c);
    *owner = peer->uid;
    if (!rt_call_has(c, "owner_uid"))
        return true;
    int64_t o = rt_call_int(c, "owner_uid", -1);
    if ((uid_t)o != peer->uid && !peer->admin) {
        rt_call_error_reason(c, RT_E_PREFIX "PermissionDenied", "only administrators may name another user's jobs");
        return false;
    }
    *owner = (uid_t)o;
    return true;
}

struct rt_job *rt_api_lookup_job(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    int64_t id = rt_call_int(c, "id", -1);
    const char *name = rt_call_string(c, "name");
    uid_t owner = rt_call_peer(c)->uid;
    if (!rt_call_has(c, "id") && !name) {
        rt_call_invalid_param(c, "id");
        return NULL;
    }
    if (!rt_call_has(c, "id") && !name_owner(c, &owner))
        return NULL;
    rt_jobs_lock(&d->jobs);
    size_t running = 0;
    struct rt_job *j = rt_call_has(c, "id") ? (id > 0 ? rt_jobs_find(&d->jobs, (uint64_t)id) : NULL)
                                            : rt_jobs_find_name(&d->jobs, name, owner, &running);
    if (!j) {
        rt_jobs_unlock(&d->jobs);
        no_such_job(c);
        return NULL;
    }
    if (running > 1) {
        ambiguous_name(c, &d->jobs, name, owner);
        rt_jobs_unlock(&d->jobs);
        return NULL;
    }
    /* Only an id can name another user's job: a name resolves among the
     * caller's own (or owner_uid's, for an administrator). */
    if (!rt_api_can_see(rt_call_peer(c), j)) {
        rt_jobs_unlock(&d->jobs);
        rt_call_error_reason(c, RT_E_PREFIX "PermissionDenied", "the job belongs to another user");
        return NULL;
    }
    return j;
}

struct json_object *rt_api_job_json(struct rt_daemon *d, const struct rt_job *j)
{
    struct json_object *o = rt_job_to_json(j, (double)rt_real_ns() / 1e9);
    /* Requested against used, by the configured rules (docs/efficiency.md). */
    struct rt_request req = {0};
    if (j->request)
        rt_request_from_json(j->request, &req);
    struct rt_notes_rules rules;
    rt_notes_rules_from_config(&d->cfg, &rules);
    struct json_object *summary = rt_json_get_object(o, "summary");
    json_object_object_add(o, "efficiency", rt_job_efficiency(summary, &req));
    json_object_object_add(o, "notes", rt_job_notes(summary, &req, &rules));
    struct rt_gpuuse_snap *gs = d->sampler && j->state == RT_JOB_RUNNING
                                    ? rt_gpuuse_snapshot(rt_sampler_gpuuse(d->sampler)) : NULL;
    json_object_object_add(o, "gpu_idle", rt_gpuuse_job_idle_json(gs, j->id));
    rt_gpuuse_snap_unref(gs);
    if (!j->wants_upload || !d->upload)
        return o;
    struct rt_upload_status st;
    rt_upload_job_status(d->upload, j->id, &st);
    if (!st.tracked)
        return o;
    struct json_object *u = json_object_new_object();
    const char *state = st.finished    ? "finished"
                        : st.abandoned ? "abandoned"
                        : st.ended     ? "finishing"
                        : st.run_id[0] ? "uploading"
                                       : "starting";
    json_object_object_add(u, "state", json_object_new_string(state));
    json_object_object_add(u, "run_id", st.run_id[0] ? json_object_new_string(st.run_id) : NULL);
    json_object_object_add(u, "batches_sent", rt_json_u64(st.batches_sent));
    json_object_object_add(u, "batches_pending", rt_json_u64(st.batches_pending));
    json_object_object_add(u, "last_error", st.last_error[0] ? json_object_new_string(st.last_error) : NULL);
    json_object_object_add(o, "upload", u);
    return o;
}

void rt_api_fill_metadata(struct rt_daemon *d, struct json_object *job)
{
    struct json_object *md;
    uint64_t id;
    if (!job || !json_object_object_get_ex(job, "metadata", &md) || md || !rt_json_get_u64(job, "id", &id))
        return;
    md = rt_state_dir_read_metadata(&d->state, id);
    json_object_object_add(job, "metadata", md ? md : json_object_new_object());
}
