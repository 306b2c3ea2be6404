#include "rt/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void oom(void)
{
    static const char msg[] = "resource-tracker: out of memory\n";
    ssize_t r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)r;
    abort();
}

void *rt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *rt_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *rt_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        oom();
    return p;
}

char *rt_xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        oom();
    return d;
}

char *rt_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0)
        oom();
    return s;
}

size_t rt_strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);
    if (size) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}

char *rt_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

bool rt_str_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool rt_str_all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

size_t rt_utf8_char(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t more;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        more = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        more = 2;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        more = 3;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (len - 1 < more || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i <= more; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return more + 1;
}

bool rt_utf8_valid(const char *s, size_t len)
{
    for (size_t i = 0, n; i < len; i += n)
        if (!(n = rt_utf8_char(s + i, len - i)))
            return false;
    return true;
}

char *rt_utf8_escape(const char *s, size_t len)
{
    char *out = rt_xmalloc(len * 4 + 1), *o = out;
    for (size_t i = 0, n; i < len; i += n) {
        if ((n = rt_utf8_char(s + i, len - i))) {
            memcpy(o, s + i, n);
            o += n;
        } else {
            o += sprintf(o, "\\x%02x", (unsigned char)s[i]);
            n = 1;
        }
    }
    *o = '\0';
    return out;
}

/* openat without following p, a link reported as -ELOOP (O_DIRECTORY
 * reports one as ENOTDIR). */
static int open_nofollow(int dirfd, const char *p, int flags, mode_t mode)
{
    if (strcmp(p, "..") == 0)
        return -EINVAL;
    int fd = openat(dirfd, p, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    struct stat st;
    if (fd < 0 && errno == ENOTDIR && fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        errno = ELOOP;
    return fd < 0 ? -errno : fd;
}

int rt_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
    char buf[PATH_MAX];
    if (rt_strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
        return -ENAMETOOLONG;
    int cur = dirfd;
    char *p = buf;
    for (char *slash; (slash = strchr(p, '/')); p = slash + 1) {
        *slash = '\0';
        int fd = open_nofollow(cur, p, O_RDONLY | O_DIRECTORY, 0);
        if (cur != dirfd)
            close(cur);
        if (fd < 0)
            return fd;
        cur = fd;
    }
    int fd = open_nofollow(cur, p, flags | O_NONBLOCK, mode);
    if (cur != dirfd)
        close(cur);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0 || !((flags & O_DIRECTORY) ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode))) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

int rt_open_own_file(int dirfd, const char *name, int flags, mode_t mode)
{
    int fd = rt_open_beneath(dirfd, name, flags | O_CREAT, mode);
    if ((fd == -EINVAL || fd == -ELOOP) && unlinkat(dirfd, name, 0) == 0)
        fd = rt_open_beneath(dirfd, name, flags | O_CREAT, mode);
    return fd;
}

const char *rt_beneath_strerror(int err)
{
    switch (-err) {
    case ELOOP: return "it is a symbolic link, which is not followed there";
    case EINVAL: return "it is neither a directory nor a regular file where one belongs";
    case ENOTDIR: return "a file is where a directory belongs";
    default: return strerror(-err);
    }
}

static ssize_t read_whole(int fd, char *buf, size_t size)
{
    if (fd < 0)
        return -errno;
    size_t len = 0;
    while (len < size - 1) {
        ssize_t r = read(fd, buf + len, size - 1 - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

ssize_t rt_read_file_at(int dirfd, const char *path, char *buf, size_t size)
{
    if (size == 0)
        return -EINVAL;
    return read_whole(openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY), buf, size);
}

ssize_t rt_read_file_beneath(int dirfd, const char *path, char *buf, size_t size)
{
    if (size == 0)
        return -EINVAL;
    int fd = rt_open_beneath(dirfd, path, O_RDONLY, 0);
    if (fd < 0)
        errno = -fd;
    return read_whole(fd, buf, size);
}

int rt_read_u64_at(int dirfd, const char *path, uint64_t *out)
{
    char buf[64];
    ssize_t n = rt_read_file_at(dirfd, path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return rt_parse_u64(rt_trim(buf), out) ? 0 : -EINVAL;
}

ssize_t rt_trim_read(char *buf, ssize_t n)
{
    if (n < 0)
        return n;
    char *t = rt_trim(buf);
    size_t len = strlen(t);
    memmove(buf, t, len + 1);
    return len ? (ssize_t)len : -ENODATA;
}

ssize_t rt_read_str_at(int dirfd, const char *path, char *buf, size_t size)
{
    return rt_trim_read(buf, rt_read_file_at(dirfd, path, buf, size));
}

void rt_unescape_octal(char *s)
{
    s = strchr(s, '\\');
    if (!s)
        return;
    char *w = s;
    for (const char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
            r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

bool rt_dir_has_entries_at(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return false;
    }
    bool any = false;
    struct dirent *de;
    while (!any && (de = readdir(d)))
        any = de->d_name[0] != '.';
    closedir(d);
    return any;
}

bool rt_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

bool rt_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        return false;
    *out = v;
    return true;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * RT_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t rt_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
uint64_t rt_real_ns(void) { return clock_ns(CLOCK_REALTIME); }
uint64_t rt_boot_ns(void) { return clock_ns(CLOCK_BOOTTIME); }
uint64_t rt_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

DIR *rt_opendir_sub(int dirfd, const char *path)
{
    int fd = rt_open_beneath(dirfd, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        errno = -fd;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

int rt_write_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, enum rt_sync sync)
{
    char tmp[512];
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp", (int)(base - name), name, base) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = rt_open_beneath(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd == -EINVAL || fd == -ELOOP || fd == -ENXIO) { /* something not ours in our temporary's place */
        unlinkat(dirfd, tmp, 0);
        fd = rt_open_beneath(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
    }
    if (fd < 0)
        return fd;
    int r = 0;
    for (size_t off = 0; off < len && r == 0;) {
        ssize_t n = write(fd, (const char *)data + off, len - off);
        if (n < 0 && errno != EINTR)
            r = -errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (r == 0 && sync == RT_SYNC_DATA && fdatasync(fd) < 0)
        r = -errno;
    if (r == 0 && sync == RT_SYNC_FULL && fsync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
        r = -errno;
    if (r < 0) {
        unlinkat(dirfd, tmp, 0);
        return r;
    }
    return sync == RT_SYNC_FULL && fsync(dirfd) < 0 ? -errno : 0;
}

size_t rt_fmt_u64(char *buf, uint64_t v)
{
    /* Two digits a division: CSV pages are mostly numbers. */
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char tmp[20];
    size_t i = sizeof(tmp);
    while (v >= 100) {
        size_t k = (size_t)(v % 100) * 2;
        v /= 100;
        tmp[--i] = pairs[k + 1];
        tmp[--i] = pairs[k];
    }
    if (v >= 10) {
        tmp[--i] = pairs[v * 2 + 1];
        tmp[--i] = pairs[v * 2];
    } else {
        tmp[--i] = (char)('0' + v);
    }
    memcpy(buf, tmp + i, sizeof(tmp) - i);
    return sizeof(tmp) - i;
}
