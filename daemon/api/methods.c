/* Method handlers of com.sparecores.ResourceTracker and org.varlink.service. */
#include "system/log.h"
#include "proc/procfs.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "api/server.h"
#include "upload/upload.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/printbuf.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define E_PREFIX RT_VL_INTERFACE "."
#define PAGE_DEFAULT 1000
#define PAGE_MAX 10000
#define STREAM_OUTPUT_LOW (1024 * 1024) /* pump samples while less is queued */
/* A page stops after this many bytes of samples, whatever the limit: 10000
 * large samples would exceed the backlog a client may have (16 MiB), and a
 * client reading normally would be dropped. next_offset says where to go on. */
#define PAGE_MAX_BYTES (4 * 1024 * 1024)

static double now_real(void) { return (double)rt_real_ns() / 1e9; }

static void pb_puts(struct printbuf *pb, const char *s)
{
    printbuf_memappend(pb, s, (int)strlen(s));
}

/* ---- parameter helpers ---- */

static bool only_keys(struct rt_call *c, const char *const *allowed)
{
    json_object_object_foreach(c->params, key, val) {
        (void)val;
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(key, *a) == 0;
        if (!ok) {
            rt_call_invalid_param(c, key);
            return false;
        }
    }
    return true;
}

/* Optional parameter of a type: false after replying InvalidParameter. */
static bool opt(struct rt_call *c, const char *key, json_type t, struct json_object **out)
{
    struct json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(c->params, key, &v) || !v)
        return true;
    bool ok = json_object_is_type(v, t) || (t == json_type_double && json_object_is_type(v, json_type_int));
    /* "\u0000" inside a string would make the C string a different one. */
    if (ok && t == json_type_string)
        ok = strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
    if (!ok) {
        rt_call_invalid_param(c, key);
        return false;
    }
    *out = v;
    return true;
}

static void error_reason(struct rt_call *c, const char *error, const char *reason)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "reason", json_object_new_string(reason));
    rt_call_error(c, error, p);
}

static void no_such_job(struct rt_call *c, struct json_object *id, struct json_object *name)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", id ? json_object_get(id) : NULL);
    json_object_object_add(p, "name", name ? json_object_get(name) : NULL);
    rt_call_error(c, E_PREFIX "NoSuchJob", p);
}

/* The Job object with the upload state the worker knows. Registry locked. */
static struct json_object *job_json(struct rt_daemon *d, const struct rt_job *j)
{
    struct json_object *o = rt_job_to_json(j, now_real());
    if (!j->wants_upload || !d->upload)
        return o;
    struct rt_upload_status st;
    rt_upload_job_status(d->upload, j->id, &st);
    if (!st.tracked)
        return o;
    struct json_object *u = json_object_new_object();
    const char *state = st.finished ? "finished" : st.ended ? "finishing" : st.run_id[0] ? "uploading" : "starting";
    json_object_object_add(u, "state", json_object_new_string(state));
    json_object_object_add(u, "run_id", st.run_id[0] ? json_object_new_string(st.run_id) : NULL);
    json_object_object_add(u, "batches_sent", rt_json_u64(st.batches_sent));
    json_object_object_add(u, "batches_pending", rt_json_u64(st.batches_pending));
    json_object_object_add(u, "last_error", st.last_error[0] ? json_object_new_string(st.last_error) : NULL);
    json_object_object_add(o, "upload", u);
    return o;
}

static bool can_see(const struct rt_conn *conn, const struct rt_job *j)
{
    return conn->admin || j->owner_uid == conn->uid;
}

/* Resolve the id/name parameters to a visible job; replies on failure.
 * Returns with the registry locked when a job is returned. */
static struct rt_job *lookup_job(struct rt_call *c)
{
    struct rt_daemon *d = rt_server_daemon(c->srv);
    struct json_object *id, *name;
    if (!opt(c, "id", json_type_int, &id) || !opt(c, "name", json_type_string, &name))
        return NULL;
    if (!id && !name) {
        rt_call_invalid_param(c, "id");
        return NULL;
    }
    rt_jobs_lock(&d->jobs);
    struct rt_job *j = id ? rt_jobs_find(&d->jobs, (uint64_t)json_object_get_int64(id))
                          : rt_jobs_find_name(&d->jobs, json_object_get_string(name));
    if (j && json_object_get_int64(id) < 0)
        j = NULL;
    if (!j) {
        rt_jobs_unlock(&d->jobs);
        no_such_job(c, id, name);
        return NULL;
    }
    if (!can_see(c->conn, j)) {
        rt_jobs_unlock(&d->jobs);
        error_reason(c, E_PREFIX "PermissionDenied", "the job belongs to another user");
        return NULL;
    }
    return j;
}

/* ---- org.varlink.service ---- */

static void m_get_info(struct rt_call *c)
{
    static const char *const keys[] = {NULL};
    if (!only_keys(c, keys))
        return;
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "vendor", json_object_new_string("Spare Cores"));
    json_object_object_add(p, "product", json_object_new_string("resource-trackerd"));
    json_object_object_add(p, "version", json_object_new_string(RT_VERSION));
    json_object_object_add(p, "url", json_object_new_string("https://github.com/SpareCores/resource-tracker"));
    struct json_object *ifaces = json_object_new_array();
    json_object_array_add(ifaces, json_object_new_string("org.varlink.service"));
    json_object_array_add(ifaces, json_object_new_string(RT_VL_INTERFACE));
    json_object_object_add(p, "interfaces", ifaces);
    rt_call_reply(c, p);
}

static void m_get_interface_description(struct rt_call *c)
{
    static const char *const keys[] = {"interface", NULL};
    struct json_object *iface;
    if (!only_keys(c, keys) || !opt(c, "interface", json_type_string, &iface))
        return;
    if (!iface) {
        rt_call_invalid_param(c, "interface");
        return;
    }
    const char *name = json_object_get_string(iface);
    const char *desc = strcmp(name, RT_VL_INTERFACE) == 0       ? rt_idl_resource_tracker
                       : strcmp(name, "org.varlink.service") == 0 ? rt_idl_varlink_service
                                                                  : NULL;
    if (!desc) {
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "interface", json_object_new_string(name));
        rt_call_error(c, "org.varlink.service.InterfaceNotFound", p);
        return;
    }
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "description", json_object_new_string(desc));
    rt_call_reply(c, p);
}

/* ---- host ---- */

static void m_ping(struct rt_call *c)
{
    static const char *const keys[] = {NULL};
    if (only_keys(c, keys))
        rt_call_reply(c, NULL);
}

static void m_info(struct rt_call *c)
{
    static const char *const keys[] = {NULL};
    if (!only_keys(c, keys))
        return;
    struct rt_daemon *d = rt_server_daemon(c->srv);
    rt_jobs_lock(&d->jobs);
    size_t running = 0;
    for (size_t i = 0; i < d->jobs.n; i++) /* others' jobs are not even counted */
        running += d->jobs.v[i]->state == RT_JOB_RUNNING && can_see(c->conn, d->jobs.v[i]);
    rt_jobs_unlock(&d->jobs);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "version", json_object_new_string(RT_VERSION));
    json_object_object_add(p, "hostname", json_object_new_string(d->hostname));
    json_object_object_add(p, "interval_secs", rt_json_double(d->cfg.interval_secs, 3));
    json_object_object_add(p, "uptime_secs",
                           rt_json_double((double)(rt_mono_ns() - d->start_mono_ns) / 1e9, 1));
    json_object_object_add(p, "user_mode", json_object_new_boolean(d->cfg.user_mode));
    json_object_object_add(p, "jobs_running", json_object_new_int64((int64_t)running));
    json_object_object_add(p, "gpus", json_object_new_int64(rt_sampler_gpu_count(d->sampler)));
    json_object_object_add(p, "caller_uid", json_object_new_int64(c->conn->uid));
    json_object_object_add(p, "caller_is_admin", json_object_new_boolean(c->conn->admin));
    rt_call_reply(c, p);
}

/* {"parameters":{"sample":<raw>}[,"continues":true]} */
static void send_host_sample(struct rt_server *srv, struct rt_conn *conn, struct rt_rcstr *s, bool continues)
{
    struct printbuf *pb = printbuf_new();
    printbuf_strappend(pb, "{\"parameters\":{\"sample\":");
    printbuf_memappend(pb, s->data, (int)s->len);
    if (continues)
        printbuf_strappend(pb, "},\"continues\":true}");
    else
        printbuf_strappend(pb, "}}");
    if (!conn->oneway)
        rt_conn_send_raw(srv, conn, pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
}

static void m_get_host_sample(struct rt_call *c)
{
    static const char *const keys[] = {NULL};
    if (!only_keys(c, keys))
        return;
    struct rt_rcstr *s = rt_sampler_latest_host(rt_server_daemon(c->srv)->sampler);
    if (!s) {
        error_reason(c, E_PREFIX "InternalError", "no sample yet");
        return;
    }
    send_host_sample(c->srv, c->conn, s, false);
    rt_rcstr_unref(s);
}

static void m_stream_host_samples(struct rt_call *c)
{
    static const char *const keys[] = {NULL};
    if (!only_keys(c, keys))
        return;
    if (!c->more) {
        rt_call_error(c, "org.varlink.service.ExpectedMore", NULL);
        return;
    }
    struct rt_rcstr *s = rt_sampler_latest_host(rt_server_daemon(c->srv)->sampler);
    if (s)
        send_host_sample(c->srv, c->conn, s, true);
    rt_rcstr_unref(s);
    c->conn->busy = true;
    c->conn->stream = RT_STREAM_HOST;
}

/* ---- jobs ---- */

static bool valid_name(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > 128 || rt_str_all_digits(n))
        return false; /* all digits would be ambiguous with ids */
    for (const char *p = n; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-@+:", *p))
            return false;
    return true;
}

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void no_such_process(struct rt_call *c, int64_t pid)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "pid", json_object_new_int64(pid));
    rt_call_error(c, E_PREFIX "NoSuchProcess", p);
}

static void limit_exceeded(struct rt_call *c, const char *what, unsigned max)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "limit", json_object_new_string(what));
    json_object_object_add(p, "max", json_object_new_int64(max));
    rt_call_error(c, E_PREFIX "LimitExceeded", p);
}

static void submit(struct rt_call *c, struct rt_sreq *q)
{
    q->conn_id = c->conn->id;
    c->conn->busy = true;
    rt_sampler_submit(rt_server_daemon(c->srv)->sampler, q);
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

static void m_start_job(struct rt_call *c)
{
    static const char *const keys[] = {"pid", "name", "start_time", "interval_secs", "metadata",
                                       "sentinel_token", "sentinel_api_url", "upload_interval_secs", NULL};
    struct rt_daemon *d = rt_server_daemon(c->srv);
    struct json_object *pid_o, *name_o, *st_o, *iv_o, *md_o, *tok_o, *url_o, *ui_o;
    if (!only_keys(c, keys) || !opt(c, "pid", json_type_int, &pid_o) ||
        !opt(c, "name", json_type_string, &name_o) || !opt(c, "start_time", json_type_int, &st_o) ||
        !opt(c, "interval_secs", json_type_double, &iv_o) || !opt(c, "metadata", json_type_object, &md_o) ||
        !opt(c, "sentinel_token", json_type_string, &tok_o) ||
        !opt(c, "sentinel_api_url", json_type_string, &url_o) ||
        !opt(c, "upload_interval_secs", json_type_int, &ui_o))
        return;
    int64_t pid = pid_o ? json_object_get_int64(pid_o) : 0;
    if (pid <= 0 || pid > INT32_MAX) {
        rt_call_invalid_param(c, "pid");
        return;
    }
    const char *name = name_o ? json_object_get_string(name_o) : NULL;
    if (name && !valid_name(name)) {
        rt_call_invalid_param(c, "name");
        return;
    }
    double interval = iv_o ? json_object_get_double(iv_o) : d->cfg.interval_secs;
    if (!(interval > 0 && interval <= 3600)) {
        rt_call_invalid_param(c, "interval_secs");
        return;
    }
    const char *bad = md_o ? rt_job_metadata_check(md_o) : NULL;
    if (bad) {
        rt_call_invalid_param(c, bad);
        return;
    }
    if (ui_o && (json_object_get_int64(ui_o) <= 0 || json_object_get_int64(ui_o) > 86400)) {
        rt_call_invalid_param(c, "upload_interval_secs");
        return;
    }
    /* The daemon posts to this URL with the caller's token: on a shared
     * machine only an administrator may point the system daemon elsewhere. */
    const char *api_url = url_o ? json_object_get_string(url_o) : NULL;
    /* cfg.api_url is the worker's default URL: the daemon's environment no
     * longer overrides it, and a reload does not change it. */
    if (api_url && same_api_url(api_url, d->cfg.api_url))
        api_url = NULL;
    if (api_url && !c->conn->admin && !d->cfg.user_mode) {
        error_reason(c, E_PREFIX "PermissionDenied", "only administrators may choose the Sentinel API URL");
        return;
    }
    if (api_url && strncmp(api_url, "https://", 8) != 0 && strncmp(api_url, "http://", 7) != 0) {
        rt_call_invalid_param(c, "sentinel_api_url");
        return;
    }

    /* Pin the process first, then check who it is: a PID reused after the
     * pidfd was opened shows up as the pidfd becoming readable. Without
     * pidfd_open (ENOSYS, EPERM from seccomp) the starttime check remains
     * (poll ignores fd -1); other errors (ESRCH, EINVAL for a thread) mean
     * no such process. */
    int pidfd = pidfd_open_((pid_t)pid);
    if (pidfd < 0 && errno != ENOSYS && errno != EPERM) {
        no_such_process(c, pid);
        return;
    }
    struct rt_pstat st;
    uid_t owner;
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    if (rt_pstat_read(d->roots.proc_fd, (int32_t)pid, &st) < 0 ||
        rt_puid_read(d->roots.proc_fd, (int32_t)pid, &owner) < 0 || st.state == 'Z' ||
        poll(&pfd, 1, 0) != 0 || (st_o && (uint64_t)json_object_get_int64(st_o) != st.starttime)) {
        close(pidfd);
        no_such_process(c, pid);
        return;
    }
    if (owner != c->conn->uid && !c->conn->admin) {
        close(pidfd);
        error_reason(c, E_PREFIX "PermissionDenied", "the process belongs to another user");
        return;
    }

    rt_jobs_lock(&d->jobs);
    size_t running = rt_jobs_running_for(&d->jobs, c->conn->uid);
    struct rt_job *same = name ? rt_jobs_find_name(&d->jobs, name) : NULL;
    bool name_taken = same && same->state == RT_JOB_RUNNING;
    rt_jobs_unlock(&d->jobs);
    if (c->conn->uid != 0 && running >= d->cfg.max_jobs_per_uid) {
        close(pidfd);
        limit_exceeded(c, "jobs_per_user", d->cfg.max_jobs_per_uid);
        return;
    }
    if (name_taken) {
        close(pidfd);
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "name", json_object_new_string(name));
        rt_call_error(c, E_PREFIX "JobNameInUse", p);
        return;
    }
    uint64_t id = rt_store_alloc_id(&d->store);
    if (!id) {
        close(pidfd);
        error_reason(c, E_PREFIX "InternalError", "cannot write to the state directory");
        return;
    }
    struct rt_job *j = rt_job_new();
    j->id = id;
    j->name = name ? rt_xstrdup(name) : NULL;
    j->owner_uid = c->conn->uid;
    j->pid = (int32_t)pid;
    j->starttime = st.starttime;
    j->state = RT_JOB_RUNNING;
    j->started_at = now_real();
    j->interval_secs = interval;
    j->metadata = md_o ? json_object_get(md_o) : json_object_new_object();
    j->pidfd = pidfd;
    j->wants_upload = d->upload && (tok_o || d->has_default_token);
    rt_jobs_lock(&d->jobs);
    rt_jobs_add(&d->jobs, j);
    rt_jobs_unlock(&d->jobs);

    struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
    q->type = RT_SREQ_START;
    q->job = j;
    q->job_id = id;
    if (tok_o && json_object_get_string_len(tok_o) > 0)
        q->token = rt_xstrdup(json_object_get_string(tok_o));
    q->api_url = api_url ? rt_xstrdup(api_url) : NULL;
    q->upload_interval_secs = ui_o ? (unsigned)json_object_get_int64(ui_o) : 0;
    submit(c, q);
}

static bool exit_params(struct rt_call *c, struct rt_sreq *q)
{
    struct json_object *code, *sig;
    if (!opt(c, "exit_code", json_type_int, &code) || !opt(c, "signal", json_type_int, &sig))
        return false;
    if (code && (json_object_get_int64(code) < 0 || json_object_get_int64(code) > 255)) {
        rt_call_invalid_param(c, "exit_code");
        return false;
    }
    if (sig && (json_object_get_int64(sig) <= 0 || json_object_get_int64(sig) > 64)) {
        rt_call_invalid_param(c, "signal");
        return false;
    }
    if (sig) {
        q->has_exit = true;
        q->signal = (int)json_object_get_int64(sig);
        q->exit_code = 128 + q->signal;
    } else if (code) {
        q->has_exit = true;
        q->exit_code = (int)json_object_get_int64(code);
    }
    return true;
}

static void m_finish_job(struct rt_call *c)
{
    static const char *const keys[] = {"id", "exit_code", "signal", NULL};
    if (!only_keys(c, keys))
        return;
    struct rt_sreq q0 = {0};
    if (!exit_params(c, &q0))
        return;
    struct json_object *id;
    if (!opt(c, "id", json_type_int, &id))
        return;
    if (!id) {
        rt_call_invalid_param(c, "id");
        return;
    }
    struct rt_job *j = lookup_job(c);
    if (!j)
        return;
    uint64_t job_id = j->id;
    rt_jobs_unlock(&rt_server_daemon(c->srv)->jobs);
    struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
    *q = q0;
    q->type = RT_SREQ_FINISH;
    q->job_id = job_id;
    submit(c, q);
}

static void m_stop_job(struct rt_call *c)
{
    static const char *const keys[] = {"id", "name", NULL};
    if (!only_keys(c, keys))
        return;
    struct rt_job *j = lookup_job(c);
    if (!j)
        return;
    uint64_t job_id = j->id;
    bool running = j->state == RT_JOB_RUNNING;
    rt_jobs_unlock(&rt_server_daemon(c->srv)->jobs);
    if (!running) {
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "id", rt_json_u64(job_id));
        rt_call_error(c, E_PREFIX "JobNotRunning", p);
        return;
    }
    struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
    q->type = RT_SREQ_STOP;
    q->job_id = job_id;
    submit(c, q);
}

static void m_list_jobs(struct rt_call *c)
{
    static const char *const keys[] = {"running_only", NULL};
    struct json_object *ro;
    if (!only_keys(c, keys) || !opt(c, "running_only", json_type_boolean, &ro))
        return;
    bool running_only = ro && json_object_get_boolean(ro);
    struct rt_daemon *d = rt_server_daemon(c->srv);
    struct json_object *arr = json_object_new_array();
    rt_jobs_lock(&d->jobs);
    for (size_t i = d->jobs.n; i-- > 0;) {
        struct rt_job *j = d->jobs.v[i];
        if (!can_see(c->conn, j) || (running_only && j->state != RT_JOB_RUNNING))
            continue;
        json_object_array_add(arr, job_json(d, j));
    }
    rt_jobs_unlock(&d->jobs);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "jobs", arr);
    rt_call_reply(c, p);
}

static void m_get_job(struct rt_call *c)
{
    static const char *const keys[] = {"id", "name", NULL};
    if (!only_keys(c, keys))
        return;
    struct rt_job *j = lookup_job(c);
    if (!j)
        return;
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "job", job_json(rt_server_daemon(c->srv), j));
    rt_jobs_unlock(&rt_server_daemon(c->srv)->jobs);
    rt_call_reply(c, p);
}

/* ---- samples ---- */

struct page {
    char *buf;        /* the lines, each ending in '\n' */
    size_t len;
    size_t n;         /* lines */
};

/* Read up to max complete sample lines (and about PAGE_MAX_BYTES) starting
 * at index `from`. */
static int read_page(struct rt_daemon *d, uint64_t job_id, uint64_t from, size_t max, struct page *pg)
{
    memset(pg, 0, sizeof(*pg));
    rt_jobs_lock(&d->jobs);
    struct rt_job *j = rt_jobs_find(&d->jobs, job_id);
    if (!j) {
        rt_jobs_unlock(&d->jobs);
        return -ENOENT;
    }
    size_t k = (size_t)(from / RT_JOB_CKPT);
    uint64_t start = k < j->nckpt ? j->ckpt[k] : 0;
    uint64_t skip = k < j->nckpt ? from - (uint64_t)k * RT_JOB_CKPT : from;
    uint64_t end = j->samples_bytes;
    rt_jobs_unlock(&d->jobs);
    int fd = rt_store_read_samples(&d->store, job_id);
    if (fd < 0)
        return fd;
    size_t cap = 0;
    uint64_t pos = start;
    char chunk[65536];
    size_t line_start = 0;
    while (pos < end && pg->n < max && line_start < PAGE_MAX_BYTES) {
        size_t want = end - pos < sizeof(chunk) ? (size_t)(end - pos) : sizeof(chunk);
        ssize_t r = pread(fd, chunk, want, (off_t)pos);
        if (r <= 0)
            break;
        pos += (uint64_t)r;
        for (ssize_t i = 0; i < r && pg->n < max && line_start < PAGE_MAX_BYTES; i++) {
            if (skip) {
                if (chunk[i] == '\n')
                    skip--;
                continue;
            }
            if (pg->len == cap) {
                cap = cap ? cap * 2 : 65536;
                pg->buf = rt_xrealloc(pg->buf, cap);
            }
            pg->buf[pg->len++] = chunk[i];
            if (chunk[i] == '\n') {
                pg->n++;
                line_start = pg->len;
            }
        }
    }
    pg->len = line_start; /* drop an incomplete tail */
    close(fd);
    return 0;
}

/* Reply for a page of lines, in JSON (raw lines) or CSV. */
static void send_page(struct rt_server *srv, struct rt_conn *conn, const char *buf, size_t len,
                      uint64_t next, bool ended, bool continues)
{
    if (conn->oneway)
        return;
    struct printbuf *pb = printbuf_new();
    if (!conn->stream_csv) {
        printbuf_strappend(pb, "{\"parameters\":{\"samples\":[");
        bool first = true;
        for (size_t i = 0; i < len;) {
            const char *nl = memchr(buf + i, '\n', len - i);
            size_t l = (size_t)(nl - (buf + i));
            if (!first)
                printbuf_strappend(pb, ",");
            printbuf_memappend(pb, buf + i, (int)l);
            first = false;
            i += l + 1;
        }
        printbuf_strappend(pb, "],\"csv\":null");
    } else {
        /* CSV rows from the stored JSON samples. */
        struct printbuf *csv = printbuf_new();
        if (conn->stream_header) {
            pb_puts(csv, RT_CSV_HEADER);
            printbuf_strappend(csv, "\n");
            conn->stream_header = false;
        }
        struct rt_sample s;
        rt_sample_init(&s);
        for (size_t i = 0; i < len;) {
            const char *nl = memchr(buf + i, '\n', len - i);
            size_t l = (size_t)(nl - (buf + i));
            char err[128], row[1024];
            struct json_object *o = rt_vl_parse(buf + i, l, err, sizeof(err));
            rt_sample_reset(&s);
            if (o && rt_sample_from_json(o, &s, err, sizeof(err)) == 0) {
                size_t rl = rt_sample_to_csv(&s, row, sizeof(row));
                printbuf_memappend(csv, row, (int)(rl < sizeof(row) ? rl : sizeof(row) - 1));
            }
            json_object_put(o);
            i += l + 1;
        }
        rt_sample_free(&s);
        struct json_object *str = json_object_new_string_len(csv->buf, csv->bpos);
        printbuf_free(csv);
        printbuf_strappend(pb, "{\"parameters\":{\"samples\":null,\"csv\":");
        const char *t = rt_json_plain(str);
        printbuf_memappend(pb, t, (int)strlen(t));
        json_object_put(str);
    }
    char tail[96];
    snprintf(tail, sizeof(tail), ",\"next_offset\":%" PRIu64 ",\"ended\":%s}%s}", next,
             ended ? "true" : "false", continues ? ",\"continues\":true" : "");
    pb_puts(pb, tail);
    rt_conn_send_raw(srv, conn, pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
}

static bool job_progress(struct rt_daemon *d, uint64_t id, uint64_t *produced, bool *ended)
{
    rt_jobs_lock(&d->jobs);
    struct rt_job *j = rt_jobs_find(&d->jobs, id);
    if (j) {
        *produced = j->summary.samples;
        *ended = j->state != RT_JOB_RUNNING;
    }
    rt_jobs_unlock(&d->jobs);
    return j != NULL;
}

void rt_stream_pump(struct rt_server *srv, struct rt_conn *conn)
{
    struct rt_daemon *d = rt_server_daemon(srv);
    while (conn->stream == RT_STREAM_JOB && rt_conn_pending(srv, conn) < STREAM_OUTPUT_LOW) {
        uint64_t produced;
        bool ended;
        if (!job_progress(d, conn->stream_job, &produced, &ended)) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "id", rt_json_u64(conn->stream_job));
            rt_conn_error(srv, conn, E_PREFIX "NoSuchJob", p);
            rt_conn_done(srv, conn);
            return;
        }
        if (conn->stream_next < produced) {
            struct page pg;
            uint64_t want = produced - conn->stream_next;
            if (read_page(d, conn->stream_job, conn->stream_next, want < PAGE_DEFAULT ? want : PAGE_DEFAULT,
                          &pg) < 0 || pg.n == 0) {
                /* Counted but not on disk yet (disk full): wait for live samples. */
                free(pg.buf);
                conn->stream_waiting = true;
                return;
            }
            conn->stream_next += pg.n;
            bool last = conn->stream_next >= produced && (ended || !conn->stream_follow);
            send_page(srv, conn, pg.buf, pg.len, conn->stream_next, ended && last, !last);
            free(pg.buf);
            if (last) {
                rt_conn_done(srv, conn);
                return;
            }
            continue;
        }
        if (ended || !conn->stream_follow) {
            send_page(srv, conn, "", 0, conn->stream_next, ended, false);
            rt_conn_done(srv, conn);
            return;
        }
        conn->stream_waiting = true;
        return;
    }
}

void rt_stream_live(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e)
{
    if (!conn->stream_waiting)
        return; /* still paging through the file; it will get there */
    if (e->type == RT_SEVT_JOB_SAMPLE && e->index == conn->stream_next) {
        conn->stream_next++;
        if (conn->stream_csv) {
            struct printbuf *pb = printbuf_new();
            if (conn->stream_header) {
                pb_puts(pb, RT_CSV_HEADER);
                printbuf_strappend(pb, "\n");
                conn->stream_header = false;
            }
            printbuf_memappend(pb, e->csv->data, (int)e->csv->len);
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "samples", NULL);
            json_object_object_add(p, "csv", json_object_new_string_len(pb->buf, pb->bpos));
            json_object_object_add(p, "next_offset", rt_json_u64(conn->stream_next));
            json_object_object_add(p, "ended", json_object_new_boolean(0));
            printbuf_free(pb);
            rt_conn_reply(srv, conn, p, true);
        } else {
            struct printbuf *pb = printbuf_new();
            printbuf_strappend(pb, "{\"parameters\":{\"samples\":[");
            printbuf_memappend(pb, e->json->data, (int)e->json->len);
            char tail[96];
            snprintf(tail, sizeof(tail), "],\"csv\":null,\"next_offset\":%" PRIu64 ",\"ended\":false},\"continues\":true}",
                     conn->stream_next);
            pb_puts(pb, tail);
            if (!conn->oneway)
                rt_conn_send_raw(srv, conn, pb->buf, (size_t)pb->bpos);
            printbuf_free(pb);
        }
    } else if (e->type == RT_SEVT_JOB_SAMPLE && e->index > conn->stream_next) {
        conn->stream_waiting = false; /* we missed some: read them from the file */
        rt_stream_pump(srv, conn);
    } else if (e->type == RT_SEVT_JOB_ENDED) {
        conn->stream_waiting = false;
        rt_stream_pump(srv, conn);
    }
}

static void m_get_job_samples(struct rt_call *c)
{
    static const char *const keys[] = {"id", "name", "offset", "limit", "format", "follow", NULL};
    struct json_object *off_o, *lim_o, *fmt_o, *fol_o;
    if (!only_keys(c, keys) || !opt(c, "offset", json_type_int, &off_o) ||
        !opt(c, "limit", json_type_int, &lim_o) || !opt(c, "format", json_type_string, &fmt_o) ||
        !opt(c, "follow", json_type_boolean, &fol_o))
        return;
    int64_t offset = off_o ? json_object_get_int64(off_o) : 0;
    int64_t limit = lim_o ? json_object_get_int64(lim_o) : PAGE_DEFAULT;
    const char *fmt = fmt_o ? json_object_get_string(fmt_o) : "json";
    bool follow = fol_o && json_object_get_boolean(fol_o);
    if (offset < 0) {
        rt_call_invalid_param(c, "offset");
        return;
    }
    if (limit <= 0 || limit > PAGE_MAX) {
        rt_call_invalid_param(c, "limit");
        return;
    }
    if (strcmp(fmt, "json") != 0 && strcmp(fmt, "csv") != 0) {
        rt_call_invalid_param(c, "format");
        return;
    }
    if (follow && !c->more) {
        rt_call_error(c, "org.varlink.service.ExpectedMore", NULL);
        return;
    }
    struct rt_job *j = lookup_job(c);
    if (!j)
        return;
    uint64_t id = j->id;
    rt_jobs_unlock(&rt_server_daemon(c->srv)->jobs);
    struct rt_conn *conn = c->conn;
    conn->stream = RT_STREAM_JOB;
    conn->stream_job = id;
    conn->stream_next = (uint64_t)offset;
    conn->stream_csv = strcmp(fmt, "csv") == 0;
    conn->stream_header = conn->stream_csv && offset == 0;
    conn->stream_follow = follow;
    conn->stream_waiting = false;
    if (c->more) {
        conn->busy = true;
        rt_stream_pump(c->srv, conn);
        return;
    }
    /* A single page. */
    struct rt_daemon *d = rt_server_daemon(c->srv);
    uint64_t produced = 0;
    bool ended = false;
    struct page pg = {0};
    if (job_progress(d, id, &produced, &ended) && conn->stream_next < produced)
        read_page(d, id, conn->stream_next, (size_t)limit, &pg);
    conn->stream_next += pg.n;
    send_page(c->srv, conn, pg.buf ? pg.buf : "", pg.len, conn->stream_next,
              ended && conn->stream_next >= produced, false);
    free(pg.buf);
    conn->stream = RT_STREAM_NONE;
}

/* ---- completion of sampler requests ---- */

void rt_methods_request_done(struct rt_server *srv, struct rt_sreq *q)
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
        if (q->result == 0) {
            rt_jobs_lock(&d->jobs);
            struct rt_job *j = rt_jobs_find(&d->jobs, q->job_id);
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "job", j ? job_json(d, j) : NULL);
            rt_jobs_unlock(&d->jobs);
            rt_conn_reply(srv, conn, p, false);
        } else if (q->result == -ESRCH) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "pid", json_object_new_int64(q->job ? q->job->pid : 0));
            rt_conn_error(srv, conn, E_PREFIX "NoSuchProcess", p);
        } else if (q->result == -ENOENT) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "id", rt_json_u64(q->job_id));
            json_object_object_add(p, "name", NULL);
            rt_conn_error(srv, conn, E_PREFIX "NoSuchJob", p);
        } else if (q->result == -EALREADY) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "id", rt_json_u64(q->job_id));
            rt_conn_error(srv, conn, E_PREFIX "JobNotRunning", p);
        } else {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "reason", json_object_new_string(q->error[0] ? q->error : strerror(-q->result)));
            rt_conn_error(srv, conn, E_PREFIX "InternalError", p);
        }
        rt_conn_done(srv, conn);
    }
    rt_sreq_free(q);
}

/* ---- dispatch ---- */

struct method {
    const char *name;
    void (*fn)(struct rt_call *c);
    bool streams; /* accepts "more" */
};

static const struct method tracker_methods[] = {
    {"Ping", m_ping, false},
    {"Info", m_info, false},
    {"GetHostSample", m_get_host_sample, false},
    {"StreamHostSamples", m_stream_host_samples, true},
    {"StartJob", m_start_job, false},
    {"FinishJob", m_finish_job, false},
    {"StopJob", m_stop_job, false},
    {"ListJobs", m_list_jobs, false},
    {"GetJob", m_get_job, false},
    {"GetJobSamples", m_get_job_samples, true},
};

static const struct method service_methods[] = {
    {"GetInfo", m_get_info, false},
    {"GetInterfaceDescription", m_get_interface_description, false},
};

static void run_method(struct rt_call *c, const struct method *m, size_t n, const char *iface)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(c->method, m[i].name) != 0)
            continue;
        if (c->more && !m[i].streams) {
            rt_call_invalid_param(c, "more");
            return;
        }
        m[i].fn(c);
        return;
    }
    /* The name as called, whatever its length (a cut could split a UTF-8
     * sequence). */
    char *full = rt_xasprintf("%s.%s", iface, c->method);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "method", json_object_new_string(full));
    free(full);
    rt_call_error(c, "org.varlink.service.MethodNotFound", p);
}

void rt_methods_dispatch(struct rt_call *c, const char *iface)
{
    if (strcmp(iface, RT_VL_INTERFACE) == 0) {
        run_method(c, tracker_methods, RT_ARRAY_SIZE(tracker_methods), iface);
    } else if (strcmp(iface, "org.varlink.service") == 0) {
        run_method(c, service_methods, RT_ARRAY_SIZE(service_methods), iface);
    } else {
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "interface", json_object_new_string(iface));
        rt_call_error(c, "org.varlink.service.InterfaceNotFound", p);
    }
}
