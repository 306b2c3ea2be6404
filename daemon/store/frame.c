#include "store/frame.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_SCALE 9
#define MAX_COLS (1u << 20)
#define RAW_MAX (256u << 20) /* a block's stream, raw */
#define VALUES_MAX (16u << 20) /* numbers in a block: far more than ours hold */

static const int64_t pow10s[MAX_SCALE + 1] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                               100000000, 1000000000};

/* Records r[a..b) form a run: same template and count, consecutive indexes. */
static size_t run_end(const struct rt_rec *r, size_t a, size_t n)
{
    size_t b = a + 1;
    while (b < n && r[b].index == r[b - 1].index + 1 && r[b].n == r[a].n && r[b].tlen == r[a].tlen &&
           memcmp(r[b].tmpl, r[a].tmpl, r[a].tlen) == 0)
        b++;
    return b;
}

static int column_scale(const struct rt_rec *r, size_t a, size_t b, size_t c)
{
    int s = MAX_SCALE;
    for (size_t i = a; i < b && s > 0; i++)
        while (s > 0 && r[i].v[c] % pow10s[s] != 0)
            s--;
    return s;
}

/* How a column's values are written: as they are, as differences from the
 * value before, or as differences of those (counters growing steadily). */
enum { MODE_RAW, MODE_DELTA, MODE_DELTA2, MODES };

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The residual of value x (unsigned arithmetic: wraps, and back) given the
 * two before it. */
static uint64_t residual(int mode, uint64_t x, uint64_t p1, uint64_t p2)
{
    switch (mode) {
    case MODE_RAW:
        return x;
    case MODE_DELTA:
        return x - p1;
    default:
        return x - (2 * p1 - p2);
    }
}

/* The mode that writes the column in the fewest bytes. */
static int column_mode(const struct rt_rec *r, size_t a, size_t b, size_t c, int scale)
{
    size_t cost[MODES] = {0};
    uint64_t p1 = 0, p2 = 0;
    for (size_t i = a; i < b; i++) {
        uint64_t x = (uint64_t)(r[i].v[c] / pow10s[scale]);
        for (int m = 0; m < MODES; m++)
            cost[m] += varint_len(rt_zigzag((int64_t)residual(m, x, p1, p2)));
        p2 = p1;
        p1 = x;
    }
    int best = MODE_DELTA;
    for (int m = 0; m < MODES; m++)
        if (cost[m] < cost[best])
            best = m;
    return best;
}

static void encode_column(const struct rt_rec *r, size_t a, size_t b, size_t c, int scale, int mode,
                          struct rt_buf *out)
{
    uint64_t p1 = 0, p2 = 0;
    for (size_t i = a; i < b; i++) {
        uint64_t x = (uint64_t)(r[i].v[c] / pow10s[scale]);
        rt_buf_varint(out, rt_zigzag((int64_t)residual(mode, x, p1, p2)));
        p2 = p1;
        p1 = x;
    }
}

static void deflate_into(const struct rt_buf *raw, struct rt_buf *out, uint32_t *zlen)
{
    uLongf n = compressBound((uLong)raw->len);
    rt_buf_reserve(out, n);
    if (compress2(out->p + out->len, &n, raw->p ? raw->p : (const Bytef *)"", (uLong)raw->len, 6) != Z_OK)
        abort(); /* only for lack of memory or a bad level */
    out->len += n;
    *zlen = (uint32_t)n;
}

void rt_frame_encode(const struct rt_rec *recs, size_t n, rt_csv_cols_fn csv_cols, struct rt_buf *out)
{
    struct rt_buf s[3] = {{0}};
    uint8_t *flags = NULL;
    size_t nruns = 0;
    for (size_t a = 0; a < n; a = run_end(recs, a, n))
        nruns++;
    rt_buf_varint(&s[0], nruns);
    for (size_t a = 0, b; a < n; a = b) {
        b = run_end(recs, a, n);
        size_t ncols = recs[a].n;
        rt_buf_varint(&s[0], recs[a].index - recs[0].index);
        rt_buf_varint(&s[0], b - a);
        rt_buf_varint(&s[0], recs[a].tlen);
        rt_buf_put(&s[0], recs[a].tmpl, recs[a].tlen);
        rt_buf_varint(&s[0], ncols);
        flags = rt_xrealloc(flags, ncols ? ncols : 1);
        memset(flags, 0, ncols);
        if (csv_cols)
            csv_cols(recs[a].tmpl, recs[a].tlen, ncols, flags);
        for (size_t c = 0; c < ncols; c++) {
            int scale = column_scale(recs, a, b, c), mode = column_mode(recs, a, b, c, scale);
            struct rt_buf *dst = &s[flags[c] ? 1 : 2];
            size_t before = dst->len;
            encode_column(recs, a, b, c, scale, mode, dst);
            rt_buf_byte(&s[0], (uint8_t)(scale | mode << 4 | (flags[c] ? 0x80 : 0)));
            rt_buf_varint(&s[0], dst->len - before);
        }
    }
    free(flags);
    size_t hdr = out->len;
    rt_buf_reserve(out, RT_FRAME_HEADER);
    rt_buf_put(out, "RTZ1", 4);
    rt_buf_u32(out, 0); /* crc, below */
    rt_buf_u64(out, n ? recs[0].index : 0);
    rt_buf_u32(out, n ? (uint32_t)(recs[n - 1].index - recs[0].index + 1) : 0);
    size_t sizes = out->len;
    for (int i = 0; i < 3; i++) {
        rt_buf_u32(out, 0);
        rt_buf_u32(out, (uint32_t)s[i].len);
    }
    for (int i = 0; i < 3; i++) {
        uint32_t z;
        deflate_into(&s[i], out, &z);
        uint8_t *p = out->p + sizes + 8 * (size_t)i;
        for (int k = 0; k < 4; k++)
            p[k] = (uint8_t)(z >> (8 * k));
        rt_buf_free(&s[i]);
    }
    uint32_t crc = (uint32_t)crc32(0, out->p + hdr + 8, RT_FRAME_HEADER - 8);
    for (int k = 0; k < 4; k++)
        out->p[hdr + 4 + (size_t)k] = (uint8_t)(crc >> (8 * k));
}

bool rt_frame_header(const uint8_t *img, size_t len, uint64_t *first, uint32_t *span)
{
    if (len < RT_FRAME_HEADER || memcmp(img, "RTZ1", 4) != 0 ||
        rt_le32(img + 4) != (uint32_t)crc32(0, img + 8, RT_FRAME_HEADER - 8))
        return false;
    uint64_t total = RT_FRAME_HEADER;
    for (int i = 0; i < 3; i++)
        total += rt_le32(img + 20 + 8 * i);
    *first = rt_le64(img + 8);
    *span = rt_le32(img + 16);
    return total == len;
}

/* Stream i of f, inflated into its kept buffer. */
static bool inflate_stream(struct rt_frame *f, int i, const uint8_t *z, uint32_t zlen, uint32_t rawlen)
{
    if (rawlen > f->stream_cap[i] || !f->streams[i]) {
        free(f->streams[i]);
        f->streams[i] = rt_xmalloc(rawlen ? rawlen : 1);
        f->stream_cap[i] = rawlen;
    }
    uLongf n = rawlen;
    return uncompress(f->streams[i], &n, z, zlen) == Z_OK && n == rawlen;
}

/* The runs of the last decode; the kept buffers stay. */
static void clear_runs(struct rt_frame *f)
{
    for (size_t i = 0; i < f->nruns; i++) {
        free(f->runs[i].csv);
        free(f->runs[i].csv_cols);
    }
    free(f->runs);
    f->runs = NULL;
    f->nruns = 0;
    f->first = 0;
    f->span = 0;
}

void rt_frame_free(struct rt_frame *f)
{
    clear_runs(f);
    for (int i = 0; i < 3; i++)
        free(f->streams[i]);
    free(f->pool);
    memset(f, 0, sizeof(*f));
}

/* Room for n more numbers in the pool after `used`; the runs' vals are
 * set from their offsets once the pool has stopped moving. */
static void pool_reserve(struct rt_frame *f, size_t used, size_t n)
{
    if (f->pool && used + n <= f->pool_cap)
        return;
    size_t cap = f->pool_cap ? f->pool_cap : 4096;
    while (cap < used + n)
        cap *= 2;
    f->pool = rt_xrealloc(f->pool, cap * sizeof(*f->pool));
    f->pool_cap = cap;
}

static bool decode_column(struct rt_cur *c, size_t nbytes, int scale, int mode, uint32_t nrec, int64_t *out)
{
    struct rt_cur col = {c->p, c->p + nbytes, false};
    if (!rt_cur_take(c, nbytes))
        return false;
    uint64_t p1 = 0, p2 = 0, d;
    for (uint32_t i = 0; i < nrec; i++) {
        if (col.p < col.end && *col.p < 0x80) /* most numbers: one byte, here without a call */
            d = *col.p++;
        else if (!rt_cur_varint_long(&col, &d))
            return false;
        uint64_t x = (uint64_t)rt_unzigzag(d) + (mode == MODE_RAW ? 0 : mode == MODE_DELTA ? p1 : 2 * p1 - p2);
        out[i] = (int64_t)(x * (uint64_t)pow10s[scale]); /* wraps on damage, never UB */
        p2 = p1;
        p1 = x;
    }
    return col.p == col.end;
}

bool rt_frame_decode(const uint8_t *img, size_t len, bool csv_only, struct rt_frame *f)
{
    clear_runs(f);
    size_t *offs = NULL; /* where each run's numbers start in the pool */
    if (!rt_frame_header(img, len, &f->first, &f->span))
        return false;
    const uint8_t *z = img + RT_FRAME_HEADER;
    uint32_t rawlen[3];
    uint64_t values_max = VALUES_MAX; /* what a block may hold in all, decoded */
    for (int i = 0; i < 3; i++) {
        uint32_t zlen = rt_le32(img + 20 + 8 * i);
        rawlen[i] = rt_le32(img + 24 + 8 * i);
        /* deflate expands at most about 1032 times: a larger claim is damage */
        if (rawlen[i] > RAW_MAX || rawlen[i] > (uint64_t)zlen * 1040 + 64)
            goto bad;
        if ((i < 2 || !csv_only) && !inflate_stream(f, i, z, zlen, rawlen[i]))
            goto bad;
        z += zlen;
    }
    struct rt_cur idx = {f->streams[0], f->streams[0] + rawlen[0], false};
    struct rt_cur data[3] = {{0}};
    for (int i = 1; i < 3; i++)
        if (i < 2 || !csv_only)
            data[i] = (struct rt_cur){f->streams[i], f->streams[i] + rawlen[i], false};
    size_t used = 0;
    uint64_t nruns, total = 0;
    if (!rt_cur_varint(&idx, &nruns) || nruns > f->span)
        goto bad;
    f->runs = rt_xcalloc(nruns ? nruns : 1, sizeof(*f->runs));
    offs = rt_xcalloc(nruns ? nruns : 1, sizeof(*offs));
    for (; f->nruns < nruns; f->nruns++) {
        struct rt_frame_run *r = &f->runs[f->nruns];
        uint64_t off, nrec, tlen, ncols;
        if (!rt_cur_varint(&idx, &off) || !rt_cur_varint(&idx, &nrec) || !rt_cur_varint(&idx, &tlen) ||
            nrec == 0 || nrec > f->span - total || off >= f->span || nrec > f->span - off)
            goto bad;
        r->tmpl = rt_cur_take(&idx, tlen);
        if (!r->tmpl || !rt_cur_varint(&idx, &ncols) || ncols > MAX_COLS || ncols * nrec > values_max)
            goto bad;
        values_max -= ncols * nrec;
        r->first = f->first + off;
        r->nrec = (uint32_t)nrec;
        r->tlen = tlen;
        r->ncols = ncols;
        total += nrec;
        pool_reserve(f, used, ncols * nrec);
        offs[f->nruns] = used;
        used += ncols * nrec;
        r->csv = rt_xcalloc(ncols ? ncols : 1, sizeof(*r->csv));
        r->csv_cols = rt_xcalloc(ncols ? ncols : 1, sizeof(*r->csv_cols));
        r->only_csv = csv_only;
        for (size_t c = 0; c < ncols; c++) {
            const uint8_t *sc = rt_cur_take(&idx, 1);
            uint64_t nbytes;
            if (!sc || !rt_cur_varint(&idx, &nbytes))
                goto bad;
            int scale = sc[0] & 0x0f, mode = (sc[0] >> 4) & 0x7;
            if (scale > MAX_SCALE || mode >= MODES)
                goto bad;
            r->csv[c] = *sc & 0x80;
            if (r->csv[c])
                r->csv_cols[r->ncsv++] = (uint32_t)c;
            struct rt_cur *src = &data[*sc & 0x80 ? 1 : 2];
            if (!src->p) { /* not decoded (CSV only) */
                continue;
            }
            if (!decode_column(src, nbytes, scale, mode, r->nrec, f->pool + offs[f->nruns] + c * nrec))
                goto bad;
        }
    }
    if (idx.p != idx.end)
        goto bad;
    for (size_t i = 0; i < f->nruns; i++)
        f->runs[i].vals = f->pool + offs[i];
    free(offs);
    return true;
bad:
    free(offs);
    clear_runs(f);
    return false;
}

bool rt_frame_get(const struct rt_frame *f, uint64_t index, int64_t *vbuf, size_t vcap, struct rt_rec *r)
{
    for (size_t i = 0; i < f->nruns; i++) {
        const struct rt_frame_run *run = &f->runs[i];
        if (index < run->first || index - run->first >= run->nrec)
            continue;
        if (run->ncols > vcap)
            return false;
        size_t k = (size_t)(index - run->first);
        if (run->only_csv) { /* the others were not decoded */
            for (size_t x = 0; x < run->ncsv; x++)
                vbuf[run->csv_cols[x]] = run->vals[run->csv_cols[x] * run->nrec + k];
        } else {
            for (size_t c = 0; c < run->ncols; c++)
                vbuf[c] = run->vals[c * run->nrec + k];
        }
        *r = (struct rt_rec){.index = index, .tmpl = run->tmpl, .tlen = run->tlen, .v = vbuf, .n = run->ncols,
                             .tmpl_id = i};
        return true;
    }
    return false;
}
