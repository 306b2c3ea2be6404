/* pidfds (Linux 5.3+): a process pinned by a descriptor, which a reused
 * PID cannot be mistaken for. */
#ifndef RT_PROC_PIDFD_H
#define RT_PROC_PIDFD_H

#include <sys/types.h>

/* pidfd_open(2): a pidfd, or -1 with errno (ENOSYS or EPERM where the
 * kernel or a seccomp filter has none, ESRCH, EINVAL for a thread id). */
int rt_pidfd_open(pid_t pid);

/* The process a pidfd received from someone else refers to, as
 * /proc/self/fdinfo tells it: its PID in our namespace, 0 when it has
 * exited (or lives in a namespace we cannot see), -1 when fd is no pidfd of
 * a process (another kind of descriptor, a thread's pidfd). */
pid_t rt_pidfd_pid(int fd);

#endif
