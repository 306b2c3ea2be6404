#include "collect/procfile.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

void rt_readbuf_init(struct rt_readbuf *b, size_t initial)
{
    b->size = initial < 64 ? 64 : initial;
    b->data = rt_xmalloc(b->size);
    b->data[0] = '\0';
}

void rt_readbuf_free(struct rt_readbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->size = 0;
}

ssize_t rt_readbuf_load(struct rt_readbuf *b, int dirfd, const char *path)
{
    for (;;) {
        ssize_t n = rt_read_file_at(dirfd, path, b->data, b->size);
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
