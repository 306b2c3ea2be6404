/* Whether /proc hides other users' processes (the hidepid= and gid= options
 * of the proc mount, per mount since Linux 5.8), for showing a caller only
 * what `ps` would show it. */
#ifndef RT_PROC_HIDEPID_H
#define RT_PROC_HIDEPID_H

#include <stdbool.h>
#include <sys/types.h>

struct rt_hidepid {
    int level;       /* 0 off; 1 noaccess, 2 invisible, 4 ptraceable: others' processes hidden */
    bool has_gid;
    gid_t gid;       /* gid=: its members see every process */
};

/* The options of the mount proc_fd is on, read now from the daemon's own
 * mountinfo. A tree that is not a proc mount (a test's fixture) hides
 * nothing. -errno when the mount cannot be found: callers then hide. */
int rt_hidepid_read(int proc_fd, struct rt_hidepid *out);
/* One mountinfo line's super options ("rw,hidepid=2,gid=27"). */
void rt_hidepid_parse(const char *super_opts, struct rt_hidepid *out);

#endif
