/* The files of tracked processes that every tick reads (stat, io, and the
 * children of a single-threaded process) kept open between ticks and read
 * again with pread (collect/procfile.h says why), for up to RT_KEPT_PROCS
 * processes, three descriptors each; others' are opened for each read.
 *
 * A kept file belongs to the process it was opened for: once that process
 * is gone its reads fail (ESRCH) and the path is opened again, which may
 * find another process with the PID by then. Callers tell processes apart
 * by their start time, as with any read by path. */
#ifndef RT_KEPT_H
#define RT_KEPT_H

#include "collect/procfile.h"
#include "proc/pidmap.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_KEPT_PROCS 64
#define RT_KEPT_IDLE_SCANS 4 /* a process unread for that many scans lets its files go */

enum rt_kept_file { RT_KEPT_STAT, RT_KEPT_IO, RT_KEPT_KIDS, RT_KEPT_NFILES };

struct rt_kept_proc {
    int32_t pid;
    uint64_t used;    /* the scan that last read it */
    struct rt_keptfile f[RT_KEPT_NFILES];
};

struct rt_kept_procs {
    struct rt_pidmap map; /* pid -> index in v */
    struct rt_kept_proc v[RT_KEPT_PROCS];
    size_t n;
    uint64_t scan;
};

void rt_kept_procs_init(struct rt_kept_procs *k);
void rt_kept_procs_free(struct rt_kept_procs *k);
/* A new scan begins: the files of processes unread for RT_KEPT_IDLE_SCANS
 * scans are closed. */
void rt_kept_procs_scan(struct rt_kept_procs *k);
/* The file of pid (its main thread's children for RT_KEPT_KIDS) into buf,
 * NUL-terminated: its length, or -errno (-ENOENT for a process gone). */
ssize_t rt_kept_procs_read(struct rt_kept_procs *k, int proc_fd, int32_t pid, enum rt_kept_file which, char *buf,
                           size_t size);

#endif
