/* Per-tick cache of process data: each process is read at most once per tick
 * however many jobs contain it, and only processes of tracked trees are read. */
#ifndef RT_PROCCACHE_H
#define RT_PROCCACHE_H

#include "proc/kept.h"
#include "proc/pidmap.h"
#include "proc/procfs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    RT_PI_IO = 1 << 0,
    RT_PI_PSS = 1 << 1,
    RT_PI_KIDS = 1 << 2,
    RT_PI_OWNER = 1 << 3, /* who owns the files of /proc/PID (proc/access.h) */
    RT_PI_CREDS = 1 << 4, /* real, effective and saved ids */
    RT_PI_HWM = 1 << 5,   /* RSS high-water mark */
};

struct rt_pinfo {
    struct rt_pstat st;
    unsigned have;        /* RT_PI_* parts already attempted */
    bool io_ok, pss_ok, owner_ok, creds_ok, hwm_ok;
    uid_t owner_uid;
    gid_t owner_gid;
    struct rt_pcreds creds;
    uint64_t read_bytes, write_bytes;
    uint64_t pss_bytes;
    uint64_t hwm_bytes;
    uint64_t pss_cost_ns;     /* CPU time of the smaps_rollup read */
    size_t kids_off, kids_n;
};

struct rt_proc_cache {
    int proc_fd;
    struct rt_pidmap map;     /* pid -> index in v, or UINT32_MAX when gone */
    struct rt_pinfo *v;
    size_t n, cap;
    int32_t *kids;            /* children lists of all entries */
    size_t nkids, capkids;
    bool children_files;      /* kernel has /proc/PID/task/TID/children */
    bool scanned;             /* fallback: ppid map of the whole host built this tick */
    uint64_t reads;           /* files read, for benchmarks */
    struct rt_kept_procs kept; /* tracked processes' files, open between ticks */
};

void rt_proc_cache_init(struct rt_proc_cache *c, int proc_fd);
void rt_proc_cache_free(struct rt_proc_cache *c);
/* Forget the previous tick's data. */
void rt_proc_cache_begin_tick(struct rt_proc_cache *c);
/* Process data with at least the parts in need, or NULL when the process is
 * gone. The pointer is valid until the next call. */
const struct rt_pinfo *rt_proc_cache_get(struct rt_proc_cache *c, int32_t pid, unsigned need);
/* Children of a process returned by rt_proc_cache_get(…, RT_PI_KIDS). */
const int32_t *rt_proc_cache_kids(const struct rt_proc_cache *c, const struct rt_pinfo *pi, size_t *n);

#endif
