#include "store/buf.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

void rt_buf_reserve(struct rt_buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    b->p = rt_xrealloc(b->p, cap);
    b->cap = cap;
}

void rt_buf_put(struct rt_buf *b, const void *data, size_t n)
{
    if (!n)
        return;
    rt_buf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

void rt_buf_byte(struct rt_buf *b, uint8_t c)
{
    rt_buf_reserve(b, 1);
    b->p[b->len++] = c;
}

void rt_buf_varint(struct rt_buf *b, uint64_t v)
{
    rt_buf_reserve(b, 10);
    while (v >= 0x80) {
        b->p[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (uint8_t)v;
}

void rt_buf_u32(struct rt_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    rt_buf_put(b, x, 4);
}

void rt_buf_u64(struct rt_buf *b, uint64_t v)
{
    rt_buf_u32(b, (uint32_t)v);
    rt_buf_u32(b, (uint32_t)(v >> 32));
}

void rt_buf_free(struct rt_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

bool rt_cur_varint_long(struct rt_cur *c, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; !c->bad && c->p < c->end && shift < 64; shift += 7) {
        uint8_t byte = *c->p++;
        x |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *v = x;
            return true;
        }
    }
    c->bad = true;
    *v = 0;
    return false;
}

const uint8_t *rt_cur_take(struct rt_cur *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return NULL;
    }
    const uint8_t *p = c->p;
    c->p += n;
    return p;
}

bool rt_cur_u32(struct rt_cur *c, uint32_t *v)
{
    const uint8_t *p = rt_cur_take(c, 4);
    *v = p ? rt_le32(p) : 0;
    return p != NULL;
}

bool rt_cur_u64(struct rt_cur *c, uint64_t *v)
{
    const uint8_t *p = rt_cur_take(c, 8);
    *v = p ? rt_le64(p) : 0;
    return p != NULL;
}
