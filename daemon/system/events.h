/* Structured journal records for the events an administrator looks for:
 * daemon start/stop, configuration reloads, jobs starting and finishing,
 * upload outages and GPUs coming and going. Each kind has a fixed
 * MESSAGE_ID, so for example
 *     journalctl MESSAGE_ID=91d7f8cd53cc4b8e9d13c9e99713020b JOB_NAME=train -o verbose
 * finds a job's totals. Outside the journal (rt_log_to_journal() false) the
 * same MESSAGE text goes to stderr through rt_log. Samples are never logged.
 * The functions are safe to call from any thread; they honour the log level.
 * Field reference: docs/systemd.md. */
#ifndef RT_EVENTS_H
#define RT_EVENTS_H

#include "rt/job_figures.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define RT_MSGID_DAEMON_STARTED "3a954f50f4f64bf29bd2c2e43074138e"
#define RT_MSGID_DAEMON_STOPPED "92a5596fd87a46a097df29c10ff018f0"
#define RT_MSGID_CONFIG_RELOADED "02a0043c372a4e67b9eced29f9032566"
#define RT_MSGID_CONFIG_REJECTED "0a037f8aae684d7f93909e2ce5ad1797"
#define RT_MSGID_JOB_STARTED "5032d2dc27914794b2150aaab63c8c7e"
#define RT_MSGID_JOB_FINISHED "91d7f8cd53cc4b8e9d13c9e99713020b"
#define RT_MSGID_UPLOAD_FAILED "72e1b1fb7002436d872b82d98e7334d1"
#define RT_MSGID_UPLOAD_RECOVERED "f343707d057146759eb9347823c4a7da"
#define RT_MSGID_GPU_APPEARED "1f32a80df2544d5d8e5541d433860f80"
#define RT_MSGID_GPU_LOST "cbb7737498ae4cacb1bf18f9bd88e185"
#define RT_MSGID_GPU_IDLE "74497e33cb52407295924d0708c75cf3"
#define RT_MSGID_GPU_XID "bc048488e6ed45e3a593d938484c373a"

/* An owner the caller does not know (the upload worker knows job ids only). */
#define RT_EVENT_UID_UNKNOWN ((uid_t)-1)

struct rt_event_daemon {
    const char *version;       /* RT_VERSION */
    double interval_secs;      /* SAMPLING_INTERVAL_USEC */
    const char *socket_path;   /* SOCKET_PATH */
    bool socket_activated;     /* SOCKET_ACTIVATED=1|0 */
    const char *state_dir;     /* STATE_DIR */
    unsigned jobs_restored;    /* JOBS_RESTORED: running jobs found in the state dir */
    unsigned gpus;             /* GPU_COUNT */
};

/* Who a job is; id is required, the rest may be NULL/0/RT_EVENT_UID_UNKNOWN. */
struct rt_event_job {
    const char *id;            /* JOB_ID */
    const char *name;          /* JOB_NAME (left out when NULL or "") */
    uid_t owner_uid;           /* JOB_OWNER_UID (left out when RT_EVENT_UID_UNKNOWN) */
    const char *owner;         /* JOB_OWNER: the owner's user name (left out when NULL: no such user) */
    pid_t root_pid;            /* JOB_ROOT_PID (left out when 0) */
    const char *command;       /* JOB_COMMAND, argv joined by spaces (optional) */
};

/* A finished job: how it ended and its totals over its whole life. The
 * totals' fields are the journal fields of rt_fig_totals (counters with
 * systemd's UNIT_RESOURCES names: CPU_USAGE_NSEC, IO_METRIC_*), each with
 * its field for people (CPU_USAGE, MEMORY_RSS_PEAK, …: "unknown" where the
 * total is null, and its counter left out, never 0); the GPU ones only for
 * a job that used a GPU. Always: JOB_RESULT, JOB_DURATION, GPU_USAGE
 * ("none"). */
struct rt_event_job_end {
    const char *state;         /* JOB_STATE: "finished", "failed", "stopped", "lost", "ended" */
    int exit_status;           /* EXIT_STATUS: exit code, 128+N when killed by signal N; <0 unknown */
    uint64_t duration_usec;    /* JOB_DURATION_USEC, wall clock */
    unsigned processes_max;    /* JOB_PROCESSES_MAX: most processes alive at once */
    const struct rt_job_summary *totals; /* JOB_SAMPLES, GPU_COUNT and the totals' fields */
    /* Requested against used (NULL: none): JOB_REQUEST_CPUS, JOB_REQUEST_MEMORY_BYTES,
     * JOB_REQUEST_GPUS; JOB_CPU_EFFICIENCY_PERCENT, JOB_MEMORY_EFFICIENCY_PERCENT,
     * JOB_GPU_EFFICIENCY_PERCENT; JOB_NOTES (the notes' ids) and a JOB_NOTE per note. */
    struct json_object *request, *efficiency, *notes;
};

/* One failed upload attempt. Never pass a token or a signed URL here. */
struct rt_upload_failure {
    const char *stage;         /* UPLOAD_STAGE: "start run", "upload", "refresh credentials", … */
    const char *run_id;        /* UPLOAD_RUN_ID: the Sentinel run (optional) */
    long http_status;          /* UPLOAD_HTTP_STATUS; 0 = no HTTP answer (left out); UPLOAD_HTTP
                                * for people: "HTTP 503", "no HTTP answer" */
    const char *error;         /* UPLOAD_ERROR: curl's message or the API's */
    /* 0 = not known: UPLOAD_ATTEMPT, UPLOAD_RETRY_USEC and UPLOAD_QUEUE are left out */
    unsigned attempt;          /* UPLOAD_ATTEMPT, 1 for the first failure */
    uint64_t retry_in_usec;    /* UPLOAD_RETRY_USEC */
    unsigned queued_batches;   /* UPLOAD_QUEUE: batches waiting in the spool */
};

struct rt_event_gpu {
    unsigned index;            /* GPU_INDEX */
    const char *vendor;        /* GPU_VENDOR: "nvidia", "amd" */
    const char *name;          /* GPU_NAME */
    const char *uuid;          /* GPU_UUID (optional) */
    uint64_t memory_total_bytes; /* GPU_MEMORY_TOTAL_BYTES, 0 = unknown (left out) */
};

/* A GPU (or MIG instance) idle but held, or given to a job and unused. */
struct rt_event_gpu_idle {
    const struct rt_event_gpu *gpu;
    const char *instance_uuid;   /* GPU_MIG_UUID: a MIG instance (NULL: the whole GPU) */
    bool unused;                 /* GPU_IDLE_KIND=unused (given to job, none of its processes on it), else held */
    double since;                /* GPU_IDLE_SINCE_USEC: when it began (Unix seconds) */
    double secs;                 /* for how long, in the message */
    uint64_t vram_held_bytes;    /* GPU_VRAM_HELD_BYTES (held only) */
    unsigned util_max;           /* GPU_IDLE_UTIL_MAX_PERCENT (held only) */
    const uid_t *uids;           /* GPU_HOLDER_UID, one field per user holding it */
    size_t n_uids;
    const struct rt_event_job *jobs; /* JOB_ID (and JOB_NAME) of each job holding it, one field each */
    size_t n_jobs;
};

/* An XID error of a GPU, during the job (NULL: no job was on it). */
struct rt_event_gpu_xid {
    const struct rt_event_gpu *gpu;
    unsigned xid;                /* GPU_XID */
    const struct rt_event_job *job;
};

void rt_event_daemon_started(const struct rt_event_daemon *d);
/* reason: what ended it ("SIGTERM", "idle"). */
void rt_event_daemon_stopped(const char *reason, uint64_t uptime_usec);
/* changed: RT_CFG_* bits that differ from the running configuration;
 * waiting: those of them that apply at the next restart. */
void rt_event_config_reloaded(const char *path, uint64_t changed, uint64_t waiting);
void rt_event_config_rejected(const char *path, const char *error);
void rt_event_job_started(const struct rt_event_job *job);
void rt_event_job_finished(const struct rt_event_job *job, const struct rt_event_job_end *end);
/* Log the first failure of an outage and then only when it changes
 * (another stage or status), not every retry: the journal rate-limits. */
void rt_event_upload_failed(const struct rt_event_job *job, const struct rt_upload_failure *f);
/* outage_usec 0 = not known (left out). */
void rt_event_upload_recovered(const struct rt_event_job *job, const char *run_id, unsigned failed_attempts,
                               uint64_t outage_usec);
void rt_event_gpu_appeared(const struct rt_event_gpu *g);
void rt_event_gpu_lost(const struct rt_event_gpu *g, const char *reason);
void rt_event_gpu_idle(const struct rt_event_gpu_idle *e);
void rt_event_gpu_xid(const struct rt_event_gpu_xid *e);

/* Tests: send records to fn instead of the journal or stderr (NULL
 * restores). The iovecs hold "FIELD=value" and live only during the call. */
typedef void (*rt_event_sink)(const struct iovec *iov, int n, void *userdata);
void rt_events_set_sink(rt_event_sink fn, void *userdata);

#endif
