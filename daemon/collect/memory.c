#include "collect/memory.h"

#include "system/log.h"
#include "collect/procfile.h"
#include "rt/util.h"

#include <errno.h>
#include <string.h>

enum { F_TOTAL, F_FREE, F_AVAIL, F_BUFFERS, F_CACHED, F_SRECLAIM, F_SWAP_TOTAL, F_SWAP_FREE,
       F_ACTIVE, F_INACTIVE, F_COUNT };

static const char *const keys[F_COUNT] = {
    [F_TOTAL] = "MemTotal",       [F_FREE] = "MemFree",          [F_AVAIL] = "MemAvailable",
    [F_BUFFERS] = "Buffers",      [F_CACHED] = "Cached",         [F_SRECLAIM] = "SReclaimable",
    [F_SWAP_TOTAL] = "SwapTotal", [F_SWAP_FREE] = "SwapFree",    [F_ACTIVE] = "Active",
    [F_INACTIVE] = "Inactive",
};

/* The collector is stateless; these only keep warnings to once per process
 * (it runs on the sampler thread only). */
static bool warned_read, warned_garbage, warned_total;

/* "Key:   123 kB" → bytes. Every field we read carries the unit, so a value
 * without it is a truncated file. */
static bool parse_value(const char *p, uint64_t *bytes)
{
    uint64_t v;
    size_t len;
    if (!rt_scan_u64(&p, &v))
        return false;
    const char *unit = rt_scan_word(&p, &len);
    if (!unit || len != 2 || memcmp(unit, "kB", 2) != 0 || rt_scan_word(&p, &len) || v > UINT64_MAX / 1024)
        return false;
    *bytes = v * 1024;
    return true;
}

int rt_memory_collect(const struct rt_roots *r, struct rt_memory *m)
{
    struct rt_keptfile once = RT_KEPTFILE_INIT;
    int rc = rt_memory_collect_kept(r, &once, m);
    rt_keptfile_close(&once);
    return rc;
}

int rt_memory_collect_kept(const struct rt_roots *r, struct rt_keptfile *meminfo, struct rt_memory *m)
{
    memset(m, 0, sizeof(*m));
    char buf[16384]; /* meminfo is ~1.5 KiB; anything longer is not ours */
    ssize_t n = rt_keptfile_read(meminfo, r->proc_fd, "meminfo", buf, sizeof(buf));
    if (n < 0) {
        rt_log_once(&warned_read, LOG_WARNING, "memory: cannot read /proc/meminfo: %s; memory figures are 0",
                    strerror((int)-n));
        return (int)n;
    }
    uint64_t v[F_COUNT] = {0};
    bool have[F_COUNT] = {false};
    char *cur = buf, *line;
    int found = 0;
    while (found < F_COUNT && (line = rt_next_line(&cur))) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        for (int i = 0; i < F_COUNT; i++) {
            if (line[0] != keys[i][0] || strcmp(line, keys[i]) != 0)
                continue;
            found++;
            have[i] = parse_value(colon + 1, &v[i]);
            if (!have[i])
                rt_log_once(&warned_garbage, LOG_WARNING, "memory: unparsable %s in /proc/meminfo", keys[i]);
            break;
        }
    }
    if (!have[F_TOTAL]) {
        rt_log_once(&warned_total, LOG_WARNING, "memory: no MemTotal in /proc/meminfo; memory figures are 0");
        return -EINVAL;
    }
    /* Kernels before 3.14 have no MemAvailable: estimate it like the reference. */
    uint64_t avail = have[F_AVAIL] ? v[F_AVAIL] : v[F_FREE] + v[F_BUFFERS] + v[F_CACHED] + v[F_SRECLAIM];

    m->total_mib = v[F_TOTAL] / RT_MIB;
    m->free_mib = v[F_FREE] / RT_MIB;
    m->available_mib = avail / RT_MIB;
    m->used_mib = rt_sat_sub(v[F_TOTAL], avail) / RT_MIB;
    m->used_pct = m->total_mib ? (double)m->used_mib / (double)m->total_mib * 100.0 : 0;
    m->buffers_mib = v[F_BUFFERS] / RT_MIB;
    m->cached_mib = v[F_CACHED] / RT_MIB + v[F_SRECLAIM] / RT_MIB;
    m->swap_total_mib = v[F_SWAP_TOTAL] / RT_MIB;
    m->swap_used_mib = rt_sat_sub(m->swap_total_mib, v[F_SWAP_FREE] / RT_MIB);
    m->swap_used_pct = m->swap_total_mib ? (double)m->swap_used_mib / (double)m->swap_total_mib * 100.0 : 0;
    m->active_mib = v[F_ACTIVE] / RT_MIB;
    m->inactive_mib = v[F_INACTIVE] / RT_MIB;
    return 0;
}
