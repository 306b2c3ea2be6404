/* The proc and sys trees collectors read from: the real /proc and /sys, or
 * fixture trees in tests. Files are opened relative to these directory fds. */
#ifndef RT_ROOTS_H
#define RT_ROOTS_H

#include <limits.h>

struct rt_roots {
    int proc_fd;
    int sys_fd;
    char proc[PATH_MAX];
    char sys[PATH_MAX];
};

/* 0, or -errno when a root cannot be opened. NULL means "/proc" / "/sys". */
int rt_roots_open(struct rt_roots *r, const char *proc_root, const char *sys_root);
void rt_roots_close(struct rt_roots *r);

#endif
