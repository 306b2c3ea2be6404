/* The sampler thread: one host sample per tick on absolute deadlines, then
 * one sample per due job from a single shared process scan. It owns all
 * per-job accounting state; the main thread talks to it with requests and
 * receives results and samples through an outbox signalled on an eventfd. */
#ifndef RT_SAMPLER_H
#define RT_SAMPLER_H

#include "cgroup/hier.h"
#include "collect/roots.h"
#include "gpuuse/gpuuse.h"
#include "jobs/jobs.h"
#include "sampler/rcstr.h"
#include "jobs/state_dir.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum rt_sreq_type {
    RT_SREQ_START,   /* begin tracking req->job (not yet in the registry) */
    RT_SREQ_RESUME,  /* continue a running job loaded from disk */
    RT_SREQ_FINISH,  /* the root exited: final sample, end with the given status */
    RT_SREQ_STOP,    /* stop tracking; the processes live on */
};

struct rt_sreq {
    enum rt_sreq_type type;
    struct rt_job *job;   /* START/RESUME: the job; FINISH/STOP: looked up by id */
    uint64_t job_id;
    bool has_exit;
    int exit_code, signal;
    uint64_t max_rss_bytes;   /* FINISH: the root's wait4 ru_maxrss, 0 unknown */
    bool not_started;         /* FINISH: the command could not be executed (126, 127) */
    /* START: upload settings (token wiped and freed after use) */
    char *token, *api_url;
    unsigned upload_interval_secs;
    struct json_object *given_gpus; /* START: the GPUs picked for it (run --gpus), for the reply */
    /* result, filled by the sampler */
    int result;           /* 0 or -errno */
    char error[160];
    /* owner context for the main thread */
    uint64_t conn_id;
    struct rt_sreq *next;
};

enum rt_sevt_type {
    RT_SEVT_REQ_DONE,
    RT_SEVT_HOST,        /* json: host sample of tick index */
    RT_SEVT_JOB_SAMPLE,  /* json + csv row of sample number index of job_id */
    RT_SEVT_JOB_ENDED,
    RT_SEVT_TICK_DONE,   /* index: the tick whose host and job samples are all out (live views refresh) */
};

struct rt_sevt {
    enum rt_sevt_type type;
    struct rt_sreq *req;
    uint64_t job_id, index;
    struct rt_rcstr *json, *csv;
    uint64_t quiet_tick;  /* mailbox.c: of a quiet tick, replaced by the next one's; 0: kept */
    struct rt_sevt *next;
};

struct rt_sampler_opts {
    double interval_secs;
    const struct rt_roots *roots;
    const struct rt_cg_host *cg_host; /* the host's cgroup hierarchies (NULL: none) */
    bool with_pss;               /* read smaps_rollup for PSS */
    const char *stall_file;      /* test hook: stall ticks while this file exists */
    uint64_t retention_max_age_secs;
    uint64_t retention_max_bytes;
    unsigned retention_max_jobs_per_uid;  /* ended jobs kept per user; 0: no limit */
    struct rt_upload_worker *upload; /* set with rt_sampler_set_upload */
    const char *nvml_library;        /* NULL = libnvidia-ml.so.1 */
    bool disable_gpu;
    struct rt_gpuuse_config gpu_idle; /* set with rt_sampler_set_gpu_idle */
};

struct rt_sampler;

/* Free a request and wipe its token. */
void rt_sreq_free(struct rt_sreq *q);

struct rt_sampler *rt_sampler_new(const struct rt_sampler_opts *o, struct rt_jobs *jobs,
                                  struct rt_state_dir *state);
/* The base interval (host sampling, and the default of new jobs); may change
 * while running (SIGHUP). Running jobs keep theirs. */
void rt_sampler_set_interval(struct rt_sampler *s, double interval_secs);
/* Retention limits; may change while running (SIGHUP). */
void rt_sampler_set_retention(struct rt_sampler *s, uint64_t max_age_secs, uint64_t max_bytes,
                              unsigned max_jobs_per_uid);
/* What makes a GPU idle but held; may change while running (SIGHUP). */
void rt_sampler_set_gpu_idle(struct rt_sampler *s, const struct rt_gpuuse_config *c);
/* Who holds each GPU, for the main thread (owned by the sampler). */
struct rt_gpuuse *rt_sampler_gpuuse(struct rt_sampler *s);
/* Before rt_sampler_start: where job rows go for upload (NULL = nowhere). */
void rt_sampler_set_upload(struct rt_sampler *s, struct rt_upload_worker *w);
/* Takes the baseline and the first host sample before returning, so callers
 * can announce readiness with a sample available. */
int rt_sampler_start(struct rt_sampler *s);
void rt_sampler_stop(struct rt_sampler *s);
void rt_sampler_free(struct rt_sampler *s);

/* eventfd the main thread polls for outbox entries. */
int rt_sampler_event_fd(struct rt_sampler *s);
void rt_sampler_submit(struct rt_sampler *s, struct rt_sreq *req);
/* Take all outbox entries in order (a list linked by next). */
struct rt_sevt *rt_sampler_take(struct rt_sampler *s);
void rt_sevt_free(struct rt_sevt *e);

/* The latest host sample (a reference the caller unrefs), or NULL; *tick
 * (if not NULL): its tick, as in its RT_SEVT_HOST event's index. */
struct rt_rcstr *rt_sampler_latest_host(struct rt_sampler *s, uint64_t *tick);
/* CLOCK_MONOTONIC ns of the last completed tick (for the watchdog). */
uint64_t rt_sampler_heartbeat(struct rt_sampler *s);
unsigned rt_sampler_gpu_count(struct rt_sampler *s);
/* Nobody streams (the main loop says after each batch): a tick's events
 * wait for the main loop's next wake-up, at most a second, instead of
 * waking it (a tick's cost on the main thread). Requests' answers and a
 * job's end always wake it. */
void rt_sampler_set_quiet_ticks(struct rt_sampler *s, bool quiet);
unsigned rt_sampler_gpu_count_amd(struct rt_sampler *s);

/* Test seam, for a sampler whose thread is not started: one tick (the first
 * also takes the baseline host sample), or one request, on the calling
 * thread. Results and samples go to the outbox (rt_sampler_take). */
void rt_sampler_test_tick(struct rt_sampler *s);
void rt_sampler_test_request(struct rt_sampler *s, struct rt_sreq *q);

#endif
