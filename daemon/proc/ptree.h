/* CPU, I/O and memory accounting of one process tree (a job).
 *
 * Each process contributes the growth of its inclusive counters: its own
 * utime/stime plus cutime/cstime (children it has waited for), and its
 * /proc/PID/io bytes (which also absorb reaped children). A process seen for
 * the first time counts from zero when it started after the job began (its
 * whole life lies inside the job), so short-lived children are counted either
 * directly or through their parent's cutime. When a process we had seen is
 * reaped by a parent inside the tree, the parent's counters jump by the child's
 * final totals, of which we had already counted the part up to the child's
 * last sighting: that part is subtracted once, from the nearest living
 * ancestor. Processes are keyed by (pid, starttime), so a reused PID is a new
 * process and never inherits a stranger's counters.
 *
 * A tree may have a reaper: the root's parent, a child subreaper
 * (PR_SET_CHILD_SUBREAPER) to which the tree's orphans are re-parented
 * (`resource-trackerctl run`). Its other children and their descendants are
 * in the tree; of the reaper itself only what it reaps counts (the growth of
 * its cutime/cstime): not its own CPU, memory or I/O. */
#ifndef RT_PTREE_H
#define RT_PTREE_H

#include "proc/access.h"
#include "proc/pidmap.h"
#include "proc/proccache.h"
#include "proc/pss.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_ptrack {
    int32_t pid, ppid;
    bool reaper;          /* the tree's reaper: only its reaped children count */
    uint64_t starttime;
    uint64_t u, s;        /* inclusive CPU ticks at the last sighting */
    uint64_t rb, wb;      /* inclusive I/O bytes at the last sighting */
    bool io_ok;
    bool readable;        /* by the job's reader (proc/access.h) */
    bool ids_ok;          /* its ids, as last read, match the reader's */
    uid_t owner_uid;      /* of /proc/PID/io when ids_ok was decided */
    gid_t owner_gid;
    struct rt_pss pss;    /* last PSS read, reused while not due (pss.h) */
    bool hwm_ok;          /* hwm known: VmHWM read at hwm_at_ns, faults then */
    uint64_t hwm, hwm_faults, hwm_at_ns;
    int64_t debit_u, debit_s, debit_rb, debit_wb; /* reaped children to subtract (from the next scan's growth too) */
};

struct rt_ptable {
    struct rt_pidmap map;
    struct rt_ptrack *v;
    size_t n, cap;
};

struct rt_ptree {
    int32_t root_pid;
    uint64_t root_starttime;
    int32_t reaper_pid;       /* 0: none */
    uint64_t reaper_starttime;
    uint64_t job_start_ticks; /* boot-time ticks when tracking began */
    bool with_pss;
    struct rt_reader reader;
    struct rt_ptable cur, prev;
    int32_t *stack;
    size_t stack_cap;
    int32_t *pids;            /* the readable processes of the last scan, for GPU attribution */
    size_t npids, pids_cap;
};

struct rt_ptree_result {
    bool root_alive;          /* root present, possibly a zombie */
    bool root_zombie;
    int root_exit_status;     /* wait status of a zombie root, else -1 */
    uint32_t nprocs;          /* processes in the tree, root included */
    uint64_t d_utime, d_stime;  /* clock ticks in this interval */
    uint64_t d_read_bytes, d_write_bytes;
    uint64_t rss_bytes, pss_bytes;
    uint64_t max_hwm_bytes;   /* the largest RSS high-water mark of its processes */
    bool hwm_known;           /* at least one was read */
    uint32_t pss_reads;       /* smaps_rollup files read for this scan */
    uint32_t unreadable;      /* processes the reader may not read */
};

/* Start tracking: the root's current counters (and those of descendants that
 * already exist) are the baseline, so only later use is counted. Returns
 * -ENOENT when the root is gone or its starttime differs. reader: whose eyes
 * the tree is read with (NULL: root's). A process the reader may not read
 * (setuid, setgid, not dumpable) counts its CPU time, its RSS (for PSS too)
 * and its children, which every user sees; not its I/O, PSS or GPU use. */
int rt_ptree_init(struct rt_ptree *t, struct rt_proc_cache *c, int32_t root_pid,
                  uint64_t root_starttime, bool with_pss, const struct rt_reader *reader);
void rt_ptree_free(struct rt_ptree *t);
/* After rt_ptree_init: processes re-parented to this reaper belong to the
 * tree from the next scan on (its counters are the baseline then). */
void rt_ptree_set_reaper(struct rt_ptree *t, int32_t pid, uint64_t starttime);
/* One interval: walk the tree through the cache, account, report. */
void rt_ptree_scan(struct rt_ptree *t, struct rt_proc_cache *c, struct rt_ptree_result *out);

/* Current boot-time clock in clock ticks, comparable to starttime. */
uint64_t rt_boot_ticks(void);

#endif
