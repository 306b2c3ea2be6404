/* Process-wide settings of a server with many clients: memory that goes back
 * to the kernel, and enough descriptors for the connection limit. */
#ifndef RT_PROCESS_LIMITS_H
#define RT_PROCESS_LIMITS_H

/* Large blocks (a client's unread replies, a long message) are returned to
 * the kernel when freed. Call before any thread starts. */
void rt_process_malloc_setup(void);
/* Give back to the kernel what malloc holds free in every thread's arena
 * (malloc_trim): what a finished job held and the buffers of its end are
 * freed in the middle of the arenas, where malloc keeps them resident. A
 * pass costs about a millisecond; the sampler calls it after jobs end. */
void rt_process_malloc_release(void);
/* Raise the soft RLIMIT_NOFILE to fit this many connections besides the
 * daemon's own descriptors, up to the hard limit; a notice when it cannot. */
void rt_process_fit_descriptors(unsigned connections);

#endif
