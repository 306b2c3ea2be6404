/* Byte buffers and the integer encodings of the sample store: LEB128
 * varints, zigzag for signed values, little-endian fixed fields. */
#ifndef RT_STORE_BUF_H
#define RT_STORE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_buf {
    uint8_t *p;
    size_t len, cap;
};

void rt_buf_reserve(struct rt_buf *b, size_t extra);
void rt_buf_put(struct rt_buf *b, const void *data, size_t n);
void rt_buf_byte(struct rt_buf *b, uint8_t c);
void rt_buf_varint(struct rt_buf *b, uint64_t v);
void rt_buf_u32(struct rt_buf *b, uint32_t v);
void rt_buf_u64(struct rt_buf *b, uint64_t v);
void rt_buf_free(struct rt_buf *b);

static inline uint64_t rt_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t rt_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reading: every getter fails (false, and the cursor stays failed) past
 * the end or on a malformed varint, so decoders check once at the end. */
struct rt_cur {
    const uint8_t *p, *end;
    bool bad;
};

bool rt_cur_varint_long(struct rt_cur *c, uint64_t *v);

/* Inline for the one-byte case, most of a block's numbers (a day's read
 * decodes tens of millions). */
static inline bool rt_cur_varint(struct rt_cur *c, uint64_t *v)
{
    if (!c->bad && c->p < c->end && *c->p < 0x80) {
        *v = *c->p++;
        return true;
    }
    return rt_cur_varint_long(c, v);
}
bool rt_cur_u32(struct rt_cur *c, uint32_t *v);
bool rt_cur_u64(struct rt_cur *c, uint64_t *v);
/* n bytes in place (no copy). */
const uint8_t *rt_cur_take(struct rt_cur *c, size_t n);

static inline uint32_t rt_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rt_le64(const uint8_t *p)
{
    return (uint64_t)rt_le32(p) | (uint64_t)rt_le32(p + 4) << 32;
}

#endif
