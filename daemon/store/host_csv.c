#include "store/host_csv.h"

#include "rt/sample.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "rt/varlink.h"
#include "store/buf.h"
#include "store/textcode.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stand-ins: integers no field of a host sample holds in practice, and small
 * enough for the narrowest (process_count, 32 bits). */
#define STAND_IN 3000000000.0

/* The CSV values of a JSON text, or false. */
static bool csv_values(const char *text, size_t len, struct rt_csv_host *h)
{
    char err[128];
    struct json_object *o = rt_vl_parse(text, len, err, sizeof(err));
    struct rt_sample s;
    rt_sample_init(&s);
    bool ok = o && rt_sample_from_json(o, &s, err, sizeof(err)) == 0;
    if (ok)
        rt_csv_host_from_sample(&s, h);
    rt_sample_free(&s);
    json_object_put(o);
    return ok;
}

bool rt_csv_map_build(const uint8_t *tmpl, size_t tlen, struct rt_csv_map *m)
{
    memset(m, 0, sizeof(*m));
    m->ncols = rt_textcode_count(tmpl, tlen);
    m->dec = rt_xcalloc(m->ncols ? m->ncols : 1, sizeof(*m->dec));
    struct rt_buf text = {0};
    size_t c = 0, lit = 0;
    for (size_t i = 0; i < tlen; i++) {
        if (tmpl[i] != RT_TC_INT && tmpl[i] != RT_TC_DEC)
            continue;
        rt_buf_put(&text, tmpl + lit, i - lit);
        char num[24];
        int n = snprintf(num, sizeof(num), "%" PRIu64, (uint64_t)STAND_IN + c);
        rt_buf_put(&text, num, (size_t)n);
        m->dec[c++] = tmpl[i] == RT_TC_DEC;
        lit = i + 1;
    }
    rt_buf_put(&text, tmpl + lit, tlen - lit);
    struct rt_csv_host h = {0};
    bool ok = csv_values((const char *)text.p, text.len, &h);
    rt_buf_free(&text);
    if (!ok) {
        rt_csv_host_free(&h);
        rt_csv_map_free(m);
        return false;
    }
    m->n = h.n;
    m->col = rt_xcalloc(h.n ? h.n : 1, sizeof(*m->col));
    m->konst = rt_xcalloc(h.n ? h.n : 1, sizeof(*m->konst));
    for (size_t i = 0; i < h.n; i++) {
        double v = h.v[i], k = v - STAND_IN;
        bool is_col = k >= 0 && k < (double)m->ncols && k == floor(k);
        m->col[i] = is_col ? (int32_t)k : -1;
        m->konst[i] = v;
    }
    rt_csv_host_free(&h);
    return true;
}

void rt_csv_map_values(const struct rt_csv_map *m, const int64_t *nums, double *out)
{
    for (size_t i = 0; i < m->n; i++) {
        int32_t c = m->col[i];
        if (c < 0)
            out[i] = m->konst[i];
        else
            out[i] = m->dec[c] ? (double)nums[c] / RT_TC_DEC_SCALE : (double)nums[c];
    }
}

bool rt_csv_map_check(const struct rt_csv_map *m, const uint8_t *tmpl, size_t tlen, const int64_t *nums, size_t n)
{
    struct rt_buf text = {0};
    struct rt_csv_host h = {0};
    bool ok = n == m->ncols && rt_textcode_join(tmpl, tlen, nums, n, &text) &&
              csv_values((const char *)text.p, text.len, &h) && h.n == m->n;
    if (ok) {
        double *v = rt_xmalloc((m->n ? m->n : 1) * sizeof(*v));
        rt_csv_map_values(m, nums, v);
        ok = memcmp(v, h.v, m->n * sizeof(*v)) == 0;
        free(v);
    }
    rt_buf_free(&text);
    rt_csv_host_free(&h);
    return ok;
}

void rt_csv_map_free(struct rt_csv_map *m)
{
    free(m->col);
    free(m->konst);
    free(m->dec);
    memset(m, 0, sizeof(*m));
}

void rt_host_csv_cols(const uint8_t *tmpl, size_t tlen, size_t ncols, uint8_t *flags)
{
    struct rt_csv_map m;
    if (!rt_csv_map_build(tmpl, tlen, &m) || m.ncols != ncols) {
        memset(flags, 1, ncols); /* not a host sample we know: all in the CSV stream */
        if (m.dec)
            rt_csv_map_free(&m);
        return;
    }
    for (size_t i = 0; i < m.n; i++)
        if (m.col[i] >= 0)
            flags[m.col[i]] = 1;
    rt_csv_map_free(&m);
}
