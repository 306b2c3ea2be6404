#include "collect/procfile.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

static bool is_pseudo(int fd)
{
    struct statfs st;
    if (fstatfs(fd, &st) < 0)
        return false;
    switch ((unsigned long)st.f_type) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
        return true;
    default:
        return false;
    }
}

static ssize_t pread_whole(const struct rt_keptfile *k, char *buf, size_t size)
{
    size_t len = 0;
    while (len < size - 1) {
        size_t want = size - 1 - len;
        ssize_t r = pread(k->fd, buf + len, want, (off_t)len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        len += (size_t)r;
        if ((size_t)r < want && (k->whole || (k->record_max && r <= 4096 - k->record_max)))
            break; /* no read that would say 0 (it would make the text again) */
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

ssize_t rt_keptfile_reread(struct rt_keptfile *k, char *buf, size_t size)
{
    if (k->fd < 0 || k->pseudo != 1 || size == 0)
        return -ESTALE;
    ssize_t n = pread_whole(k, buf, size);
    if (n == -ENODEV || n == -ENOENT || n == -ESRCH || n == -ENXIO) {
        rt_keptfile_close(k);
        return -ESTALE;
    }
    return n;
}

ssize_t rt_keptfile_read(struct rt_keptfile *k, int dirfd, const char *path, char *buf, size_t size)
{
    if (size == 0)
        return -EINVAL;
    ssize_t n = rt_keptfile_reread(k, buf, size);
    if (n != -ESTALE)
        return n;
    if (k->pseudo == 0)
        return rt_read_file_at(dirfd, path, buf, size);
    if ((k->fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
        k->fd = -1;
        return -errno;
    }
    if (k->pseudo < 0 && (k->pseudo = is_pseudo(k->fd)) == 0) {
        rt_keptfile_close(k);
        return rt_read_file_at(dirfd, path, buf, size);
    }
    return pread_whole(k, buf, size); /* fresh: whatever it says */
}

bool rt_keptfile_changed(const struct rt_keptfile *k)
{
    struct pollfd p = {.fd = k->fd, .events = POLLPRI};
    return k->fd < 0 || (poll(&p, 1, 0) != 0 && (p.revents & (POLLPRI | POLLERR | POLLNVAL)));
}

void rt_keptfile_close(struct rt_keptfile *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
}

void rt_readbuf_init(struct rt_readbuf *b, size_t initial)
{
    b->size = initial < 64 ? 64 : initial;
    b->data = rt_xmalloc(b->size);
    b->data[0] = '\0';
    b->file = (struct rt_keptfile)RT_KEPTFILE_INIT;
}

void rt_readbuf_free(struct rt_readbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->size = 0;
    rt_keptfile_close(&b->file);
}

ssize_t rt_readbuf_load(struct rt_readbuf *b, int dirfd, const char *path)
{
    for (;;) {
        ssize_t n = rt_keptfile_read(&b->file, dirfd, path, b->data, b->size);
        if (n < 0 || (size_t)n < b->size - 1 || b->size >= RT_READBUF_MAX)
            return n;
        /* Filled the buffer: the file may be longer. Grow (kept for the next
         * tick) and read it again from the start, so a file is never parsed
         * from two different generations. */
        b->size *= 2;
        if (b->size > RT_READBUF_MAX)
            b->size = RT_READBUF_MAX;
        b->data = rt_xrealloc(b->data, b->size);
    }
}

char *rt_next_line(char **cursor)
{
    char *line = *cursor;
    if (!line || !*line)
        return NULL;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *cursor = nl + 1;
    } else {
        *cursor = line + strlen(line);
    }
    return line;
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

bool rt_scan_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    while (is_blank(*s))
        s++;
    if (*s < '0' || *s > '9') {
        *p = s;
        return false;
    }
    uint64_t v = 0;
    const char *start = s;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v)) {
            *p = start;
            return false;
        }
    }
    if (*s && !is_blank(*s)) {
        *p = start;
        return false;
    }
    *out = v;
    *p = s;
    return true;
}

const char *rt_scan_word(const char **p, size_t *len)
{
    const char *s = *p;
    while (is_blank(*s))
        s++;
    if (!*s) {
        *p = s;
        *len = 0;
        return NULL;
    }
    const char *w = s;
    while (*s && !is_blank(*s))
        s++;
    *len = (size_t)(s - w);
    *p = s;
    return w;
}
