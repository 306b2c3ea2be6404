/* The sampler's state and the functions its files share (sampler/ only). The
 * fields after "sampler thread only" are touched by that thread alone. */
#ifndef RT_SAMPLER_INTERNAL_H
#define RT_SAMPLER_INTERNAL_H

#include "collect/gpu/gpu.h"
#include "collect/host_sampler.h"
#include "proc/proccache.h"
#include "proc/ptree.h"
#include "rt/sample_csv.h"
#include "store/job_sample.h"
#include "sampler/sampler.h"
#include "sampler/ticker.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>

/* A job that ended: its record's file to write (the record log holds it),
 * its figures to seal. */
struct rt_ended {
    uint64_t id;
    bool record, figures;
};

struct rt_sampler {
    struct rt_sampler_opts o;
    struct rt_jobs *jobs;
    struct rt_state_dir *state;
    pthread_t thread;
    bool started, stopped;
    int epfd, req_efd, out_efd, timer_fd;
    int setup_errno;            /* creating those failed: rt_sampler_start() says so */
    pthread_mutex_t mu; /* reqs, outbox, latest */
    struct rt_sreq *reqs, *reqs_tail;
    struct rt_sevt *out, *out_tail;
    uint64_t out_quiet_tick;    /* the quiet tick whose events the outbox may hold */
    struct rt_rcstr *latest;
    uint64_t latest_tick;
    atomic_bool stop;
    _Atomic uint64_t heartbeat;
    atomic_uint ngpus, ngpus_amd;
    atomic_bool quiet_ticks;       /* nobody streams: a tick does not wake the main loop */
    _Atomic uint64_t retention_age, retention_bytes;
    atomic_uint retention_jobs;
    bool retention_warned;      /* running jobs hold more than the limit */
    _Atomic uint64_t host_interval_ns; /* the base interval; a reload may change it */

    /* sampler thread only */
    struct rt_host_sampler *host;
    struct rt_gpu_collector *gpu;
    struct rt_gpuuse *gpuuse;
    struct rt_gpuuse_job *gpu_jobs; /* the running jobs, for its tick */
    size_t gpu_jobs_cap;
    struct rt_proc_cache cache;
    uint64_t tick_no, cache_tick;
    struct rt_sample sample;
    struct printbuf *host_pb;      /* the host sample's text, rewritten each tick */
    struct rt_host_text host_text; /* where job fields go in the latest host text */
    bool host_text_ok, host_text_warned;
    struct rt_csv_host csv_host; /* the tick's host values for CSV rows */
    uint64_t host_timestamp_ms, host_interval_ms;
    bool host_has_interval;
    struct rt_ticker ticker;
    uint64_t grid_origin_ns;    /* host and job deadlines are origin + k·interval */
    struct rt_job **active;
    size_t nactive, active_cap;
    struct rt_buf text;         /* a job sample being made */
    struct rt_figlog **figs;    /* the active jobs' logs, for sealing */
    size_t figs_cap, seal_turn;
    struct rt_ended *ended;     /* ended jobs whose record and figures wait for the next tick */
    size_t nended, ended_cap;
    bool host_unsealed;         /* the last running job ended: seal the host's hot block */
    uint64_t next_retention_ns;
    uint64_t next_ledger_ns;    /* the GPU usage ledger is saved then */
    bool ledger_warned;
    unsigned ended_since_retention; /* a pass follows within a second */
    bool release_wanted;        /* jobs ended: memory to give back (sampler.c) */
    uint64_t release_at_ns, released_ns; /* when it is due (0: not planned), when it was last done */
    bool stall_logged;
    bool pidfd_warned;
    int inotify_fd;             /* the cgroup jobs' cgroup.events watches */
};

/* mailbox.c: requests from the main thread, events to it. */
void rt_sampler_wake_main(struct rt_sampler *s);
/* Queue an event; the main loop is woken now, or (quiet) once at the end of
 * the tick for all its job samples. While no connection streams
 * (quiet_ticks), a tick's samples do not wake it at all: they replace the
 * previous quiet tick's still queued (sampler thread only). */
void rt_sampler_publish(struct rt_sampler *s, struct rt_sevt *e, bool quiet);
struct rt_sevt *rt_sevt_new(enum rt_sevt_type t);
void rt_sampler_drain_requests(struct rt_sampler *s);

/* sampler.c: a job's first deadline on the grid of its interval. */
void rt_sampler_schedule_job(struct rt_sampler *s, struct rt_job *j, uint64_t now);

/* lifecycle.c: jobs begin and end. */
enum rt_end_reason {
    RT_END_ROOT_EXITED, /* seen through the pidfd */
    RT_END_REPORTED,    /* FinishJob from the root's parent */
    RT_END_STOPPED,     /* StopJob */
    RT_END_CGROUP_EMPTY, /* a cgroup job without a root: its cgroup emptied or went */
};
void rt_sampler_handle_request(struct rt_sampler *s, struct rt_sreq *q);
void rt_sampler_end_job(struct rt_sampler *s, struct rt_job *j, enum rt_end_reason why, bool has_exit,
                        int code, int sig);

/* job_line.c: one sample of a job. */
/* Start the shared process scan of this tick (fresh: a scan of its own, for
 * a job that begins or ends between ticks). */
void rt_sampler_begin_scan(struct rt_sampler *s, bool fresh);
bool rt_sampler_job_sample(struct rt_sampler *s, struct rt_job *j, bool fresh, struct rt_ptree_result *r);
/* One full block of the store sealed (once per tick). */
void rt_sampler_seal_one(struct rt_sampler *s);
/* A job ended (record_logged: its record is in the record log, not yet in
 * its file): its record is written and its samples are sealed at the next
 * tick, not on the path of FinishJob's answer; retention will look at it. */
void rt_sampler_job_stored(struct rt_sampler *s, struct rt_job *j, bool record_logged);
/* Do what ended jobs left, for about budget_ns (one job at least); with all
 * done, empty the record log if it is synced. */
void rt_sampler_finish_ended(struct rt_sampler *s, uint64_t budget_ns);
/* A new host sample (its text, as published): job samples are made from it. */
void rt_sampler_host_stored(struct rt_sampler *s, const struct rt_rcstr *text);
void rt_sampler_save_record(struct rt_sampler *s, struct rt_job *j, bool sync);

/* cgroup_job.c: a cgroup job's cgroup (or a tree's memory-limited one,
 * for its OOM kills). */
int rt_cgroup_job_begin(struct rt_sampler *s, struct rt_job *j, char *err, size_t errlen);
void rt_cgroup_job_end(struct rt_sampler *s, struct rt_job *j);
/* A cgroup job without a root whose cgroup emptied or went. */
bool rt_cgroup_job_ended(struct rt_sampler *s, struct rt_job *j);
/* Its figures since the last sample into f; false when the cgroup is gone. */
bool rt_cgroup_job_figures(struct rt_sampler *s, struct rt_job *j, double elapsed, struct rt_job_figures *f);
/* Its processes into j->cg_pids (j->cg_npids); 0 or -errno. */
int rt_cgroup_job_pids(struct rt_job *j);
/* An adopted cgroup ran before the daemon saw it (since j->started_at):
 * its CPU, I/O and OOM kills so far are the job's, and its first sample
 * spans that time. */
void rt_cgroup_job_count_from_start(struct rt_job *j);

/* retention.c */
void rt_sampler_retention(struct rt_sampler *s);

#endif
