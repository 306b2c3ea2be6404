#include "store/seglog.h"

#include "rt/util.h"
#include "system/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define HOT_MAGIC "RTHOT1\0\0"
#define HOT_HEADER 16
#define ENTRY_MAGIC 0xe5
#define ENTRY_HEADER 10             /* magic, kind, payload length, crc32 */
#define ENTRY_MAX (1u << 20)        /* a sample line kept as it was is the largest */
#define FILE_MAX (512u << 20)         /* larger: not a file of ours */

struct rt_pending {
    uint8_t kind;
    uint64_t index;
    uint32_t tid;
    size_t off, len;                /* payload, from the backlog start */
};

/* A file's path under dirfd. */
static void name_of(const struct rt_seglog *l, uint64_t first, const char *ext, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%" PRIu64 "%s", l->subdir, l->subdir[0] ? "/" : "", l->prefix, first, ext);
}

/* ---- files ---- */

static ssize_t pread_all(int fd, void *buf, size_t n, off_t off)
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
static uint8_t *slurp(int dirfd, const char *name, size_t *len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size >= 0 && (uint64_t)st.st_size <= FILE_MAX) {
        buf = rt_xmalloc((size_t)st.st_size + 1);
        ssize_t n = pread_all(fd, buf, (size_t)st.st_size, 0);
        if (n != st.st_size) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)st.st_size;
    }
    close(fd);
    return buf;
}

static int write_file(int dirfd, const char *name, const uint8_t *data, size_t len, mode_t mode)
{
    char tmp[300];
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp", (int)(base - name), name, base) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    size_t off = 0;
    int r = 0;
    while (off < len && r == 0) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno != EINTR)
            r = -errno;
        else if (n > 0)
            off += (size_t)n;
    }
    /* On disk before the hot file it replaces goes. */
    if (r == 0 && fdatasync(fd) < 0)
        r = -errno;
    close(fd);
    if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
        r = -errno;
    if (r < 0)
        unlinkat(dirfd, tmp, 0);
    return r;
}

/* ---- hot file entries ---- */

static void put_entry(struct rt_buf *b, uint8_t kind, const uint8_t *payload, size_t len)
{
    rt_buf_byte(b, ENTRY_MAGIC);
    rt_buf_byte(b, kind);
    rt_buf_u32(b, (uint32_t)len);
    rt_buf_u32(b, (uint32_t)crc32(0, payload, (uInt)len));
    rt_buf_put(b, payload, len);
}

/* An entry at p (n bytes left): its payload length, 0 when it is not a
 * whole, valid entry. */
static size_t entry_at(const uint8_t *p, size_t n)
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

struct hot_scan {
    uint64_t first;
    struct rt_hot_rec *recs;
    size_t nrecs;
    uint64_t *toff;
    uint32_t *tlen;
    size_t ntmpl;
    size_t valid_end;               /* bytes up to the end of the last whole entry */
    bool damaged;
};

static void scan_free(struct hot_scan *h)
{
    free(h->recs);
    free(h->toff);
    free(h->tlen);
    memset(h, 0, sizeof(*h));
}

static bool record_head(const uint8_t *payload, size_t len, uint64_t *index, uint32_t *tid)
{
    struct rt_cur c = {payload, payload + len, false};
    uint64_t t;
    rt_cur_varint(&c, index);
    rt_cur_varint(&c, &t);
    *tid = (uint32_t)t;
    return !c.bad && t <= UINT32_MAX;
}

/* The template in a template entry's payload (after its number). */
static bool tmpl_bytes(const uint8_t *payload, size_t len, const uint8_t **t, size_t *tlen)
{
    struct rt_cur c = {payload, payload + len, false};
    uint64_t tid;
    if (!rt_cur_varint(&c, &tid))
        return false;
    *t = c.p;
    *tlen = (size_t)(c.end - c.p);
    return true;
}

/* Index a hot file's bytes: whole entries in order, skipping damaged ones. */
static bool scan_hot(const uint8_t *buf, size_t len, struct hot_scan *h)
{
    memset(h, 0, sizeof(*h));
    if (len < HOT_HEADER || memcmp(buf, HOT_MAGIC, 8) != 0)
        return false;
    h->first = rt_le64(buf + 8);
    size_t pos = HOT_HEADER, tcap = 0, rcap = 0;
    h->valid_end = pos;
    uint64_t last = 0;
    bool any = false;
    while (pos < len) {
        size_t plen = entry_at(buf + pos, len - pos);
        if (!plen) {
            /* A torn tail, or damage: find the next whole entry. */
            size_t k = pos + 1;
            while (k < len && !entry_at(buf + k, len - k))
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
            if (!record_head(payload, plen, &index, &tid) || tid >= h->ntmpl || h->tlen[tid] == UINT32_MAX ||
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
static bool record_values(const uint8_t *payload, size_t len, int64_t **v, size_t *vcap, size_t *n)
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

/* ---- sealing ---- */

/* The records of a hot file (its bytes in buf) as a sealed block. */
static int seal_image(struct rt_seglog *l, const uint8_t *buf, const struct hot_scan *h, struct rt_buf *out)
{
    struct rt_rec *recs = rt_xcalloc(h->nrecs ? h->nrecs : 1, sizeof(*recs));
    int64_t *vals = NULL;
    size_t nvals = 0, vcap = 0, nrec = 0;
    size_t *starts = rt_xcalloc(h->nrecs ? h->nrecs : 1, sizeof(*starts));
    int64_t *v = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < h->nrecs; i++) {
        const struct rt_hot_rec *hr = &h->recs[i];
        size_t n = 0;
        if (!record_values(buf + hr->off, hr->len, &v, &cap, &n))
            continue;
        if (nvals + n > vcap) {
            vcap = (nvals + n) * 2;
            vals = rt_xrealloc(vals, vcap * sizeof(*vals));
        }
        if (n)
            memcpy(vals + nvals, v, n * sizeof(*v));
        const uint8_t *t;
        size_t tl;
        if (!tmpl_bytes(buf + h->toff[hr->tid], h->tlen[hr->tid], &t, &tl))
            continue;
        starts[nrec] = nvals;
        recs[nrec++] = (struct rt_rec){.index = hr->index, .tmpl = t, .tlen = tl, .n = n};
        nvals += n;
    }
    for (size_t i = 0; i < nrec; i++)
        recs[i].v = vals ? vals + starts[i] : NULL; /* records without values */
    if (nrec)
        rt_frame_encode(recs, nrec, l->o.csv_cols, out);
    free(v);
    free(starts);
    free(recs);
    free(vals);
    return nrec ? 0 : -ENODATA;
}

static void add_block(struct rt_seglog *l, uint64_t first, uint32_t span, uint64_t bytes)
{
    if (l->nblocks == l->blocks_cap) {
        l->blocks_cap = l->blocks_cap ? l->blocks_cap * 2 : 16;
        l->blocks = rt_xrealloc(l->blocks, l->blocks_cap * sizeof(*l->blocks));
    }
    size_t i = l->nblocks;
    while (i > 0 && l->blocks[i - 1].first > first) {
        l->blocks[i] = l->blocks[i - 1];
        i--;
    }
    l->blocks[i] = (struct rt_seg_block){first, span, bytes, false};
    l->nblocks++;
}

/* Seal the hot file `first` whose bytes and index are given; on success it
 * is unlinked and the block listed. */
static int seal_hot_file(struct rt_seglog *l, uint64_t first, const uint8_t *buf, const struct hot_scan *h)
{
    char name[128], hot[128];
    struct rt_buf img = {0};
    int r = seal_image(l, buf, h, &img);
    name_of(l, first, ".hot", hot, sizeof(hot));
    if (r == -ENODATA) { /* nothing in it */
        unlinkat(l->o.dirfd, hot, 0);
        return 0;
    }
    uint64_t bfirst = 0;
    uint32_t span = 0;
    rt_frame_header(img.p, img.len, &bfirst, &span);
    name_of(l, bfirst, ".z", name, sizeof(name));
    r = write_file(l->o.dirfd, name, img.p, img.len, l->o.mode);
    if (r == 0) {
        pthread_mutex_lock(&l->mu);
        add_block(l, bfirst, span, img.len);
        pthread_mutex_unlock(&l->mu);
        unlinkat(l->o.dirfd, hot, 0);
    }
    rt_buf_free(&img);
    return r;
}

int rt_seglog_seal(struct rt_seglog *l)
{
    if (l->hot_fd < 0 || l->backlog.len || !l->nhot)
        return 0;
    uint8_t *buf = rt_xmalloc(l->hot_size ? l->hot_size : 1);
    ssize_t n = pread_all(l->hot_fd, buf, l->hot_size, 0);
    struct hot_scan h;
    int r = -EIO;
    if (n == (ssize_t)l->hot_size && scan_hot(buf, (size_t)n, &h)) {
        r = seal_hot_file(l, l->hot_first, buf, &h);
        scan_free(&h);
    }
    free(buf);
    if (r < 0) {
        rt_warn("%s: cannot seal its samples %" PRIu64 "…: %s; they stay as they are", l->what, l->hot_first,
                strerror(-r));
        l->seal_retry = l->o.block / 8 + 1;
        return r;
    }
    pthread_mutex_lock(&l->mu);
    close(l->hot_fd);
    l->hot_fd = -1;
    l->nhot = l->ntmpl = 0;
    l->hot_size = 0;
    l->hot_first = l->next;
    pthread_mutex_unlock(&l->mu);
    l->last_tmpl.len = 0;
    l->have_tmpl = false;
    l->wntmpl = 0;
    return 0;
}

/* ---- writing ---- */

static void push_pending(struct rt_seglog *l, struct rt_pending p)
{
    if (l->npend == l->pend_cap) {
        l->pend_cap = l->pend_cap ? l->pend_cap * 2 : 16;
        l->pend = rt_xrealloc(l->pend, l->pend_cap * sizeof(*l->pend));
    }
    l->pend[l->npend++] = p;
}

static void add_hot(struct rt_seglog *l, struct rt_hot_rec r)
{
    if (l->nhot == l->hot_cap) {
        l->hot_cap = l->hot_cap ? l->hot_cap * 2 : 256;
        l->hot = rt_xrealloc(l->hot, l->hot_cap * sizeof(*l->hot));
    }
    l->hot[l->nhot++] = r;
}

static void set_tmpl(struct rt_seglog *l, uint32_t tid, uint64_t off, uint32_t len)
{
    if (tid >= l->tmpl_cap) {
        size_t cap = l->tmpl_cap ? l->tmpl_cap : 8;
        while (cap <= tid)
            cap *= 2;
        l->tmpl_off = rt_xrealloc(l->tmpl_off, cap * sizeof(*l->tmpl_off));
        l->tmpl_len = rt_xrealloc(l->tmpl_len, cap * sizeof(*l->tmpl_len));
        for (size_t k = l->tmpl_cap; k < cap; k++)
            l->tmpl_len[k] = UINT32_MAX;
        l->tmpl_cap = cap;
    }
    l->tmpl_off[tid] = off;
    l->tmpl_len[tid] = len;
    if (tid + 1 > l->ntmpl)
        l->ntmpl = tid + 1;
}

static void health_warn(struct rt_seglog *l, int err)
{
    struct rt_store_health *hl = l->o.health;
    pthread_mutex_lock(&hl->mu);
    if (!hl->write_warned)
        rt_err("%s: cannot write samples: %s; keeping them in memory until it works", l->what, strerror(err));
    hl->write_warned = true;
    pthread_mutex_unlock(&hl->mu);
}

static void health_ok(struct rt_seglog *l)
{
    struct rt_store_health *hl = l->o.health;
    pthread_mutex_lock(&hl->mu);
    if (hl->write_warned)
        rt_notice("%s: samples are written again", l->what);
    hl->write_warned = hl->backlog_warned = false;
    pthread_mutex_unlock(&hl->mu);
}

bool rt_seglog_flush(struct rt_seglog *l)
{
    if (!l->backlog.len)
        return true;
    if (l->hot_fd < 0) {
        char hot[128];
        name_of(l, l->hot_first, ".hot", hot, sizeof(hot));
        int fd = openat(l->o.dirfd, hot, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, l->o.mode);
        if (fd < 0) {
            health_warn(l, errno);
            return false;
        }
        pthread_mutex_lock(&l->mu);
        l->hot_fd = fd;
        pthread_mutex_unlock(&l->mu);
    }
    int err = 0;
    while (l->backlog_done < l->backlog.len) {
        ssize_t n = write(l->hot_fd, l->backlog.p + l->backlog_done, l->backlog.len - l->backlog_done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            break;
        }
        l->backlog_done += (size_t)n;
    }
    /* Entries now whole on disk become readable. */
    size_t k = 0;
    pthread_mutex_lock(&l->mu);
    for (; k < l->npend && l->pend[k].off + l->pend[k].len <= l->backlog_done; k++) {
        struct rt_pending *p = &l->pend[k];
        uint64_t off = l->backlog_base + p->off;
        if (p->kind == 'T')
            set_tmpl(l, p->tid, off, (uint32_t)p->len);
        else
            add_hot(l, (struct rt_hot_rec){p->index, off, (uint32_t)p->len, p->tid});
    }
    l->hot_size = l->backlog_base + l->backlog_done;
    pthread_mutex_unlock(&l->mu);
    if (k && l->npend > k)
        memmove(l->pend, l->pend + k, (l->npend - k) * sizeof(*l->pend));
    l->npend -= k;
    if (err) {
        health_warn(l, err);
        return false;
    }
    bool recovered = l->o.health->write_warned;
    l->backlog.len = l->backlog_done = 0;
    l->backlog_base = l->hot_size;
    l->npend = 0;
    if (recovered)
        health_ok(l);
    return true;
}

bool rt_seglog_has_backlog(const struct rt_seglog *l)
{
    return l->backlog.len > 0;
}

bool rt_seglog_append(struct rt_seglog *l, const uint8_t *tmpl, size_t tlen, const int64_t *v, size_t n, bool hold)
{
    if (!hold)
        rt_seglog_flush(l);
    struct rt_buf rec = {0};
    rt_buf_varint(&rec, l->next);
    bool new_tmpl = !l->have_tmpl || l->last_tmpl.len != tlen || (tlen && memcmp(l->last_tmpl.p, tmpl, tlen) != 0);
    rt_buf_varint(&rec, new_tmpl ? l->wntmpl : l->wntmpl - 1);
    rt_buf_varint(&rec, n);
    for (size_t i = 0; i < n; i++)
        rt_buf_varint(&rec, rt_zigzag(v[i]));
    size_t need = rec.len + ENTRY_HEADER + (new_tmpl ? tlen + 5 + ENTRY_HEADER : 0) +
                  (l->hot_fd < 0 && l->hot_size == 0 ? HOT_HEADER : 0);
    if (l->backlog.len && l->backlog.len + need > l->o.backlog_max) {
        struct rt_store_health *hl = l->o.health;
        pthread_mutex_lock(&hl->mu);
        rt_log_once(&hl->backlog_warned, LOG_ERR,
                    "%s: %zu KiB of samples wait for the disk; new samples are not kept until it has room",
                    l->what, l->backlog.len >> 10);
        pthread_mutex_unlock(&hl->mu);
        rt_buf_free(&rec);
        return false;
    }
    if (l->hot_fd < 0 && l->hot_size == 0 && l->backlog.len == 0) { /* a new hot file */
        l->hot_first = l->next;
        l->backlog_base = 0;
        rt_buf_put(&l->backlog, HOT_MAGIC, 8);
        rt_buf_u64(&l->backlog, l->hot_first);
    }
    if (new_tmpl) {
        struct rt_buf te = {0};
        rt_buf_varint(&te, l->wntmpl);
        rt_buf_put(&te, tmpl, tlen);
        push_pending(l, (struct rt_pending){'T', 0, l->wntmpl, l->backlog.len + ENTRY_HEADER, te.len});
        put_entry(&l->backlog, 'T', te.p, te.len);
        rt_buf_free(&te);
        l->last_tmpl.len = 0;
        rt_buf_put(&l->last_tmpl, tmpl, tlen);
        l->have_tmpl = true;
        l->wntmpl++;
    }
    push_pending(l, (struct rt_pending){'R', l->next, l->wntmpl - 1, l->backlog.len + ENTRY_HEADER, rec.len});
    put_entry(&l->backlog, 'R', rec.p, rec.len);
    rt_buf_free(&rec);
    pthread_mutex_lock(&l->mu);
    l->next++;
    pthread_mutex_unlock(&l->mu);
    if (!hold && rt_seglog_flush(l) && l->seal_retry)
        l->seal_retry--;
    return true;
}

bool rt_seglog_full(const struct rt_seglog *l)
{
    return l->nhot >= l->o.block && !l->backlog.len && !l->seal_retry;
}

/* ---- open and close ---- */

static bool parse_name(const struct rt_seglog *l, const char *name, uint64_t *first, const char **ext)
{
    size_t pl = strlen(l->prefix);
    if (strncmp(name, l->prefix, pl) != 0)
        return false;
    const char *dot = strchr(name + pl, '.');
    if (!dot || dot == name + pl || (strcmp(dot, ".z") != 0 && strcmp(dot, ".hot") != 0))
        return false;
    char digits[24];
    size_t nd = (size_t)(dot - (name + pl));
    if (nd >= sizeof(digits))
        return false;
    memcpy(digits, name + pl, nd);
    digits[nd] = '\0';
    *ext = dot;
    return rt_parse_u64(digits, first);
}

static bool covered(const struct rt_seglog *l, uint64_t index)
{
    for (size_t i = 0; i < l->nblocks; i++)
        if (index >= l->blocks[i].first && index - l->blocks[i].first < l->blocks[i].count)
            return true;
    return false;
}

static void adopt_hot(struct rt_seglog *l, int fd, const uint8_t *buf, struct hot_scan *h)
{
    l->hot_fd = fd;
    l->hot_first = h->first;
    l->hot_size = h->valid_end;
    (void)buf;
    for (size_t i = 0; i < h->ntmpl; i++)
        if (h->tlen[i] != UINT32_MAX)
            set_tmpl(l, (uint32_t)i, h->toff[i], h->tlen[i]);
    for (size_t i = 0; i < h->nrecs; i++)
        add_hot(l, h->recs[i]);
    l->wntmpl = (uint32_t)h->ntmpl;
    l->have_tmpl = false; /* the next record writes its template again */
    if (h->nrecs && h->recs[h->nrecs - 1].index + 1 > l->next)
        l->next = h->recs[h->nrecs - 1].index + 1;
    l->backlog_base = l->hot_size;
}

/* The hot files found: the newest continues, older ones (a crash while a
 * block was sealed) are sealed now or, when a block holds them, dropped. */
static void open_hot(struct rt_seglog *l, uint64_t *hots, size_t nhots)
{
    for (size_t i = 0; i < nhots; i++) {
        char name[128];
        name_of(l, hots[i], ".hot", name, sizeof(name));
        bool newest = true;
        for (size_t k = 0; k < nhots; k++)
            newest &= hots[k] <= hots[i];
        if (covered(l, hots[i])) {
            unlinkat(l->o.dirfd, name, 0);
            continue;
        }
        size_t len = 0;
        uint8_t *buf = slurp(l->o.dirfd, name, &len);
        struct hot_scan h = {0};
        if (!buf || !scan_hot(buf, len, &h) || h.first != hots[i]) {
            rt_warn("%s: %s is unreadable; its samples are lost", l->what, name);
            scan_free(&h);
            free(buf);
            unlinkat(l->o.dirfd, name, 0);
            continue;
        }
        if (h.damaged)
            rt_warn("%s: %s is damaged; the samples in the damaged part are skipped", l->what, name);
        if (h.valid_end < len) {
            rt_warn("%s: dropping a torn last sample (%zu bytes) of %s", l->what, len - h.valid_end, name);
            int fd = openat(l->o.dirfd, name, O_WRONLY | O_CLOEXEC);
            /* Keep the modification time: it tells when the job was last seen. */
            struct stat st;
            if (fd >= 0 && fstat(fd, &st) == 0 && ftruncate(fd, (off_t)h.valid_end) == 0)
                futimens(fd, (struct timespec[2]){st.st_atim, st.st_mtim});
            if (fd >= 0)
                close(fd);
        }
        if (newest) {
            int fd = openat(l->o.dirfd, name, O_RDWR | O_APPEND | O_CLOEXEC);
            if (fd >= 0)
                adopt_hot(l, fd, buf, &h);
            else
                rt_warn("%s: cannot open %s: %s", l->what, name, strerror(errno));
        } else if (seal_hot_file(l, hots[i], buf, &h) < 0) {
            rt_warn("%s: cannot seal %s; its samples stay unread", l->what, name);
        }
        scan_free(&h);
        free(buf);
    }
}

int rt_seglog_open(struct rt_seglog *l, const struct rt_seglog_opts *o)
{
    memset(l, 0, sizeof(*l));
    l->o = *o;
    rt_strlcpy(l->subdir, o->subdir ? o->subdir : "", sizeof(l->subdir));
    rt_strlcpy(l->prefix, o->prefix, sizeof(l->prefix));
    rt_strlcpy(l->what, o->what, sizeof(l->what));
    l->o.prefix = l->prefix;
    l->o.subdir = l->subdir;
    l->o.what = l->what;
    l->hot_fd = -1;
    pthread_mutex_init(&l->mu, NULL);
    DIR *d = rt_opendir_sub(o->dirfd, l->subdir[0] ? l->subdir : ".");
    if (!d) {
        int e = errno;
        pthread_mutex_destroy(&l->mu);
        return -e;
    }
    uint64_t *hots = NULL;
    size_t nhots = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t first;
        const char *ext;
        if (!parse_name(l, de->d_name, &first, &ext))
            continue;
        if (strcmp(ext, ".hot") == 0) {
            hots = rt_xrealloc(hots, (nhots + 1) * sizeof(*hots));
            hots[nhots++] = first;
            continue;
        }
        uint8_t head[RT_FRAME_HEADER];
        char path[128];
        name_of(l, first, ".z", path, sizeof(path));
        int bfd = openat(o->dirfd, path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        uint64_t bfirst;
        uint32_t span;
        bool ok = bfd >= 0 && fstat(bfd, &st) == 0 && pread_all(bfd, head, sizeof(head), 0) == sizeof(head);
        /* The header names the size of the whole file: a short file is torn. */
        uint64_t want = RT_FRAME_HEADER;
        for (int i = 0; ok && i < 3; i++)
            want += rt_le32(head + 20 + 8 * i);
        ok = ok && memcmp(head, "RTZ1", 4) == 0 && (uint64_t)st.st_size == want;
        if (ok) {
            uint8_t *img = rt_xmalloc(RT_FRAME_HEADER);
            memcpy(img, head, RT_FRAME_HEADER);
            /* Check the header alone: the streams are checked when read. */
            ok = rt_le32(img + 4) == (uint32_t)crc32(0, img + 8, RT_FRAME_HEADER - 8);
            bfirst = rt_le64(img + 8);
            span = rt_le32(img + 16);
            free(img);
        }
        if (bfd >= 0)
            close(bfd);
        if (!ok || bfirst != first || span == 0) {
            rt_warn("%s: %s is damaged; its samples are lost", l->what, path);
            unlinkat(o->dirfd, path, 0);
            continue;
        }
        add_block(l, bfirst, span, (uint64_t)st.st_size);
    }
    closedir(d);
    if (l->nblocks) {
        const struct rt_seg_block *b = &l->blocks[l->nblocks - 1];
        l->next = b->first + b->count;
    }
    open_hot(l, hots, nhots);
    free(hots);
    if (l->hot_fd < 0)
        l->hot_first = l->next;
    return 0;
}

void rt_seglog_close(struct rt_seglog *l)
{
    if (l->hot_fd >= 0)
        close(l->hot_fd);
    l->hot_fd = -1;
    free(l->blocks);
    free(l->hot);
    free(l->tmpl_off);
    free(l->tmpl_len);
    free(l->pend);
    rt_buf_free(&l->last_tmpl);
    rt_buf_free(&l->backlog);
    pthread_mutex_destroy(&l->mu);
    memset(l, 0, sizeof(*l));
    l->hot_fd = -1;
}

void rt_seglog_remove_files(struct rt_seglog *l)
{
    char name[128];
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nblocks; i++) {
        name_of(l, l->blocks[i].first, ".z", name, sizeof(name));
        unlinkat(l->o.dirfd, name, 0);
    }
    l->nblocks = 0;
    if (l->hot_fd >= 0 || l->hot_size) {
        name_of(l, l->hot_first, ".hot", name, sizeof(name));
        unlinkat(l->o.dirfd, name, 0);
    }
    pthread_mutex_unlock(&l->mu);
}

void rt_seglog_set_mtime(struct rt_seglog *l, const struct timespec *t)
{
    if (l->hot_fd >= 0)
        futimens(l->hot_fd, (struct timespec[2]){{.tv_nsec = UTIME_OMIT}, *t});
}

int rt_seglog_sync(struct rt_seglog *l)
{
    return l->hot_fd >= 0 && fdatasync(l->hot_fd) < 0 ? -errno : 0;
}

uint64_t rt_seglog_count(struct rt_seglog *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t n = l->next;
    pthread_mutex_unlock(&l->mu);
    return n;
}

uint64_t rt_seglog_written(struct rt_seglog *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t n = l->nhot ? l->hot[l->nhot - 1].index + 1 : l->hot_first;
    pthread_mutex_unlock(&l->mu);
    return n;
}

uint64_t rt_seglog_bytes(struct rt_seglog *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t n = l->hot_size;
    for (size_t i = 0; i < l->nblocks; i++)
        n += l->blocks[i].bytes;
    pthread_mutex_unlock(&l->mu);
    return n;
}

struct rt_seg_block *rt_seglog_blocks(struct rt_seglog *l, size_t *n, struct rt_seg_block *hot)
{
    pthread_mutex_lock(&l->mu);
    struct rt_seg_block *v = rt_xmalloc((l->nblocks ? l->nblocks : 1) * sizeof(*v));
    if (l->nblocks)
        memcpy(v, l->blocks, l->nblocks * sizeof(*v));
    *n = l->nblocks;
    *hot = (struct rt_seg_block){l->hot_first, (uint32_t)(l->next - l->hot_first), l->hot_size, false};
    pthread_mutex_unlock(&l->mu);
    return v;
}

void rt_seglog_drop_block(struct rt_seglog *l, uint64_t first)
{
    char name[128];
    name_of(l, first, ".z", name, sizeof(name));
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nblocks; i++) {
        if (l->blocks[i].first != first)
            continue;
        if (i + 1 < l->nblocks)
            memmove(&l->blocks[i], &l->blocks[i + 1], (l->nblocks - i - 1) * sizeof(*l->blocks));
        l->nblocks--;
        unlinkat(l->o.dirfd, name, 0);
        break;
    }
    pthread_mutex_unlock(&l->mu);
}

/* ---- reading ---- */

void rt_seglog_cursor_init(struct rt_seglog_cursor *c, struct rt_seglog *l, bool csv_only)
{
    memset(c, 0, sizeof(*c));
    c->log = l;
    c->csv_only = csv_only;
    c->hot_fd = -1;
    c->cur_tid = UINT32_MAX;
}

void rt_seglog_cursor_free(struct rt_seglog_cursor *c)
{
    if (c->have_frame)
        rt_frame_free(&c->frame);
    if (c->hot_fd >= 0)
        close(c->hot_fd);
    free(c->hot);
    free(c->tmpl_off);
    free(c->tmpl_len);
    rt_buf_free(&c->tmpl);
    rt_buf_free(&c->payload);
    free(c->vbuf);
    memset(c, 0, sizeof(*c));
    c->hot_fd = -1;
}

static void mark_damaged(struct rt_seglog *l, uint64_t first, const char *why)
{
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nblocks; i++) {
        if (l->blocks[i].first == first && !l->blocks[i].damaged) {
            l->blocks[i].damaged = true;
            char name[128];
            name_of(l, first, ".z", name, sizeof(name));
            rt_warn("%s: block %s is damaged (%s); its samples are skipped", l->what, name, why);
        }
    }
    pthread_mutex_unlock(&l->mu);
}

/* Load the sealed block holding index; false when there is none. */
static bool load_block(struct rt_seglog_cursor *c, uint64_t index)
{
    struct rt_seglog *l = c->log;
    pthread_mutex_lock(&l->mu);
    size_t lo = 0, hi = l->nblocks;
    while (lo < hi) { /* the last block starting at or before index */
        size_t mid = (lo + hi) / 2;
        if (l->blocks[mid].first <= index)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool found = lo > 0 && index - l->blocks[lo - 1].first < l->blocks[lo - 1].count && !l->blocks[lo - 1].damaged;
    uint64_t first = found ? l->blocks[lo - 1].first : 0;
    pthread_mutex_unlock(&l->mu);
    if (!found || (c->have_bad && c->bad_first == first))
        return false;
    if (c->have_frame)
        rt_frame_free(&c->frame);
    c->have_frame = false;
    char name[128];
    name_of(l, first, ".z", name, sizeof(name));
    size_t len = 0;
    uint8_t *img = slurp(l->o.dirfd, name, &len);
    if (!img)
        return false; /* removed meanwhile */
    bool ok = rt_frame_decode(img, len, c->csv_only, &c->frame) && c->frame.nruns > 0;
    free(img); /* the frame keeps what it needs (templates are in its index stream) */
    if (!ok) {
        if (c->frame.nruns == 0)
            rt_frame_free(&c->frame);
        mark_damaged(l, first, "its checksums do not match");
        c->have_bad = true;
        c->bad_first = first;
        return false;
    }
    c->have_frame = true;
    c->gen++;
    return true;
}

static bool hot_snapshot(struct rt_seglog_cursor *c)
{
    struct rt_seglog *l = c->log;
    if (c->hot_fd >= 0)
        close(c->hot_fd);
    pthread_mutex_lock(&l->mu);
    c->hot_fd = l->hot_fd >= 0 ? dup(l->hot_fd) : -1;
    c->nhot = l->nhot;
    c->hot = rt_xrealloc(c->hot, (c->nhot ? c->nhot : 1) * sizeof(*c->hot));
    if (c->nhot)
        memcpy(c->hot, l->hot, c->nhot * sizeof(*c->hot));
    c->ntmpl = l->ntmpl;
    c->tmpl_off = rt_xrealloc(c->tmpl_off, (c->ntmpl ? c->ntmpl : 1) * sizeof(*c->tmpl_off));
    c->tmpl_len = rt_xrealloc(c->tmpl_len, (c->ntmpl ? c->ntmpl : 1) * sizeof(*c->tmpl_len));
    if (c->ntmpl) {
        memcpy(c->tmpl_off, l->tmpl_off, c->ntmpl * sizeof(*c->tmpl_off));
        memcpy(c->tmpl_len, l->tmpl_len, c->ntmpl * sizeof(*c->tmpl_len));
    }
    pthread_mutex_unlock(&l->mu);
    c->cur_tid = UINT32_MAX;
    return c->hot_fd >= 0;
}

/* An entry's payload from the hot snapshot, checked. */
static bool read_entry(struct rt_seglog_cursor *c, uint64_t off, uint32_t len, struct rt_buf *out)
{
    out->len = 0;
    rt_buf_reserve(out, (size_t)len + ENTRY_HEADER);
    if (off < ENTRY_HEADER || pread_all(c->hot_fd, out->p, (size_t)len + ENTRY_HEADER, (off_t)(off - ENTRY_HEADER)) !=
                                 (ssize_t)len + ENTRY_HEADER)
        return false;
    if (rt_le32(out->p + 2) != len || rt_le32(out->p + 6) != (uint32_t)crc32(0, out->p + ENTRY_HEADER, len))
        return false;
    memmove(out->p, out->p + ENTRY_HEADER, len);
    out->len = len;
    return true;
}

static const struct rt_hot_rec *find_hot(const struct rt_seglog_cursor *c, uint64_t index)
{
    size_t lo = 0, hi = c->nhot;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->hot[mid].index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->nhot && c->hot[lo].index == index ? &c->hot[lo] : NULL;
}

static bool get_hot(struct rt_seglog_cursor *c, uint64_t index, struct rt_rec *r)
{
    const struct rt_hot_rec *h = find_hot(c, index);
    if (!h && hot_snapshot(c))
        h = find_hot(c, index);
    if (!h || h->tid >= c->ntmpl || c->tmpl_len[h->tid] == UINT32_MAX)
        return false;
    if (h->tid != c->cur_tid) {
        const uint8_t *t;
        size_t tl;
        if (!read_entry(c, c->tmpl_off[h->tid], c->tmpl_len[h->tid], &c->tmpl) ||
            !tmpl_bytes(c->tmpl.p, c->tmpl.len, &t, &tl))
            return false;
        memmove(c->tmpl.p, t, tl);
        c->tmpl.len = tl;
        c->cur_tid = h->tid;
        c->gen++;
    }
    size_t n = 0;
    if (!read_entry(c, h->off, h->len, &c->payload) ||
        !record_values(c->payload.p, c->payload.len, &c->vbuf, &c->vcap, &n)) {
        rt_warn("%s: a damaged sample (%" PRIu64 ") is skipped", c->log->what, index);
        return false;
    }
    *r = (struct rt_rec){.index = index, .tmpl = c->tmpl.p, .tlen = c->tmpl.len, .v = c->vbuf, .n = n,
                         .tmpl_id = c->gen << 20};
    return true;
}

/* From the decoded block: 1 found, 0 the block lacks it, -1 not this block. */
static int frame_lookup(struct rt_seglog_cursor *c, uint64_t index, struct rt_rec *r)
{
    if (!c->have_frame || index < c->frame.first || index - c->frame.first >= c->frame.span)
        return -1;
    size_t need = 0;
    for (size_t i = 0; i < c->frame.nruns; i++)
        need = c->frame.runs[i].ncols > need ? c->frame.runs[i].ncols : need;
    if (need > c->vcap) {
        c->vcap = need;
        c->vbuf = rt_xrealloc(c->vbuf, need * sizeof(*c->vbuf));
    }
    if (!rt_frame_get(&c->frame, index, c->vbuf, c->vcap, r))
        return 0;
    r->tmpl_id += c->gen << 20;
    return 1;
}

bool rt_seglog_cursor_get(struct rt_seglog_cursor *c, uint64_t index, struct rt_rec *r)
{
    int f = frame_lookup(c, index, r);
    if (f >= 0)
        return f == 1;
    pthread_mutex_lock(&c->log->mu);
    bool hot = index >= c->log->hot_first;
    pthread_mutex_unlock(&c->log->mu);
    if (hot && get_hot(c, index, r))
        return true;
    /* A sealed block, also when it was sealed since we looked. */
    return load_block(c, index) && frame_lookup(c, index, r) == 1;
}
