/* Jobs begin (pidfd, baseline, storage) and end (final sample, state, record)
 * on the sampler thread, at the main thread's request or when the root exits. */
#include "sampler/internal.h"

#include "cgroup/make.h"

#include "rt/util.h"
#include "system/log.h"
#include "upload/upload.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
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


/* End a running job: last sample, final state, record, release resources. */
void rt_sampler_end_job(struct rt_sampler *s, struct rt_job *j, enum rt_end_reason why, bool has_exit,
                    int code, int sig)
{
    if (!j->tracking)
        return;
    struct rt_ptree_result r;
    rt_sampler_job_sample(s, j, true, &r);
    /* A zombie root still tells its exit status (field 52 of its stat). */
    if (why != RT_END_STOPPED && !has_exit && r.root_zombie && r.root_exit_status >= 0) {
        has_exit = true;
        decode_status(r.root_exit_status, &code, &sig);
    }
    if (why == RT_END_STOPPED)
        has_exit = false;
    rt_samples_flush(&s->state->samples, j->fig);
    /* The end is in the record log before clients can see it: a crash
     * right after must not bring the job back as running. Its file is
     * written at the next tick (rt_sampler_finish_ended). */
    rt_jobs_lock(s->jobs);
    struct rt_job ended = *j;
    ended.ended_at = (double)rt_real_ns() / 1e9;
    ended.has_exit = has_exit;
    ended.exit_code = has_exit ? code : 0;
    ended.signal = has_exit ? sig : 0;
    /* "finished" means status 0: a status nobody could read is no success. */
    if (why == RT_END_STOPPED)
        ended.state = RT_JOB_STOPPED;
    else if (!has_exit)
        ended.state = RT_JOB_ENDED;
    else
        ended.state = code != 0 || sig != 0 ? RT_JOB_FAILED : RT_JOB_FINISHED;
    struct json_object *rec = rt_job_to_record(&ended);
    rt_jobs_unlock(s->jobs);
    int w = rt_state_dir_log_record(s->state, j->id, rec, NULL);
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
    if (j->pidfd >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, j->pidfd, NULL);
        close(j->pidfd);
        j->pidfd = -1;
    }
    if (!j->cgroup)
        rt_ptree_free(&j->tree);
    rt_cgroup_job_end(s, j);
    rt_gpu_job_free(j->gpu_state);
    j->gpu_state = NULL;
    j->tracking = false;
    active_remove(s, j);
    rt_sampler_job_stored(s, j, true);
    if (j->wants_upload && s->o.upload)
        rt_upload_job_end(s->o.upload, j->id, rt_upload_exit_of(j->state == RT_JOB_STOPPED, j->has_exit, j->exit_code));
    /* Its journal record ("Job N … finished after …") comes from the main thread. */
    struct rt_sevt *e = rt_sevt_new(RT_SEVT_JOB_ENDED);
    e->job_id = j->id;
    rt_sampler_publish(s, e, false);
}

/* The job's record and a copy of its metadata, taken under the registry's
 * lock (the main thread may be writing the same objects out). */
static void job_record(struct rt_sampler *s, struct rt_job *j, struct json_object **rec, struct json_object **md)
{
    rt_jobs_lock(s->jobs);
    *rec = rt_job_to_record(j);
    *md = NULL;
    if (json_object_deep_copy(j->metadata, md, NULL) != 0)
        *md = json_object_new_object();
    if (!j->name_json)
        j->name_json = rt_job_name_json(j->name);
    rt_jobs_unlock(s->jobs);
}

/* The log of the job's figures (its directory exists). */
static void open_samples(struct rt_sampler *s, struct rt_job *j)
{
    if (j->fig || j->samples_blocked)
        return;
    struct rt_figlog *fig = rt_samples_job_log(&s->state->samples, j->id);
    rt_jobs_lock(s->jobs);
    j->fig = fig;
    if (!j->name_json)
        j->name_json = rt_job_name_json(j->name);
    rt_jobs_unlock(s->jobs);
}

/* After StartJob's answer (the record log holds the job): its directory and
 * files, and the log of its figures, before its first sample. */
static void begin_files(struct rt_sampler *s, struct rt_job *j)
{
    struct json_object *rec, *md;
    job_record(s, j, &rec, &md);
    int r = rt_state_dir_create_job(s->state, j->id, rec, md);
    json_object_put(rec);
    json_object_put(md);
    if (r < 0)
        rt_err("job %" PRIu64 ": cannot write its files to the state directory: %s", j->id, strerror(-r));
    else
        j->record_bytes = (uint64_t)r;
    open_samples(s, j);
}

/* What a crash of the daemon must keep once StartJob answers; its files
 * follow the answer (begin_files). */
static int log_start(struct rt_sampler *s, struct rt_job *j, char *err, size_t errlen)
{
    struct json_object *rec, *md;
    job_record(s, j, &rec, &md);
    int r = rt_state_dir_log_record(s->state, j->id, rec, md);
    json_object_put(rec);
    json_object_put(md);
    if (r < 0)
        snprintf(err, errlen, "cannot write the job to the state directory: %s", strerror(-r));
    return r;
}

/* How a job begins: new (its record logged here), new with its record
 * logged and StartJob answered already, or again after a restart. */
enum begin_kind { BEGIN_NEW, BEGIN_ANSWERED, BEGIN_RESUME };

/* Begin tracking: baseline, storage, pidfd watch. */
static int begin_job(struct rt_sampler *s, struct rt_job *j, enum begin_kind kind, char *err, size_t errlen)
{
    bool resume = kind == BEGIN_RESUME;
    if (j->pidfd < 0 && j->pid > 0) {
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
    rt_sampler_begin_scan(s, true);
    struct rt_reader reader = {.all = j->reads_all, .uid = j->owner_uid, .gid = j->owner_gid};
    int r = 0;
    const struct rt_pinfo *root = j->cgroup && j->pid > 0 ? rt_proc_cache_get(&s->cache, j->pid, 0) : NULL;
    bool root_gone = j->pid > 0 && (!root || root->st.starttime != j->starttime);
    if (!j->cgroup && rt_ptree_init(&j->tree, &s->cache, j->pid, j->starttime, s->o.with_pss, &reader) < 0) {
        snprintf(err, errlen, "process %d has exited", (int)j->pid);
        r = -ESRCH;
    } else if (j->cgroup && root_gone && resume) { /* a cgroup job's root pins it as a tree's does */
        snprintf(err, errlen, "process %d has exited", (int)j->pid);
        r = -ESRCH;
    } else if ((r = rt_cgroup_job_begin(s, j, err, errlen)) < 0 && !j->cgroup) {
        r = 0; /* a tree is tracked without its cgroup's OOM kills */
    }
    if (r < 0) {
        if (!j->cgroup)
            rt_ptree_free(&j->tree);
        if (j->pidfd >= 0)
            close(j->pidfd);
        j->pidfd = -1;
        return r;
    }
    if (j->reaper_pid > 0 && !j->cgroup)
        rt_ptree_set_reaper(&j->tree, j->reaper_pid, j->reaper_starttime);
    j->tracking = true;
    if (kind == BEGIN_NEW && (r = log_start(s, j, err, errlen)) < 0) {
        if (!j->cgroup)
            rt_ptree_free(&j->tree);
        rt_cgroup_job_end(s, j);
        j->tracking = false;
        return r;
    }
    if (resume)
        open_samples(s, j);
    j->last_sample_mono_ns = rt_mono_ns();
    rt_sampler_schedule_job(s, j, j->last_sample_mono_ns);
    /* An adopted cgroup counts from its start; so does one made for the job
     * and read first after its command began. */
    if (((j->adopted && !resume) || kind == BEGIN_ANSWERED) && j->cg_open)
        rt_cgroup_job_count_from_start(j);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = j};
    if (j->pidfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, j->pidfd, &ev) < 0) {
        /* Without the watch, the tick notices the end (as without pidfds). */
        rt_log_user(j->owner_uid, LOG_WARNING, "job %" PRIu64 ": cannot watch its root: %s; its end is noticed at "
                    "the next tick", j->id, strerror(errno));
        close(j->pidfd);
        j->pidfd = -1;
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
    /* What it asked for, as tags (Sentinel's runs have no fields for it). */
    static const char *const asked[] = {"cpus", "memory_bytes", "gpus"};
    for (size_t i = 0; j->request && i < RT_ARRAY_SIZE(asked); i++) {
        struct json_object *v, *tags;
        if (!json_object_object_get_ex(j->request, asked[i], &v))
            continue;
        if (!json_object_object_get_ex(fields, "tags", &tags) || !json_object_is_type(tags, json_type_array)) {
            tags = json_object_new_array();
            json_object_object_add(fields, "tags", tags);
        }
        char tag[64];
        snprintf(tag, sizeof(tag), "request_%s=%s", asked[i], json_object_to_json_string(v));
        json_object_array_add(tags, json_object_new_string(tag));
    }
    rt_jobs_unlock(s->jobs);
    struct rt_upload_job_opts opts = {.api_url = q->api_url,
                                      .upload_interval_ms = q->upload_interval_secs * 1000};
    int r = rt_upload_job_begin_opts(s->o.upload, j->id, q->token, fields, &opts);
    if (r < 0)
        rt_log_user(j->owner_uid, LOG_WARNING, "job %" PRIu64 ": will not be uploaded: %s", j->id, strerror(-r));
    json_object_put(fields);
}


/* StartJob was answered before the job's tracking began (answer_first): a
 * failure now ends it at once, as a job whose root is gone. */
static void begin_answered(struct rt_sampler *s, struct rt_job *j)
{
    char err[160];
    if (begin_job(s, j, BEGIN_ANSWERED, err, sizeof(err)) == 0) {
        begin_files(s, j);
        return;
    }
    rt_log_user(j->owner_uid, LOG_WARNING, "job %" PRIu64 ": cannot be tracked: %s", j->id, err);
    rt_jobs_lock(s->jobs);
    j->state = RT_JOB_ENDED;
    j->ended_at = (double)rt_real_ns() / 1e9;
    rt_jobs_unlock(s->jobs);
    if (j->pidfd >= 0)
        close(j->pidfd);
    j->pidfd = -1;
    begin_files(s, j);
    rt_sampler_save_record(s, j, true); /* the log's entry said running */
    rt_sampler_job_stored(s, j, false);
    if (j->wants_upload && s->o.upload)
        rt_upload_job_end(s->o.upload, j->id, RT_UPLOAD_EXIT_UNKNOWN);
    struct rt_sevt *e = rt_sevt_new(RT_SEVT_JOB_ENDED);
    e->job_id = j->id;
    rt_sampler_publish(s, e, false);
}

/* Whether StartJob may be answered once the job's record is logged, before
 * its tracking begins: a cgroup made for it, empty until its command runs
 * there, counts from zero whenever it is first read (run's command waits for
 * the answer, and the tracking's files cost ≈ 0.25 ms). */
static bool answer_first(const struct rt_job *j)
{
    return j->cgroup_made && !j->adopted;
}

void rt_sampler_handle_request(struct rt_sampler *s, struct rt_sreq *q)
{
    q->result = 0;
    struct rt_job *started = NULL;
    bool answered = false;
    switch (q->type) {
    case RT_SREQ_START:
        /* The main thread put the job in the registry already (names stay
         * unique); on failure it takes it out again. */
        answered = answer_first(q->job);
        q->result = answered ? log_start(s, q->job, q->error, sizeof(q->error))
                             : begin_job(s, q->job, BEGIN_NEW, q->error, sizeof(q->error));
        if (q->result == 0 && q->job->wants_upload && s->o.upload)
            begin_upload(s, q);
        started = q->result == 0 ? q->job : NULL;
        break;
    case RT_SREQ_RESUME: {
        struct rt_job *j = q->job;
        char err[160];
        if (begin_job(s, j, BEGIN_RESUME, err, sizeof(err)) == 0) {
            rt_info("job %" PRIu64 " resumed (pid %d)", j->id, (int)j->pid);
            break;
        }
        /* It ended while we were away: the last sample tells when, roughly. */
        if (j->cgroup_made && s->o.cg_host)
            rt_cg_remove(s->o.cg_host, j->cgroup); /* when empty; processes left in it keep it */
        double last = rt_state_dir_samples_mtime(s->state, j->id);
        rt_jobs_lock(s->jobs);
        j->state = RT_JOB_LOST;
        j->ended_at = last > j->started_at ? last : j->started_at;
        rt_jobs_unlock(s->jobs);
        rt_sampler_save_record(s, j, true);
        rt_sampler_job_stored(s, j, false);
        rt_notice("job %" PRIu64 " lost: its process ended while the daemon was not running", j->id);
        if (j->wants_upload && s->o.upload)
            rt_upload_job_end(s->o.upload, j->id, RT_UPLOAD_EXIT_UNKNOWN);
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
        rt_jobs_lock(s->jobs);
        if (q->max_rss_bytes) /* a peak between samples that the root's parent saw */
            rt_job_summary_note_peak(&j->summary, "memory_peak_bytes", RT_GATE_MEM, (double)q->max_rss_bytes);
        j->not_started |= q->not_started;
        rt_jobs_unlock(s->jobs);
        if (j->tracking) {
            rt_sampler_end_job(s, j, q->type == RT_SREQ_STOP ? RT_END_STOPPED : RT_END_REPORTED, q->has_exit,
                    q->exit_code, q->signal);
        } else if (q->type == RT_SREQ_FINISH && q->has_exit && !j->has_exit &&
                   j->state != RT_JOB_STOPPED) {
            /* The daemon ended it without a status (its root gone while no
             * daemon ran: lost; or reaped first: ended): the parent knows it. */
            bool was_lost = j->state == RT_JOB_LOST;
            rt_jobs_lock(s->jobs);
            j->has_exit = true;
            j->exit_code = q->exit_code;
            j->signal = q->signal;
            j->state = q->exit_code || q->signal ? RT_JOB_FAILED : RT_JOB_FINISHED;
            rt_jobs_unlock(s->jobs);
            rt_sampler_save_record(s, j, true);
            rt_log_user(j->owner_uid, LOG_INFO, "job %" PRIu64 ": exit status %d reported after its end", j->id,
                        j->exit_code);
            if (j->wants_upload && s->o.upload)
                rt_upload_job_set_exit(s->o.upload, j->id, j->exit_code);
            if (was_lost) { /* its first journal record: a lost job had none */
                struct rt_sevt *e = rt_sevt_new(RT_SEVT_JOB_ENDED);
                e->job_id = j->id;
                rt_sampler_publish(s, e, false);
            }
        } else if (q->type == RT_SREQ_STOP) {
            q->result = -EALREADY;
        }
        q->job = j;
        break;
    }
    }
    struct rt_sevt *e = rt_sevt_new(RT_SEVT_REQ_DONE);
    e->req = q; /* the main thread's from now on */
    rt_sampler_publish(s, e, false);
    if (started) {
        /* The main thread answers now; on this CPU it would wait for the
         * files (the scheduler lets a running thread finish its slice). */
        sched_yield();
        if (answered)
            begin_answered(s, started);
        else
            begin_files(s, started);
    }
}
