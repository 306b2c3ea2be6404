/* Small helpers shared by the daemon and the client. */
#ifndef RT_UTIL_H
#define RT_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void *rt_xmalloc(size_t n);
void *rt_xcalloc(size_t n, size_t size);
void *rt_xrealloc(void *p, size_t n);
char *rt_xstrdup(const char *s);
/* printf into a fresh heap string. */
char *rt_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Copy with truncation; always NUL-terminates when size > 0. */
size_t rt_strlcpy(char *dst, const char *src, size_t size);
/* Strip leading and trailing whitespace in place. */
char *rt_trim(char *s);
bool rt_str_starts_with(const char *s, const char *prefix);
bool rt_str_all_digits(const char *s);
/* Well-formed UTF-8 (RFC 3629): no overlong forms, surrogates or code
 * points above U+10FFFF. */
bool rt_utf8_valid(const char *s, size_t len);
/* The length of the well-formed UTF-8 character at s (1–4), 0 when the
 * bytes there are not one. */
size_t rt_utf8_char(const char *s, size_t len);
/* s with every byte that is not part of well-formed UTF-8 written as \xHH
 * (as Python's "backslashreplace" shows it); malloc'd. */
char *rt_utf8_escape(const char *s, size_t len);

/* Read a whole (small) file relative to dirfd into buf, NUL-terminated.
 * Returns the length, or -errno. A file longer than size-1 is truncated. */
ssize_t rt_read_file_at(int dirfd, const char *path, char *buf, size_t size);
/* Read a file holding one unsigned integer (whitespace allowed). 0 or -errno. */
int rt_read_u64_at(int dirfd, const char *path, uint64_t *out);
/* Read a one-line text attribute, trimmed. Returns length or -errno; an empty
 * value returns -ENODATA. */
ssize_t rt_read_str_at(int dirfd, const char *path, char *buf, size_t size);
/* What a read of n bytes (or -errno) left in buf, trimmed in place as
 * rt_read_str_at trims it: its length, -ENODATA when empty, or n < 0. */
ssize_t rt_trim_read(char *buf, ssize_t n);

/* Undo /proc/self/mountinfo's escapes in place: space, tab, newline and
 * backslash are written \ooo there. */
void rt_unescape_octal(char *s);

/* Whether dirfd/path is a directory holding any entry. Names starting with a
 * dot do not count (sysfs has none; fixture trees keep empty dirs that way). */
bool rt_dir_has_entries_at(int dirfd, const char *path);

/* path under dirfd, never out of it: no component may be a symbolic link
 * (each is opened O_NOFOLLOW) nor "..", and what it names must be a
 * directory (flags with O_DIRECTORY) or a regular file, else -ELOOP or
 * -EINVAL: a FIFO never blocks the open (O_NONBLOCK), a device is not
 * read. For the state directory, which nobody but the daemon should have
 * changed. The descriptor (close-on-exec), or -errno. */
int rt_open_beneath(int dirfd, const char *path, int flags, mode_t mode);
/* A file of the daemon's own, name in dirfd, opened with O_CREAT: what is
 * in its place and is no regular file (a FIFO, a link) is removed first, as
 * a file the daemon rewrites holds nothing it needs to keep. */
int rt_open_own_file(int dirfd, const char *name, int flags, mode_t mode);
/* Why rt_open_beneath failed, in the state directory's words (e.g.
 * "a symbolic link, which is not followed"). */
const char *rt_beneath_strerror(int err);
/* rt_read_file_at through rt_open_beneath. */
ssize_t rt_read_file_beneath(int dirfd, const char *path, char *buf, size_t size);
/* A directory under dirfd to read (path "." for dirfd itself), opened by
 * rt_open_beneath; NULL with errno. */
DIR *rt_opendir_sub(int dirfd, const char *path);

/* How much rt_write_file_at waits for the disk: nothing (the rename alone
 * makes the update whole or absent when the process dies), the data before
 * the rename, or also the directory after it (a power loss keeps the old or
 * the new file, and the new name). */
enum rt_sync { RT_SYNC_NONE, RT_SYNC_DATA, RT_SYNC_FULL };

/* Write dirfd/name whole or not at all: a temporary ".NAME.tmp" beside it
 * (rt_open_beneath), renamed over it. name may hold a subdirectory, but not
 * with RT_SYNC_FULL (it syncs dirfd). 0 or -errno. */
int rt_write_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, enum rt_sync sync);

/* v in decimal into buf (at least 20 bytes, not NUL-terminated): the length. */
size_t rt_fmt_u64(char *buf, uint64_t v);

/* Parse an unsigned decimal; returns false on garbage or overflow. */
bool rt_parse_u64(const char *s, uint64_t *out);
bool rt_parse_i64(const char *s, int64_t *out);

uint64_t rt_mono_ns(void);
uint64_t rt_real_ns(void);
/* CLOCK_BOOTTIME, comparable to /proc/PID/stat starttime. */
uint64_t rt_boot_ns(void);
/* The calling thread's CPU time. */
uint64_t rt_thread_cpu_ns(void);

#define RT_NSEC_PER_SEC 1000000000ULL

#endif
