/* Reading a log: a cursor over its sealed blocks and the hot file as it was
 * when the cursor looked, on any thread. */
#include "store/seglog.h"
#include "store/hotfile.h"

#include "rt/util.h"
#include "system/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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
            rt_seglog_file_name(l, first, ".z", name, sizeof(name));
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
    c->have_frame = false;
    char name[128];
    rt_seglog_file_name(l, first, ".z", name, sizeof(name));
    size_t len = 0;
    uint8_t *img = rt_hot_slurp(l->o.dirfd, name, &len);
    if (!img)
        return false; /* removed meanwhile */
    bool ok = rt_frame_decode(img, len, c->csv_only, &c->frame) && c->frame.nruns > 0;
    free(img); /* the frame keeps what it needs (templates are in its index stream) */
    if (!ok) {
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
    if (off < ENTRY_HEADER || rt_hot_pread(c->hot_fd, out->p, (size_t)len + ENTRY_HEADER, (off_t)(off - ENTRY_HEADER)) !=
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
            !rt_hot_tmpl_bytes(c->tmpl.p, c->tmpl.len, &t, &tl))
            return false;
        memmove(c->tmpl.p, t, tl);
        c->tmpl.len = tl;
        c->cur_tid = h->tid;
        c->gen++;
    }
    size_t n = 0;
    if (!read_entry(c, h->off, h->len, &c->payload) ||
        !rt_hot_record_values(c->payload.p, c->payload.len, &c->vbuf, &c->vcap, &n)) {
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
