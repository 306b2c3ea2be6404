#include "daemon.h"

#include "system/credential.h"
#include "system/events.h"
#include "system/listen.h"
#include "system/log.h"
#include "system/notify.h"
#include "system/process_limits.h"
#include "config/options.h"
#include "rt/json.h"
#include "rt/paths.h"
#include "rt/sample.h"
#include "rt/varlink.h"
#include "rt/util.h"
#include "api/api.h"
#include "api/job_access.h"
#include "jobs/adopt.h"
#include "notice/defaults.h"
#include "notice/notice.h"
#include "notice/target.h"
#include "upload/upload.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* epoll tags of the main loop's own fds */
static int tag_signal, tag_sampler, tag_timer;

static void resolve_admin_group(struct rt_daemon *d)
{
    d->has_admin_gid = false;
    if (!d->cfg.admin_group[0])
        return;
    struct group gr, *res = NULL;
    char buf[4096];
    if (getgrnam_r(d->cfg.admin_group, &gr, buf, sizeof(buf), &res) == 0 && res) {
        d->admin_gid = gr.gr_gid;
        d->has_admin_gid = true;
    } else {
        rt_debug("admin group %s does not exist: only root administers", d->cfg.admin_group);
    }
}

static int open_socket(struct rt_daemon *d)
{
    char err[512];
    if (d->listen_fd >= 0)
        return 0; /* handed over by systemd */
    int dir = -1;
    if (d->cfg.user_mode) {
        dir = rt_user_socket_dir_open(d->cfg.socket_path, true);
        if (dir < 0) {
            rt_err("cannot prepare the socket directory of %s: %s", d->cfg.socket_path, strerror(-dir));
            return dir;
        }
    } else {
        char tmp[PATH_MAX];
        rt_strlcpy(tmp, d->cfg.socket_path, sizeof(tmp));
        if (mkdir(dirname(tmp), 0755) < 0 && errno != EEXIST) {
            rt_err("cannot create the directory of %s: %s", d->cfg.socket_path, strerror(errno));
            return -errno;
        }
    }
    /* Every call is authorised from SO_PEERCRED, so the system socket is
     * open to all local users; a user daemon's is private. */
    int fd = rt_listen_unix(d->cfg.socket_path, dir, d->cfg.user_mode ? 0600 : 0666, err, sizeof(err));
    if (dir >= 0)
        close(dir);
    if (fd < 0) {
        rt_err("%s", err);
        return fd;
    }
    d->listen_fd = fd;
    return 0;
}

/* The state directory; a user daemon whose home cannot hold it (HOME=/nonexistent)
 * uses the fallback next to its socket: jobs do not outlive a reboot there,
 * but the daemon runs. */
static int open_store(struct rt_daemon *d)
{
    char err[512], err2[512];
    int r = rt_state_dir_open(&d->state, d->cfg.state_dir, d->cfg.user_mode, err, sizeof(err));
    if (r == 0)
        return 0;
    if (!d->state_fallback[0] || strcmp(d->state_fallback, d->cfg.state_dir) == 0) {
        rt_err("%s", err);
        return r;
    }
    if ((r = rt_state_dir_open(&d->state, d->state_fallback, true, err2, sizeof(err2))) < 0) {
        rt_err("%s", err);
        rt_err("%s", err2);
        return r;
    }
    rt_warn("%s; keeping jobs in %s instead", err, d->state_fallback);
    rt_strlcpy(d->cfg.state_dir, d->state_fallback, sizeof(d->cfg.state_dir));
    return 0;
}

/* GPU model, count and memory of the host, from the latest sample. */
static void gpus_from_latest_sample(struct rt_daemon *d, struct rt_host_info *info)
{
    struct rt_sampler *s = d->sampler;
    struct rt_rcstr *latest = s ? rt_sampler_latest_host(s, NULL) : NULL;
    if (!latest)
        return;
    char err[128];
    struct json_object *o = rt_vl_parse(latest->data, latest->len, err, sizeof(err));
    struct json_object *gpus = rt_json_get_array(o, "gpu");
    size_t n = gpus ? json_object_array_length(gpus) : 0;
    uint64_t mib = 0, total;
    for (size_t i = 0; i < n; i++)
        if (rt_json_get_u64(json_object_array_get_idx(gpus, i), "vram_total_bytes", &total))
            mib += total / RT_MIB;
    if (n)
        rt_host_info_set_gpus(info, rt_json_get_string(json_object_array_get_idx(gpus, 0), "name"),
                              (unsigned)n, mib);
    json_object_put(o);
    rt_rcstr_unref(latest);
}

void rt_daemon_host_info(struct rt_daemon *d, struct rt_host_info *out)
{
    *out = d->host;
    gpus_from_latest_sample(d, out);
}

struct rt_cloud_discovery *rt_daemon_cloud(struct rt_daemon *d)
{
    /* Tests point the probes at a stand-in on loopback. */
    struct rt_cloud_options o = {
        .imds_base = getenv("RESOURCE_TRACKERD_TEST_IMDS_BASE"),
        .alicloud_base = getenv("RESOURCE_TRACKERD_TEST_ALICLOUD_BASE"),
    };
    pthread_mutex_lock(&d->cloud_lock);
    if (!d->cloud)
        d->cloud = rt_cloud_discovery_start(&o);
    struct rt_cloud_discovery *c = d->cloud;
    pthread_mutex_unlock(&d->cloud_lock);
    return c;
}

/* Worker thread: host and cloud facts for POST /runs. */
static void complete_run_fields(struct json_object *fields, void *ctx)
{
    struct rt_daemon *d = ctx;
    struct rt_host_info hi;
    rt_daemon_host_info(d, &hi);
    struct json_object *host = rt_host_info_to_json(&hi);
    json_object_object_foreach(host, hk, hv) json_object_object_add(fields, hk, json_object_get(hv));
    json_object_put(host);
    struct rt_cloud_info info;
    rt_cloud_discovery_wait(rt_daemon_cloud(d), 3000, &info);
    struct json_object *cloud = rt_cloud_info_to_json(&info);
    json_object_object_foreach(cloud, ck, cv) json_object_object_add(fields, ck, json_object_get(cv));
    json_object_put(cloud);
}

/* The default Sentinel token comes from the credential file only: a private
 * daemon inherits the environment of whichever ctl call started it, so an
 * env token would upload later jobs that were started without one. */
static char *default_token(const struct rt_config *c)
{
    char buf[4096];
    if (c->token_credential[0] && rt_credential_read(c->token_credential, buf, sizeof(buf)) > 0) {
        char *t = rt_xstrdup(buf);
        explicit_bzero(buf, sizeof(buf));
        return t;
    }
    return NULL;
}

/* Per-job settings the ctl sends with each job; in the daemon's own
 * environment they are a stale leftover of its starter: ignored. */
static void note_ignored_env(void)
{
    static const char *const names[] = {"SENTINEL_API_TOKEN", "SENTINEL_API_URL", "TRACKER_UPLOAD_INTERVAL"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(names); i++)
        if (getenv(names[i]))
            rt_info("%s in the daemon's environment is ignored: jobs bring their own (resource-trackerctl), "
                    "the defaults come from the configuration file", names[i]);
}

static void start_upload(struct rt_daemon *d)
{
    if (!d->cfg.api_url[0]) {
        /* Spooled data of earlier jobs stays until uploads are enabled again. */
        rt_info("uploads are disabled (upload.api_url is empty)");
        return;
    }
    char spool[PATH_MAX + 8];
    snprintf(spool, sizeof(spool), "%s/spool", d->cfg.state_dir);
    note_ignored_env();
    char *token = default_token(&d->cfg);
    struct rt_upload_config uc = {
        .spool_dir = spool,
        .api_url = d->cfg.api_url,
        .default_token = token,
        .upload_interval_ms = d->cfg.upload_interval_secs * 1000,
        .spool_max_bytes = d->cfg.spool_max_bytes,
        .s3_endpoint = d->cfg.s3_endpoint[0] ? d->cfg.s3_endpoint : NULL,
        .s3_region = d->cfg.s3_region[0] ? d->cfg.s3_region : NULL,
        .complete_run_fields = complete_run_fields,
        .complete_ctx = d,
    };
    d->upload = rt_upload_worker_new(&uc);
    d->has_default_token = token != NULL;
    if (token) {
        explicit_bzero(token, strlen(token));
        free(token);
    }
    if (!d->upload) {
        rt_err("uploads are disabled: the spool %s cannot be used", spool);
        return;
    }
    /* Jobs that were uploading when the daemon stopped: continue or finish. */
    uint64_t *ids = NULL;
    size_t n = rt_upload_resumed_running(d->upload, &ids);
    rt_jobs_lock(&d->jobs);
    for (size_t i = 0; i < n; i++) {
        struct rt_job *j = rt_jobs_find(&d->jobs, ids[i]);
        if (j && j->state == RT_JOB_RUNNING)
            rt_upload_job_begin(d->upload, ids[i], NULL, NULL);
        else
            rt_upload_job_end(d->upload, ids[i],
                              j ? rt_upload_exit_of(j->state == RT_JOB_STOPPED, j->has_exit, j->exit_code)
                                : RT_UPLOAD_EXIT_UNKNOWN);
    }
    rt_jobs_unlock(&d->jobs);
    free(ids);
}

/* Test hook: a small full-disk backlog, so tests reach its limit quickly. */
static size_t test_backlog_bytes(void)
{
    uint64_t v = 0;
    const char *e = getenv("RESOURCE_TRACKERD_TEST_BACKLOG_BYTES");
    return e && rt_parse_u64(e, &v) ? (size_t)v : 0;
}

static void resume_jobs(struct rt_daemon *d)
{
    rt_jobs_lock(&d->jobs);
    for (size_t i = 0; i < d->jobs.n; i++) {
        struct rt_job *j = d->jobs.v[i];
        if (j->state != RT_JOB_RUNNING)
            continue;
        struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
        q->type = RT_SREQ_RESUME;
        q->job = j;
        q->job_id = j->id;
        rt_sampler_submit(d->sampler, q);
    }
    rt_jobs_unlock(&d->jobs);
}

static bool idle(struct rt_daemon *d)
{
    if (rt_server_connections(d->server))
        return false;
    bool running = false;
    rt_jobs_lock(&d->jobs);
    for (size_t i = 0; i < d->jobs.n && !running; i++)
        running = d->jobs.v[i]->state == RT_JOB_RUNNING;
    rt_jobs_unlock(&d->jobs);
    return !running;
}

/* --exit-on-idle: no clients and no running jobs for that long. Uploads
 * still to send keep the daemon (a private one) up to IDLE_UPLOAD_WAIT
 * longer; what is left then waits in the spool for the next start. */
#define IDLE_UPLOAD_WAIT_NS (3600 * RT_NSEC_PER_SEC)

static void idle_exit(struct rt_daemon *d, uint64_t *idle_since)
{
    uint64_t now = rt_mono_ns(), after = d->cfg.exit_on_idle_secs * RT_NSEC_PER_SEC;
    if (!idle(d)) {
        *idle_since = 0;
        return;
    }
    if (!*idle_since)
        *idle_since = now;
    if (now - *idle_since < after)
        return;
    bool uploading = d->upload && rt_upload_busy(d->upload);
    if (uploading && now - *idle_since < after + IDLE_UPLOAD_WAIT_NS) {
        rt_log_once(&d->idle_upload_noted, LOG_INFO, "idle, but uploads are pending: exiting once they are sent");
        return;
    }
    if (uploading)
        rt_notice("idle for %u s with uploads still pending: exiting; they are sent at the next start",
                  d->cfg.exit_on_idle_secs + (unsigned)(IDLE_UPLOAD_WAIT_NS / RT_NSEC_PER_SEC));
    else
        rt_info("idle for %u s, exiting", d->cfg.exit_on_idle_secs);
    rt_strlcpy(d->stop_reason, "idle", sizeof(d->stop_reason));
    d->quit = true;
}

static struct rt_watchdog watchdog;

static unsigned running_jobs(struct rt_daemon *d)
{
    unsigned n = 0;
    rt_jobs_lock(&d->jobs);
    for (size_t i = 0; i < d->jobs.n; i++)
        n += d->jobs.v[i]->state == RT_JOB_RUNNING;
    rt_jobs_unlock(&d->jobs);
    return n;
}

static void send_status(struct rt_daemon *d)
{
    unsigned amd = rt_sampler_gpu_count_amd(d->sampler);
    struct rt_notify_status st = {.jobs_running = running_jobs(d),
                                  .gpus_nvidia = rt_sampler_gpu_count(d->sampler) - amd,
                                  .gpus_amd = amd};
    if (d->upload) {
        uint64_t pending;
        rt_upload_queue(d->upload, &pending, &st.upload_failing);
        st.upload_queue = (unsigned)pending;
    }
    rt_notify_status(&st);
}

static void command_line(const struct rt_job *j, char *buf, size_t size)
{
    buf[0] = '\0';
    struct json_object *cmd = rt_json_get_array(j->metadata, "command");
    size_t len = 0;
    for (size_t i = 0; cmd && i < json_object_array_length(cmd) && len + 1 < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "",
                                json_object_get_string(json_object_array_get_idx(cmd, i)));
}

/* A job that ended (not stopped: its processes go on) is told to its own
 * targets, else to its owner's (notice/defaults.h), else, adopted, to the
 * administrator's (notify.adopted). job: its JSON. */
static void notify_end(struct rt_daemon *d, const struct rt_job *j, struct json_object *job)
{
    if (!d->notice || j->state == RT_JOB_RUNNING || j->state == RT_JOB_STOPPED)
        return;
    struct json_object *defaults = j->notify ? NULL : rt_notice_defaults_get(d->state.dir_fd, j->owner_uid);
    struct json_object *notes = rt_json_get_array(job, "notes");
    bool noteworthy = j->state == RT_JOB_FAILED || (notes && json_object_array_length(notes));
    struct json_object *targets = rt_notice_targets_for(j->notify, defaults, j->adopted, d->cfg.notify_adopted,
                                                        d->cfg.notify_adopted_every_job, noteworthy);
    json_object_put(defaults);
    size_t n = targets ? json_object_array_length(targets) : 0;
    const char *list[RT_NOTICE_MAX_TARGETS];
    for (size_t i = 0; i < n && i < RT_NOTICE_MAX_TARGETS; i++)
        list[i] = json_object_get_string(json_object_array_get_idx(targets, i));
    if (n)
        rt_noticer_send(d->notice, job, j->owner_uid, list, n < RT_NOTICE_MAX_TARGETS ? n : RT_NOTICE_MAX_TARGETS);
    json_object_put(targets);
}

/* The owner's user name for a journal record, into buf; NULL when the uid
 * has none. Looked up with the registry unlocked: a remote user database
 * may be slow. */
static const char *user_name(uid_t uid, char *buf, size_t size)
{
    struct passwd pw, *res = NULL;
    char tmp[4096];
    if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) != 0 || !res)
        return NULL;
    rt_strlcpy(buf, pw.pw_name, size);
    return buf;
}

/* Jobs the daemon makes by itself (jobs/adopt.h), each second: the cgroups
 * the adopt rules match that no running job tracks. An adopted job counts
 * against its user's running jobs like any other. At most CHECKS_PER_SCAN
 * untracked candidates are looked at a second, in turn: a user who makes
 * thousands of matching cgroups in a subtree of theirs costs the main
 * thread ≈ 3 ms a second, and delays, never hides, the others. */
#define CHECKS_PER_SCAN 256
static bool adopting(const struct rt_daemon *d)
{
    struct rt_adopt_rules rules = {d->cfg.adopt_slurm, d->cfg.adopt_containers, d->cfg.adopt_cgroups};
    return rt_adopt_any(&rules) && d->cg_host.mode != RT_CG_MODE_NONE && !d->cfg.user_mode;
}

static void adopt_jobs(struct rt_daemon *d)
{
    if (!adopting(d))
        return;
    struct rt_adopt_rules rules = {d->cfg.adopt_slurm, d->cfg.adopt_containers, d->cfg.adopt_cgroups};
    size_t n, k, checks = 0;
    char **paths = rt_adopt_candidates(&d->cg_host, &rules, &n);
    for (k = 0; k < n && checks < CHECKS_PER_SCAN; k++) {
        size_t i = (d->adopt_cursor + k) % n;
        rt_jobs_lock(&d->jobs);
        bool tracked = rt_jobs_find_tracking(&d->jobs, 0, 0, paths[i]) != NULL;
        rt_jobs_unlock(&d->jobs);
        if (tracked)
            continue;
        /* An empty one (a runtime's leftover) costs a file read. */
        checks++;
        struct rt_job *j = rt_cg_path_populated(&d->cg_host, paths[i]) > 0
                               ? rt_adopt_job(&d->cg_host, &d->roots, paths[i])
                               : NULL;
        if (!j)
            continue;
        rt_jobs_lock(&d->jobs);
        size_t running = rt_jobs_running_for(&d->jobs, j->owner_uid);
        rt_jobs_unlock(&d->jobs);
        uint64_t id;
        if ((j->owner_uid != 0 && running >= d->cfg.max_jobs_per_uid) || rt_state_dir_alloc_id(&d->state, &id) < 0) {
            rt_job_free(j);
            continue;
        }
        j->id = id;
        j->interval_secs = d->cfg.interval_secs;
        j->wants_upload = d->upload && d->has_default_token;
        rt_jobs_lock(&d->jobs);
        rt_jobs_add(&d->jobs, j);
        rt_jobs_unlock(&d->jobs);
        rt_log_user(j->owner_uid, LOG_INFO, "adopted the cgroup %s as job %" PRIu64 " of uid %u", paths[i], id,
                    (unsigned)j->owner_uid);
        struct rt_sreq *q = rt_xcalloc(1, sizeof(*q));
        q->type = RT_SREQ_START;
        q->job = j;
        q->job_id = id;
        rt_sampler_submit(d->sampler, q);
    }
    d->adopt_cursor += k;
    rt_adopt_free(paths, n);
}

/* Journal records of jobs that started or ended, from the sampler's outbox,
 * and the notifications of their ends: what the records say is copied under
 * the registry lock, and sent after. Whether a job started or ended. */
static bool job_events(struct rt_daemon *d, const struct rt_sevt *list)
{
    bool any = false;
    for (const struct rt_sevt *e = list; e; e = e->next) {
        bool started = e->type == RT_SEVT_REQ_DONE && e->req->type == RT_SREQ_START && e->req->result == 0;
        bool resumed = e->type == RT_SEVT_REQ_DONE && e->req->type == RT_SREQ_RESUME; /* or lost */
        if (!started && !resumed && e->type != RT_SEVT_JOB_ENDED)
            continue;
        any = true;
        char id[24], cmd[1024], user[256];
        char *name = NULL;
        struct rt_event_job ej = {.id = id, .command = cmd};
        struct rt_job_summary totals = {0};
        struct rt_event_job_end end = {.totals = &totals};
        struct json_object *job = NULL;
        rt_jobs_lock(&d->jobs);
        struct rt_job *j = rt_jobs_find(&d->jobs, e->type == RT_SEVT_REQ_DONE ? e->req->job_id : e->job_id);
        bool record = j && !resumed;
        if (record) {
            snprintf(id, sizeof(id), "%" PRIu64, j->id);
            command_line(j, cmd, sizeof(cmd));
            ej.name = name = j->name ? rt_xstrdup(j->name) : NULL;
            ej.owner_uid = j->owner_uid;
            ej.root_pid = j->pid;
            totals = j->summary;
            totals.gpus = json_object_get(j->summary.gpus);
            if (!started) {
                job = rt_api_job_json(d, j);
                end = (struct rt_event_job_end){
                    .state = rt_job_state_name(j->state),
                    .exit_status = j->has_exit ? j->exit_code : -1,
                    .duration_usec = (uint64_t)(rt_job_duration(j, j->ended_at) * 1e6),
                    .processes_max = j->summary.peak_children + 1,
                    .totals = &totals,
                    .request = rt_json_get_object(job, "request"),
                    .efficiency = rt_json_get_object(job, "efficiency"),
                    .notes = rt_json_get_array(job, "notes"),
                };
                notify_end(d, j, job);
            }
        } else if (j && j->state == RT_JOB_LOST) { /* it ended while no daemon ran */
            job = rt_api_job_json(d, j);
            notify_end(d, j, job);
        }
        if (j && j->state != RT_JOB_RUNNING) {
            /* Ended: its metadata stays on disk only (rt_api_fill_metadata). */
            json_object_put(j->metadata);
            j->metadata = NULL;
        }
        rt_jobs_unlock(&d->jobs);
        if (record) {
            ej.owner = user_name(ej.owner_uid, user, sizeof(user));
            if (started)
                rt_event_job_started(&ej);
            else
                rt_event_job_finished(&ej, &end);
        }
        json_object_put(job);
        json_object_put(totals.gpus);
        free(name);
    }
    return any;
}

static struct rt_gpuuse_config gpu_idle_config(const struct rt_config *c)
{
    return (struct rt_gpuuse_config){.idle_after_secs = c->gpu_idle_after_secs,
                                     .idle_util_max = c->gpu_idle_util_max,
                                     .idle_vram_min = c->gpu_idle_vram_min_bytes};
}

/* SIGHUP: re-read the file; a bad one keeps the running configuration. */
static void reload(struct rt_daemon *d)
{
    rt_notify_reloading();
    const char *path = d->config_path[0] ? d->config_path : RT_DEFAULT_CONFIG_FILE;
    struct rt_daemon next = {.overrides = d->overrides};
    rt_strlcpy(next.config_path, d->config_path, sizeof(next.config_path));
    char err[1024];
    if (rt_options_config(&next, err, sizeof(err)) < 0) {
        rt_event_config_rejected(path, err);
        rt_notify_ready();
        return;
    }
    uint64_t changed = rt_config_diff(&d->cfg, &next.cfg);
    uint64_t waiting = rt_config_adopt(&d->cfg, &next.cfg);
    rt_log_set_level(d->cfg.log_level);
    resolve_admin_group(d);
    rt_process_fit_descriptors(d->cfg.max_connections);
    rt_sampler_set_retention(d->sampler, d->cfg.retention_max_age_secs, d->cfg.retention_max_bytes,
                             d->cfg.retention_max_jobs_per_uid);
    rt_sampler_set_interval(d->sampler, d->cfg.interval_secs);
    struct rt_gpuuse_config idle = gpu_idle_config(&d->cfg);
    rt_sampler_set_gpu_idle(d->sampler, &idle);
    rt_api_jobs_changed();
    rt_server_tick(d->server); /* the connections' new limits apply now */
    rt_event_config_reloaded(path, changed, waiting);
    rt_notify_ready();
}

/* STATUS= follows the jobs at once, not at the next housekeeping. */
static void sampler_events(struct rt_daemon *d)
{
    struct rt_sevt *list = rt_sampler_take(d->sampler);
    if (job_events(d, list))
        send_status(d);
    rt_server_sampler_events(d->server, list);
}

/* The main thread wakes only when something is due: the housekeeping timer
 * is armed (one-shot, CLOCK_MONOTONIC) for the earliest of STATUS= every
 * STATUS_EVERY, the watchdog every WatchdogSec/2, every second while it
 * adopts cgroups or may exit on idle, a user's suppressed log lines to sum
 * up, and a connection's next limit (rt_server_due). What quiet ticks leave
 * in the sampler's outbox waits until then (one tick's worth, mailbox.c). */
#define STATUS_EVERY_NS (10 * RT_NSEC_PER_SEC)

struct housekeeping {
    int fd;
    uint64_t ran_ns, armed_ns;
    uint64_t idle_since;
};

static uint64_t earliest(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void housekeeping_arm(struct rt_daemon *d, struct housekeeping *h)
{
    uint64_t period = STATUS_EVERY_NS, wd = rt_watchdog_period_ns(&watchdog);
    if (wd)
        period = earliest(period, wd);
    if (adopting(d) || d->cfg.exit_on_idle_secs)
        period = earliest(period, RT_NSEC_PER_SEC);
    uint64_t at = earliest(h->ran_ns + period, earliest(rt_log_user_due(), rt_server_due(d->server)));
    if (at == h->armed_ns)
        return;
    struct itimerspec its = {.it_value = {(time_t)(at / RT_NSEC_PER_SEC), (long)(at % RT_NSEC_PER_SEC)}};
    if (timerfd_settime(h->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        rt_warn("cannot arm the housekeeping timer: %s", strerror(errno));
    h->armed_ns = at;
}

static void housekeeping(struct rt_daemon *d, struct housekeeping *h)
{
    uint64_t exp;
    if (read(h->fd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
        rt_debug("timerfd: %s", strerror(errno));
    h->armed_ns = 0; /* it fired: disarmed */
    h->ran_ns = rt_mono_ns();
    /* The watchdog is fed only while the sampler keeps ticking. */
    rt_watchdog_check(&watchdog, h->ran_ns, rt_sampler_heartbeat(d->sampler), (uint64_t)(d->cfg.interval_secs * 1e9));
    send_status(d);
    adopt_jobs(d);
    sampler_events(d); /* what ticks left while nobody streamed */
    rt_server_tick(d->server);
    rt_log_user_summaries();
    if (d->cfg.exit_on_idle_secs)
        idle_exit(d, &h->idle_since);
}

static int event_loop(struct rt_daemon *d, int epfd, int sfd, int tfd)
{
    struct housekeeping h = {.fd = tfd, .ran_ns = rt_mono_ns()};
    struct epoll_event evs[64];
    bool turns = false; /* calls wait for their turn: do not block */
    housekeeping_arm(d, &h);
    while (!d->quit) {
        int n = epoll_wait(epfd, evs, RT_ARRAY_SIZE(evs), turns ? 0 : -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rt_err("epoll_wait: %s", strerror(errno));
            return 1;
        }
        for (int i = 0; i < n && !d->quit; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &tag_signal) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                    if (si.ssi_signo == SIGHUP) {
                        reload(d);
                    } else {
                        rt_info("received %s, shutting down", strsignal((int)si.ssi_signo));
                        snprintf(d->stop_reason, sizeof(d->stop_reason), "%s", sigabbrev_np((int)si.ssi_signo));
                        d->quit = true;
                    }
                }
            } else if (tag == &tag_sampler) {
                sampler_events(d);
            } else if (tag == &tag_timer) {
                housekeeping(d, &h);
            } else {
                rt_server_event(d->server, tag, evs[i].events);
            }
        }
        turns = rt_server_settle(d->server);
        rt_sampler_set_quiet_ticks(d->sampler, !rt_server_streaming(d->server));
        housekeeping_arm(d, &h);
    }
    return 0;
}

/* SIGTERM, SIGINT and SIGHUP blocked and readable on a descriptor, or -1. */
static int signal_fd(void)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    int fd = -1;
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || (fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
        rt_err("cannot receive signals: %s", strerror(errno));
    return fd;
}

/* Armed by housekeeping_arm() as the loop goes. */
static int housekeeping_timer(void)
{
    rt_watchdog_init(&watchdog);
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

static bool watch(int epfd, int fd, void *tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

int rt_daemon_run(struct rt_daemon *d)
{
    int rc = 1;
    int epfd = -1, sfd = -1, tfd = -1;
    bool own_socket = false;
    d->start_mono_ns = rt_mono_ns();
    signal(SIGPIPE, SIG_IGN); /* also for a stderr whose reader went away */
    rt_process_malloc_setup();
    rt_process_fit_descriptors(d->cfg.max_connections);
    if (d->log_file[0])
        rt_log_file_expect();
    if (gethostname(d->hostname, sizeof(d->hostname)) < 0)
        rt_strlcpy(d->hostname, "unknown", sizeof(d->hostname));
    resolve_admin_group(d);
    pthread_mutex_init(&d->cloud_lock, NULL);
    rt_jobs_init(&d->jobs);
    d->state.dir_fd = d->state.jobs_fd = -1;
    d->roots.proc_fd = d->roots.sys_fd = -1;
    for (int i = 0; i < RT_CG_NHIER; i++)
        d->cg_host.m[i].fd = -1;

    int r = rt_roots_open(&d->roots, d->cfg.proc_root, d->cfg.sys_root);
    if (r < 0) {
        rt_err("cannot open %s or %s: %s", d->cfg.proc_root, d->cfg.sys_root, strerror(-r));
        goto out;
    }
    /* Without the hierarchies every job is a process tree: tracking goes on. */
    if ((r = rt_cg_host_open(&d->cg_host, &d->roots)) < 0)
        rt_warn("cannot read the cgroup hierarchies: %s; jobs are process trees", strerror(-r));
    else if (d->cfg.cgroup_run && d->cg_host.mode != RT_CG_MODE_NONE && !d->cg_host.favor_dynmods)
        rt_info("moving a command into its cgroup waits for an RCU grace period on this host (about 10 ms at "
                "a lone run's start); a cgroup2 mounted with favordynmods, or a kernel booted with "
                "cgroup_favordynmods=true, does not wait");
    /* The socket before the state: a second daemon started at the same time
     * stops here, before it reads job files the first one is writing. */
    d->listen_fd = rt_listen_fd_from_systemd(d->cfg.socket_path);
    d->socket_activated = d->listen_fd >= 0;
    if (open_socket(d) < 0)
        goto out;
    own_socket = !d->socket_activated;
    if (open_store(d) < 0)
        goto out;
    if (d->log_file[0] && (r = rt_log_file_open(d->state.dir_fd, d->log_file)) < 0)
        rt_warn("cannot open the log file %s: %s", d->log_file, strerror(-r));
    d->state.backlog_max = test_backlog_bytes();
    /* A state directory the store cannot use (host a file or a link) is
     * refused here, with its reason logged, rather than served broken. */
    int loaded = rt_state_dir_load(&d->state, &d->jobs);
    if (loaded < 0)
        goto out;
    if (loaded > 0)
        rt_info("loaded %d jobs from %s", loaded, d->cfg.state_dir);
    rt_host_info_collect(&d->roots, &d->host);

    /* Signals arrive through a signalfd; block them before any thread starts. */
    if ((sfd = signal_fd()) < 0)
        goto out;

    struct rt_sampler_opts so = {
        .interval_secs = d->cfg.interval_secs,
        .roots = &d->roots,
        .cg_host = &d->cg_host,
        .with_pss = true,
        .stall_file = getenv("RESOURCE_TRACKERD_TEST_STALL_FILE"),
        .retention_max_age_secs = d->cfg.retention_max_age_secs,
        .retention_max_bytes = d->cfg.retention_max_bytes,
        .retention_max_jobs_per_uid = d->cfg.retention_max_jobs_per_uid,
        .gpu_idle = gpu_idle_config(&d->cfg),
    };
    d->sampler = rt_sampler_new(&so, &d->jobs, &d->state);
    /* The worker's thread may read d->sampler: create it afterwards. */
    start_upload(d);
    struct rt_notice_config nc = {.sendmail = d->cfg.notify_sendmail, .host = d->hostname};
    d->notice = rt_noticer_new(&nc);
    rt_sampler_set_upload(d->sampler, d->upload);
    r = rt_sampler_start(d->sampler);
    if (r < 0) {
        rt_err("cannot start the sampler thread: %s", strerror(-r));
        goto out;
    }
    resume_jobs(d);

    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 || (tfd = housekeeping_timer()) < 0 ||
        !watch(epfd, sfd, &tag_signal) || !watch(epfd, rt_sampler_event_fd(d->sampler), &tag_sampler) ||
        !watch(epfd, tfd, &tag_timer) || !(d->server = rt_server_new(d, d->listen_fd, epfd))) {
        rt_err("cannot set up the main loop: %s", strerror(errno));
        goto out;
    }

    rt_event_daemon_started(&(struct rt_event_daemon){
        .version = RT_VERSION, .interval_secs = d->cfg.interval_secs, .socket_path = d->cfg.socket_path,
        .socket_activated = d->socket_activated, .state_dir = d->cfg.state_dir,
        .jobs_restored = running_jobs(d), .gpus = rt_sampler_gpu_count(d->sampler)});
    /* STATUS first, so `systemctl show` has it as soon as we are ready. */
    send_status(d);
    rt_notify_ready();
    rt_log_file_takeover();
    rc = event_loop(d, epfd, sfd, tfd);
    rt_notify_stopping("Stopping: flushing samples and uploads");
    rt_event_daemon_stopped(d->stop_reason[0] ? d->stop_reason : "signal",
                            (rt_mono_ns() - d->start_mono_ns) / 1000);

out:
    rt_server_free(d->server);
    d->server = NULL;
    if (d->sampler)
        rt_sampler_stop(d->sampler);
    if (d->upload) {
        /* Bounded: what is not sent stays in the spool for the next start. */
        rt_upload_worker_stop(d->upload, 10000);
        rt_upload_worker_free(d->upload);
        d->upload = NULL;
    }
    if (d->notice) {
        /* Bounded: what is not told by then is dropped, logged once. */
        rt_noticer_stop(d->notice, 5000);
        rt_noticer_free(d->notice);
        d->notice = NULL;
    }
    rt_sampler_free(d->sampler);
    d->sampler = NULL;
    rt_cloud_discovery_free(d->cloud);
    d->cloud = NULL;
    if (d->listen_fd >= 0) {
        close(d->listen_fd);
        if (own_socket)
            unlink(d->cfg.socket_path);
    }
    d->listen_fd = -1;
    if (epfd >= 0)
        close(epfd);
    if (sfd >= 0)
        close(sfd);
    if (tfd >= 0)
        close(tfd);
    rt_state_dir_close(&d->state);
    rt_jobs_free(&d->jobs);
    rt_cg_host_close(&d->cg_host);
    rt_roots_close(&d->roots);
    return rc;
}
