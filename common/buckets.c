#include "rt/buckets.h"

#include "rt/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void rt_buckets_init(struct rt_buckets *b, size_t nseries, size_t max_buckets, uint64_t expected)
{
    memset(b, 0, sizeof(*b));
    b->nseries = nseries;
    b->expected = expected;
    b->n = expected < max_buckets ? (size_t)expected : max_buckets;
    size_t cells = b->n * nseries;
    b->t_sum = rt_xcalloc(b->n ? b->n : 1, sizeof(double));
    b->t_count = rt_xcalloc(b->n ? b->n : 1, sizeof(uint32_t));
    b->lo = rt_xcalloc(cells ? cells : 1, sizeof(double));
    b->hi = rt_xcalloc(cells ? cells : 1, sizeof(double));
    b->sum = rt_xcalloc(cells ? cells : 1, sizeof(double));
    b->count = rt_xcalloc(cells ? cells : 1, sizeof(uint32_t));
}

void rt_buckets_free(struct rt_buckets *b)
{
    free(b->t_sum);
    free(b->t_count);
    free(b->lo);
    free(b->hi);
    free(b->sum);
    free(b->count);
    memset(b, 0, sizeof(*b));
}

bool rt_buckets_add(struct rt_buckets *b, uint64_t index, double t, const double *v)
{
    if (index >= b->expected || !b->n)
        return false;
    /* index * n / expected without overflow for any realistic count. */
    size_t i = (size_t)((long double)index * (long double)b->n / (long double)b->expected);
    if (i >= b->n)
        i = b->n - 1;
    b->t_sum[i] += t;
    b->t_count[i]++;
    for (size_t k = 0; k < b->nseries; k++) {
        if (isnan(v[k]))
            continue;
        size_t c = i * b->nseries + k;
        if (!b->count[c] || v[k] < b->lo[c])
            b->lo[c] = v[k];
        if (!b->count[c] || v[k] > b->hi[c])
            b->hi[c] = v[k];
        b->sum[c] += v[k];
        b->count[c]++;
    }
    return true;
}

bool rt_bucket_time(const struct rt_buckets *b, size_t i, double *t)
{
    if (i >= b->n || !b->t_count[i])
        return false;
    *t = b->t_sum[i] / b->t_count[i];
    return true;
}

bool rt_bucket_value(const struct rt_buckets *b, size_t i, size_t k, double *lo, double *mean,
                          double *hi)
{
    size_t c = i * b->nseries + k;
    if (i >= b->n || k >= b->nseries || !b->count[c])
        return false;
    *lo = b->lo[c];
    *hi = b->hi[c];
    *mean = b->sum[c] / b->count[c];
    return true;
}
