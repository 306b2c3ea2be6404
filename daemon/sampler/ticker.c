#include "sampler/ticker.h"

#include "rt/util.h"

#include <errno.h>
#include <time.h>

void rt_ticker_init(struct rt_ticker *t, uint64_t interval_ns, uint64_t now_ns)
{
    t->interval_ns = interval_ns ? interval_ns : 1;
    t->deadline_ns = now_ns + t->interval_ns;
    t->skipped = 0;
}

void rt_ticker_advance(struct rt_ticker *t, uint64_t now_ns)
{
    t->deadline_ns += t->interval_ns;
    if (now_ns >= t->deadline_ns) {
        /* Late by at least one whole interval: keep the phase, skip ahead. */
        uint64_t missed = (now_ns - t->deadline_ns) / t->interval_ns + 1;
        t->deadline_ns += missed * t->interval_ns;
        t->skipped += missed;
    }
}

void rt_ticker_sleep(const struct rt_ticker *t)
{
    struct timespec ts = {.tv_sec = (time_t)(t->deadline_ns / RT_NSEC_PER_SEC),
                          .tv_nsec = (long)(t->deadline_ns % RT_NSEC_PER_SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}
