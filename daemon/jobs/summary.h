/* A job's totals and the one rule that sums them. The sampler adds each
 * sample's figures as it takes them; a restart adds the figures stored after
 * the last saved record with the same function, so the totals of a resumed
 * job are the totals it would have had without the restart. */
#ifndef RT_JOB_SUMMARY_H
#define RT_JOB_SUMMARY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

struct rt_job_summary {
    uint64_t samples;
    double cpu_secs;
    double peak_cores;             /* highest process_cores_used of a sample */
    uint32_t peak_children;
    uint64_t peak_rss_bytes, peak_pss_bytes;
    uint64_t disk_read_bytes, disk_write_bytes;
    bool has_gpu;                  /* sampled on a host with a GPU backend */
    double gpu_usage_secs;         /* fractional GPUs x seconds */
    double gpu_secs;               /* seconds sampled with a GPU backend */
    uint64_t gpu_peak_vram_bytes;
    bool has_gpu_energy;
    double gpu_energy_joules;      /* the job's share of device energy */
    struct json_object *gpus;      /* UUIDs of the GPUs the job used (array), or NULL */
    /* Sums for means (reports and right-sizing read them instead of every
     * sample). means_known is false for records from before these fields. */
    bool means_known;
    double pss_sum_bytes;
    double gpu_peak_usage;         /* largest GPU use of a sample, fractional GPUs */
    double gpu_vram_sum_bytes;
};

/* One sample of a job as it is stored: everything its totals need. Values
 * have the precision the sample shows (cores and GPU use to 4 decimals). */
struct rt_job_figures {
    uint64_t interval_ms;          /* span of the sample (actual_interval_ms) */
    uint32_t child_count;
    double cores_used;
    double utime_secs, stime_secs; /* in the interval */
    uint64_t rss_bytes, pss_bytes;
    uint64_t disk_read_bytes, disk_write_bytes; /* in the interval */
    bool has_gpu;                  /* the host has a GPU backend */
    double gpu_usage;              /* fractional GPUs */
    uint32_t gpu_utilized;
    uint64_t gpu_vram_bytes;
    bool has_gpu_energy;
    double gpu_energy_joules;      /* the job's share in the interval */
};

/* The rule: add one sample's figures. */
void rt_job_summary_add(struct rt_job_summary *s, const struct rt_job_figures *f);

/* A sample's cores used, for the peak: the highest of all samples. (A
 * sample's cores are its CPU time over at least RT_CORES_MIN_SPAN_SECS, so
 * a short one cannot read high from a single clock tick.) */
void rt_job_summary_note_cores(struct rt_job_summary *s, double cores);

/* CPU time moves in clock ticks (10 ms): cores are measured over at least
 * ten of them. */
#define RT_CORES_MIN_SPAN_SECS 0.1

/* Add GPU UUIDs the job used to its set; true when the set grew (the
 * record is saved then, so that a restart keeps it). */
bool rt_job_summary_note_gpus(struct rt_job_summary *s, const char *const *uuids, size_t n);

/* Time-weighted mean GPU use, fractional GPUs. */
double rt_job_summary_gpu_avg(const struct rt_job_summary *s);

/* The exact totals as the job record keeps them, and back. from_json fills
 * only what the object has (records written before a field existed). */
struct json_object *rt_job_summary_to_record(const struct rt_job_summary *s);
void rt_job_summary_from_record(struct rt_job_summary *s, struct json_object *t, double interval_secs);

void rt_job_summary_free(struct rt_job_summary *s);

#endif
