#include "daemon.h"

#include "listen.h"
#include "log.h"
#include "rt/paths.h"
#include "rt/util.h"
#include "server.h"
#include "upload/upload.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
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
    if (d->cfg.user_mode) {
        int r = rt_user_socket_dir_prepare(d->cfg.socket_path);
        if (r < 0) {
            rt_err("cannot prepare the socket directory of %s: %s", d->cfg.socket_path, strerror(-r));
            return r;
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
    int fd = rt_listen_unix(d->cfg.socket_path, d->cfg.user_mode ? 0600 : 0666, err, sizeof(err));
    if (fd < 0) {
        rt_err("%s", err);
        return fd;
    }
    d->listen_fd = fd;
    return 0;
}

/* Worker thread: host and cloud facts for POST /runs. Cloud discovery starts
 * with the first upload, so a daemon that never uploads never probes. */
static void complete_run_fields(struct json_object *fields, void *ctx)
{
    struct rt_daemon *d = ctx;
    struct json_object *host = rt_host_info_to_json(&d->host);
    json_object_object_foreach(host, hk, hv) json_object_object_add(fields, hk, json_object_get(hv));
    json_object_put(host);
    if (!d->cloud)
        d->cloud = rt_cloud_discovery_start(&(struct rt_cloud_options){0});
    struct rt_cloud_info info;
    rt_cloud_discovery_wait(d->cloud, 3000, &info);
    struct json_object *cloud = rt_cloud_info_to_json(&info);
    json_object_object_foreach(cloud, ck, cv) json_object_object_add(fields, ck, json_object_get(cv));
    json_object_put(cloud);
}

/* The default Sentinel token: a systemd credential, else the environment
 * (a private daemon inherits its starter's). NULL when there is none. */
static char *default_token(const struct rt_config *c)
{
    const char *dir = getenv("CREDENTIALS_DIRECTORY");
    if (dir && c->token_credential[0]) {
        char path[PATH_MAX], buf[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, c->token_credential);
        ssize_t n = rt_read_file_at(AT_FDCWD, path, buf, sizeof(buf));
        if (n > 0) {
            char *t = rt_xstrdup(rt_trim(buf));
            explicit_bzero(buf, sizeof(buf));
            if (*t)
                return t;
            free(t);
        }
    }
    const char *env = getenv("SENTINEL_API_TOKEN");
    return env && *env ? rt_xstrdup(env) : NULL;
}

static void start_upload(struct rt_daemon *d)
{
    char spool[PATH_MAX + 8];
    snprintf(spool, sizeof(spool), "%s/spool", d->cfg.state_dir);
    const char *url = getenv("SENTINEL_API_URL");
    const char *iv = getenv("TRACKER_UPLOAD_INTERVAL");
    unsigned interval = d->cfg.upload_interval_secs;
    if (iv && strtoul(iv, NULL, 10) > 0)
        interval = (unsigned)strtoul(iv, NULL, 10);
    char *token = default_token(&d->cfg);
    struct rt_upload_config uc = {
        .spool_dir = spool,
        .api_url = url && *url ? url : d->cfg.api_url,
        .default_token = token,
        .upload_interval_ms = interval * 1000,
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
            rt_upload_job_end(d->upload, ids[i], j && j->has_exit ? j->exit_code : 0);
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

static int event_loop(struct rt_daemon *d, int epfd, int sfd, int tfd)
{
    uint64_t idle_since = 0;
    struct epoll_event evs[64];
    while (!d->quit) {
        int n = epoll_wait(epfd, evs, RT_ARRAY_SIZE(evs), -1);
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
                        rt_info("SIGHUP: nothing to reload without a configuration file");
                    } else {
                        rt_info("received %s, shutting down", strsignal((int)si.ssi_signo));
                        d->quit = true;
                    }
                }
            } else if (tag == &tag_sampler) {
                rt_server_sampler_events(d->server, rt_sampler_take(d->sampler));
            } else if (tag == &tag_timer) {
                uint64_t exp;
                if (read(tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
                    rt_debug("timerfd: %s", strerror(errno));
                if (d->cfg.exit_on_idle_secs) {
                    uint64_t now = rt_mono_ns();
                    if (!idle(d)) {
                        idle_since = 0;
                    } else if (!idle_since) {
                        idle_since = now;
                    } else if (now - idle_since >= d->cfg.exit_on_idle_secs * RT_NSEC_PER_SEC) {
                        rt_info("idle for %u s, exiting", d->cfg.exit_on_idle_secs);
                        d->quit = true;
                    }
                }
            } else {
                rt_server_event(d->server, tag, evs[i].events);
            }
        }
    }
    return 0;
}

int rt_daemon_run(struct rt_daemon *d)
{
    int rc = 1;
    int epfd = -1, sfd = -1, tfd = -1;
    bool own_socket = false;
    char err[512];
    d->start_mono_ns = rt_mono_ns();
    if (gethostname(d->hostname, sizeof(d->hostname)) < 0)
        rt_strlcpy(d->hostname, "unknown", sizeof(d->hostname));
    resolve_admin_group(d);
    rt_jobs_init(&d->jobs);
    d->store.dir_fd = d->store.jobs_fd = -1;
    d->roots.proc_fd = d->roots.sys_fd = -1;

    int r = rt_roots_open(&d->roots, d->cfg.proc_root, d->cfg.sys_root);
    if (r < 0) {
        rt_err("cannot open %s or %s: %s", d->cfg.proc_root, d->cfg.sys_root, strerror(-r));
        goto out;
    }
    if (rt_store_open(&d->store, d->cfg.state_dir, d->cfg.user_mode, err, sizeof(err)) < 0) {
        rt_err("%s", err);
        goto out;
    }
    int loaded = rt_store_load(&d->store, &d->jobs);
    if (loaded > 0)
        rt_info("loaded %d jobs from %s", loaded, d->cfg.state_dir);
    rt_host_info_collect(&d->roots, &d->host);

    /* Signals arrive through a signalfd; block them before any thread starts. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);

    if (open_socket(d) < 0)
        goto out;
    own_socket = !d->socket_activated;
    start_upload(d);

    struct rt_sampler_opts so = {
        .interval_secs = d->cfg.interval_secs,
        .roots = &d->roots,
        .with_pss = true,
        .stall_file = getenv("RESOURCE_TRACKERD_TEST_STALL_FILE"),
        .backlog_max_bytes = test_backlog_bytes(),
        .retention_max_age_secs = d->cfg.retention_max_age_secs,
        .retention_max_bytes = d->cfg.retention_max_bytes,
        .upload = d->upload,
    };
    d->sampler = rt_sampler_new(&so, &d->jobs, &d->store);
    r = rt_sampler_start(d->sampler);
    if (r < 0) {
        rt_err("cannot start the sampler thread: %s", strerror(-r));
        goto out;
    }
    resume_jobs(d);

    epfd = epoll_create1(EPOLL_CLOEXEC);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = {.it_interval = {1, 0}, .it_value = {1, 0}};
    timerfd_settime(tfd, 0, &its, NULL);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_signal};
    epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
    ev.data.ptr = &tag_sampler;
    epoll_ctl(epfd, EPOLL_CTL_ADD, rt_sampler_event_fd(d->sampler), &ev);
    ev.data.ptr = &tag_timer;
    epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev);
    d->server = rt_server_new(d, d->listen_fd, epfd);

    rt_info("resource-trackerd %s listening on %s (interval %.3g s%s)", RT_VERSION, d->cfg.socket_path,
            d->cfg.interval_secs, d->cfg.user_mode ? ", user mode" : "");
    rc = event_loop(d, epfd, sfd, tfd);

out:
    rt_server_free(d->server);
    d->server = NULL;
    rt_sampler_free(d->sampler);
    d->sampler = NULL;
    if (d->upload) {
        /* Bounded: what is not sent stays in the spool for the next start. */
        rt_upload_worker_stop(d->upload, 10000);
        rt_upload_worker_free(d->upload);
        d->upload = NULL;
    }
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
    rt_store_close(&d->store);
    rt_jobs_free(&d->jobs);
    rt_roots_close(&d->roots);
    return rc;
}
