/* Job methods: start, finish and stop tracking, list and show jobs. Start,
 * finish and stop are answered when the sampler has done them. */
#include "api/call.h"
#include "api/job_access.h"
#include "api/methods.h"
#include "daemon.h"
#include "cgroup/container.h"
#include "system/sdunit.h"
#include "jobs/placement.h"
#include "notice/target.h"
#include "proc/access.h"
#include "proc/pidfd.h"
#include "proc/procfs.h"
#include "store/job_sample.h"
#include "rt/cleanup.h"
#include "rt/json.h"
#include "rt/request.h"
#include "rt/text.h"
#include "rt/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/printbuf.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#define LIST_LIMIT_DEFAULT 1000
#define LIST_LIMIT_MAX 10000
/* A page of ListJobs holds at most this many bytes of jobs (one job at
 * least): what one user stores must not make another's listing too large
 * to read. */
#define LIST_PAGE_BYTES (1024 * 1024)

static const char *check_name(struct json_object *v)
{
    return rt_job_name_valid(json_object_get_string(v)) ? NULL : "name";
}

/* systemd's unit name characters (unit_name_is_valid); its kind the
 * manager checks. */
static const char *check_unit(struct json_object *v)
{
    const char *n = json_object_get_string(v);
    size_t len = strlen(n);
    if (len == 0 || len > 255 || !strchr(n, '.'))
        return "unit";
    for (const char *p = n; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(":-_.\\@", *p))
            return "unit";
    return NULL;
}

static const char *check_api_url(struct json_object *v)
{
    const char *url = json_object_get_string(v);
    return strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0 ? "sentinel_api_url" : NULL;
}

struct start_args {
    int64_t pid, pidfd, start_time, upload_interval_secs, gpus;
    const char *name, *sentinel_token, *sentinel_api_url, *cgroup, *unit, *container;
    double interval_secs;
    struct json_object *metadata, *request, *notify;
    bool adopt_orphans, own_cgroup;
};

static const char *check_request(struct json_object *v)
{
    return rt_request_from_json(v, NULL);
}

static const char *check_notify(struct json_object *v)
{
    return rt_notice_targets_check(v, NULL, 0) < 0 ? "notify" : NULL;
}

struct finish_args {
    int64_t id, exit_code, signal, max_rss_bytes;
    bool not_started;
};

struct list_args {
    bool running_only;
    const char *name;
    int64_t owner_uid, limit, before_id;
    double since;
};

static void no_such_process(struct rt_call *c, int64_t pid)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "pid", json_object_new_int64(pid));
    rt_call_error(c, RT_E_PREFIX "NoSuchProcess", p);
}

static void submit(struct rt_call *c, struct rt_sreq *q)
{
    q->conn_id = c->conn->id;
    rt_conn_wait(c->conn);
    rt_sampler_submit(rt_call_daemon(c)->sampler, q);
}

/* Equal as the upload worker uses them: it strips a trailing '/'. */
static bool same_api_url(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    while (na && a[na - 1] == '/')
        na--;
    while (nb && b[nb - 1] == '/')
        nb--;
    return na == nb && strncmp(a, b, na) == 0;
}

/* What a new job tracks: a root process, pinned, or a cgroup. */
struct start_target {
    int pidfd;
    struct rt_pstat st, reaper;
    char *cgroup;
    char *name, *image;            /* a container's, where its runtime says */
};

/* Pin the process first, then check who it is: a PID reused after the
 * pidfd was opened shows up as the pidfd becoming readable. The caller's
 * pidfd, sent with the call, pins the process it meant; one opened here pins
 * whatever has the PID now, which within the start time's clock tick may be
 * another. Without pidfd_open (ENOSYS, EPERM from seccomp) the starttime
 * check remains (poll ignores fd -1); other errors (ESRCH, EINVAL for a
 * thread) mean no such process. False after replying the error. */
static bool pin_root(struct rt_call *c, const struct start_args *a, struct start_target *t)
{
    struct rt_daemon *d = rt_call_daemon(c);
    const struct rt_peer *peer = rt_call_peer(c);
    int64_t pid = a->pid;
    t->pidfd = rt_call_take_fd(c, "pidfd");
    pid_t pinned = t->pidfd >= 0 ? rt_pidfd_pid(t->pidfd) : -1;
    if (t->pidfd == -2 || (t->pidfd >= 0 && pinned != pid && pinned != 0)) {
        rt_call_invalid_param(c, "pidfd"); /* no descriptor, not a pidfd, or another process's */
        return false;
    }
    if (pinned == 0) { /* the process it pins has exited */
        no_such_process(c, pid);
        return false;
    }
    if (t->pidfd == -1)
        t->pidfd = rt_pidfd_open((pid_t)pid);
    if (t->pidfd < 0 && errno != ENOSYS && errno != EPERM) {
        no_such_process(c, pid);
        return false;
    }
    struct rt_pcreds creds;
    struct rt_reader reader = {.all = peer->admin, .uid = peer->uid, .gid = peer->gid};
    struct pollfd pfd = {.fd = t->pidfd, .events = POLLIN};
    int readable = 0;
    if (rt_pstat_read(d->roots.proc_fd, (int32_t)pid, &t->st) < 0 ||
        rt_pcreds_read(d->roots.proc_fd, (int32_t)pid, &creds) < 0 || t->st.state == 'Z' ||
        (readable = rt_reader_may_read(&reader, d->roots.proc_fd, (int32_t)pid)) < 0 || poll(&pfd, 1, 0) != 0 ||
        (rt_call_has(c, "start_time") && (uint64_t)a->start_time != t->st.starttime)) {
        no_such_process(c, pid);
        return false;
    }
    if (creds.uid[0] != peer->uid && !peer->admin) {
        rt_call_error_reason(c, RT_E_PREFIX "PermissionDenied", "the process belongs to another user");
        return false;
    }
    /* The kernel's rule for /proc/PID/io: a process that runs setuid or
     * setgid, or is not dumpable, is not its user's to read. */
    if (!readable) {
        rt_call_error_reason(c, RT_E_PREFIX "PermissionDenied",
                             "the process runs with other ids than the caller's (setuid or setgid) or is not "
                             "dumpable: the kernel does not let the caller read it");
        return false;
    }
    /* The caller adopts the root's orphans (a child subreaper): only the
     * root's parent may, and it must be the caller itself. */
    if (a->adopt_orphans &&
        (peer->pid <= 0 || t->st.ppid != peer->pid || rt_pstat_read(d->roots.proc_fd, peer->pid, &t->reaper) < 0)) {
        rt_call_invalid_param(c, "adopt_orphans");
        return false;
    }
    return true;
}

static void no_such_cgroup(struct rt_call *c, const char *reason)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "cgroup", json_object_get(rt_call_object(c, "cgroup")));
    json_object_object_add(p, "unit", json_object_get(rt_call_object(c, "unit")));
    json_object_object_add(p, "container", json_object_get(rt_call_object(c, "container")));
    json_object_object_add(p, "reason", json_object_new_string(reason));
    rt_call_error(c, RT_E_PREFIX "NoSuchCgroup", p);
}

/* A unit's cgroup from its manager: one bus round trip, on the main thread. */
#define UNIT_TIMEOUT_USEC (3 * 1000000ull)

/* The cgroup named by cgroup, unit or container, and whether the caller may
 * track it. False after replying the error. */
static bool find_cgroup(struct rt_call *c, const struct start_args *a, struct start_target *t)
{
    struct rt_daemon *d = rt_call_daemon(c);
    char path[4096];
    int r;
    if (d->cg_host.mode == RT_CG_MODE_NONE) {
        no_such_cgroup(c, "no cgroup file system is mounted");
        return false;
    }
    if (a->container) {
        struct rt_container ct;
        r = rt_container_find(&d->cg_host, "/", a->container, &ct);
        if (r < 0) {
            no_such_cgroup(c, r == -ENOTUNIQ ? "more than one container matches" : "no running container matches");
            return false;
        }
        rt_strlcpy(path, ct.cgroup, sizeof(path));
        t->name = ct.name ? rt_xstrdup(ct.name) : NULL;
        t->image = ct.image ? rt_xstrdup(ct.image) : NULL;
        rt_container_free(&ct);
    } else if (a->unit) {
        char *cg = NULL, *why = NULL;
        r = sd_booted() > 0 ? rt_sd_unit_cgroup(d->cfg.user_mode ? RT_SD_USER : RT_SD_SYSTEM, a->unit,
                                                UNIT_TIMEOUT_USEC, &cg, &why)
                            : -EHOSTDOWN;
        if (r == -EINVAL)
            rt_call_invalid_param(c, "unit");
        else if (r < 0)
            no_such_cgroup(c, r == -ENOENT      ? "no such unit is loaded"
                              : r == -ENODATA   ? "the unit is not running"
                              : r == -EHOSTDOWN ? "systemd does not run this host"
                              : why             ? why
                                                : strerror(-r));
        if (r == 0 && rt_cg_path_normalize(&d->cg_host, cg, path, sizeof(path)) < 0) {
            no_such_cgroup(c, "the unit's cgroup is out of sight");
            r = -ENOENT;
        }
        free(cg);
        free(why);
        if (r < 0)
            return false;
        t->name = rt_xstrdup(a->unit);
    } else if ((r = rt_cg_path_normalize(&d->cg_host, a->cgroup, path, sizeof(path))) < 0) {
        rt_call_invalid_param(c, "cgroup");
        return false;
    }
    struct rt_cgroup cg;
    if ((r = rt_cgroup_open(&cg, &d->cg_host, path)) < 0) {
        no_such_cgroup(c, strerror(-r));
        return false;
    }
    const char *why = rt_api_may_track_cgroup(rt_call_peer(c), &d->roots, &cg);
    rt_cgroup_close(&cg);
    if (why && a->container) { /* names are the runtime's secret: another user's reads as none */
        no_such_cgroup(c, "no running container matches");
        return false;
    }
    if (why) {
        rt_call_error_reason(c, RT_E_PREFIX "PermissionDenied", why);
        return false;
    }
    t->cgroup = rt_xstrdup(path);
    return true;
}

static void start_target_free(struct start_target *t)
{
    if (t->pidfd >= 0)
        close(t->pidfd);
    free(t->cgroup);
    free(t->name);
    free(t->image);
}

/* run --gpus N: the N least busy GPUs of the latest snapshot, those given
 * to running jobs last (docs/gpu.md). Registry locked. The UUIDs go to the
 * job, the choices to the reply. */
static void give_gpus(struct rt_daemon *d, unsigned n, struct rt_job *j, struct json_object **choices)
{
    const char **taken = NULL;
    size_t n_taken = 0;
    for (size_t i = 0; i < d->jobs.n; i++) {
        const struct rt_job *o = d->jobs.v[i];
        size_t k = o->state == RT_JOB_RUNNING && o->gpus_assigned ? json_object_array_length(o->gpus_assigned) : 0;
        taken = k ? rt_xrealloc(taken, (n_taken + k) * sizeof(*taken)) : taken;
        for (size_t g = 0; g < k; g++)
            taken[n_taken++] = json_object_get_string(json_object_array_get_idx(o->gpus_assigned, g));
    }
    struct rt_gpuuse_snap *s = d->sampler ? rt_gpuuse_snapshot(rt_sampler_gpuuse(d->sampler)) : NULL;
    struct rt_gpuuse_choice *out = rt_xcalloc(n, sizeof(*out));
    size_t k = rt_gpuuse_pick(s, n, taken, n_taken, out);
    rt_gpuuse_snap_unref(s);
    free(taken);
    j->gpus_assigned = json_object_new_array();
    *choices = json_object_new_array();
    for (size_t i = 0; i < k; i++) {
        json_object_array_add(j->gpus_assigned, json_object_new_string(out[i].uuid));
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "uuid", json_object_new_string(out[i].uuid));
        json_object_object_add(o, "vendor", json_object_new_string(out[i].nvidia ? "nvidia" : "amd"));
        json_object_object_add(o, "index", json_object_new_int64(out[i].index));
        json_object_object_add(o, "free", json_object_new_boolean(out[i].free));
        json_object_array_add(*choices, o);
    }
    free(out);
}

/* One job per root process or cgroup: a second would count the same work
 * twice and end with the first. The job is named when the caller may see it. */
static bool already_tracked(struct rt_call *c, const struct start_args *a, const struct start_target *t)
{
    struct rt_daemon *d = rt_call_daemon(c);
    const struct rt_peer *peer = rt_call_peer(c);
    rt_jobs_lock(&d->jobs);
    struct rt_job *j = rt_jobs_find_tracking(&d->jobs, (int32_t)a->pid, t->st.starttime,
                                             rt_call_has(c, "pid") ? NULL : t->cgroup);
    struct json_object *p = j ? json_object_new_object() : NULL;
    if (j && (peer->admin || j->owner_uid == peer->uid))
        json_object_object_add(p, "id", rt_json_u64(j->id));
    rt_jobs_unlock(&d->jobs);
    if (p)
        rt_call_error(c, RT_E_PREFIX "AlreadyTracked", p);
    return p != NULL;
}

static void m_start_job(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    const struct rt_peer *peer = rt_call_peer(c);
    const struct start_args *a = rt_call_args(c);
    if (rt_call_has(c, "pid") + rt_call_has(c, "cgroup") + rt_call_has(c, "unit") + rt_call_has(c, "container") != 1) {
        rt_call_invalid_param(c, rt_call_has(c, "pid") ? "cgroup" : "pid"); /* exactly one of them */
        return;
    }
    if (a->own_cgroup && !rt_call_has(c, "pid")) {
        rt_call_invalid_param(c, "own_cgroup");
        return;
    }
    double interval = rt_call_has(c, "interval_secs") ? a->interval_secs : d->cfg.interval_secs;
    struct json_object *md = a->metadata;
    if (md && rt_job_metadata_size(md) > RT_JOB_METADATA_MAX) {
        rt_call_limit_exceeded(c, "metadata_bytes", RT_JOB_METADATA_MAX);
        return;
    }
    /* The daemon posts to this URL with the caller's token: on a shared
     * machine only an administrator may point the system daemon elsewhere.
     * cfg.api_url is the worker's default URL: the daemon's environment no
     * longer overrides it, and a reload does not change it. */
    const char *api_url = a->sentinel_api_url;
    if (api_url && same_api_url(api_url, d->cfg.api_url))
        api_url = NULL;
    if (api_url && !peer->admin && !d->cfg.user_mode) {
        rt_call_error_reason(c, RT_E_PREFIX "PermissionDenied", "only administrators may choose the Sentinel API URL");
        return;
    }
    /* PID 1's tree is every process: the host, which the host figures are. */
    if (rt_call_has(c, "pid") && a->pid == 1) {
        rt_call_invalid_param(c, "pid");
        return;
    }
    _cleanup_(start_target_free) struct start_target t = {.pidfd = -1};
    if (rt_call_has(c, "pid") ? !pin_root(c, a, &t) : !find_cgroup(c, a, &t))
        return;
    if (already_tracked(c, a, &t))
        return;

    /* A name is a label: jobs of one user or many may share it. */
    rt_jobs_lock(&d->jobs);
    size_t running = rt_jobs_running_for(&d->jobs, peer->uid);
    double rate = rt_jobs_fast_rate_for(&d->jobs, peer->uid, d->cfg.interval_secs) +
                  (interval < d->cfg.interval_secs ? 1 / interval : 0);
    rt_jobs_unlock(&d->jobs);
    if (peer->uid != 0 && running >= d->cfg.max_jobs_per_uid) {
        rt_call_limit_exceeded(c, "jobs_per_user", d->cfg.max_jobs_per_uid);
        return;
    }
    /* Jobs faster than the daemon's interval cost host samples of their own. */
    if (peer->uid != 0 && interval < d->cfg.interval_secs && rate > d->cfg.max_sample_rate_per_uid + 1e-9) {
        rt_call_limit_exceeded(c, "sample_rate_per_user", d->cfg.max_sample_rate_per_uid);
        return;
    }
    uint64_t id;
    int r = rt_state_dir_alloc_id(&d->state, &id);
    if (r < 0) {
        rt_call_error_reason(c, RT_E_PREFIX "InternalError",
                             r == -EOVERFLOW ? "every job id has been used" : "cannot write to the state directory");
        return;
    }
    struct rt_placement place = {0};
    /* The caller that is the command's parent (run) keeps its scope. */
    pid_t keeper = peer->pid > 0 && t.st.ppid == peer->pid ? peer->pid : 0;
    if (a->own_cgroup &&
        (r = rt_place_command(&d->cg_host, &d->roots, &d->cfg, (pid_t)a->pid, keeper, id, &place)) < 0) {
        no_such_process(c, a->pid);
        return;
    }
    const char *token = a->sentinel_token;
    const char *name = a->name ? a->name : t.name;
    struct rt_job *j = rt_job_new();
    j->id = id;
    j->name = name ? rt_xstrdup(name) : NULL;
    j->name_json = rt_job_name_json(j->name);
    j->owner_uid = peer->uid;
    j->owner_gid = peer->gid;
    j->reads_all = peer->admin;
    j->pid = (int32_t)a->pid;
    j->starttime = t.st.starttime;
    j->reaper_pid = t.reaper.pid;
    j->reaper_starttime = t.reaper.starttime;
    j->cgroup = place.cgroup ? place.cgroup : t.cgroup;
    if (j->cgroup == t.cgroup)
        t.cgroup = NULL;
    j->cgroup_made = place.made;
    j->tracking_why = a->own_cgroup && !place.cgroup ? rt_xstrdup(place.why) : NULL;
    j->state = RT_JOB_RUNNING;
    j->started_at = (double)rt_real_ns() / 1e9;
    j->interval_secs = interval;
    j->metadata = md ? json_object_get(md) : json_object_new_object();
    if (t.image && !rt_json_get_string(j->metadata, "container_image"))
        json_object_object_add(j->metadata, "container_image", json_object_new_string(t.image));
    j->metadata_bytes = rt_job_metadata_size(j->metadata);
    /* What a process tree always has: 0, not null, before its first sample. */
    if (!j->cgroup)
        j->summary.gates = RT_GATE_TREE | RT_GATE_DISK | RT_GATE_MEM;
    j->pidfd = rt_take_fd(&t.pidfd);
    j->wants_upload = d->upload && (token || d->has_default_token);
    if (a->request && json_object_object_length(a->request))
        json_object_deep_copy(a->request, &j->request, NULL);
    if (a->notify && json_object_array_length(a->notify))
        json_object_deep_copy(a->notify, &j->notify, NULL);
    struct json_object *given = NULL;
    rt_jobs_lock(&d->jobs);
    if (a->gpus)
        give_gpus(d, (unsigned)a->gpus, j, &given); /* with the registry locked: two jobs never get one GPU */
    rt_jobs_add(&d->jobs, j);
    rt_jobs_unlock(&d->jobs);

    struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
    q->type = RT_SREQ_START;
    q->job = j;
    q->job_id = id;
    if (token && *token)
        q->token = rt_xstrdup(token);
    q->api_url = api_url ? rt_xstrdup(api_url) : NULL;
    q->upload_interval_secs = (unsigned)a->upload_interval_secs;
    q->given_gpus = given;
    submit(c, q);
}

static void m_finish_job(struct rt_call *c)
{
    struct rt_sreq q0 = {0};
    const struct finish_args *a = rt_call_args(c);
    q0.max_rss_bytes = (uint64_t)a->max_rss_bytes;
    q0.not_started = a->not_started;
    if (rt_call_has(c, "signal")) {
        q0.has_exit = true;
        q0.signal = (int)a->signal;
        q0.exit_code = 128 + q0.signal;
    } else if (rt_call_has(c, "exit_code")) {
        q0.has_exit = true;
        q0.exit_code = (int)a->exit_code;
    }
    struct rt_job *j = rt_api_lookup_job(c);
    if (!j)
        return;
    uint64_t job_id = j->id;
    rt_jobs_unlock(&rt_call_daemon(c)->jobs);
    struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
    *q = q0;
    q->type = RT_SREQ_FINISH;
    q->job_id = job_id;
    submit(c, q);
}

static void job_not_running(struct rt_call *c, uint64_t id)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", rt_json_u64(id));
    rt_call_error(c, RT_E_PREFIX "JobNotRunning", p);
}

static void m_stop_job(struct rt_call *c)
{
    struct rt_job *j = rt_api_lookup_job(c);
    if (!j)
        return;
    uint64_t job_id = j->id;
    bool running = j->state == RT_JOB_RUNNING;
    rt_jobs_unlock(&rt_call_daemon(c)->jobs);
    if (!running) {
        job_not_running(c, job_id);
        return;
    }
    struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
    q->type = RT_SREQ_STOP;
    q->job_id = job_id;
    submit(c, q);
}

static void m_list_jobs(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    const struct rt_peer *peer = rt_call_peer(c);
    const struct list_args *a = rt_call_args(c);
    bool running_only = a->running_only;
    const char *name = a->name;
    bool by_owner = rt_call_has(c, "owner_uid");
    int64_t owner = a->owner_uid;
    double since = a->since;
    int64_t limit = rt_call_has(c, "limit") ? a->limit : LIST_LIMIT_DEFAULT;
    /* No before_id: from the newest, the last id (INT64_MAX) included. */
    uint64_t before = rt_call_has(c, "before_id") ? (uint64_t)a->before_id : UINT64_MAX;
    struct printbuf *pb = printbuf_new();
    printbuf_strappend(pb, "{\"parameters\":{\"jobs\":[");
    struct json_object *arr = json_object_new_array();
    size_t bytes = 0;
    int64_t n = 0;
    uint64_t last = 0, next = 0;
    rt_jobs_lock(&d->jobs);
    for (size_t i = d->jobs.n; i-- > 0;) {
        const struct rt_job *j = d->jobs.v[i];
        if (j->id >= before || !rt_api_can_see(peer, j) ||
            (running_only && j->state != RT_JOB_RUNNING) || (name && (!j->name || strcmp(j->name, name))) ||
            (by_owner && (int64_t)j->owner_uid != owner) || j->started_at < since)
            continue;
        if (n == limit) {
            next = last; /* more match: go on below the last one sent */
            break;
        }
        struct json_object *o = rt_api_job_json(d, j);
        size_t len;
        json_object_to_json_string_length(o, RT_VL_JSON_FLAGS, &len);
        len += j->metadata ? 0 : j->metadata_bytes; /* an ended job's, read below */
        if (n && bytes + len > LIST_PAGE_BYTES) {
            json_object_put(o);
            next = last;
            break;
        }
        bytes += len;
        json_object_array_add(arr, o);
        last = j->id;
        n++;
    }
    rt_jobs_unlock(&d->jobs);
    /* Ended jobs' metadata comes from their files, outside the lock; each
     * job is then serialised once, straight into the reply. */
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *o = json_object_array_get_idx(arr, i);
        rt_api_fill_metadata(d, o);
        size_t len;
        const char *txt = json_object_to_json_string_length(o, RT_VL_JSON_FLAGS, &len);
        if (i)
            printbuf_strappend(pb, ",");
        printbuf_memappend(pb, txt, (int)len);
    }
    json_object_put(arr);
    char tail[64];
    if (next)
        snprintf(tail, sizeof(tail), "],\"next_before_id\":%" PRIu64 "}}", next);
    else
        snprintf(tail, sizeof(tail), "],\"next_before_id\":null}}");
    printbuf_memappend(pb, tail, (int)strlen(tail));
    rt_conn_send_raw(c->srv, c->conn, pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
}

static void m_get_job(struct rt_call *c)
{
    struct rt_job *j = rt_api_lookup_job(c);
    if (!j)
        return;
    struct json_object *job = rt_api_job_json(rt_call_daemon(c), j);
    rt_jobs_unlock(&rt_call_daemon(c)->jobs);
    rt_api_fill_metadata(rt_call_daemon(c), job);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "job", job);
    rt_call_reply(c, p);
}

void rt_job_methods_request_done(struct rt_server *srv, struct rt_sreq *q)
{
    struct rt_daemon *d = rt_server_daemon(srv);
    struct rt_conn *conn = rt_server_find_conn(srv, q->conn_id);
    if (q->type == RT_SREQ_START && q->result < 0) {
        rt_jobs_lock(&d->jobs);
        rt_jobs_remove(&d->jobs, q->job);
        rt_jobs_unlock(&d->jobs);
        rt_job_free(q->job);
        q->job = NULL;
    }
    if (conn) {
        struct json_object *p = json_object_new_object();
        if (q->result == 0) {
            rt_jobs_lock(&d->jobs);
            struct rt_job *j = rt_jobs_find(&d->jobs, q->job_id);
            struct json_object *job = j ? rt_api_job_json(d, j) : NULL;
            rt_jobs_unlock(&d->jobs);
            rt_api_fill_metadata(d, job);
            json_object_object_add(p, "job", job);
            if (q->type == RT_SREQ_START)
                json_object_object_add(p, "given_gpus", json_object_get(q->given_gpus));
            rt_conn_reply(srv, conn, p, false);
        } else if (q->result == -ESRCH) {
            json_object_object_add(p, "pid", json_object_new_int64(q->job ? q->job->pid : 0));
            rt_conn_error(srv, conn, RT_E_PREFIX "NoSuchProcess", p);
        } else if (q->result == -ENOENT) {
            json_object_object_add(p, "id", rt_json_u64(q->job_id));
            json_object_object_add(p, "name", NULL);
            rt_conn_error(srv, conn, RT_E_PREFIX "NoSuchJob", p);
        } else if (q->result == -EALREADY) {
            json_object_object_add(p, "id", rt_json_u64(q->job_id));
            rt_conn_error(srv, conn, RT_E_PREFIX "JobNotRunning", p);
        } else {
            json_object_object_add(p, "reason", json_object_new_string(q->error[0] ? q->error : strerror(-q->result)));
            rt_conn_error(srv, conn, RT_E_PREFIX "InternalError", p);
        }
        rt_conn_done(srv, conn);
    }
    rt_sreq_free(q);
}

#define START(m, ...) RT_ARG(struct start_args, m, __VA_ARGS__)
#define FINISH(m, ...) RT_ARG(struct finish_args, m, __VA_ARGS__)
#define LIST(m, ...) RT_ARG(struct list_args, m, __VA_ARGS__)

static const struct rt_method methods[] = {
    {.name = "StartJob", .fn = m_start_job, .args_size = sizeof(struct start_args),
     .params = {START(pid, RT_P_INT, RT_RANGE(1, INT32_MAX)), START(cgroup, RT_P_STRING),
                START(unit, RT_P_STRING, .check = check_unit), START(container, RT_P_STRING), START(own_cgroup, RT_P_BOOL), START(pidfd, RT_P_FD),
                START(name, RT_P_STRING, .check = check_name), START(start_time, RT_P_INT),
                START(interval_secs, RT_P_FLOAT, RT_RANGE(RT_JOB_INTERVAL_MIN, RT_JOB_INTERVAL_MAX)),
                START(metadata, RT_P_OBJECT, .check = rt_job_metadata_check), START(sentinel_token, RT_P_STRING),
                START(sentinel_api_url, RT_P_STRING, .check = check_api_url),
                START(upload_interval_secs, RT_P_INT, RT_RANGE(1, 86400)), START(adopt_orphans, RT_P_BOOL),
                START(request, RT_P_OBJECT, .check = check_request), START(notify, RT_P_STRINGS, .check = check_notify),
                START(gpus, RT_P_INT, RT_RANGE(1, RT_JOB_GPUS_MAX))}},
    {.name = "FinishJob", .fn = m_finish_job, .args_size = sizeof(struct finish_args),
     .params = {FINISH(id, RT_P_INT, .required = true), FINISH(exit_code, RT_P_INT, RT_RANGE(0, 255)),
                FINISH(signal, RT_P_INT, RT_RANGE(1, 64)), FINISH(max_rss_bytes, RT_P_INT, RT_RANGE(0, INT64_MAX)),
                FINISH(not_started, RT_P_BOOL)}},
    {.name = "StopJob", .fn = m_stop_job, .params = {RT_API_JOB_PARAMS}},
    {.name = "ListJobs", .fn = m_list_jobs, .args_size = sizeof(struct list_args),
     .params = {LIST(running_only, RT_P_BOOL), LIST(name, RT_P_STRING),
                LIST(owner_uid, RT_P_INT, RT_RANGE(0, UINT32_MAX - 1.0)), LIST(since, RT_P_FLOAT),
                LIST(limit, RT_P_INT, RT_RANGE(1, LIST_LIMIT_MAX)), LIST(before_id, RT_P_INT, RT_RANGE(1, INT64_MAX))}},
    {.name = "GetJob", .fn = m_get_job, .params = {RT_API_JOB_PARAMS}},
};

const struct rt_method_table rt_job_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
