/* resource-trackerctl run: the command (child.c) and the link to the daemon
 * (link.c), driven by ctl_run (ctl/run.c). */
#ifndef RT_CTL_RUN_H
#define RT_CTL_RUN_H

#include "ctl.h"

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- the command (child.c) ----
 * Forked held on a pipe, released to exec once the job is registered. The
 * client is a child subreaper: what the command's processes leave behind
 * (double forks, daemonising workers) is re-parented to us, so it stays in
 * the job (StartJob adopt_orphans), and we reap it. */
struct run_child {
    pid_t pid;
    int sfd;             /* signalfd: SIGCHLD and the forwarded signals */
    int go_w;            /* write end of the hold pipe */
    int execerr_r;       /* read end: errno of a failed exec */
    int exec_errno;      /* 0 when the exec worked (or is not known yet) */
    uint64_t max_rss_bytes; /* once it ended: the largest RSS of it or a process waited for (0: unknown) */
    sigset_t old_mask;
};

/* Fork cmd held; signals are blocked and read through sfd. 0 or -errno. */
int run_child_spawn(struct run_child *ch, char **cmd);
/* Let the held command exec, with the variables of env set first
 * ("NAME=VALUE\0" each, env_len bytes in all; NULL, 0 for none). */
void run_child_release(struct run_child *ch, const char *env, size_t env_len);
/* Once the command has ended: read the exec errno pipe (a failed exec
 * writes it and exits; a successful one closes it, and is not waited for
 * meanwhile: that wake-up would compete with the command's start). */
void run_child_exec_result(struct run_child *ch, const char *name);
/* Signals that arrived: forward those sent to us, reap orphans that ended.
 * True when the command has ended (si: its status; not reaped yet). */
bool run_child_signals(struct run_child *ch, siginfo_t *si);
/* Kill and reap a command that never ran (registration failed). */
void run_child_abort(struct run_child *ch);
/* Reap the command and the orphans that ended; the exit status to return
 * (128+N for signal N, 127/126 when exec failed). */
int run_child_reap(struct run_child *ch);
/* Say which of the command's processes still run: they are not tracked
 * once the command has ended. */
void run_child_note_orphans(void);
void run_child_close(struct run_child *ch);

/* ---- the link to the daemon (link.c) ---- */
typedef void (*run_emit_fn)(void *ctx, const char *text, size_t len);

struct run_link {
    struct ctl *ctl;
    struct rt_vl_client ctrl, stream;
    uint64_t job_id;
    struct json_object *job;     /* the latest Job object the daemon sent */
    /* samples */
    bool want_samples, csv;
    run_emit_fn emit;
    void *emit_ctx;
    bool streaming;              /* a GetJobSamples call is open on stream */
    bool stream_ended;           /* the daemon said the job ended: all samples are out */
    uint64_t next_offset;        /* samples printed: where a new stream resumes */
    bool header_out;             /* the CSV header was printed */
    /* connection */
    bool up;
    bool gone;                   /* the daemon does not know the job: nothing more to do */
    uint64_t down_since_ns, retry_at_ns;
    unsigned backoff_ms;
    /* upload watch: a GetJob now and then, answered on ctrl */
    bool watch, watch_pending;
    uint64_t watch_at_ns;
    bool warned_register;
    int64_t warned_pending;
    struct json_object *given_gpus; /* StartJob's given_gpus (run --gpus), or NULL */
    char warned_idle[8][104];       /* "kind:uuid" of the idle GPUs said already */
    size_t n_warned_idle;
};

void run_link_init(struct run_link *l, struct ctl *ctl, struct rt_vl_client *ctrl);
/* StartJob (params taken); 0 or an RT_EXIT_* code after printing why. */
int run_link_start(struct run_link *l, struct json_object *params);
/* Open the sample stream (when samples are wanted): after the command is
 * released, so that its exec waits for one round trip only. */
void run_link_follow(struct run_link *l);
/* The descriptors to poll (ctrl, stream; -1 when down) and how long to wait. */
void run_link_poll_fds(const struct run_link *l, struct pollfd pfd[2]);
int run_link_timeout_ms(const struct run_link *l);
/* Handle readiness of the polled descriptors and due timers. */
void run_link_service(struct run_link *l, const struct pollfd pfd[2]);
/* The command ended: FinishJob with its status, reconnecting (bounded) if
 * the daemon is away; stops early on SIGINT/SIGTERM in sfd. 0 when the
 * daemon has the status. */
int run_link_finish(struct run_link *l, const siginfo_t *si, int sfd, uint64_t max_rss_bytes, bool not_started);
/* Print the samples still coming, until the daemon ends the stream. */
void run_link_drain(struct run_link *l);
void run_link_close(struct run_link *l);

/* ---- run --gpus (gpus.c) ---- */
/* The variables that make the GPUs in given (StartJob's given_gpus) the
 * command's, into env ("NAME=VALUE\0" each); their length. Says when fewer
 * than asked are there or free. */
size_t run_gpus_env(struct json_object *given, unsigned asked, char *env, size_t size);

#endif
