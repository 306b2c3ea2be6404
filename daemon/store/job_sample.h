/* A job's sample as clients get it, made from the host sample of its tick
 * (the JSON text the host sample is published as) and the job's figures:
 * the same bytes json-c wrote when the job fields were set on the host tree
 * and the tree serialised again, and the same CSV row. The sampler makes
 * live samples with it and the store rebuilds stored ones with it. */
#ifndef RT_STORE_JOB_SAMPLE_H
#define RT_STORE_JOB_SAMPLE_H

#include "rt/job_figures.h"
#include "store/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the job fields go in a host sample's text. */
struct rt_host_text {
    const char *p;
    size_t len;
    size_t ai_val, ai_end;          /* the actual_interval_ms value, when the text starts with it */
    size_t proc1, proc1_end;        /* the job's keys before "process_count" */
    size_t proc2, proc2_end;        /* and after it, up to "stime_secs" */
    size_t job, job_end;            /* ["host_timestamp_ms":null,]"job_id":null,"job_name":null, */
    size_t tail;                    /* ["timestamp_ms":…,]"timestamp_secs":…,"tracked_pid":null} */
    bool has_ms;                    /* timestamp_ms is there (samples from before it had none) */
    uint64_t timestamp_ms;          /* the host sample's (its whole second without has_ms) */
};

/* false when the text is not a host sample of rt_sample_to_json. */
bool rt_host_text_parse(const char *p, size_t len, struct rt_host_text *h);

/* What a job's sample adds to the host sample. */
struct rt_job_sample {
    uint64_t job_id;
    const char *name_json;          /* the name as a JSON string, or "null" */
    int32_t pid;
    uint64_t timestamp_ms;
    bool host_repeated;             /* the host part is that of the job's previous sample */
    const struct rt_job_figures *f;
};

/* Its JSON line (no newline), appended to out. */
void rt_job_sample_json(const struct rt_host_text *h, const struct rt_job_sample *s, struct rt_buf *out);
/* Its CSV row from the host's CSV values (rt_csv_host), appended to out;
 * false when the values are not well-formed. */
bool rt_job_sample_csv(const double *host, size_t n, const struct rt_job_sample *s, struct rt_buf *out);
/* The name of a job as its samples show it ("null" when unnamed); free it. */
char *rt_job_name_json(const char *name);

#endif
