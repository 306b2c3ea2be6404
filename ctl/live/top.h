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
    TOP_GPU, TOP_VRAM, TOP_TIME, TOP_NCOLS
};

/* One job as the table shows it. */
struct top_row {
    uint64_t id;
    char name[64], user[33];
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
};

/* The visible table: the columns that fit in width (the name takes what is
 * left), in display order. Returns how many; *name_width is set. */
size_t top_layout(const struct top *t, int width, enum top_col *cols, int *name_width);
/* Header and row text of the table (no newline); mark_sort appends v (or ^
 * when reversed) to the name of the sort column. */
void top_format_header(const struct top *t, const enum top_col *cols, size_t n, int name_width, bool mark_sort,
                       char *buf, size_t size);
void top_format_row(const struct top_row *r, const enum top_col *cols, size_t n, int name_width, char *buf,
                    size_t size);
const char *top_col_name(enum top_col c);
/* A column by its name in the header, any case ("cores", "rss" …); -1 if none. */
int top_col_from_name(const char *name);

/* Feed replies (the "sample" object of StreamHostSamples, the "jobs" array
 * of StreamJobs). 0, or -1 after printing why. */
int top_set_host(struct top *t, struct json_object *sample);
void top_set_jobs(struct top *t, struct json_object *jobs);
/* Order the rows and apply the filter (after the sort or filter changed). */
void top_sort(struct top *t);
void top_free(struct top *t);

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
