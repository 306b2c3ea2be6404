/* Reading and scanning /proc and /sys text for the collectors: a read buffer
 * that grows to fit its file once and is then reused every tick (no per-tick
 * malloc), and allocation-free field scanners. */
#ifndef RT_PROCFILE_H
#define RT_PROCFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A file of the kernel's (procfs, sysfs, cgroupfs) kept open and read again
 * from offset 0 with pread: the kernel makes its text afresh for each read
 * from the start, and the path walk, open and close (for most of these files
 * more than the read itself) are paid once. Any other file, such as a test
 * fixture's, which is replaced by a rename, is opened for each read. */
struct rt_keptfile {
    int fd;          /* -1: not open */
    signed char pseudo; /* -1: not known yet; 0: open each time; 1: kept */
    bool whole;      /* made in one piece (one show: /proc/PID/stat and io,
                      * meminfo, /proc/stat, a sysfs attribute, a cgroup's
                      * file): a kept read shorter than asked is its end */
    unsigned short record_max; /* or made a record at a time into seq_file's
                      * buffer of a page or more (diskstats, net/dev, a
                      * process's children): a read stops short of what
                      * was asked only at the end or when the next record
                      * does not fit, so a read shorter than a page less
                      * its longest record is the end */
};
#define RT_KEPTFILE_INIT {.fd = -1, .pseudo = -1, .whole = false}
#define RT_KEPTFILE_WHOLE {.fd = -1, .pseudo = -1, .whole = true}

/* rt_read_file_at through k: the file's text (NUL-terminated) and length,
 * or -errno. A kept file that stopped working (its object gone: an
 * interface replaced by a namesake) is opened again once. */
ssize_t rt_keptfile_read(struct rt_keptfile *k, int dirfd, const char *path, char *buf, size_t size);
void rt_keptfile_close(struct rt_keptfile *k);
/* An open kept file read again: its length, or -errno; -ESTALE when it is
 * not open, or its object is gone (then it is closed): read it by path. */
ssize_t rt_keptfile_reread(struct rt_keptfile *k, char *buf, size_t size);
/* For a kept listing that the kernel marks with POLLPRI once what it lists
 * changed since the last look (/proc/PID/mountinfo; the look resets it):
 * has it changed? True as well when the file is not kept open. */
bool rt_keptfile_changed(const struct rt_keptfile *k);

struct rt_readbuf {
    char *data;
    size_t size;
    struct rt_keptfile file;
};

void rt_readbuf_init(struct rt_readbuf *b, size_t initial);
void rt_readbuf_free(struct rt_readbuf *b);
/* Read the whole file (up to RT_READBUF_MAX) with rt_keptfile_read, growing
 * the buffer when it was too small. Returns the length, or -errno. A
 * read buffer reads one path all its life. */
ssize_t rt_readbuf_load(struct rt_readbuf *b, int dirfd, const char *path);
#define RT_READBUF_MAX (16u * 1024u * 1024u)

/* Cut the line starting at *cursor (NUL-terminating it in place) and advance
 * *cursor past it. NULL when there are no more lines. */
char *rt_next_line(char **cursor);

/* Skip blanks, then parse one unsigned decimal token that must end at a
 * blank or the end of the string. False on garbage or overflow (then *p is
 * left where the bad token starts). */
bool rt_scan_u64(const char **p, uint64_t *out);
/* Skip blanks and return the next blank-delimited word (not terminated) with
 * its length in *len; NULL at the end of the string. */
const char *rt_scan_word(const char **p, size_t *len);

/* Unsigned saturating difference: counters that go backwards give 0. */
static inline uint64_t rt_sat_sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

#endif
