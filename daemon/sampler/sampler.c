#include "sampler/sampler.h"

#include "collect/gpu/gpu.h"
#include "collect/host_sampler.h"
#include "system/log.h"
#include "proc/proccache.h"
#include "proc/procfs.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "sampler/ticker.h"
#include "upload/upload.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define BACKLOG_MAX (16u * 1024 * 1024) /* default: unwritten sample bytes kept per job */
#define RECORD_EVERY 60                 /* ticks between record saves of running jobs */
#define RETENTION_EVERY_NS (60 * RT_NSEC_PER_SEC)
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct rt_sampler {
    struct rt_sampler_opts o;
    size_t backlog_max;
    struct rt_jobs *jobs;
    struct rt_store *store;
    pthread_t thread;
    bool started;
    int epfd, req_efd, out_efd, timer_fd;
    pthread_mutex_t mu; /* reqs, outbox, latest */
    struct rt_sreq *reqs, *reqs_tail;
    struct rt_sevt *out, *out_tail;
    struct rt_rcstr *latest;
    atomic_bool stop;
    _Atomic uint64_t heartbeat;
    atomic_uint ngpus, ngpus_amd;
    _Atomic uint64_t retention_age, retention_bytes;

    /* sampler thread only */
    struct rt_host_sampler *host;
    struct rt_gpu_collector *gpu;
    struct rt_proc_cache cache;
    uint64_t tick_no, cache_tick;
    struct rt_sample sample;
    struct json_object *host_obj;
    unsigned host_lines;        /* job lines made from host_obj this tick */
    uint64_t host_timestamp, host_interval_ms;
    bool host_has_interval;
    struct rt_ticker ticker;
    struct rt_job **active;
    size_t nactive, active_cap;
    char *line;                 /* a job's sample line with its '\n' */
    size_t line_cap;
    uint64_t next_retention_ns;
    bool stall_logged;
    bool pidfd_warned;
};

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* ---- outbox ---- */

static void wake_main(struct rt_sampler *s)
{
    uint64_t one = 1;
    if (write(s->out_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rt_warn("sampler: cannot signal the main loop: %s", strerror(errno));
}

/* Queue an event; the main loop is woken now, or (quiet) once at the end of
 * the tick for all its job samples. */
static void publish_ex(struct rt_sampler *s, struct rt_sevt *e, bool quiet)
{
    pthread_mutex_lock(&s->mu);
    if (s->out_tail)
        s->out_tail->next = e;
    else
        s->out = e;
    s->out_tail = e;
    pthread_mutex_unlock(&s->mu);
    if (!quiet)
        wake_main(s);
}

static void publish(struct rt_sampler *s, struct rt_sevt *e)
{
    publish_ex(s, e, false);
}

static struct rt_sevt *sevt(enum rt_sevt_type t)
{
    struct rt_sevt *e = rt_xcalloc(1, sizeof(*e));
    e->type = t;
    return e;
}

void rt_sevt_free(struct rt_sevt *e)
{
    if (!e)
        return;
    rt_rcstr_unref(e->json);
    rt_rcstr_unref(e->csv);
    free(e);
}

struct rt_sevt *rt_sampler_take(struct rt_sampler *s)
{
    uint64_t v;
    if (read(s->out_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        rt_debug("sampler: eventfd read: %s", strerror(errno));
    pthread_mutex_lock(&s->mu);
    struct rt_sevt *e = s->out;
    s->out = s->out_tail = NULL;
    pthread_mutex_unlock(&s->mu);
    return e;
}

struct rt_rcstr *rt_sampler_latest_host(struct rt_sampler *s)
{
    pthread_mutex_lock(&s->mu);
    struct rt_rcstr *r = rt_rcstr_ref(s->latest);
    pthread_mutex_unlock(&s->mu);
    return r;
}

uint64_t rt_sampler_heartbeat(struct rt_sampler *s) { return atomic_load(&s->heartbeat); }
double rt_sampler_interval(struct rt_sampler *s) { return s->o.interval_secs; }
unsigned rt_sampler_gpu_count(struct rt_sampler *s) { return atomic_load(&s->ngpus); }
unsigned rt_sampler_gpu_count_amd(struct rt_sampler *s) { return atomic_load(&s->ngpus_amd); }
int rt_sampler_event_fd(struct rt_sampler *s) { return s->out_efd; }

void rt_sampler_submit(struct rt_sampler *s, struct rt_sreq *req)
{
    req->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->reqs_tail)
        s->reqs_tail->next = req;
    else
        s->reqs = req;
    s->reqs_tail = req;
    pthread_mutex_unlock(&s->mu);
    uint64_t one = 1;
    if (write(s->req_efd, &one, sizeof(one)) < 0)
        rt_warn("sampler: cannot wake the sampler: %s", strerror(errno));
}

/* ---- storage of samples ---- */

/* Write what the disk takes of data, stopping at the first error (logged
 * once until writing works again). */
static size_t write_some(struct rt_job *j, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(j->samples_fd, data + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (!j->write_warned)
                rt_err("job %" PRIu64 ": cannot write samples: %s; keeping them in memory until it works",
                       j->id, strerror(errno));
            j->write_warned = true;
            break;
        }
        off += (size_t)n;
    }
    return off;
}

/* Append a sample line to the job's samples file. What the disk refuses
 * waits in memory and goes first next time, so the file stays in order. A
 * sample that would grow that backlog past backlog_max is not kept at all:
 * false, and the caller does not index it, so the index matches the file. */
static bool store_append(struct rt_sampler *s, struct rt_job *j, const char *data, size_t len)
{
    if (j->samples_fd < 0)
        return true;
    if (j->unwritten_len) {
        size_t n = write_some(j, j->unwritten, j->unwritten_len);
        memmove(j->unwritten, j->unwritten + n, j->unwritten_len - n);
        j->unwritten_len -= n;
        if (!j->unwritten_len && j->write_warned) {
            rt_notice("job %" PRIu64 ": samples are written again", j->id);
            j->write_warned = j->backlog_warned = false;
        }
    }
    size_t off = j->unwritten_len ? 0 : write_some(j, data, len);
    size_t rest = len - off;
    if (!rest)
        return true;
    /* Part of this line is in the file already: the rest must follow it. */
    if (off == 0 && j->unwritten_len + rest > s->backlog_max) {
        rt_log_once(&j->backlog_warned, LOG_ERR,
                    "job %" PRIu64 ": %zu KiB of samples wait for the disk; new samples are not kept "
                    "until it has room", j->id, j->unwritten_len >> 10);
        return false;
    }
    j->unwritten = rt_xrealloc(j->unwritten, j->unwritten_len + rest);
    memcpy(j->unwritten + j->unwritten_len, data + off, rest);
    j->unwritten_len += rest;
    return true;
}

static void save_record(struct rt_sampler *s, struct rt_job *j, bool sync)
{
    rt_jobs_lock(s->jobs);
    struct json_object *rec = rt_job_to_record(j);
    rt_jobs_unlock(s->jobs);
    int r = rt_store_save_record(s->store, j->id, rec, sync);
    if (r < 0)
        rt_err("job %" PRIu64 ": cannot save its record: %s", j->id, strerror(-r));
    json_object_put(rec);
}

/* ---- job samples ---- */

/* A subtree serialised once per tick (see freeze). */
struct frozen {
    size_t len;
    char text[];
};

static int emit_frozen(struct json_object *o, struct printbuf *pb, int level, int flags)
{
    (void)level;
    (void)flags;
    const struct frozen *f = json_object_get_userdata(o);
    return printbuf_memappend(pb, f->text, (int)f->len);
}

static void free_frozen(struct json_object *o, void *userdata)
{
    (void)o;
    free(userdata);
}

static void freeze(struct json_object *o)
{
    if (!o)
        return;
    size_t len;
    const char *txt = json_object_to_json_string_length(o, JSON_FLAGS, &len);
    struct frozen *f = rt_xmalloc(sizeof(*f) + len + 1);
    f->len = len;
    memcpy(f->text, txt, len + 1);
    json_object_set_serializer(o, emit_frozen, f, free_frozen);
}

/* Every job line repeats the host sample: from the second job line of a
 * tick on, its host-only subtrees (per-core figures, disks, GPUs, memory,
 * NICs) are serialised once, so a job line costs its own fields, not the
 * size of the host. */
static void freeze_host(struct rt_sampler *s)
{
    if (++s->host_lines != 2)
        return;
    static const char *const host_arrays[] = {"disk", "gpu", "network"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(host_arrays); i++)
        freeze(rt_json_get_array(s->host_obj, host_arrays[i]));
    freeze(rt_json_get_object(s->host_obj, "memory"));
    struct json_object *cpu = rt_json_get_object(s->host_obj, "cpu");
    if (cpu)
        freeze(rt_json_get_array(cpu, "per_core_pct"));
}

static void begin_scan(struct rt_sampler *s, bool fresh)
{
    if (fresh || s->cache_tick != s->tick_no) {
        rt_proc_cache_begin_tick(&s->cache);
        s->cache_tick = fresh ? UINT64_MAX : s->tick_no;
    }
}

/* One sample of a job: scan its tree, write and publish the line. Returns
 * the scan result for the caller (final samples look at the root), and
 * whether the sample was kept (see store_append); its usage counts anyway. */
static bool job_sample(struct rt_sampler *s, struct rt_job *j, bool fresh, struct rt_ptree_result *r)
{
    begin_scan(s, fresh);
    rt_ptree_scan(&j->tree, &s->cache, r);
    uint64_t now = rt_mono_ns();
    double elapsed = (double)(now - j->last_sample_mono_ns) / 1e9;
    if (elapsed <= 0)
        elapsed = 1e-3;
    j->last_sample_mono_ns = now;
    double tck = (double)rt_clk_tck();

    struct rt_sample *sm = &s->sample;
    struct rt_process *p = &sm->proc;
    *p = (struct rt_process){
        .present = true,
        .pid = j->pid,
        .child_count = r->nprocs ? r->nprocs - 1 : 0,
        .utime_secs = (double)r->d_utime / tck,
        .stime_secs = (double)r->d_stime / tck,
        .pss_mib = r->pss_bytes / RT_MIB,
        .rss_mib = r->rss_bytes / RT_MIB,
        .disk_read_bytes = r->d_read_bytes,
        .disk_write_bytes = r->d_write_bytes,
    };
    /* CPU times move in clock ticks: over less than one, a tick would read
     * as several cores. No tree uses more cores than the host has. */
    p->cores_used = (p->utime_secs + p->stime_secs) / fmax(elapsed, 1.0 / tck);
    double ncpu = sm->cpu.n_cores ? (double)sm->cpu.n_cores : (double)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu >= 1 && p->cores_used > ncpu)
        p->cores_used = ncpu;
    sm->job_id = j->id;
    sm->job_name = j->name;
    sm->timestamp_secs = fresh ? rt_real_ns() / RT_NSEC_PER_SEC : s->host_timestamp;
    sm->has_interval = true;
    sm->actual_interval_ms = (uint64_t)llround(elapsed * 1000.0);
    struct rt_process_gpu host_gpu = sm->proc_gpu;
    if (!j->gpu_state)
        j->gpu_state = rt_gpu_job_new();
    rt_gpu_job_usage(s->gpu, j->gpu_state, j->tree.pids, j->tree.npids, elapsed, &sm->proc_gpu);
    struct rt_gpu_job_summary gs;
    rt_gpu_job_summary(j->gpu_state, &gs);

    freeze_host(s);
    rt_sample_json_set_job(s->host_obj, sm);
    json_object_object_add(s->host_obj, "timestamp_secs", rt_json_u64(sm->timestamp_secs));
    json_object_object_add(s->host_obj, "actual_interval_ms", rt_json_u64(sm->actual_interval_ms));
    size_t len;
    const char *txt = json_object_to_json_string_length(s->host_obj, JSON_FLAGS, &len);
    struct rt_rcstr *line = rt_rcstr_new(txt, len);
    char row[1024];
    size_t rlen = rt_sample_to_csv(sm, row, sizeof(row));
    struct rt_rcstr *csv = rt_rcstr_new(row, rlen < sizeof(row) ? rlen : sizeof(row) - 1);

    /* The file gets "line\n", from a buffer kept across ticks. */
    if (len + 1 > s->line_cap) {
        s->line_cap = len + 1 + 1024;
        s->line = rt_xrealloc(s->line, s->line_cap);
    }
    memcpy(s->line, txt, len);
    s->line[len] = '\n';
    bool kept = store_append(s, j, s->line, len + 1);

    rt_jobs_lock(s->jobs);
    struct rt_job_summary *sum = &j->summary;
    uint64_t index = sum->samples;
    if (kept) {
        sum->samples++;
        rt_job_note_sample(j, index, j->samples_bytes);
        j->samples_bytes += len + 1;
    }
    sum->cpu_secs += p->utime_secs + p->stime_secs;
    /* The span as the line has it, so a restart rebuilds the same peak. */
    rt_job_summary_note_cores(sum, p->cores_used, (double)sm->actual_interval_ms / 1000, j->interval_secs);
    if (p->child_count > sum->peak_children)
        sum->peak_children = p->child_count;
    if (r->rss_bytes > sum->peak_rss_bytes)
        sum->peak_rss_bytes = r->rss_bytes;
    if (r->pss_bytes > sum->peak_pss_bytes)
        sum->peak_pss_bytes = r->pss_bytes;
    sum->disk_read_bytes += r->d_read_bytes;
    sum->disk_write_bytes += r->d_write_bytes;
    if (gs.present) {
        sum->has_gpu = true;
        sum->gpu_avg_usage = gs.avg_usage;
        sum->gpu_peak_vram_bytes = gs.peak_vram_bytes;
        sum->has_gpu_energy = gs.has_energy;
        sum->gpu_energy_joules = gs.energy_joules;
        if (!sum->gpus || json_object_array_length(sum->gpus) != gs.n_gpus) {
            json_object_put(sum->gpus);
            sum->gpus = json_object_new_array_ext((int)gs.n_gpus);
            for (size_t i = 0; i < gs.n_gpus; i++)
                json_object_array_add(sum->gpus, json_object_new_string(gs.gpu_uuids[i]));
        }
    }
    rt_jobs_unlock(s->jobs);

    if (j->wants_upload && s->o.upload)
        rt_upload_job_rows(s->o.upload, j->id, csv->data, csv->len);

    if (kept) {
        struct rt_sevt *e = sevt(RT_SEVT_JOB_SAMPLE);
        e->job_id = j->id;
        e->index = index;
        e->json = line;
        e->csv = csv;
        publish_ex(s, e, !fresh); /* a final sample at once; a tick's in one wake-up */
    } else {
        rt_rcstr_unref(line);
        rt_rcstr_unref(csv);
    }

    /* Restore the host view for the next job of this tick. */
    sm->proc_gpu = host_gpu;
    sm->timestamp_secs = s->host_timestamp;
    sm->has_interval = s->host_has_interval;
    sm->actual_interval_ms = s->host_interval_ms;
    return kept;
}

static void active_remove(struct rt_sampler *s, struct rt_job *j)
{
    for (size_t i = 0; i < s->nactive; i++) {
        if (s->active[i] == j) {
            s->active[i] = s->active[--s->nactive];
            return;
        }
    }
}

static void active_add(struct rt_sampler *s, struct rt_job *j)
{
    if (s->nactive == s->active_cap) {
        s->active_cap = s->active_cap ? s->active_cap * 2 : 16;
        s->active = rt_xrealloc(s->active, s->active_cap * sizeof(*s->active));
    }
    s->active[s->nactive++] = j;
}

static void decode_status(int status, int *code, int *sig)
{
    if (WIFSIGNALED(status)) {
        *sig = WTERMSIG(status);
        *code = 128 + *sig;
    } else {
        *sig = 0;
        *code = WEXITSTATUS(status);
    }
}

enum end_reason {
    END_ROOT_EXITED, /* seen through the pidfd */
    END_REPORTED,    /* FinishJob from the root's parent */
    END_STOPPED,     /* StopJob */
};

/* End a running job: last sample, final state, record, release resources. */
static void end_job(struct rt_sampler *s, struct rt_job *j, enum end_reason why, bool has_exit,
                    int code, int sig)
{
    if (!j->tracking)
        return;
    struct rt_ptree_result r;
    job_sample(s, j, true, &r);
    /* A zombie root still tells its exit status (field 52 of its stat). */
    if (why != END_STOPPED && !has_exit && r.root_zombie && r.root_exit_status >= 0) {
        has_exit = true;
        decode_status(r.root_exit_status, &code, &sig);
    }
    if (why == END_STOPPED)
        has_exit = false;
    if (j->unwritten_len)
        store_append(s, j, "", 0);
    /* The end is on disk before clients can see it: a crash right after
     * must not bring the job back as running. */
    rt_jobs_lock(s->jobs);
    struct rt_job ended = *j;
    ended.ended_at = (double)rt_real_ns() / 1e9;
    ended.has_exit = has_exit;
    ended.exit_code = has_exit ? code : 0;
    ended.signal = has_exit ? sig : 0;
    if (why == END_STOPPED)
        ended.state = RT_JOB_STOPPED;
    else
        ended.state = has_exit && (code != 0 || sig != 0) ? RT_JOB_FAILED : RT_JOB_FINISHED;
    struct json_object *rec = rt_job_to_record(&ended);
    rt_jobs_unlock(s->jobs);
    int w = rt_store_save_record(s->store, j->id, rec, true);
    if (w < 0)
        rt_err("job %" PRIu64 ": cannot save its record: %s", j->id, strerror(-w));
    json_object_put(rec);
    rt_jobs_lock(s->jobs);
    j->ended_at = ended.ended_at;
    j->has_exit = ended.has_exit;
    j->exit_code = ended.exit_code;
    j->signal = ended.signal;
    j->state = ended.state;
    rt_jobs_unlock(s->jobs);
    if (j->samples_fd >= 0)
        close(j->samples_fd);
    j->samples_fd = -1;
    if (j->pidfd >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, j->pidfd, NULL);
        close(j->pidfd);
        j->pidfd = -1;
    }
    rt_ptree_free(&j->tree);
    rt_gpu_job_free(j->gpu_state);
    j->gpu_state = NULL;
    j->tracking = false;
    active_remove(s, j);
    if (j->wants_upload && s->o.upload)
        rt_upload_job_end(s->o.upload, j->id, j->has_exit ? j->exit_code : 0);
    /* Its journal record ("Job N … finished after …") comes from the main thread. */
    struct rt_sevt *e = sevt(RT_SEVT_JOB_ENDED);
    e->job_id = j->id;
    publish(s, e);
}

/* Begin tracking: baseline, storage, pidfd watch. */
static int begin_job(struct rt_sampler *s, struct rt_job *j, bool resume, char *err, size_t errlen)
{
    if (j->pidfd < 0) {
        j->pidfd = pidfd_open_(j->pid);
        int e = j->pidfd < 0 ? errno : 0;
        /* ENOSYS/EPERM: kernels before 5.3, seccomp profiles that predate it,
         * valgrind. The starttime check still pins the root; its end shows in
         * the scan. Anything else (ESRCH, EINVAL for a thread): no process. */
        if (e && e != ENOSYS && e != EPERM) {
            snprintf(err, errlen, "process %d has exited", (int)j->pid);
            return -ESRCH;
        }
        if (e)
            rt_log_once(&s->pidfd_warned, LOG_WARNING,
                        "sampler: pidfd_open: %s; job ends are noticed at the next tick",
                        strerror(e));
    }
    begin_scan(s, true);
    if (rt_ptree_init(&j->tree, &s->cache, j->pid, j->starttime, s->o.with_pss) < 0) {
        snprintf(err, errlen, "process %d has exited", (int)j->pid);
        close(j->pidfd);
        j->pidfd = -1;
        return -ESRCH;
    }
    j->tracking = true;
    if (!resume) {
        rt_jobs_lock(s->jobs);
        struct json_object *rec = rt_job_to_record(j);
        rt_jobs_unlock(s->jobs);
        int r = rt_store_create_job(s->store, j->id, rec);
        json_object_put(rec);
        if (r < 0) {
            snprintf(err, errlen, "cannot write the job to the state directory: %s", strerror(-r));
            rt_ptree_free(&j->tree);
            j->tracking = false;
            return r;
        }
    }
    j->samples_fd = rt_store_open_samples(s->store, j->id);
    if (j->samples_fd < 0)
        rt_err("job %" PRIu64 ": cannot open its samples file: %s", j->id, strerror(-j->samples_fd));
    double ratio = j->interval_secs / s->o.interval_secs;
    j->ticks_per_sample = ratio < 1.5 ? 1 : (unsigned)llround(ratio);
    j->interval_secs = j->ticks_per_sample * s->o.interval_secs;
    j->tick_phase = 0;
    j->last_sample_mono_ns = rt_mono_ns();
    if (j->pidfd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = j};
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, j->pidfd, &ev);
    }
    active_add(s, j);
    return 0;
}

/* Sentinel fields of a job: its metadata and name (host and cloud facts are
 * added by the worker when it starts the run). */
static void begin_upload(struct rt_sampler *s, struct rt_sreq *q)
{
    struct rt_job *j = q->job;
    rt_jobs_lock(s->jobs);
    struct json_object *fields = NULL;
    if (json_object_deep_copy(j->metadata, &fields, NULL) != 0)
        fields = json_object_new_object();
    if (j->name)
        json_object_object_add(fields, "job_name", json_object_new_string(j->name));
    rt_jobs_unlock(s->jobs);
    struct rt_upload_job_opts opts = {.api_url = q->api_url,
                                      .upload_interval_ms = q->upload_interval_secs * 1000};
    int r = rt_upload_job_begin_opts(s->o.upload, j->id, q->token, fields, &opts);
    if (r < 0)
        rt_warn("job %" PRIu64 ": will not be uploaded: %s", j->id, strerror(-r));
    json_object_put(fields);
}

void rt_sreq_free(struct rt_sreq *q)
{
    if (!q)
        return;
    if (q->token) {
        explicit_bzero(q->token, strlen(q->token));
        free(q->token);
    }
    free(q->api_url);
    free(q);
}

static void handle_request(struct rt_sampler *s, struct rt_sreq *q)
{
    q->result = 0;
    switch (q->type) {
    case RT_SREQ_START:
        /* The main thread put the job in the registry already (names stay
         * unique); on failure it takes it out again. */
        q->result = begin_job(s, q->job, false, q->error, sizeof(q->error));
        if (q->result == 0 && q->job->wants_upload && s->o.upload)
            begin_upload(s, q);
        break;
    case RT_SREQ_RESUME: {
        struct rt_job *j = q->job;
        char err[160];
        if (begin_job(s, j, true, err, sizeof(err)) == 0) {
            rt_info("job %" PRIu64 " resumed (pid %d)", j->id, (int)j->pid);
            break;
        }
        /* It ended while we were away: the last sample tells when, roughly. */
        double last = rt_store_samples_mtime(s->store, j->id);
        rt_jobs_lock(s->jobs);
        j->state = RT_JOB_LOST;
        j->ended_at = last > j->started_at ? last : j->started_at;
        rt_jobs_unlock(s->jobs);
        save_record(s, j, true);
        rt_notice("job %" PRIu64 " lost: its process ended while the daemon was not running", j->id);
        if (j->wants_upload && s->o.upload)
            rt_upload_job_end(s->o.upload, j->id, 0);
        break;
    }
    case RT_SREQ_FINISH:
    case RT_SREQ_STOP: {
        rt_jobs_lock(s->jobs);
        struct rt_job *j = rt_jobs_find(s->jobs, q->job_id);
        rt_jobs_unlock(s->jobs);
        if (!j) {
            q->result = -ENOENT;
            break;
        }
        if (j->tracking) {
            end_job(s, j, q->type == RT_SREQ_STOP ? END_STOPPED : END_REPORTED, q->has_exit,
                    q->exit_code, q->signal);
        } else if (q->type == RT_SREQ_FINISH && q->has_exit && !j->has_exit &&
                   j->state != RT_JOB_STOPPED) {
            /* The pidfd beat the parent's report: fill in the status it knows. */
            rt_jobs_lock(s->jobs);
            j->has_exit = true;
            j->exit_code = q->exit_code;
            j->signal = q->signal;
            j->state = q->exit_code || q->signal ? RT_JOB_FAILED : RT_JOB_FINISHED;
            rt_jobs_unlock(s->jobs);
            save_record(s, j, true);
        } else if (q->type == RT_SREQ_STOP) {
            q->result = -EALREADY;
        }
        q->job = j;
        break;
    }
    }
    struct rt_sevt *e = sevt(RT_SEVT_REQ_DONE);
    e->req = q;
    publish(s, e);
}

static void drain_requests(struct rt_sampler *s)
{
    uint64_t v;
    if (read(s->req_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        rt_debug("sampler: request eventfd: %s", strerror(errno));
    for (;;) {
        pthread_mutex_lock(&s->mu);
        struct rt_sreq *q = s->reqs;
        if (q) {
            s->reqs = q->next;
            if (!s->reqs)
                s->reqs_tail = NULL;
        }
        pthread_mutex_unlock(&s->mu);
        if (!q)
            return;
        handle_request(s, q);
    }
}

/* ---- retention ---- */

static void retention(struct rt_sampler *s)
{
    double now = (double)rt_real_ns() / 1e9;
    uint64_t max_age = atomic_load(&s->retention_age), max_bytes = atomic_load(&s->retention_bytes);
    uint64_t *doomed = NULL;
    size_t ndoomed = 0;
    rt_jobs_lock(s->jobs);
    uint64_t total = 0;
    for (size_t i = 0; i < s->jobs->n; i++)
        total += s->jobs->v[i]->samples_bytes;
    /* Oldest first: ids ascend with age. */
    for (size_t i = 0; i < s->jobs->n;) {
        struct rt_job *j = s->jobs->v[i];
        bool ended = j->state != RT_JOB_RUNNING;
        bool too_old = ended && max_age && now - j->ended_at > (double)max_age;
        bool too_big = ended && max_bytes && total > max_bytes;
        if (!too_old && !too_big) {
            i++;
            continue;
        }
        total -= j->samples_bytes;
        doomed = rt_xrealloc(doomed, (ndoomed + 1) * sizeof(*doomed));
        doomed[ndoomed++] = j->id;
        rt_jobs_remove(s->jobs, j);
        rt_job_free(j);
    }
    rt_jobs_unlock(s->jobs);
    for (size_t i = 0; i < ndoomed; i++) {
        rt_store_remove_job(s->store, doomed[i]);
        rt_info("job %" PRIu64 " removed by the retention policy", doomed[i]);
    }
    free(doomed);
}

/* ---- ticks ---- */

static void arm_timer(struct rt_sampler *s)
{
    struct itimerspec its = {
        .it_value = {.tv_sec = (time_t)(s->ticker.deadline_ns / RT_NSEC_PER_SEC),
                     .tv_nsec = (long)(s->ticker.deadline_ns % RT_NSEC_PER_SEC)},
    };
    timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void host_tick(struct rt_sampler *s)
{
    rt_sample_reset(&s->sample);
    rt_host_sampler_collect(s->host, &s->sample);
    rt_gpu_collect(s->gpu, &s->sample);
    s->host_timestamp = s->sample.timestamp_secs;
    s->host_has_interval = s->sample.has_interval;
    s->host_interval_ms = s->sample.actual_interval_ms;
    unsigned amd = 0;
    for (size_t i = 0; i < s->sample.n_gpus; i++)
        amd += s->sample.gpus[i].vendor && strcmp(s->sample.gpus[i].vendor, "amd") == 0;
    atomic_store(&s->ngpus, (unsigned)s->sample.n_gpus);
    atomic_store(&s->ngpus_amd, amd);
    json_object_put(s->host_obj);
    s->host_obj = rt_sample_to_json(&s->sample);
    size_t len;
    const char *txt = json_object_to_json_string_length(s->host_obj, JSON_FLAGS, &len);
    struct rt_rcstr *str = rt_rcstr_new(txt, len);
    s->host_lines = 0;
    pthread_mutex_lock(&s->mu);
    rt_rcstr_unref(s->latest);
    s->latest = rt_rcstr_ref(str);
    pthread_mutex_unlock(&s->mu);
    struct rt_sevt *e = sevt(RT_SEVT_HOST);
    e->json = str;
    publish(s, e);
}

/* Without a pidfd: has the root exited (gone, reused PID, or a zombie)? */
static bool root_ended(struct rt_sampler *s, const struct rt_job *j)
{
    begin_scan(s, false);
    const struct rt_pinfo *pi = rt_proc_cache_get(&s->cache, j->pid, 0);
    return !pi || pi->st.starttime != j->starttime || pi->st.state == 'Z';
}

static void tick(struct rt_sampler *s)
{
    if (s->o.stall_file && access(s->o.stall_file, F_OK) == 0) {
        /* Test hook for the watchdog: behave like a sampler stuck in a driver call. */
        rt_log_once(&s->stall_logged, LOG_WARNING, "sampler stalled by test hook %s", s->o.stall_file);
        return;
    }
    s->tick_no++;
    host_tick(s);
    bool sampled = false;
    for (size_t i = 0; i < s->nactive;) {
        struct rt_job *j = s->active[i];
        if (j->pidfd < 0 && root_ended(s, j)) {
            end_job(s, j, END_ROOT_EXITED, false, 0, 0); /* moves the last job into slot i */
            continue;
        }
        i++;
        if (++j->tick_phase < j->ticks_per_sample)
            continue;
        j->tick_phase = 0;
        struct rt_ptree_result r;
        if (job_sample(s, j, false, &r)) {
            sampled = true;
            if (j->summary.samples % RECORD_EVERY == 0)
                save_record(s, j, false);
        }
    }
    if (sampled)
        wake_main(s);
    uint64_t now = rt_mono_ns();
    if (now >= s->next_retention_ns) {
        retention(s);
        s->next_retention_ns = now + RETENTION_EVERY_NS;
    }
    atomic_store(&s->heartbeat, now);
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
                drain_requests(s);
            } else if (p == &s->timer_fd) {
                uint64_t exp;
                if (read(s->timer_fd, &exp, sizeof(exp)) > 0)
                    due = true;
            } else {
                struct rt_job *j = p;
                if (j->tracking)
                    end_job(s, j, END_ROOT_EXITED, false, 0, 0);
            }
        }
        if (due && !atomic_load(&s->stop)) {
            tick(s);
            rt_ticker_advance(&s->ticker, rt_mono_ns());
            arm_timer(s);
        }
    }
    return NULL;
}

struct rt_sampler *rt_sampler_new(const struct rt_sampler_opts *o, struct rt_jobs *jobs,
                                  struct rt_store *store)
{
    struct rt_sampler *s = rt_xcalloc(1, sizeof(*s));
    s->o = *o;
    s->backlog_max = o->backlog_max_bytes ? o->backlog_max_bytes : BACKLOG_MAX;
    s->jobs = jobs;
    s->store = store;
    pthread_mutex_init(&s->mu, NULL);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->req_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->out_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->req_efd};
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->req_efd, &ev);
    ev.data.ptr = &s->timer_fd;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->timer_fd, &ev);
    rt_proc_cache_init(&s->cache, o->roots->proc_fd);
    rt_sample_init(&s->sample);
    rt_sampler_set_retention(s, o->retention_max_age_secs, o->retention_max_bytes);
    s->host = rt_host_sampler_new(o->roots, o->interval_secs);
    struct rt_gpu_options go = {.poll_interval_secs = o->interval_secs,
                                .nvml_library = o->nvml_library,
                                .disable_nvml = o->disable_gpu,
                                .disable_amd = o->disable_gpu};
    s->gpu = rt_gpu_collector_new(o->roots, &go);
    return s;
}

void rt_sampler_set_retention(struct rt_sampler *s, uint64_t max_age_secs, uint64_t max_bytes)
{
    atomic_store(&s->retention_age, max_age_secs);
    atomic_store(&s->retention_bytes, max_bytes);
}

void rt_sampler_set_upload(struct rt_sampler *s, struct rt_upload_worker *w)
{
    s->o.upload = w;
}

int rt_sampler_start(struct rt_sampler *s)
{
    /* The first sample exists before anyone is told we are ready. */
    host_tick(s);
    atomic_store(&s->heartbeat, rt_mono_ns());
    s->next_retention_ns = rt_mono_ns();
    rt_ticker_init(&s->ticker, (uint64_t)(s->o.interval_secs * 1e9), rt_mono_ns());
    arm_timer(s);
    /* Signals are handled by the main thread only. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = pthread_create(&s->thread, NULL, run, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0)
        return -r;
    pthread_setname_np(s->thread, "rt-sampler"); /* for top -H and the benchmarks */
    s->started = true;
    return 0;
}

void rt_sampler_stop(struct rt_sampler *s)
{
    if (!s->started)
        return;
    atomic_store(&s->stop, true);
    uint64_t one = 1;
    if (write(s->req_efd, &one, sizeof(one)) < 0)
        rt_warn("sampler: cannot wake for stop: %s", strerror(errno));
    pthread_join(s->thread, NULL);
    s->started = false;
    /* Running jobs stay "running" on disk and are resumed at the next start. */
    for (size_t i = 0; i < s->nactive; i++) {
        struct rt_job *j = s->active[i];
        if (j->unwritten_len)
            store_append(s, j, "", 0);
        save_record(s, j, true);
    }
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
    free(s->line);
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
    json_object_put(s->host_obj);
    rt_sample_free(&s->sample);
    rt_host_sampler_free(s->host);
    rt_gpu_collector_free(s->gpu);
    rt_proc_cache_free(&s->cache);
    close(s->epfd);
    close(s->req_efd);
    close(s->out_efd);
    close(s->timer_fd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
