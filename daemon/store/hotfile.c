/* The hot file's format (see seglog.h) and the file I/O of the log: entries
 * written, found again after damage, and read back. */
#include "store/hotfile.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define FILE_MAX (512u << 20)         /* larger: not a file of ours */

ssize_t rt_hot_pread(int fd, void *buf, size_t n, off_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : (ssize_t)done;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

/* The whole file, or NULL. */
uint8_t *rt_hot_slurp(int dirfd, const char *name, size_t *len)
{
    int fd = rt_open_beneath(dirfd, name, O_RDONLY, 0);
    if (fd < 0)
        return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size >= 0 && (uint64_t)st.st_size <= FILE_MAX) {
        buf = rt_xmalloc((size_t)st.st_size + 1);
        ssize_t n = rt_hot_pread(fd, buf, (size_t)st.st_size, 0);
        if (n != st.st_size) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)st.st_size;
    }
    close(fd);
    return buf;
}

void rt_hot_put_entry(struct rt_buf *b, uint8_t kind, const uint8_t *payload, size_t len)
{
    rt_buf_byte(b, ENTRY_MAGIC);
    rt_buf_byte(b, kind);
    rt_buf_u32(b, (uint32_t)len);
    rt_buf_u32(b, (uint32_t)crc32(0, payload, (uInt)len));
    rt_buf_put(b, payload, len);
}

/* An entry at p (n bytes left): its payload length, 0 when it is not a
 * whole, valid entry. */
size_t rt_hot_entry_at(const uint8_t *p, size_t n)
{
    if (n < ENTRY_HEADER || p[0] != ENTRY_MAGIC || (p[1] != 'T' && p[1] != 'R'))
        return 0;
    uint32_t len = rt_le32(p + 2);
    if (len > ENTRY_MAX || len > n - ENTRY_HEADER)
        return 0;
    if (rt_le32(p + 6) != (uint32_t)crc32(0, p + ENTRY_HEADER, len))
        return 0;
    return len ? len : SIZE_MAX; /* SIZE_MAX: an empty template */
}

void rt_hot_scan_free(struct rt_hot_scan *h)
{
    free(h->recs);
    free(h->toff);
    free(h->tlen);
    memset(h, 0, sizeof(*h));
}

bool rt_hot_record_head(const uint8_t *payload, size_t len, uint64_t *index, uint32_t *tid)
{
    struct rt_cur c = {payload, payload + len, false};
    uint64_t t;
    rt_cur_varint(&c, index);
    rt_cur_varint(&c, &t);
    *tid = (uint32_t)t;
    return !c.bad && t <= UINT32_MAX;
}

/* The template in a template entry's payload (after its number). */
bool rt_hot_tmpl_bytes(const uint8_t *payload, size_t len, const uint8_t **t, size_t *tlen)
{
    struct rt_cur c = {payload, payload + len, false};
    uint64_t tid;
    if (!rt_cur_varint(&c, &tid))
        return false;
    *t = c.p;
    *tlen = (size_t)(c.end - c.p);
    return true;
}

bool rt_hot_scan(const uint8_t *buf, size_t len, uint64_t first, struct rt_hot_scan *h)
{
    memset(h, 0, sizeof(*h));
    if (len < HOT_HEADER)
        return false;
    h->first = first;
    h->header_damaged = memcmp(buf, HOT_MAGIC, 8) != 0 || rt_le64(buf + 8) != first;
    h->damaged = h->header_damaged;
    size_t pos = HOT_HEADER, tcap = 0, rcap = 0;
    h->valid_end = pos;
    uint64_t last = 0;
    bool any = false;
    while (pos < len) {
        size_t plen = rt_hot_entry_at(buf + pos, len - pos);
        if (!plen) {
            /* A torn tail, or damage: find the next whole entry. */
            size_t k = pos + 1;
            while (k < len && !rt_hot_entry_at(buf + k, len - k))
                k++;
            if (k >= len)
                break;
            h->damaged = true;
            pos = k;
            continue;
        }
        if (plen == SIZE_MAX)
            plen = 0;
        const uint8_t *payload = buf + pos + ENTRY_HEADER;
        if (buf[pos + 1] == 'T') {
            struct rt_cur tc = {payload, payload + plen, false};
            uint64_t tid;
            if (!rt_cur_varint(&tc, &tid) || tid > 1u << 20) {
                h->damaged = true;
            } else {
                if (tid >= tcap) {
                    size_t cap = tcap ? tcap : 8;
                    while (cap <= tid)
                        cap *= 2;
                    h->toff = rt_xrealloc(h->toff, cap * sizeof(*h->toff));
                    h->tlen = rt_xrealloc(h->tlen, cap * sizeof(*h->tlen));
                    for (size_t k = tcap; k < cap; k++)
                        h->tlen[k] = UINT32_MAX; /* not (or no longer) there */
                    tcap = cap;
                }
                h->toff[tid] = pos + ENTRY_HEADER;
                h->tlen[tid] = (uint32_t)plen;
                if (tid + 1 > h->ntmpl)
                    h->ntmpl = tid + 1;
            }
        } else {
            uint64_t index;
            uint32_t tid;
            if (!rt_hot_record_head(payload, plen, &index, &tid) || tid >= h->ntmpl || h->tlen[tid] == UINT32_MAX ||
                index < h->first ||
                (any && index <= last)) {
                h->damaged = true;
            } else {
                if (h->nrecs == rcap) {
                    rcap = rcap ? rcap * 2 : 64;
                    h->recs = rt_xrealloc(h->recs, rcap * sizeof(*h->recs));
                }
                h->recs[h->nrecs++] = (struct rt_hot_rec){index, pos + ENTRY_HEADER, (uint32_t)plen, tid};
                last = index;
                any = true;
            }
        }
        pos += ENTRY_HEADER + plen;
        h->valid_end = pos;
    }
    return true;
}

/* Numbers of a record payload (after its head) into v. */
bool rt_hot_record_values(const uint8_t *payload, size_t len, int64_t **v, size_t *vcap, size_t *n)
{
    struct rt_cur c = {payload, payload + len, false};
    uint64_t index, tid, count, x;
    rt_cur_varint(&c, &index);
    rt_cur_varint(&c, &tid);
    rt_cur_varint(&c, &count);
    if (c.bad || count > len)
        return false;
    if (count > *vcap) {
        *vcap = count;
        *v = rt_xrealloc(*v, count * sizeof(**v));
    }
    for (size_t i = 0; i < count; i++) {
        rt_cur_varint(&c, &x);
        (*v)[i] = rt_unzigzag(x);
    }
    *n = (size_t)count;
    return !c.bad && c.p == c.end;
}
