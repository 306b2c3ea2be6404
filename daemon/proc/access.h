/* Whether a job's owner may see a process's I/O, PSS and GPU use: the
 * kernel's own rule for /proc/PID/io (ptrace_may_access with
 * PTRACE_MODE_READ_FSCREDS). Without CAP_SYS_PTRACE, a caller may read a
 * process whose real, effective and saved uids all equal its uid, whose
 * real, effective and saved gids all equal its gid, and that is dumpable
 * (it has not exec'd a setuid or setgid binary, nor changed its ids); a
 * zombie, which has no memory map, by its ids alone. What the kernel shows
 * every user (CPU times, RSS, children) needs no check. */
#ifndef RT_PROC_ACCESS_H
#define RT_PROC_ACCESS_H

#include "proc/procfs.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_GID_UNKNOWN ((gid_t)-1)

struct rt_reader {
    bool all;          /* root and the admin group: CAP_SYS_PTRACE */
    uid_t uid;
    gid_t gid;         /* RT_GID_UNKNOWN: compare uids only (job records from before) */
};

/* The ids part of the rule. */
bool rt_reader_ids_match(const struct rt_reader *r, const struct rt_pcreds *c);
/* The owner of the process's /proc files (rt_pdump_owner) shows its
 * effective ids and whether it is dumpable. */
bool rt_reader_owns(const struct rt_reader *r, uid_t owner_uid, gid_t owner_gid);
/* Both, read now: 1 readable, 0 not, -errno (-ENOENT: gone). */
int rt_reader_may_read(const struct rt_reader *r, int proc_fd, int32_t pid);

#endif
