/* Readers for per-process /proc files, relative to a proc root fd. */
#ifndef RT_PROCFS_H
#define RT_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_pstat {
    int32_t pid, ppid;
    char state;               /* R, S, D, Z, … */
    uint64_t utime, stime;    /* clock ticks */
    uint64_t cutime, cstime;  /* clock ticks of waited-for children (negative clamped to 0) */
    int32_t num_threads;
    uint64_t starttime;       /* clock ticks since boot */
    uint64_t rss_pages;
    uint64_t faults;          /* minor and major page faults (fields 10 and 12) */
    int exit_code;            /* wait status; meaningful for zombies (field 52), else -1 */
};

/* 0, -ENOENT when the process is gone, -EINVAL for an unparsable file. The
 * comm field may hold spaces and ')' and is skipped by the last ')'. */
int rt_pstat_read(int proc_fd, int32_t pid, struct rt_pstat *out);
int rt_pstat_parse(const char *buf, struct rt_pstat *out);

/* read_bytes/write_bytes of /proc/PID/io (storage I/O, incl. reaped children). */
int rt_pio_read(int proc_fd, int32_t pid, uint64_t *read_bytes, uint64_t *write_bytes);
int rt_pio_parse(const char *buf, uint64_t *read_bytes, uint64_t *write_bytes);
/* Pss of /proc/PID/smaps_rollup in bytes. */
int rt_ppss_read(int proc_fd, int32_t pid, uint64_t *pss_bytes);
/* Real, effective and saved ids of a process (the Uid: and Gid: lines of
 * /proc/PID/status). */
struct rt_pcreds {
    uid_t uid[3];
    gid_t gid[3];
};
int rt_pcreds_read(int proc_fd, int32_t pid, struct rt_pcreds *out);
int rt_pcreds_parse(const char *buf, struct rt_pcreds *out);
/* The process's RSS high-water mark (VmHWM of /proc/PID/status), bytes:
 * the most resident memory it ever had, peaks between samples included.
 * -ENODATA for a zombie or a kernel thread (no memory map). */
int rt_phwm_read(int proc_fd, int32_t pid, uint64_t *bytes);
int rt_phwm_parse(const char *buf, uint64_t *bytes);
/* Who owns the files of /proc/PID: the process's effective uid and gid, or
 * root when it is not dumpable (after a setuid or setgid exec, or a change
 * of its ids: the kernel's task_dump_owner). */
int rt_pdump_owner(int proc_fd, int32_t pid, uid_t *uid, gid_t *gid);

/* Append the direct children of every thread of pid to *kids (a growable
 * array). Threads that fork leave children in their own task's file. Returns
 * 0 or -errno (-ENOENT when the kernel lacks the children file). */
int rt_pchildren_read(int proc_fd, int32_t pid, int32_t num_threads, int32_t **kids, size_t *n,
                      size_t *cap);
/* Append the PIDs of a children file's text ("12 34 ") to *kids. */
void rt_pchildren_parse(const char *text, int32_t **kids, size_t *n, size_t *cap);

long rt_clk_tck(void);
long rt_page_size(void);

#endif
