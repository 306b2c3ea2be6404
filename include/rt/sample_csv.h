/* CSV form of a sample: the 32 columns of the Python tracker's combined CSV,
 * unquoted, LF-terminated; process columns empty on host samples. */
#ifndef RT_SAMPLE_CSV_H
#define RT_SAMPLE_CSV_H

#include "rt/sample.h"

#include <stddef.h>

#define RT_CSV_COLUMNS 32
extern const char RT_CSV_HEADER[]; /* without the trailing newline */

/* Write one row with its '\n' into buf. Returns the length written, or the
 * length needed (like snprintf) when size is too small. */
size_t rt_sample_to_csv(const struct rt_sample *s, char *buf, size_t size);

/* What a row takes from the host part of a sample, as raw field values in
 * a fixed order (sums and rounding are the row's business):
 *   process_count, utime_secs, stime_secs, utilization_pct,
 *   memory free, used, buffers, cached, active, inactive (MiB),
 *   n_disks, per disk: stacked, read and write bytes/s, n_mounts,
 *                      per mount: total_bytes, available_bytes,
 *   n_nets, per interface: rx and tx bytes/s,
 *   n_gpus, per GPU: utilization_pct, vram_used_bytes.
 * The job store keeps host samples in another form and rebuilds this list
 * to make rows that equal the ones made from the sample. */
struct rt_csv_host {
    double *v;
    size_t n, cap;
};
void rt_csv_host_from_sample(const struct rt_sample *s, struct rt_csv_host *h); /* replaces h's values */
void rt_csv_host_free(struct rt_csv_host *h);

/* The job's part of a row: its root's pid and figures (has_job false: a
 * host row, with the host's GPU use where f has RT_GATE_GPU). */
struct rt_csv_job {
    bool has_job;
    int32_t pid;
    const struct rt_job_figures *f;
    bool host_repeated; /* the host part is the previous row's: its CPU seconds are left empty */
};
#define RT_CSV_PID_COLUMN 22 /* process_pid; the job's figures follow it (rt_fig_samples' csv) */

/* A row from host values, the sample's timestamp (ms) and interval, and
 * the job's part. Returns as rt_sample_to_csv; 0 when h is not a
 * well-formed list. */
size_t rt_csv_row(const double *h, size_t n, uint64_t timestamp_ms, double interval_secs, const struct rt_csv_job *job,
                  char *buf, size_t size);

#endif
