/* When to read a process's PSS (/proc/PID/smaps_rollup) again.
 *
 * The kernel computes PSS by walking the page tables: 20–30 µs for a small
 * process (more than its stat, io and children files together), ~8 ms per
 * GiB of touched 4 KiB pages, ~11 ms for 20,000 mappings (docs/performance.md).
 * Read every tick, one 16 GiB process would cost over 10 % of a core at 1 s.
 *
 * So a read is due when:
 *  - the process was never read, or the last read is RT_PSS_MAX_AGE_NS old;
 *  - else, once RT_PSS_SPACING times the last read's CPU cost has passed
 *    (≤ 0.02 % of a core per process; RT_PSS_SPACING_FORKED when its children
 *    changed, since a fork or an exit moves shared pages between processes),
 *    and only if something may have moved PSS: its RSS or its children
 *    changed, or RT_PSS_IDLE_AGE_NS passed (sharing can change silently).
 * Small busy processes are thus read every tick at 1 s, idle ones every 10 s,
 * large ones about every minute.
 *
 * Between reads the value follows RSS, which /proc/PID/stat gives for free:
 * PSS + (RSS now − RSS at the read), clamped to [0, RSS now]. Private memory
 * that grows or shrinks moves PSS and RSS alike, so only changes in sharing
 * wait for the next read. */
#ifndef RT_PSS_H
#define RT_PSS_H

#include <stdbool.h>
#include <stdint.h>

#define RT_PSS_SPACING 5000
#define RT_PSS_SPACING_FORKED 500
#define RT_PSS_IDLE_AGE_NS (10ULL * 1000000000ULL)
#define RT_PSS_MAX_AGE_NS (60ULL * 1000000000ULL)

struct rt_pss {
    bool valid;         /* read at least once */
    bool ok;            /* the last read gave a value (not a kernel thread, zombie, EACCES) */
    uint64_t pss;       /* bytes, from the last read */
    uint64_t rss;       /* bytes of RSS at the last read */
    uint64_t at_ns;     /* CLOCK_MONOTONIC of the last read */
    uint64_t cost_ns;   /* its CPU time */
    uint32_t kids;      /* direct children at the last read */
};

/* Is a read due at now_ns for a process with kids direct children and rss
 * bytes of RSS? */
bool rt_pss_due(const struct rt_pss *p, uint64_t now_ns, uint32_t kids, uint64_t rss);
/* Record a read. */
void rt_pss_update(struct rt_pss *p, bool ok, uint64_t pss, uint64_t rss, uint64_t now_ns,
                   uint64_t cost_ns, uint32_t kids);
/* PSS in bytes for the current RSS (0 when the last read gave none). */
uint64_t rt_pss_estimate(const struct rt_pss *p, uint64_t rss_now);

#endif
