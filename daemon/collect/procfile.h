/* Reading and scanning /proc and /sys text for the collectors: a read buffer
 * that grows to fit its file once and is then reused every tick (no per-tick
 * malloc), and allocation-free field scanners. */
#ifndef RT_PROCFILE_H
#define RT_PROCFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_readbuf {
    char *data;
    size_t size;
};

void rt_readbuf_init(struct rt_readbuf *b, size_t initial);
void rt_readbuf_free(struct rt_readbuf *b);
/* Read the whole file (up to RT_READBUF_MAX) with rt_read_file_at, growing
 * the buffer when it was too small. Returns the length, or -errno. */
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
