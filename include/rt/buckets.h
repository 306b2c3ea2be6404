/* Downsampling for the report's charts (filled by the daemon, GetJobSeries,
 * or the client from samples): a run's samples fall into at most a
 * fixed number of equal buckets (by sample index), each keeping the mean
 * time and, per series, the minimum, mean and maximum, so a peak of one
 * sample in a day stays visible. Memory is O(buckets), not O(samples). */
#ifndef RT_BUCKETS_H
#define RT_BUCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_buckets {
    size_t n;             /* buckets */
    size_t nseries;
    uint64_t expected;    /* samples the buckets are spread over */
    double *t_sum;        /* [n] */
    uint32_t *t_count;    /* [n] */
    double *lo, *hi, *sum; /* [n * nseries] */
    uint32_t *count;      /* [n * nseries]: values seen (NaN = unknown is skipped) */
};

/* Spread `expected` samples over at most max_buckets buckets (one sample
 * per bucket when there are fewer samples). */
void rt_buckets_init(struct rt_buckets *b, size_t nseries, size_t max_buckets, uint64_t expected);
void rt_buckets_free(struct rt_buckets *b);
/* Sample `index` (0-based) at time t with values v[nseries]; false when
 * the index is not below `expected` (the sample is not counted). */
bool rt_buckets_add(struct rt_buckets *b, uint64_t index, double t, const double *v);
/* Bucket i: false when it holds no sample. */
bool rt_bucket_time(const struct rt_buckets *b, size_t i, double *t);
/* Series k of bucket i: false when no value was known there. */
bool rt_bucket_value(const struct rt_buckets *b, size_t i, size_t k, double *lo, double *mean,
                          double *hi);

#endif
