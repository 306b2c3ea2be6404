/* resource-trackerctl top: the host and the jobs the caller may see, live,
 * from the daemon's streams (StreamHostSamples, StreamJobs). The model and
 * its table are shared by the full-screen view (top_screen.c) and the plain
 * lines written when stdout is not a terminal (top_plain.c). */
#ifndef CTL_LIVE_TOP_H
#define CTL_LIVE_TOP_H

#include "ctl.h"
#include "rt/sample.h"

#include <stdint.h>
#include <sys/types.h>

enum top_col {
    TOP_ID, TOP_NAME, TOP_USER, TOP_STATE, TOP_CORES, TOP_RSS, TOP_PSS, TOP_READ, TOP_WRITE,
    TOP_GPU, TOP_VRAM, TOP_TIME, TOP_COMMAND, TOP_NCOLS
};

#define TOP_FILTER_MAX 64

/* The table's columns for a width, in display order, and their widths (the
 * command, last, takes what is left). */
struct top_layout {
    enum top_col col[TOP_NCOLS];
    int width[TOP_NCOLS];
    size_t n;
};

/* A process of the job drilled into (GetJobProcesses). */
struct top_proc {
    int32_t pid;
    int64_t uid;
    char state;
    double cpu_secs, cores;      /* cores: over the last refresh, -1 before a second look */
    double rss;
    char command[512];           /* "" when hidden from the caller */
};

/* One job as the table shows it. */
struct top_row {
    uint64_t id;
    char name[64], user[33];
    char command[512];           /* the command line it was run with (metadata.command), or "" */
    char state;                  /* R running, F finished, X failed, S stopped, L lost */
    bool mine, has_current, has_gpu;
    bool gpu_idle;               /* a GPU of it is idle but held, or given and unused */
    double cores, rss, pss, read_rate, write_rate, gpu, vram, duration;
};

struct top {
    /* what the caller asked for */
    enum top_col sort;
    bool reverse;                /* ascending instead of the column's natural order */
    bool mine_only;
    long iterations;             /* refreshes before exiting; 0 = until q or a signal */
    /* from the daemon */
    uid_t uid;
    bool admin;
    char hostname[256], version[32];
    double interval;
    struct rt_sample host;
    bool have_host;
    struct top_row *rows;        /* every job received, sorted */
    size_t nrows, cap;
    const struct top_row **vis;  /* the rows the filter lets through, in order */
    size_t nvis;
    struct rt_vl_client *calls;  /* for GetGpus, or NULL */
    struct json_object *gpus;    /* its latest "gpus", or NULL */
    /* screen state */
    bool paused, help;
    size_t scroll;
    size_t sel;                  /* the selected row of vis, kept on its job (sel_id) across refreshes */
    uint64_t sel_id;
    char filter[TOP_FILTER_MAX]; /* only jobs whose name, user or command holds it ("": all) */
    bool editing;                /* the filter is being typed (into edit) */
    char edit[TOP_FILTER_MAX];
    /* the drill-down: the processes of job drill (0: the table) */
    uint64_t drill;
    bool drill_ended;            /* the daemon says it is no longer running */
    struct top_proc *procs;
    size_t nprocs, procs_cap;
    double procs_at;             /* monotonic seconds of the last look */
};

/* The visible table: the least needed columns are left out until COMMAND,
 * last, has room (as `jobs` fits a terminal). */
void top_layout(const struct top *t, int width, struct top_layout *l);
/* Header and row text of the table (no newline); mark_sort appends v (or ^
 * when reversed) to the name of the sort column. Users' text is escaped
 * (rt_escape_next) and cut with "…". */
void top_format_header(const struct top *t, const struct top_layout *l, bool mark_sort, char *buf, size_t size);
void top_format_row(const struct top_row *r, const struct top_layout *l, char *buf, size_t size);
/* Append text (escaped, cut to width, padded) and a separator unless last;
 * returns the new end. */
size_t top_field(char *buf, size_t size, size_t at, const char *text, int width, bool left, bool last);
const char *top_col_name(enum top_col c);
/* A column by its name in the header, any case ("cores", "rss" …); -1 if none. */
int top_col_from_name(const char *name);

/* Feed replies (the "sample" object of StreamHostSamples, the "jobs" array
 * of StreamJobs: the processes of the job drilled into are looked at again
 * with them). 0, or -1 after printing why. */
int top_set_host(struct top *t, struct json_object *sample);
void top_set_jobs(struct top *t, struct json_object *jobs);
/* Order the rows and apply the filter (after the sort or filter changed). */
void top_sort(struct top *t);
void top_free(struct top *t);

/* top_procs.c: look at the processes of job t->drill again (the CPU each
 * used since the last look), and their header and row text for a width. */
void top_refresh_procs(struct top *t);
void top_format_proc_header(int width, char *buf, size_t size);
void top_format_proc(const struct top_proc *p, int width, char *buf, size_t size);

/* top_gpus.c: ask for who holds each GPU (once per refresh, on hosts with
 * GPUs), and the panel's text for a GPU: "IDLE", "STALLED", then its users
 * and the memory they hold ("" when not known). */
void top_refresh_gpus(struct top *t);
void top_gpu_holders(const struct top *t, const char *uuid, char *buf, size_t size);

/* top_screen.c (the module ctl-top.so, called through ctl/module.h): run
 * the full-screen view until q, a signal or a lost stream; top_plain.c: print a refresh per jobs reply. Both return an
 * RT_EXIT_* code. */
int top_screen_run(struct top *t, struct rt_vl_client *host, struct rt_vl_client *jobs);
int top_plain_run(struct top *t, struct rt_vl_client *host, struct rt_vl_client *jobs);

/* top.c: wait for the next reply on either stream (or stdin, when
 * watch_stdin). Returns 1 with *which 0 (host) or 1 (jobs) and *params
 * (the reply, to put), 2 when stdin is readable, 0 when a signal arrived
 * (*sig set; SIGWINCH is not one of those), or an RT_EXIT_* code. */
int top_wait(struct rt_vl_client *host, struct rt_vl_client *jobs, bool watch_stdin, int *which,
             struct json_object **reply, int *sig);

#endif
