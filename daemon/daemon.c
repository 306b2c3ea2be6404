#include "daemon.h"

#include "listen.h"
#include "log.h"
#include "rt/paths.h"
#include "rt/util.h"
#include "server.h"

#include <errno.h>
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
        rt_server_reap(d->server);
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

    struct rt_sampler_opts so = {
        .interval_secs = d->cfg.interval_secs,
        .roots = &d->roots,
        .with_pss = true,
        .stall_file = getenv("RESOURCE_TRACKERD_TEST_STALL_FILE"),
        .retention_max_age_secs = d->cfg.retention_max_age_secs,
        .retention_max_bytes = d->cfg.retention_max_bytes,
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
