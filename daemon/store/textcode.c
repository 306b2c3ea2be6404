#include "store/textcode.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

void rt_i64s_push(struct rt_i64s *a, int64_t v)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        a->v = rt_xrealloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = v;
}

void rt_i64s_free(struct rt_i64s *a)
{
    free(a->v);
    memset(a, 0, sizeof(*a));
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A number token in one of the two forms the markers stand for: its marker
 * and value, or 0 for any other form (kept as text). */
static int encode_number(const char *t, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = t[0] == '-';
    i += neg;
    size_t int_start = i;
    while (i < n && is_digit(t[i]))
        i++;
    size_t int_len = i - int_start;
    if (int_len == 0 || int_len > 18 || (int_len > 1 && t[int_start] == '0'))
        return 0;
    uint64_t ip = 0;
    for (size_t k = int_start; k < int_start + int_len; k++)
        ip = ip * 10 + (uint64_t)(t[k] - '0');
    if (i == n) {
        if (neg && ip == 0)
            return 0; /* "-0" */
        *out = neg ? -(int64_t)ip : (int64_t)ip;
        return RT_TC_INT;
    }
    if (t[i] != '.' || ip > 9000000000000ULL)
        return 0;
    size_t frac_start = ++i;
    while (i < n && is_digit(t[i]))
        i++;
    size_t frac_len = i - frac_start;
    if (i != n || frac_len == 0 || frac_len > 6)
        return 0;
    /* Shortest form only: "1.50" would come back as "1.5". */
    if (t[n - 1] == '0' && frac_len > 1)
        return 0;
    uint64_t fp = 0;
    for (size_t k = frac_start; k < n; k++)
        fp = fp * 10 + (uint64_t)(t[k] - '0');
    for (size_t k = frac_len; k < 6; k++)
        fp *= 10;
    uint64_t v = ip * RT_TC_DEC_SCALE + fp;
    if (neg && v == 0)
        return 0; /* "-0.0" */
    *out = neg ? -(int64_t)v : (int64_t)v;
    return RT_TC_DEC;
}

/* A character a JSON number may hold (not a call per digit: a host sample
 * has hundreds of numbers, split every tick). */
static bool is_number_char(char c)
{
    return is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

bool rt_textcode_split(const char *text, size_t len, struct rt_buf *tmpl, struct rt_i64s *nums)
{
    tmpl->len = 0;
    nums->n = 0;
    if (memchr(text, RT_TC_INT, len) || memchr(text, RT_TC_DEC, len))
        return false;
    rt_buf_reserve(tmpl, len / 2);
    size_t i = 0, lit = 0; /* lit: start of text not yet copied */
    while (i < len) {
        char c = text[i];
        if (c == '"') { /* skip the string */
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
            i++;
            continue;
        }
        if (c != '-' && !is_digit(c)) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < len && is_number_char(text[i]))
            i++;
        int64_t v;
        int marker = encode_number(text + start, i - start, &v);
        if (!marker)
            continue;
        rt_buf_put(tmpl, text + lit, start - lit);
        rt_buf_byte(tmpl, (uint8_t)marker);
        rt_i64s_push(nums, v);
        lit = i;
    }
    rt_buf_put(tmpl, text + lit, len - lit);
    return true;
}

static void put_u64(struct rt_buf *out, uint64_t v)
{
    char tmp[20];
    rt_buf_put(out, tmp, rt_fmt_u64(tmp, v));
}

static void put_number(struct rt_buf *out, int marker, int64_t v)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0)
        rt_buf_byte(out, '-');
    if (marker == RT_TC_INT) {
        put_u64(out, a);
        return;
    }
    put_u64(out, a / RT_TC_DEC_SCALE);
    char frac[7];
    uint64_t f = a % RT_TC_DEC_SCALE;
    for (int k = 5; k >= 0; k--, f /= 10)
        frac[k] = (char)('0' + f % 10);
    size_t n = 6;
    while (n > 1 && frac[n - 1] == '0')
        n--;
    rt_buf_byte(out, '.');
    rt_buf_put(out, frac, n);
}

bool rt_textcode_join(const uint8_t *tmpl, size_t tlen, const int64_t *nums, size_t n, struct rt_buf *out)
{
    rt_buf_reserve(out, tlen + n * 8);
    size_t k = 0, lit = 0;
    for (size_t i = 0; i < tlen; i++) {
        if (tmpl[i] != RT_TC_INT && tmpl[i] != RT_TC_DEC)
            continue;
        if (k == n)
            return false;
        rt_buf_put(out, tmpl + lit, i - lit);
        put_number(out, tmpl[i], nums[k++]);
        lit = i + 1;
    }
    rt_buf_put(out, tmpl + lit, tlen - lit);
    return k == n;
}

size_t rt_textcode_count(const uint8_t *tmpl, size_t tlen)
{
    size_t n = 0;
    for (size_t i = 0; i < tlen; i++)
        n += tmpl[i] == RT_TC_INT || tmpl[i] == RT_TC_DEC;
    return n;
}
