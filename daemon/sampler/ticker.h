/* Absolute CLOCK_MONOTONIC deadlines for periodic sampling: no drift, and no
 * burst of catch-up ticks after a stall (missed ticks are skipped). */
#ifndef RT_TICKER_H
#define RT_TICKER_H

#include <stdint.h>

struct rt_ticker {
    uint64_t interval_ns;
    uint64_t deadline_ns; /* next tick, CLOCK_MONOTONIC */
    uint64_t skipped;     /* ticks dropped because we were late */
};

/* First deadline is now + interval. */
void rt_ticker_init(struct rt_ticker *t, uint64_t interval_ns, uint64_t now_ns);
/* Advance to the next deadline after a tick that started at the current one. */
void rt_ticker_advance(struct rt_ticker *t, uint64_t now_ns);
/* Sleep until the deadline (clock_nanosleep TIMER_ABSTIME; restarts on EINTR). */
void rt_ticker_sleep(const struct rt_ticker *t);

#endif
