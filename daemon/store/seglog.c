#include "store/seglog.h"
#include "store/hotfile.h"

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

struct rt_pending {
    uint8_t kind;
    uint64_t index;
    uint32_t tid;
    size_t off, len;                /* payload, from the backlog start */
};

/* A file's path under dirfd. */
void rt_seglog_file_name(const struct rt_seglog *l, uint64_t first, const char *ext, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%" PRIu64 "%s", l->subdir, l->subdir[0] ? "/" : "", l->prefix, first, ext);
}

/* ---- sealing ---- */

/* The records of a hot file (its bytes in buf) as a sealed block. */
static int seal_image(struct rt_seglog *l, const uint8_t *buf, const struct rt_hot_scan *h, struct rt_buf *out)
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
        if (!rt_hot_record_values(buf + hr->off, hr->len, &v, &cap, &n))
            continue;
        if (nvals + n > vcap) {
            vcap = (nvals + n) * 2;
            vals = rt_xrealloc(vals, vcap * sizeof(*vals));
        }
        if (n)
            memcpy(vals + nvals, v, n * sizeof(*v));
        const uint8_t *t;
        size_t tl;
        if (!rt_hot_tmpl_bytes(buf + h->toff[hr->tid], h->tlen[hr->tid], &t, &tl))
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
    /* Sealed again (a hot file found beside its block): one entry a block. */
    if (i > 0 && l->blocks[i - 1].first == first) {
        memmove(&l->blocks[i - 1], &l->blocks[i], (l->nblocks - i) * sizeof(*l->blocks));
        l->nblocks--;
    }
}

/* Seal the hot file `first` whose bytes and index are given; on success it
 * is unlinked and the block listed. */
static int seal_hot_file(struct rt_seglog *l, uint64_t first, const uint8_t *buf, const struct rt_hot_scan *h)
{
    char name[128], hot[128];
    struct rt_buf img = {0};
    int r = seal_image(l, buf, h, &img);
    rt_seglog_file_name(l, first, ".hot", hot, sizeof(hot));
    if (r == -ENODATA) { /* nothing in it */
        unlinkat(l->o.dirfd, hot, 0);
        return 0;
    }
    uint64_t bfirst = 0;
    uint32_t span = 0;
    rt_frame_header(img.p, img.len, &bfirst, &span);
    rt_seglog_file_name(l, bfirst, ".z", name, sizeof(name));
    r = rt_write_file_at(l->o.dirfd, name, img.p, img.len, l->o.mode, RT_SYNC_DATA);
    if (r == 0) {
        pthread_mutex_lock(&l->mu);
        add_block(l, bfirst, span, img.len);
        pthread_mutex_unlock(&l->mu);
        unlinkat(l->o.dirfd, hot, 0);
    }
    rt_buf_free(&img);
    return r;
}

/* The index of a sealed hot file is let go, not kept for the next one: a
 * finished job's log is sealed once and kept until retention, and its index
 * had grown to its block (16,384 records: 384 KiB). Under l->mu. */
static void release_hot(struct rt_seglog *l)
{
    free(l->hot);
    free(l->tmpl_off);
    free(l->tmpl_len);
    l->hot = NULL;
    l->tmpl_off = NULL;
    l->tmpl_len = NULL;
    l->nhot = l->hot_cap = 0;
    l->ntmpl = l->tmpl_cap = 0;
}

int rt_seglog_seal(struct rt_seglog *l)
{
    if (l->hot_fd < 0 || l->backlog.len || !l->nhot)
        return 0;
    uint8_t *buf = rt_xmalloc(l->hot_size ? l->hot_size : 1);
    ssize_t n = rt_hot_pread(l->hot_fd, buf, l->hot_size, 0);
    struct rt_hot_scan h;
    int r = -EIO;
    if (n == (ssize_t)l->hot_size && rt_hot_scan(buf, (size_t)n, l->hot_first, &h)) {
        r = seal_hot_file(l, l->hot_first, buf, &h);
        rt_hot_scan_free(&h);
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
    l->hot_size = 0;
    l->hot_first = l->next;
    release_hot(l);
    pthread_mutex_unlock(&l->mu);
    /* The backlog is empty (above), so are its entries. */
    rt_buf_free(&l->last_tmpl);
    rt_buf_free(&l->backlog);
    free(l->pend);
    l->pend = NULL;
    l->pend_cap = 0;
    l->have_tmpl = false;
    l->wntmpl = 0;
    return 0;
}

void rt_seglog_fit(struct rt_seglog *l)
{
    pthread_mutex_lock(&l->mu);
    if (l->blocks_cap > l->nblocks) {
        struct rt_seg_block *b = NULL;
        if (l->nblocks) {
            b = rt_xmalloc(l->nblocks * sizeof(*b));
            memcpy(b, l->blocks, l->nblocks * sizeof(*b));
        }
        free(l->blocks);
        l->blocks = b;
        l->blocks_cap = l->nblocks;
    }
    pthread_mutex_unlock(&l->mu);
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
        rt_seglog_file_name(l, l->hot_first, ".hot", hot, sizeof(hot));
        int fd = rt_open_beneath(l->o.dirfd, hot, O_RDWR | O_APPEND | O_CREAT, l->o.mode);
        if (fd < 0) {
            health_warn(l, -fd);
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
    l->backlog_refused = false;
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
    size_t need = rec.len + ENTRY_HEADER + (new_tmpl ? 2 * (tlen + 5 + ENTRY_HEADER) : 0) +
                  (l->hot_fd < 0 && l->hot_size == 0 ? HOT_HEADER : 0);
    if (l->backlog.len && (l->backlog_refused || l->backlog.len + need > l->o.backlog_max)) {
        l->backlog_refused = true;
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
        /* Twice: every record after it needs it, so one damaged byte there
         * must not cost them all. */
        for (int copy = 0; copy < 2; copy++) {
            push_pending(l, (struct rt_pending){'T', 0, l->wntmpl, l->backlog.len + ENTRY_HEADER, te.len});
            rt_hot_put_entry(&l->backlog, 'T', te.p, te.len);
        }
        rt_buf_free(&te);
        l->last_tmpl.len = 0;
        rt_buf_put(&l->last_tmpl, tmpl, tlen);
        l->have_tmpl = true;
        l->wntmpl++;
    }
    push_pending(l, (struct rt_pending){'R', l->next, l->wntmpl - 1, l->backlog.len + ENTRY_HEADER, rec.len});
    rt_hot_put_entry(&l->backlog, 'R', rec.p, rec.len);
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
    /* Only the names the log gives: a stray copy ("fig-00.hot") is not one
     * of its files, and two files of one number would mix their records. */
    char canonical[128];
    return rt_parse_u64(digits, first) &&
           snprintf(canonical, sizeof(canonical), "%s%" PRIu64 "%s", l->prefix, *first, dot) < (int)sizeof(canonical) &&
           strcmp(canonical, name) == 0;
}

static bool covered(const struct rt_seglog *l, uint64_t index)
{
    for (size_t i = 0; i < l->nblocks; i++)
        if (index >= l->blocks[i].first && index - l->blocks[i].first < l->blocks[i].count)
            return true;
    return false;
}

/* Every record of a hot file is in a sealed block already (the daemon died
 * between writing the block and removing the file). */
static bool all_covered(const struct rt_seglog *l, const struct rt_hot_scan *h)
{
    for (size_t i = 0; i < h->nrecs; i++)
        if (!covered(l, h->recs[i].index))
            return false;
    return true;
}

static void adopt_hot(struct rt_seglog *l, int fd, const uint8_t *buf, struct rt_hot_scan *h)
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

/* The header of a hot file kept, as its name says (pwrite of an O_APPEND
 * descriptor would append). */
static void repair_header(struct rt_seglog *l, const char *name, uint64_t first)
{
    struct rt_buf head = {0};
    rt_buf_put(&head, HOT_MAGIC, 8);
    rt_buf_u64(&head, first);
    int fd = rt_open_beneath(l->o.dirfd, name, O_WRONLY, 0);
    if (fd < 0 || pwrite(fd, head.p, head.len, 0) != (ssize_t)head.len)
        rt_warn("%s: cannot repair the header of %s", l->what, name);
    if (fd >= 0)
        close(fd);
    rt_buf_free(&head);
}

/* The hot files found: the newest continues, older ones (a crash while a
 * block was sealed) are sealed now or, when a block holds them, dropped. */
static void open_hot(struct rt_seglog *l, uint64_t *hots, size_t nhots)
{
    for (size_t i = 0; i < nhots; i++) {
        char name[128];
        rt_seglog_file_name(l, hots[i], ".hot", name, sizeof(name));
        bool newest = true;
        for (size_t k = 0; k < nhots; k++)
            newest &= hots[k] <= hots[i];
        size_t len = 0;
        uint8_t *buf = rt_hot_slurp(l->o.dirfd, name, &len);
        struct rt_hot_scan h = {0};
        if (!buf || !rt_hot_scan(buf, len, hots[i], &h) || (h.header_damaged && !h.nrecs)) {
            rt_warn("%s: %s is unreadable; its samples are lost", l->what, name);
            rt_hot_scan_free(&h);
            free(buf);
            unlinkat(l->o.dirfd, name, 0);
            continue;
        }
        if (h.nrecs && all_covered(l, &h)) {
            unlinkat(l->o.dirfd, name, 0);
            rt_hot_scan_free(&h);
            free(buf);
            continue;
        }
        if (h.damaged)
            rt_warn("%s: %s is damaged%s; the samples in the damaged part are skipped (%zu whole ones kept)",
                    l->what, name, h.header_damaged ? " (its header)" : "", h.nrecs);
        if (h.valid_end < len) {
            rt_warn("%s: dropping a torn last sample (%zu bytes) of %s", l->what, len - h.valid_end, name);
            int fd = rt_open_beneath(l->o.dirfd, name, O_WRONLY, 0);
            /* Keep the modification time: it tells when the job was last seen. */
            struct stat st;
            if (fd >= 0 && fstat(fd, &st) == 0 && ftruncate(fd, (off_t)h.valid_end) == 0)
                futimens(fd, (struct timespec[2]){st.st_atim, st.st_mtim});
            if (fd >= 0)
                close(fd);
        }
        if (newest) {
            if (h.header_damaged)
                repair_header(l, name, hots[i]);
            int fd = rt_open_beneath(l->o.dirfd, name, O_RDWR | O_APPEND, 0);
            if (fd >= 0)
                adopt_hot(l, fd, buf, &h);
            else
                rt_warn("%s: cannot open %s: %s", l->what, name, rt_beneath_strerror(fd));
        } else if (seal_hot_file(l, hots[i], buf, &h) < 0) {
            rt_warn("%s: cannot seal %s; its samples stay unread", l->what, name);
        }
        rt_hot_scan_free(&h);
        free(buf);
    }
}

/* The span of block `first` from its records: 0 when it cannot be decoded. */
static uint32_t records_span(struct rt_seglog *l, uint64_t first)
{
    char path[128];
    rt_seglog_file_name(l, first, ".z", path, sizeof(path));
    size_t len = 0;
    uint8_t *img = rt_hot_slurp(l->o.dirfd, path, &len);
    struct rt_frame f = {0};
    uint64_t end = 0;
    if (img && rt_frame_decode(img, len, true, &f))
        for (size_t i = 0; i < f.nruns; i++)
            if (f.runs[i].first + f.runs[i].nrec - first > end)
                end = f.runs[i].first + f.runs[i].nrec - first;
    rt_frame_free(&f);
    free(img);
    return end <= UINT32_MAX ? (uint32_t)end : 0;
}

/* A block whose header claims far more than a block holds, or reaches into
 * the next block (its checksum only says the header is as written): its
 * span is taken from its records, or it is skipped as damaged. */
static void check_spans(struct rt_seglog *l)
{
    for (size_t i = 0; i < l->nblocks; i++) {
        struct rt_seg_block *b = &l->blocks[i];
        bool overlaps = i + 1 < l->nblocks && b->count > l->blocks[i + 1].first - b->first;
        if (b->count <= 4 * (uint64_t)l->o.block && !overlaps)
            continue;
        uint32_t span = records_span(l, b->first);
        rt_warn("%s: its block of samples %" PRIu64 "… says it spans %" PRIu32 " samples, its records %" PRIu32
                "%s", l->what, b->first, b->count, span, span ? "; the records are kept" : ": skipped as damaged");
        b->count = span ? span : b->count;
        b->damaged = !span;
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
        rt_seglog_file_name(l, first, ".z", path, sizeof(path));
        int bfd = rt_open_beneath(o->dirfd, path, O_RDONLY, 0);
        struct stat st;
        uint64_t bfirst;
        uint32_t span;
        bool ok = bfd >= 0 && fstat(bfd, &st) == 0 && rt_hot_pread(bfd, head, sizeof(head), 0) == sizeof(head);
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
    check_spans(l);
    for (size_t i = 0; i < l->nblocks; i++)
        if (!l->blocks[i].damaged && l->blocks[i].first + l->blocks[i].count > l->next)
            l->next = l->blocks[i].first + l->blocks[i].count;
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
        rt_seglog_file_name(l, l->blocks[i].first, ".z", name, sizeof(name));
        unlinkat(l->o.dirfd, name, 0);
    }
    l->nblocks = 0;
    if (l->hot_fd >= 0 || l->hot_size) {
        rt_seglog_file_name(l, l->hot_first, ".hot", name, sizeof(name));
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

void rt_seglog_skip_to(struct rt_seglog *l, uint64_t index)
{
    pthread_mutex_lock(&l->mu);
    if (index > l->next)
        l->next = index;
    pthread_mutex_unlock(&l->mu);
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
    rt_seglog_file_name(l, first, ".z", name, sizeof(name));
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
