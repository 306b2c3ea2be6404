/* resource-trackerctl internals. */
#ifndef RT_CTL_H
#define RT_CTL_H

#include "rt/varlink.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes of the client's own failures (run exits with the command's). */
enum {
    RT_EXIT_OK = 0,
    RT_EXIT_FAILURE = 1,
    RT_EXIT_USAGE = 2,
    RT_EXIT_UNREACHABLE = 3,
    RT_EXIT_DENIED = 4,
    RT_EXIT_NOT_FOUND = 5,
};

/* Output formats (bits: a verb's set is a mask). */
enum ctl_format { CTL_FMT_TEXT = 1, CTL_FMT_JSON = 2, CTL_FMT_CSV = 4 };

struct ctl {
    const char *socket;        /* --socket or $RESOURCE_TRACKER_SOCKET, else NULL */
    unsigned format;           /* --json, --format: a CTL_FMT_* bit; 0 until chosen or settled */
    bool json;                 /* format is CTL_FMT_JSON */
    bool format_chosen;        /* --json or --format was given (not the verb's default) */
    const char *user;          /* --user: whose job a JOB name means (administrators) */
    char used_socket[4096];    /* the socket we connected to (or last tried) */
    bool used_private;         /* it is a private daemon's: reached through its directory */
    bool blocked;              /* no directory for a private daemon's socket could be had */
    bool quiet;                /* autostart failures are not printed (reconnecting) */
};

/* Connect to the daemon: the chosen socket, else the system socket, else the
 * user socket, where a private user daemon is started when none answers (so
 * that every verb reaches the user's history). Every verb connects with it.
 * Returns 0 or an RT_EXIT_* code after printing why. */
int ctl_connect(struct ctl *ctl, struct rt_vl_client *c);
/* The same without starting one: for exporters, which must report a daemon
 * that is down rather than start a private one of their own user. */
int ctl_connect_running(struct ctl *ctl, struct rt_vl_client *c);
/* Connect to path, a private daemon's socket through its directory checked
 * to be ours (rt_user_socket_dir_open); the server must be root or us
 * (rt_vl_client_connect). 0 or -errno (-EPERM: not ours). */
int ctl_connect_path(struct rt_vl_client *c, const char *path, bool private);
/* A new connection to the daemon we connected to; 0 or -errno (close c either way). */
int ctl_connect_used(struct ctl *ctl, struct rt_vl_client *c);
/* Connect again to the daemon of used_socket (it restarted): a private one
 * is started again there; nothing is printed. 0 or an RT_EXIT_* code. */
int ctl_reconnect(struct ctl *ctl, struct rt_vl_client *c);
/* Start a private user daemon at socket_path and connect to it (autostart.c).
 * Returns 0 or an RT_EXIT_* code after printing why. */
int ctl_autostart(struct ctl *ctl, struct rt_vl_client *c, const char *socket_path);
/* Call a method and wait for its reply. On a varlink error, print it and
 * return the matching exit code; on success *params (may be NULL) holds the
 * reply's parameters, owned by *reply which the caller puts. */
int ctl_call(struct rt_vl_client *c, const char *method, struct json_object *params,
             struct json_object **reply, struct json_object **out_params);
/* The same, sending the descriptor fd with the call when fd >= 0. */
int ctl_call_fd(struct rt_vl_client *c, const char *method, struct json_object *params, int fd,
                struct json_object **reply, struct json_object **out_params);
/* Connect (starting a private daemon if need be) and call; params are taken. */
int ctl_simple_call(struct ctl *ctl, const char *method, struct json_object *params, struct rt_vl_client *c,
                    struct json_object **reply, struct json_object **p);
/* Every job ListJobs gives for filter (taken), all pages, at most the
 * filter's "limit" in all: 0 with *jobs (an array the caller puts), or an
 * RT_EXIT_* code after printing why. */
int ctl_list_jobs(struct rt_vl_client *c, struct json_object *filter, struct json_object **jobs);
/* Exit code and message for an error reply. */
int ctl_report_error(struct json_object *reply);

/* JOB argument: an id when numeric, else a name, which the daemon resolves
 * among the caller's jobs or, with --user, that user's. Adds "id", or "name"
 * and "owner_uid". 0, or RT_EXIT_USAGE after printing why. */
int ctl_job_ref(const struct ctl *ctl, struct json_object *params, const char *arg);

/* Metadata flags and TRACKER_* variables, shared by run and start
 * (ctl_meta_opts in args.h, in their specs). */
struct ctl_args;
struct ctl_meta {
    struct json_object *metadata; /* JobMetadata */
    const char *job_name;
    double interval;              /* 0 = daemon default */
    struct json_object *request;  /* JobRequest (--request, TRACKER_REQUEST), or NULL */
    struct json_object *notify;   /* targets (--notify, TRACKER_NOTIFY), or NULL */
};
void ctl_meta_init(struct ctl_meta *m);
void ctl_meta_free(struct ctl_meta *m);
/* Take option val (one of ctl_meta_opts) with its value: 1 taken, 0 not
 * ours, -1 after printing why the value is refused. */
int ctl_meta_option(struct ctl_meta *m, const struct ctl_args *a, int val, const char *value);
/* Fill unset fields from TRACKER_* environment variables; -1 after saying
 * why one is refused. */
int ctl_meta_from_env(struct ctl_meta *m);
/* StartJob's request and notify parameters, where given. */
void ctl_meta_request_params(const struct ctl_meta *m, struct json_object *params);
/* The job's name, from source (an option or a variable, for messages). */
void ctl_meta_name(struct ctl_meta *m, const char *name, const char *source);
/* Fill unset fields from TRACKER_* environment variables. */
int ctl_meta_from_env(struct ctl_meta *m);
/* Check the labels (name, tags, metadata values) against the daemon's
 * rules: a bad one is refused (RT_EXIT_USAGE after a message), or, when
 * lenient (run: a label never stops a command), left out with a warning. */
int ctl_meta_check(struct ctl_meta *m, const struct ctl_args *a, bool lenient);
/* StartJob's upload parameters from SENTINEL_API_TOKEN, SENTINEL_API_URL and
 * TRACKER_UPLOAD_INTERVAL (only with a token: without one nothing is sent). */
void ctl_upload_params(struct json_object *params);
/* Parse a boolean the way TRACKER_* variables accept them: 1/0/true/false/yes/no/on/off, any case. */
int ctl_parse_bool(const char *s, bool *out);

/* verbs, and their command lines (args.h) */
struct ctl_spec;
extern const struct ctl_spec ctl_run_spec, ctl_start_spec, ctl_stop_spec, ctl_jobs_spec, ctl_status_spec,
    ctl_samples_spec, ctl_info_spec, ctl_help_spec, ctl_version_spec, ctl_top_spec, ctl_metrics_spec,
    ctl_notify_spec, ctl_gpus_spec, ctl_usage_spec;
int ctl_run(struct ctl *ctl, int argc, char **argv);
int ctl_start(struct ctl *ctl, int argc, char **argv);
int ctl_stop(struct ctl *ctl, int argc, char **argv);
int ctl_jobs(struct ctl *ctl, int argc, char **argv);
int ctl_status(struct ctl *ctl, int argc, char **argv);
int ctl_samples(struct ctl *ctl, int argc, char **argv);
int ctl_info(struct ctl *ctl, int argc, char **argv);
int ctl_notify(struct ctl *ctl, int argc, char **argv);
int ctl_help(struct ctl *ctl, int argc, char **argv);
int ctl_version(struct ctl *ctl, int argc, char **argv);
int ctl_complete(struct ctl *ctl, int argc, char **argv);
int ctl_metrics(struct ctl *ctl, int argc, char **argv);
int ctl_top(struct ctl *ctl, int argc, char **argv);
int ctl_gpus(struct ctl *ctl, int argc, char **argv);
int ctl_usage_report(struct ctl *ctl, int argc, char **argv);

/* formatting */
void ctl_fmt_bytes(char *buf, size_t size, double bytes);
void ctl_fmt_duration(char *buf, size_t size, double secs);
void ctl_fmt_time(char *buf, size_t size, double unix_secs);
/* The user's name, else the uid as digits; returns buf. */
const char *ctl_fmt_user(int64_t uid, char *buf, size_t size);
/* Disk use as df(1) shows it: used / (used + available), rounded up. */
int ctl_df_pct(uint64_t used, uint64_t avail);
void ctl_print_json(FILE *f, struct json_object *o);
/* Columns for a table: $COLUMNS, else the terminal's width, else 0 (no limit). */
size_t ctl_term_width(void);
/* s in at most width characters (UTF-8: a character is never cut), ending in
 * "…" when cut; control characters escaped as systemd shows them (\n, \x1b:
 * rt_escape_next), an escape never cut. Returns the characters written. A
 * wide (CJK) character counts as one. */
size_t ctl_fmt_cut(char *buf, size_t size, const char *s, size_t width);
/* The characters s takes shown whole (as ctl_fmt_cut shows it). */
size_t ctl_fmt_width(const char *s);
/* ctl_fmt_cut padded with spaces to width characters; NULL shows as "-". */
void ctl_fmt_cell(char *buf, size_t size, const char *s, size_t width);
/* A job's figures by their names in rt/job_figures.h (figures.c; a name
 * that is not there is a bug and aborts): a total of Job.summary (false
 * when null; ctl_total0: 0 then), and the keys of a sample's figure in a
 * JSON sample's "cpu" and in Job.current. */
bool ctl_total(struct json_object *summary, const char *key, double *v);
double ctl_total0(struct json_object *summary, const char *key);
const char *ctl_fig_json(const char *name);
const char *ctl_fig_now(const char *name);

/* A job's memory for people: the peak it could not do without, its limit,
 * its cgroup's peak or its tree's PSS and RSS, after head (no newline). */
void ctl_print_job_memory(FILE *f, const char *head, struct json_object *job);
/* What the kernel saw that explains a slow or killed job (OOM kills,
 * pressure, throttling), a line each after head, in words people act on. */
void ctl_print_job_kernel(FILE *f, const char *head, struct json_object *job);
/* A job's command line (its metadata.command joined by spaces), malloc'd;
 * NULL when it has none. Not escaped. */
char *ctl_job_command(struct json_object *job);
/* How the job is tracked, for people: "as the cgroup PATH", "as a process tree (no cgroup: WHY)". */
void ctl_job_tracking(struct json_object *job, char *buf, size_t size);

/* The headline memory of a job's summary (summary.c), the one figure every
 * view leads with: what the job could not do without (memory_peak_bytes:
 * its cgroup's memory for a cgroup job, a tree's PSS or high-water mark),
 * else, for a job recorded before it, the peak PSS; its words for people
 * ("peak", "peak PSS") in *label when label is not NULL. RSS is secondary:
 * it counts pages forked workers share once per process. */
double ctl_job_memory(struct json_object *summary, const char **label);
/* How a job ended, spelt one way in every view (summary.c): "exit status
 * 3", "killed by SIGKILL", "exit status unknown" (lost, ended), "tracking
 * stopped", "still running"; brief, for a table's cell: "3", "SIGKILL", "?"
 * (not known), "-" (running, stopped). Returns buf. */
const char *ctl_fmt_end(char *buf, size_t size, struct json_object *job, bool brief);
/* A job's summary for people (summary.c): result, CPU, memory, I/O, GPU,
 * upload; `run` prints it at the end. */
void ctl_print_job_summary(FILE *f, struct json_object *job);
/* "8 CPUs, 64.0 GiB, 2 GPUs" of a JobRequest ("" for none or NULL). */
void ctl_fmt_request(char *buf, size_t size, struct json_object *request);
/* What a job asked for with its efficiency ("Asked    8 CPUs, …; efficiency
 * CPU 24%, …"), then a "Note" line per note; nothing without either. */
void ctl_print_request(FILE *f, struct json_object *job, const char *indent);
/* The "GPU health" and "GPM" lines of a job's summary object (none when all
 * is well, or not known). */
void ctl_print_gpu_health(FILE *f, const char *indent, struct json_object *summary);

/* The client's messages on stderr, "resource-trackerctl: " before them. */
#define CTL_ERR(...) ctl_err(__VA_ARGS__)
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Hold the messages instead of printing them (run, while it finds out whether
 * its command runs tracked), or print those held and stop holding. */
void ctl_err_hold(bool on);
bool ctl_err_holding(void);
/* The last message held ("" when none), and forget them all. */
const char *ctl_err_take_last(void);

#endif
