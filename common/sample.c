#include "rt/sample.h"

#include <math.h>
#include <string.h>

void rt_sample_init(struct rt_sample *s)
{
    memset(s, 0, sizeof(*s));
    rt_arena_init(&s->arena);
}

void rt_sample_reset(struct rt_sample *s)
{
    struct rt_arena a = s->arena;
    rt_arena_reset(&a);
    memset(s, 0, sizeof(*s));
    s->arena = a;
}

void rt_sample_free(struct rt_sample *s)
{
    rt_arena_free(&s->arena);
    memset(s, 0, sizeof(*s));
}

double rt_round_dec(double v, int decimals)
{
    static const double pow10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
    double scale = decimals >= 0 && decimals <= 8 ? pow10[decimals] : pow(10.0, decimals);
    double r = round(v * scale) / scale;
    return isfinite(r) ? r : v;
}

double rt_sample_interval_secs(const struct rt_sample *s)
{
    if (s->has_interval)
        return (double)s->actual_interval_ms / 1000.0;
    return s->nominal_interval_secs;
}

uint64_t rt_sample_bytes_in(double rate, double secs)
{
    if (rate == 0) /* most disks and links, most of the time */
        return 0;
    double v = rt_round_dec(rate, RT_DEC_RATE) * secs;
    return v > 0 ? (v < 0x1p63 ? (uint64_t)llround(v) : UINT64_MAX) : 0;
}

uint64_t rt_sample_disk_read_bytes(const struct rt_sample *s)
{
    double secs = rt_sample_interval_secs(s);
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n_disks; i++)
        if (!s->disks[i].stacked)
            sum += rt_sample_bytes_in(s->disks[i].read_bytes_per_sec, secs);
    return sum;
}

uint64_t rt_sample_disk_write_bytes(const struct rt_sample *s)
{
    double secs = rt_sample_interval_secs(s);
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n_disks; i++)
        if (!s->disks[i].stacked)
            sum += rt_sample_bytes_in(s->disks[i].write_bytes_per_sec, secs);
    return sum;
}

uint64_t rt_sample_net_recv_bytes(const struct rt_sample *s)
{
    double secs = rt_sample_interval_secs(s);
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n_nets; i++)
        sum += rt_sample_bytes_in(s->nets[i].rx_bytes_per_sec, secs);
    return sum;
}

uint64_t rt_sample_net_sent_bytes(const struct rt_sample *s)
{
    double secs = rt_sample_interval_secs(s);
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n_nets; i++)
        sum += rt_sample_bytes_in(s->nets[i].tx_bytes_per_sec, secs);
    return sum;
}
