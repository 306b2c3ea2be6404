/* The sampler thread: ticks on absolute deadlines, the host sample, then
 * every due job from one shared process scan. */
#include "sampler/internal.h"

#include "rt/sample_json.h"
#include "rt/util.h"
#include "system/log.h"
#include "system/process_limits.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define RECORD_EVERY 60                 /* ticks between record saves of running jobs */
#define RETENTION_EVERY_NS (60 * RT_NSEC_PER_SEC)
#define RETENTION_SOON_NS RT_NSEC_PER_SEC
/* What ended jobs left to write takes at most this share of an interval per
 * tick (one job at least): a burst of short jobs is done over a few ticks. */
#define ENDED_SHARE 20
/* Memory that ended jobs held goes back to the kernel a second after they
 * ended (the main loop has let go of their events by then), and at most
 * every 10 s while jobs keep ending. */
#define RELEASE_AFTER_NS RT_NSEC_PER_SEC
#define RELEASE_EVERY_NS (10 * RT_NSEC_PER_SEC)
#define LEDGER_EVERY_NS (60 * RT_NSEC_PER_SEC) /* as running jobs' records */

/* Deadlines within this of each other are one tick: grids that meet share
 * the host sample and the process scan. */
#define SLACK_NS (2 * 1000 * 1000)

/* The first point of the grid origin + k·iv after `after`. */
static uint64_t grid_next(uint64_t origin, uint64_t iv, uint64_t after)
{
    return after < origin ? origin : origin + ((after - origin) / iv + 1) * iv;
}

void rt_sampler_schedule_job(struct rt_sampler *s, struct rt_job *j, uint64_t now)
{
    /* On the grid of its interval from the host's origin: a job at the
     * daemon's interval (or a multiple) ticks with the host, jobs of one
     * interval tick together. The first sample half an interval after the
     * start at least. */
    j->interval_ns = (uint64_t)llround(j->interval_secs * 1e9);
    j->due_ns = grid_next(s->grid_origin_ns, j->interval_ns, now + j->interval_ns / 2);
}

/* The earliest deadline: the host's or a job's. */
static uint64_t next_deadline(const struct rt_sampler *s)
{
    uint64_t d = s->ticker.deadline_ns;
    for (size_t i = 0; i < s->nactive; i++)
        if (s->active[i]->due_ns < d)
            d = s->active[i]->due_ns;
    return d;
}

static int arm_timer(struct rt_sampler *s)
{
    uint64_t iv = atomic_load(&s->host_interval_ns);
    if (iv != s->ticker.interval_ns) { /* a reload changed the base interval: a new grid */
        uint64_t now = rt_mono_ns();
        rt_ticker_init(&s->ticker, iv, now);
        s->grid_origin_ns = s->ticker.deadline_ns;
        for (size_t i = 0; i < s->nactive; i++)
            rt_sampler_schedule_job(s, s->active[i], now);
    }
    uint64_t d = next_deadline(s);
    struct itimerspec its = {
        .it_value = {.tv_sec = (time_t)(d / RT_NSEC_PER_SEC), .tv_nsec = (long)(d % RT_NSEC_PER_SEC)},
    };
    if (timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        rt_err("sampler: cannot arm the tick timer: %s", strerror(errno));
        return -errno;
    }
    return 0;
}

/* The host sample of a tick; published to host streams only on the host's
 * own grid (a job's faster interval does not speed up theirs). */
static void host_tick(struct rt_sampler *s, bool publish)
{
    rt_sample_reset(&s->sample);
    rt_host_sampler_collect(s->host, &s->sample);
    rt_gpu_collect(s->gpu, &s->sample);
    s->host_timestamp_ms = s->sample.timestamp_ms;
    s->host_has_interval = s->sample.has_interval;
    s->host_interval_ms = s->sample.actual_interval_ms;
    unsigned amd = 0;
    for (size_t i = 0; i < s->sample.n_gpus; i++)
        amd += s->sample.gpus[i].vendor && strcmp(s->sample.gpus[i].vendor, "amd") == 0;
    atomic_store(&s->ngpus, (unsigned)s->sample.n_gpus);
    atomic_store(&s->ngpus_amd, amd);
    if (!s->host_pb && !(s->host_pb = printbuf_new()))
        abort();
    printbuf_reset(s->host_pb);
    rt_sample_json_text(&s->sample, s->host_pb); /* no tree: most of a tick's own work was one */
    struct rt_rcstr *str = rt_rcstr_new(s->host_pb->buf, (size_t)s->host_pb->bpos);
    rt_sampler_host_stored(s, str);
    pthread_mutex_lock(&s->mu);
    rt_rcstr_unref(s->latest);
    s->latest = rt_rcstr_ref(str);
    s->latest_tick = s->tick_no;
    pthread_mutex_unlock(&s->mu);
    if (!publish) {
        rt_rcstr_unref(str);
        return;
    }
    struct rt_sevt *e = rt_sevt_new(RT_SEVT_HOST);
    e->index = s->tick_no;
    e->json = str;
    rt_sampler_publish(s, e, atomic_load(&s->quiet_ticks));
}

/* The usage of GPU processes in no job: kept as long as jobs are. */
static void save_ledger(struct rt_sampler *s, bool sync)
{
    uint64_t age = atomic_load(&s->retention_age);
    if (age)
        rt_gpuuse_prune(s->gpuuse, (double)rt_real_ns() / 1e9 - (double)age);
    if (!s->state || s->state->dir_fd < 0)
        return;
    int r = rt_gpuuse_save(s->gpuuse, s->state->dir_fd, s->state->file_mode, sync);
    if (r < 0)
        rt_log_once(&s->ledger_warned, LOG_ERR, "cannot save the GPU usage outside jobs: %s", strerror(-r));
}

/* Who holds each GPU, after the jobs' samples of the tick: their process
 * lists are this tick's (or, for jobs not due, their last sample's). */
static void gpu_holders(struct rt_sampler *s)
{
    if (s->nactive > s->gpu_jobs_cap) {
        s->gpu_jobs_cap = s->nactive;
        s->gpu_jobs = rt_xrealloc(s->gpu_jobs, s->gpu_jobs_cap * sizeof(*s->gpu_jobs));
    }
    for (size_t i = 0; i < s->nactive; i++) {
        const struct rt_job *j = s->active[i];
        s->gpu_jobs[i] = (struct rt_gpuuse_job){.id = j->id, .name = j->name, .owner = j->owner_uid,
                                                .pids = j->cgroup ? (const int32_t *)j->cg_pids : j->tree.pids,
                                                .npids = j->cgroup ? j->cg_npids : j->tree.npids,
                                                .assigned = j->gpus_assigned};
    }
    rt_sampler_begin_scan(s, false);
    rt_gpuuse_tick(s->gpuuse, s->gpu, &s->cache, s->gpu_jobs, s->nactive);
}

/* Without a pidfd: has the root exited (gone, reused PID, or a zombie)? */
static bool root_ended(struct rt_sampler *s, const struct rt_job *j)
{
    rt_sampler_begin_scan(s, false);
    const struct rt_pinfo *pi = rt_proc_cache_get(&s->cache, j->pid, 0);
    return !pi || pi->st.starttime != j->starttime || pi->st.state == 'Z';
}

/* The next deadline on a job's grid after now (missed ones are skipped). */
static void job_advance(struct rt_sampler *s, struct rt_job *j, uint64_t now)
{
    j->due_ns += j->interval_ns;
    if (j->due_ns <= now)
        j->due_ns = grid_next(s->grid_origin_ns, j->interval_ns, now);
}

/* malloc keeps what is freed in the middle of its arenas resident: what
 * ended jobs held and the buffers of their end (their samples sealed, their
 * records written) stayed, and the RSS grew with every churn of jobs
 * (docs/performance.md, "A soak"). */
static void release_memory(struct rt_sampler *s, uint64_t now)
{
    if (s->release_wanted && !s->release_at_ns) {
        uint64_t soon = now + RELEASE_AFTER_NS, allowed = s->released_ns + RELEASE_EVERY_NS;
        s->release_at_ns = soon > allowed ? soon : allowed;
    }
    s->release_wanted = false;
    if (!s->release_at_ns || now < s->release_at_ns)
        return;
    rt_process_malloc_release();
    s->released_ns = now;
    s->release_at_ns = 0;
}

static void tick(struct rt_sampler *s)
{
    uint64_t now = rt_mono_ns();
    bool host_due = now + SLACK_NS >= s->ticker.deadline_ns;
    if (s->o.stall_file && access(s->o.stall_file, F_OK) == 0) {
        /* Test hook for the watchdog: behave like a sampler stuck in a driver call. */
        rt_log_once(&s->stall_logged, LOG_WARNING, "sampler stalled by test hook %s", s->o.stall_file);
        for (size_t i = 0; i < s->nactive; i++)
            if (s->active[i]->due_ns <= now + SLACK_NS)
                job_advance(s, s->active[i], now);
        if (host_due)
            rt_ticker_advance(&s->ticker, now);
        return;
    }
    s->tick_no++;
    host_tick(s, host_due);
    for (size_t i = 0; i < s->nactive;) {
        struct rt_job *j = s->active[i];
        if (j->pid > 0 && j->pidfd < 0 && root_ended(s, j)) {
            rt_sampler_end_job(s, j, RT_END_ROOT_EXITED, false, 0, 0); /* moves the last job into slot i */
            continue;
        }
        /* A cgroup in v1 only has no cgroup.events to watch: asked each tick. */
        if (j->cg_watch < 0 && rt_cgroup_job_ended(s, j)) {
            rt_sampler_end_job(s, j, RT_END_CGROUP_EMPTY, false, 0, 0);
            continue;
        }
        i++;
        if (j->due_ns > now + SLACK_NS)
            continue;
        job_advance(s, j, now);
        struct rt_ptree_result r;
        if (rt_sampler_job_sample(s, j, false, &r) && j->summary.samples % RECORD_EVERY == 0)
            rt_sampler_save_record(s, j, false);
    }
    gpu_holders(s);
    /* Wakes the main loop for the tick's job samples too. */
    struct rt_sevt *done = rt_sevt_new(RT_SEVT_TICK_DONE);
    done->index = s->tick_no;
    rt_sampler_publish(s, done, atomic_load(&s->quiet_ticks));
    if (host_due)
        rt_ticker_advance(&s->ticker, now);
    rt_sampler_seal_one(s);
    rt_sampler_finish_ended(s, atomic_load(&s->host_interval_ns) / ENDED_SHARE);
    now = rt_mono_ns();
    release_memory(s, now);
    /* Every minute, and soon after jobs end: a user who starts and stops
     * jobs in a loop must not run past the limits for a minute. */
    if (now >= s->next_retention_ns ||
        (s->ended_since_retention && now + RETENTION_EVERY_NS - RETENTION_SOON_NS >= s->next_retention_ns)) {
        rt_sampler_retention(s);
        s->ended_since_retention = 0;
        s->next_retention_ns = now + RETENTION_EVERY_NS;
    }
    if (now >= s->next_ledger_ns) {
        save_ledger(s, false);
        s->next_ledger_ns = now + LEDGER_EVERY_NS;
    }
    atomic_store(&s->heartbeat, now);
}

/* A watched cgroup.events changed (or the cgroup went): cgroup jobs whose
 * cgroup emptied end now. */
static void cgroups_changed(struct rt_sampler *s)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (read(s->inotify_fd, buf, sizeof(buf)) > 0) {
    }
    for (size_t i = 0; i < s->nactive;) {
        struct rt_job *j = s->active[i];
        if (j->cg_watch >= 0 && rt_cgroup_job_ended(s, j)) {
            rt_sampler_end_job(s, j, RT_END_CGROUP_EMPTY, false, 0, 0); /* moves the last job into slot i */
            continue;
        }
        i++;
    }
}

static void *run(void *arg)
{
    struct rt_sampler *s = arg;
    struct epoll_event evs[32];
    while (!atomic_load(&s->stop)) {
        int n = epoll_wait(s->epfd, evs, RT_ARRAY_SIZE(evs), -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rt_err("sampler: epoll_wait: %s", strerror(errno));
            break;
        }
        bool due = false;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &s->req_efd) {
                rt_sampler_drain_requests(s);
            } else if (p == &s->timer_fd) {
                uint64_t exp;
                if (read(s->timer_fd, &exp, sizeof(exp)) > 0)
                    due = true;
            } else if (p == &s->inotify_fd) {
                cgroups_changed(s);
            } else {
                struct rt_job *j = p;
                if (j->tracking)
                    rt_sampler_end_job(s, j, RT_END_ROOT_EXITED, false, 0, 0);
            }
        }
        if (due && !atomic_load(&s->stop))
            tick(s);
        /* A job that began or ended, or a new base interval, moves the next deadline. */
        if (!atomic_load(&s->stop))
            arm_timer(s);
    }
    return NULL;
}

struct rt_sampler *rt_sampler_new(const struct rt_sampler_opts *o, struct rt_jobs *jobs,
                                  struct rt_state_dir *state)
{
    struct rt_sampler *s = rt_xcalloc(1, sizeof(*s));
    s->o = *o;
    s->jobs = jobs;
    s->state = state;
    pthread_mutex_init(&s->mu, NULL);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->req_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->out_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    struct epoll_event req = {.events = EPOLLIN, .data.ptr = &s->req_efd};
    struct epoll_event timer = {.events = EPOLLIN, .data.ptr = &s->timer_fd};
    struct epoll_event cgroups = {.events = EPOLLIN, .data.ptr = &s->inotify_fd};
    /* rt_sampler_start() reports it. */
    if (s->epfd < 0 || s->req_efd < 0 || s->out_efd < 0 || s->timer_fd < 0 || s->inotify_fd < 0 ||
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->req_efd, &req) < 0 ||
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->timer_fd, &timer) < 0 ||
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->inotify_fd, &cgroups) < 0)
        s->setup_errno = errno;
    rt_proc_cache_init(&s->cache, o->roots->proc_fd);
    rt_sample_init(&s->sample);
    rt_sampler_set_retention(s, o->retention_max_age_secs, o->retention_max_bytes, o->retention_max_jobs_per_uid);
    s->host = rt_host_sampler_new(o->roots, o->interval_secs);
    struct rt_gpu_options go = {.poll_interval_secs = o->interval_secs,
                                .nvml_library = o->nvml_library,
                                .disable_nvml = o->disable_gpu,
                                .disable_amd = o->disable_gpu};
    s->gpu = rt_gpu_collector_new(o->roots, &go);
    s->gpuuse = rt_gpuuse_new(&o->gpu_idle);
    if (state && state->dir_fd >= 0)
        rt_gpuuse_load(s->gpuuse, state->dir_fd);
    s->next_ledger_ns = rt_mono_ns() + LEDGER_EVERY_NS;
    return s;
}

void rt_sampler_set_retention(struct rt_sampler *s, uint64_t max_age_secs, uint64_t max_bytes,
                              unsigned max_jobs_per_uid)
{
    atomic_store(&s->retention_age, max_age_secs);
    atomic_store(&s->retention_bytes, max_bytes);
    atomic_store(&s->retention_jobs, max_jobs_per_uid);
}

void rt_sampler_set_gpu_idle(struct rt_sampler *s, const struct rt_gpuuse_config *c)
{
    rt_gpuuse_set_config(s->gpuuse, c);
}

struct rt_gpuuse *rt_sampler_gpuuse(struct rt_sampler *s) { return s->gpuuse; }

void rt_sampler_set_interval(struct rt_sampler *s, double interval_secs)
{
    atomic_store(&s->host_interval_ns, (uint64_t)llround(interval_secs * 1e9));
    uint64_t one = 1; /* the sampler re-arms its timer after any wake-up */
    if (write(s->req_efd, &one, sizeof(one)) < 0)
        rt_warn("sampler: cannot wake for a new interval: %s", strerror(errno));
}

void rt_sampler_set_upload(struct rt_sampler *s, struct rt_upload_worker *w)
{
    s->o.upload = w;
}

/* The first sample, and the grid the ticks follow. */
static void prime(struct rt_sampler *s)
{
    /* The first sample exists before anyone is told we are ready. */
    host_tick(s, true);
    atomic_store(&s->heartbeat, rt_mono_ns());
    s->next_retention_ns = rt_mono_ns();
    atomic_store(&s->host_interval_ns, (uint64_t)llround(s->o.interval_secs * 1e9));
    rt_ticker_init(&s->ticker, atomic_load(&s->host_interval_ns), rt_mono_ns());
    s->grid_origin_ns = s->ticker.deadline_ns;
}

int rt_sampler_start(struct rt_sampler *s)
{
    if (s->setup_errno) {
        rt_err("sampler: cannot create its event descriptors: %s", strerror(s->setup_errno));
        return -s->setup_errno;
    }
    prime(s);
    int r = arm_timer(s);
    if (r < 0)
        return r;
    /* Signals are handled by the main thread only. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    r = pthread_create(&s->thread, NULL, run, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0)
        return -r;
    pthread_setname_np(s->thread, "rt-sampler"); /* for top -H and the benchmarks */
    s->started = true;
    return 0;
}

void rt_sampler_stop(struct rt_sampler *s)
{
    if (s->stopped)
        return;
    s->stopped = true;
    if (s->started) {
        atomic_store(&s->stop, true);
        uint64_t one = 1;
        if (write(s->req_efd, &one, sizeof(one)) < 0)
            rt_warn("sampler: cannot wake for stop: %s", strerror(errno));
        pthread_join(s->thread, NULL);
        s->started = false;
    }
    rt_sampler_finish_ended(s, UINT64_MAX);
    save_ledger(s, true);
    /* Running jobs stay "running" on disk and are resumed at the next start. */
    for (size_t i = 0; i < s->nactive; i++) {
        struct rt_job *j = s->active[i];
        rt_samples_flush(&s->state->samples, j->fig);
        rt_sampler_save_record(s, j, true);
    }
    rt_state_dir_settle(s->state, true);
}

void rt_sampler_test_tick(struct rt_sampler *s)
{
    if (!s->latest)
        prime(s);
    tick(s);
}

void rt_sampler_test_request(struct rt_sampler *s, struct rt_sreq *q)
{
    rt_sampler_handle_request(s, q);
}

void rt_sampler_free(struct rt_sampler *s)
{
    if (!s)
        return;
    rt_sampler_stop(s);
    for (size_t i = 0; i < s->nactive; i++) {
        struct rt_job *j = s->active[i];
        rt_ptree_free(&j->tree);
        j->tracking = false;
    }
    free(s->active);
    rt_buf_free(&s->text);
    free(s->figs);
    free(s->ended);
    rt_csv_host_free(&s->csv_host);
    /* Requests never answered and undelivered events. */
    for (struct rt_sreq *q = s->reqs; q;) {
        struct rt_sreq *n = q->next;
        rt_sreq_free(q);
        q = n;
    }
    for (struct rt_sevt *e = s->out; e;) {
        struct rt_sevt *n = e->next;
        rt_sreq_free(e->req);
        rt_sevt_free(e);
        e = n;
    }
    rt_rcstr_unref(s->latest);
    if (s->host_pb)
        printbuf_free(s->host_pb);
    rt_sample_free(&s->sample);
    rt_host_sampler_free(s->host);
    rt_gpuuse_free(s->gpuuse);
    free(s->gpu_jobs);
    rt_gpu_collector_free(s->gpu);
    rt_proc_cache_free(&s->cache);
    int fds[] = {s->epfd, s->req_efd, s->out_efd, s->timer_fd, s->inotify_fd};
    for (size_t i = 0; i < RT_ARRAY_SIZE(fds); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
