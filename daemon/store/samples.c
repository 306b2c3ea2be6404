#include "store/samples.h"

#include "rt/json.h"
#include "rt/sample.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "rt/varlink.h"
#include "store/figures.h"
#include "store/host_csv.h"
#include "store/job_sample.h"
#include "system/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rt_samples_open(struct rt_samples *s, int state_fd, int jobs_fd, mode_t dir_mode, mode_t file_mode,
                    size_t backlog_max, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->jobs_fd = jobs_fd;
    s->file_mode = file_mode;
    s->backlog_max = backlog_max;
    pthread_mutex_init(&s->health.mu, NULL);
    if (mkdirat(state_fd, "host", dir_mode) < 0 && errno != EEXIST) {
        int e = errno;
        snprintf(err, errlen, "cannot create the host timeline directory: %s", strerror(e));
        pthread_mutex_destroy(&s->health.mu);
        return -e;
    }
    s->host_fd = rt_open_beneath(state_fd, "host", O_RDONLY | O_DIRECTORY, 0);
    struct rt_seglog_opts o = {.dirfd = s->host_fd, .prefix = "", .what = "host timeline", .block = RT_HOST_BLOCK,
                               .mode = file_mode, .backlog_max = backlog_max, .csv_cols = rt_host_csv_cols,
                               .health = &s->health};
    int r = s->host_fd < 0 ? s->host_fd : rt_seglog_open(&s->host, &o);
    if (r < 0) {
        snprintf(err, errlen, "cannot open the host timeline (host in the state directory): %s; move it away",
                 rt_beneath_strerror(r));
        if (s->host_fd >= 0)
            close(s->host_fd);
        pthread_mutex_destroy(&s->health.mu);
        return r;
    }
    return 0;
}

void rt_samples_close(struct rt_samples *s)
{
    if (s->host_fd < 0)
        return;
    rt_seglog_close(&s->host);
    close(s->host_fd);
    s->host_fd = -1;
    rt_buf_free(&s->tmpl);
    rt_i64s_free(&s->nums);
    pthread_mutex_destroy(&s->health.mu);
}

/* ---- a job's log ---- */

struct rt_figlog *rt_samples_job_log(struct rt_samples *s, uint64_t id)
{
    struct rt_figlog *fl = rt_xcalloc(1, sizeof(*fl));
    char sub[24], what[48];
    snprintf(sub, sizeof(sub), "%" PRIu64, id);
    snprintf(what, sizeof(what), "job %" PRIu64, id);
    struct rt_seglog_opts o = {.dirfd = s->jobs_fd, .subdir = sub, .prefix = "fig-", .what = what,
                               .block = RT_FIG_BLOCK, .mode = s->file_mode, .backlog_max = s->backlog_max,
                               .health = &s->health};
    int r = rt_seglog_open(&fl->log, &o);
    if (r < 0) {
        rt_err("job %" PRIu64 ": cannot open its samples: %s", id, strerror(-r));
        free(fl);
        return NULL;
    }
    atomic_init(&fl->refs, 1);
    return fl;
}

struct rt_figlog *rt_figlog_ref(struct rt_figlog *fl)
{
    if (fl)
        atomic_fetch_add(&fl->refs, 1);
    return fl;
}

void rt_figlog_unref(struct rt_figlog *fl)
{
    if (!fl || atomic_fetch_sub(&fl->refs, 1) != 1)
        return;
    rt_seglog_close(&fl->log);
    free(fl->hblocks);
    free(fl);
}

void rt_figlog_remove(struct rt_figlog *fl)
{
    /* Files only: readers holding a reference find nothing more to read. */
    rt_seglog_remove_files(&fl->log);
}

/* The first index of the host block holding hseq. */
static uint64_t host_block_of(struct rt_samples *s, uint64_t hseq)
{
    struct rt_seglog *l = &s->host;
    pthread_mutex_lock(&l->mu);
    uint64_t first = l->hot_first;
    if (hseq < l->hot_first) {
        size_t lo = 0, hi = l->nblocks;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (l->blocks[mid].first <= hseq)
                lo = mid + 1;
            else
                hi = mid;
        }
        first = lo ? l->blocks[lo - 1].first : hseq;
    }
    pthread_mutex_unlock(&l->mu);
    return first;
}

static void note_host(struct rt_samples *s, struct rt_figlog *fl, uint64_t hseq)
{
    fl->last_hseq = hseq;
    uint64_t b = host_block_of(s, hseq);
    if (fl->nhblocks && fl->hblocks[fl->nhblocks - 1] >= b)
        return;
    if (fl->nhblocks == fl->hblocks_cap) {
        fl->hblocks_cap = fl->hblocks_cap ? fl->hblocks_cap * 2 : 4;
        fl->hblocks = rt_xrealloc(fl->hblocks, fl->hblocks_cap * sizeof(*fl->hblocks));
    }
    fl->hblocks[fl->nhblocks++] = b;
}

uint64_t rt_samples_job_load(struct rt_samples *s, struct rt_figlog *fl, uint64_t from, rt_figures_fn fn, void *ctx,
                             double interval_secs)
{
    uint64_t n = rt_seglog_count(&fl->log), host_refs = 0;
    struct rt_seglog_cursor c;
    rt_seglog_cursor_init(&c, &fl->log, false);
    for (uint64_t i = 0; i < n; i++) {
        struct rt_rec r;
        if (!rt_seglog_cursor_get(&c, i, &r))
            continue;
        struct rt_job_figures f;
        uint64_t hseq, ts;
        bool ok;
        if (rt_figures_decode(&r, &f, &hseq, &ts)) {
            note_host(s, fl, hseq);
            host_refs = hseq + 1 > host_refs ? hseq + 1 : host_refs;
            ok = true;
        } else {
            ok = r.tlen > 1 && r.tmpl[0] == RT_FIG_VERBATIM &&
                 rt_figures_from_line((const char *)r.tmpl + 1, r.tlen - 1, interval_secs, &f);
        }
        if (ok && i >= from)
            fn(ctx, &f);
    }
    rt_seglog_cursor_free(&c);
    /* Numbers others have seen are never given again: a host sample this
     * job refers to, lost from the host timeline; the job's own samples its
     * record counted, lost from its files (an older copy of them). */
    if (host_refs > rt_seglog_count(&s->host)) {
        rt_warn("host timeline: host samples up to %" PRIu64 " are lost (jobs refer to them); new ones are "
                "numbered after them", host_refs - 1);
        rt_seglog_skip_to(&s->host, host_refs);
    }
    if (from != UINT64_MAX && n < from) {
        rt_warn("%s: its samples %" PRIu64 "–%" PRIu64 " are lost (its record counts %" PRIu64 ", its files hold "
                "%" PRIu64 "); new ones are numbered after them", fl->log.what, n, from - 1, from, n);
        rt_seglog_skip_to(&fl->log, from);
        n = from;
    }
    return n;
}

/* ---- writing ---- */

void rt_samples_host_tick(struct rt_samples *s, const char *text, size_t len)
{
    s->tick_text = text;
    s->tick_len = len;
    s->tick_stored = false;
}

bool rt_samples_store_host(struct rt_samples *s, const char *text, size_t len, uint64_t *hseq)
{
    if (!rt_textcode_split(text, len, &s->tmpl, &s->nums))
        return false;
    uint64_t index = rt_seglog_count(&s->host);
    if (!rt_seglog_append(&s->host, s->tmpl.p, s->tmpl.len, s->nums.v, s->nums.n, false))
        return false;
    *hseq = index;
    return true;
}

bool rt_samples_append_at(struct rt_samples *s, struct rt_figlog *fl, const struct rt_job_figures *f, uint64_t hseq,
                          uint64_t timestamp_ms)
{
    int64_t v[RT_FIG_NUMS];
    rt_figures_encode(f, hseq, timestamp_ms, v);
    /* A job sample never reaches the disk before its host sample. */
    bool hold = rt_seglog_has_backlog(&s->host);
    if (!rt_seglog_append(&fl->log, (const uint8_t *)RT_FIG_TEMPLATE, strlen(RT_FIG_TEMPLATE), v, RT_FIG_NUMS, hold))
        return false;
    note_host(s, fl, hseq);
    return true;
}

bool rt_samples_append_verbatim(struct rt_samples *s, struct rt_figlog *fl, const char *line, size_t len)
{
    (void)s;
    struct rt_buf t = {0};
    rt_buf_byte(&t, RT_FIG_VERBATIM);
    rt_buf_put(&t, line, len);
    bool ok = rt_seglog_append(&fl->log, t.p, t.len, NULL, 0, false);
    rt_buf_free(&t);
    return ok;
}

bool rt_samples_append(struct rt_samples *s, struct rt_figlog *fl, const struct rt_job_figures *f, uint64_t timestamp_ms)
{
    if (!s->tick_stored) {
        if (!s->tick_text || !rt_samples_store_host(s, s->tick_text, s->tick_len, &s->tick_hseq))
            return false;
        s->tick_stored = true;
    }
    return rt_samples_append_at(s, fl, f, s->tick_hseq, timestamp_ms);
}

bool rt_samples_flush(struct rt_samples *s, struct rt_figlog *fl)
{
    bool host = rt_seglog_flush(&s->host);
    return host && fl ? rt_seglog_flush(&fl->log) : host;
}

bool rt_samples_seal_one(struct rt_samples *s, struct rt_figlog *const *figs, size_t n)
{
    if (rt_seglog_full(&s->host)) {
        rt_seglog_seal(&s->host);
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        if (figs[i] && rt_seglog_full(&figs[i]->log)) {
            rt_seglog_seal(&figs[i]->log);
            return true;
        }
    }
    return false;
}

void rt_samples_job_ended(struct rt_samples *s, struct rt_figlog *fl, bool last_running)
{
    if (rt_samples_flush(s, fl) && fl && rt_seglog_seal(&fl->log) == 0)
        rt_seglog_fit(&fl->log);
    if (last_running)
        rt_seglog_seal(&s->host);
}

/* ---- reading ---- */

struct reader {
    struct rt_samples *s;
    const struct rt_job_view *jv;
    bool csv;
    struct rt_seglog_cursor host;       /* CSV: only the columns rows need */
    struct rt_seglog_cursor host_full;  /* CSV from templates the map does not fit */
    bool have_full;
    struct rt_buf text;
    /* CSV: the map of the last template */
    struct rt_buf map_tmpl;
    uint64_t map_id;                    /* the host cursor's id of that template */
    struct rt_csv_map map;
    bool have_map, map_ok;
    double *vals;
    size_t vals_cap;
    struct rt_csv_host parsed;
    bool warned;
    bool have_prev;                     /* prev_hseq: the host sample of the record before */
    uint64_t prev_hseq;
};

static void warn_skip(struct reader *rd, uint64_t index, const char *why)
{
    if (!rd->warned)
        rt_warn("job %" PRIu64 ": sample %" PRIu64 " is skipped: %s", rd->jv->id, index, why);
    rd->warned = true;
}

/* CSV values of a host record through the map of its template. */
/* Host record hseq with every number (the reader's own cursor decodes the
 * CSV columns only). */
static bool full_record(struct reader *rd, uint64_t hseq, struct rt_rec *full)
{
    if (!rd->have_full) {
        rt_seglog_cursor_init(&rd->host_full, &rd->s->host, false);
        rd->have_full = true;
    }
    return rt_seglog_cursor_get(&rd->host_full, hseq, full);
}

static bool host_csv_values(struct reader *rd, const struct rt_rec *h, uint64_t hseq, const double **v, size_t *n)
{
    /* Records of one run of a block share their template (same tmpl_id). */
    if (!rd->have_map || (h->tmpl_id != rd->map_id && (rd->map_tmpl.len != h->tlen ||
                                                      memcmp(rd->map_tmpl.p, h->tmpl, h->tlen) != 0))) {
        if (rd->have_map)
            rt_csv_map_free(&rd->map);
        rd->map_tmpl.len = 0;
        rt_buf_put(&rd->map_tmpl, h->tmpl, h->tlen);
        rd->have_map = rt_csv_map_build(h->tmpl, h->tlen, &rd->map);
        /* Checked against the whole record: its JSON needs every number
         * (with the others left 0 the check failed, and each record of the
         * template went the slow way: 2 s for a day instead of 0.3 s). */
        struct rt_rec full;
        rd->map_ok = rd->have_map && full_record(rd, hseq, &full) &&
                     rt_csv_map_check(&rd->map, full.tmpl, full.tlen, full.v, full.n);
    }
    rd->map_id = h->tmpl_id;
    if (rd->map_ok && h->n == rd->map.ncols) {
        if (rd->map.n > rd->vals_cap) {
            rd->vals_cap = rd->map.n;
            rd->vals = rt_xrealloc(rd->vals, rd->vals_cap * sizeof(*rd->vals));
        }
        rt_csv_map_values(&rd->map, h->v, rd->vals);
        *v = rd->vals;
        *n = rd->map.n;
        return true;
    }
    /* The slow way: the whole record, its JSON, parsed. */
    atomic_fetch_add_explicit(&rd->s->host_rows_parsed, 1, memory_order_relaxed);
    struct rt_rec full;
    char err[128];
    rd->text.len = 0;
    if (!full_record(rd, hseq, &full) || !rt_textcode_join(full.tmpl, full.tlen, full.v, full.n, &rd->text))
        return false;
    struct json_object *o = rt_vl_parse((const char *)rd->text.p, rd->text.len, err, sizeof(err));
    struct rt_sample sm;
    rt_sample_init(&sm);
    bool ok = o && rt_sample_from_json(o, &sm, err, sizeof(err)) == 0;
    if (ok)
        rt_csv_host_from_sample(&sm, &rd->parsed);
    rt_sample_free(&sm);
    json_object_put(o);
    *v = rd->parsed.v;
    *n = rd->parsed.n;
    return ok;
}

/* A sample kept as it was (migrated): its line, or its row. */
static bool verbatim(struct reader *rd, const struct rt_rec *r, struct rt_buf *out)
{
    const char *line = (const char *)r->tmpl + 1;
    size_t len = r->tlen - 1;
    if (!rd->csv) {
        rt_buf_put(out, line, len);
        rt_buf_byte(out, '\n');
        return true;
    }
    char err[128];
    struct json_object *o = rt_vl_parse(line, len, err, sizeof(err));
    struct rt_sample sm;
    rt_sample_init(&sm);
    bool ok = o && rt_sample_from_json(o, &sm, err, sizeof(err)) == 0;
    if (ok) {
        char row[1024];
        size_t n = rt_sample_to_csv(&sm, row, sizeof(row));
        rt_buf_put(out, row, n < sizeof(row) ? n : sizeof(row) - 1);
    }
    rt_sample_free(&sm);
    json_object_put(o);
    return ok;
}

/* One sample into out; false when it cannot be made (skipped). */
static bool one(struct reader *rd, const struct rt_rec *r, uint64_t index, struct rt_buf *out)
{
    struct rt_job_figures f;
    uint64_t hseq, ts;
    if (!rt_figures_decode(r, &f, &hseq, &ts)) {
        rd->have_prev = false;
        if (r->tlen > 1 && r->tmpl[0] == RT_FIG_VERBATIM && verbatim(rd, r, out))
            return true;
        warn_skip(rd, index, "it is not a sample record");
        return false;
    }
    struct rt_rec h;
    if (!rt_seglog_cursor_get(&rd->host, hseq, &h)) {
        warn_skip(rd, index, "its host sample is damaged or gone");
        return false;
    }
    struct rt_job_sample js = {.job_id = rd->jv->id, .name_json = rd->jv->name_json, .pid = rd->jv->pid,
                               .timestamp_ms = ts, .host_repeated = rd->have_prev && rd->prev_hseq == hseq, .f = &f};
    rd->have_prev = true;
    rd->prev_hseq = hseq;
    if (rd->csv) {
        const double *v;
        size_t n;
        if (host_csv_values(rd, &h, hseq, &v, &n) && rt_job_sample_csv(v, n, &js, out))
            return true;
        warn_skip(rd, index, "its host sample is damaged");
        return false;
    }
    rd->text.len = 0;
    struct rt_host_text ht;
    if (!rt_textcode_join(h.tmpl, h.tlen, h.v, h.n, &rd->text) ||
        !rt_host_text_parse((const char *)rd->text.p, rd->text.len, &ht)) {
        warn_skip(rd, index, "its host sample is damaged");
        return false;
    }
    rt_job_sample_json(&ht, &js, out);
    rt_buf_byte(out, '\n');
    return true;
}

static void reader_free(struct reader *rd)
{
    rt_seglog_cursor_free(&rd->host);
    if (rd->have_full)
        rt_seglog_cursor_free(&rd->host_full);
    if (rd->have_map)
        rt_csv_map_free(&rd->map);
    rt_buf_free(&rd->map_tmpl);
    rt_buf_free(&rd->text);
    rt_csv_host_free(&rd->parsed);
    free(rd->vals);
}

static size_t read_range(struct rt_samples *s, struct rt_figlog *fl, const struct rt_job_view *jv, uint64_t from,
                         uint64_t end, size_t max, size_t max_bytes, bool csv, struct rt_buf *out, uint64_t *next)
{
    struct reader rd = {.s = s, .jv = jv, .csv = csv};
    rt_seglog_cursor_init(&rd.host, &s->host, csv);
    struct rt_seglog_cursor figs;
    rt_seglog_cursor_init(&figs, &fl->log, false);
    size_t n = 0, start = out->len;
    uint64_t i = from;
    struct rt_rec r;
    struct rt_job_figures f;
    uint64_t ts;
    /* A page that starts mid-job knows the host sample of the row before. */
    rd.have_prev = from > 0 && from - 1 < end && rt_seglog_cursor_get(&figs, from - 1, &r) &&
                   rt_figures_decode(&r, &f, &rd.prev_hseq, &ts);
    for (; i < end && n < max && out->len - start < max_bytes; i++) {
        if (!rt_seglog_cursor_get(&figs, i, &r)) {
            warn_skip(&rd, i, "it is damaged or gone");
            rd.have_prev = false;
            continue;
        }
        size_t before = out->len;
        if (one(&rd, &r, i, out))
            n++;
        else
            out->len = before;
    }
    *next = i;
    rt_seglog_cursor_free(&figs);
    reader_free(&rd);
    return n;
}

/* CSV rows of this many samples or more are made in two halves at once: a
 * day's CSV is all CPU (inflating, decoding, writing numbers), and the
 * halves share only the store's index, under its lock. */
#define SPLIT_MIN 2048

struct half {
    struct rt_samples *s;
    struct rt_figlog *fl;
    const struct rt_job_view *jv;
    uint64_t from, end, next;
    size_t max_bytes, n;
    struct rt_buf out;
};

static void *read_half(void *arg)
{
    struct half *h = arg;
    h->n = read_range(h->s, h->fl, h->jv, h->from, h->end, SIZE_MAX, h->max_bytes, true, &h->out, &h->next);
    return NULL;
}

size_t rt_samples_read(struct rt_samples *s, struct rt_figlog *fl, const struct rt_job_view *jv, uint64_t from,
                       uint64_t end, size_t max, size_t max_bytes, bool csv, struct rt_buf *out, uint64_t *next)
{
    uint64_t written = rt_seglog_written(&fl->log);
    if (end > written)
        end = written;
    uint64_t stop = end > from && end - from > max ? from + max : end;
    pthread_t t;
    struct half h = {.s = s, .fl = fl, .jv = jv, .from = from + (stop - from) / 2, .end = stop,
                     .max_bytes = max_bytes / 2};
    if (!csv || stop < from + SPLIT_MIN || pthread_create(&t, NULL, read_half, &h) != 0)
        return read_range(s, fl, jv, from, end, max, max_bytes, csv, out, next);
    size_t n = read_range(s, fl, jv, from, h.from, SIZE_MAX, max_bytes / 2, csv, out, next);
    pthread_join(t, NULL);
    if (*next == h.from) { /* else the first half stopped at its bytes: the page ends there */
        if (h.out.len)
            rt_buf_put(out, h.out.p, h.out.len);
        n += h.n;
        *next = h.next;
    }
    rt_buf_free(&h.out);
    return n;
}

/* A sample's parts (a sample kept as it was: parsed); false when it cannot
 * be made. */
static bool parts(struct reader *rd, const struct rt_rec *r, uint64_t index, double interval_secs,
                  struct rt_sample *sm, struct rt_sample_parts *p)
{
    uint64_t hseq;
    if (rt_figures_decode(r, &p->f, &hseq, &p->timestamp_ms)) {
        struct rt_rec h;
        p->has_job = true;
        p->shown = false;
        p->secs = (double)p->f.interval_ms / 1000.0;
        if (rt_seglog_cursor_get(&rd->host, hseq, &h) && host_csv_values(rd, &h, hseq, &p->host, &p->nhost))
            return true;
        warn_skip(rd, index, "its host sample is damaged or gone");
        return false;
    }
    if (r->tlen > 1 && r->tmpl[0] == RT_FIG_VERBATIM) {
        char err[128];
        struct json_object *o = rt_vl_parse((const char *)r->tmpl + 1, r->tlen - 1, err, sizeof(err));
        rt_sample_reset(sm);
        sm->nominal_interval_secs = interval_secs;
        bool ok = o && rt_sample_from_json(o, sm, err, sizeof(err)) == 0;
        json_object_put(o);
        if (ok) {
            rt_csv_host_from_sample(sm, &rd->parsed);
            *p = (struct rt_sample_parts){.f = sm->job, .shown = true, .has_job = sm->has_job,
                                          .timestamp_ms = sm->timestamp_ms, .secs = rt_sample_interval_secs(sm),
                                          .host = rd->parsed.v, .nhost = rd->parsed.n};
            return true;
        }
    }
    warn_skip(rd, index, "it is not a sample record");
    return false;
}

uint64_t rt_samples_each(struct rt_samples *s, struct rt_figlog *fl, uint64_t id, double interval_secs,
                         uint64_t from, uint64_t end, rt_samples_each_fn *fn, void *ctx)
{
    struct rt_job_view jv = {.id = id};
    struct reader rd = {.s = s, .jv = &jv, .csv = true};
    rt_seglog_cursor_init(&rd.host, &s->host, true);
    struct rt_seglog_cursor figs;
    rt_seglog_cursor_init(&figs, &fl->log, false);
    uint64_t written = rt_seglog_written(&fl->log), done = 0;
    struct rt_sample sm;
    rt_sample_init(&sm);
    for (uint64_t i = from; i < end && i < written; i++) {
        struct rt_rec r;
        struct rt_sample_parts p;
        if (!rt_seglog_cursor_get(&figs, i, &r))
            warn_skip(&rd, i, "it is damaged or gone");
        else if (parts(&rd, &r, i, interval_secs, &sm, &p)) {
            fn(ctx, &p);
            done++;
        }
    }
    rt_sample_free(&sm);
    rt_seglog_cursor_free(&figs);
    reader_free(&rd);
    return done;
}
