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

/* A character a JSON number may hold. */
static bool is_number_char(char c)
{
    return is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

/* The number token at t[i] (the longest run of characters a number may
 * hold), read in one pass: its end in *end, and its marker and value when
 * it has one of the two forms the markers stand for, else 0 (kept as text).
 * A host sample has a hundred numbers or more, split every tick. */
static int scan_number(const char *t, size_t len, size_t i, size_t *end, int64_t *out)
{
    bool neg = t[i] == '-';
    size_t j = i + neg, int_start = j;
    uint64_t ip = 0, fp = 0; /* wrap on long runs, which are refused below */
    while (j < len && is_digit(t[j]))
        ip = ip * 10 + (uint64_t)(t[j++] - '0');
    size_t int_len = j - int_start, frac_start = 0;
    if (j < len && t[j] == '.')
        for (frac_start = ++j; j < len && is_digit(t[j]); j++)
            fp = fp * 10 + (uint64_t)(t[j] - '0');
    bool plain = !(j < len && is_number_char(t[j])); /* no exponent, sign or second '.' */
    while (j < len && is_number_char(t[j]))
        j++;
    *end = j;
    if (!plain || int_len == 0 || int_len > 18 || (int_len > 1 && t[int_start] == '0'))
        return 0;
    if (!frac_start) {
        if (neg && ip == 0)
            return 0; /* "-0" */
        *out = neg ? -(int64_t)ip : (int64_t)ip;
        return RT_TC_INT;
    }
    size_t frac_len = j - frac_start;
    /* Shortest form only: "1.50" would come back as "1.5". */
    if (ip > 9000000000000ULL || frac_len == 0 || frac_len > 6 || (t[j - 1] == '0' && frac_len > 1))
        return 0;
    for (size_t k = frac_len; k < 6; k++)
        fp *= 10;
    uint64_t v = ip * RT_TC_DEC_SCALE + fp;
    if (neg && v == 0)
        return 0; /* "-0.0" */
    *out = neg ? -(int64_t)v : (int64_t)v;
    return RT_TC_DEC;
}

/* Past the string whose opening quote is at t[i]: its closing quote is the
 * first one after an even run of backslashes (found with memchr: most of a
 * sample's text is its keys). */
static size_t skip_string(const char *t, size_t len, size_t i)
{
    for (;;) {
        const char *q = memchr(t + i + 1, '"', len - i - 1);
        if (!q)
            return len;
        size_t k = (size_t)(q - t), bs = 0;
        while (k - bs - 1 > i && t[k - bs - 1] == '\\')
            bs++;
        if (bs % 2 == 0)
            return k + 1;
        i = k;
    }
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
        if (c == '"') {
            i = skip_string(text, len, i);
            continue;
        }
        if (c != '-' && !is_digit(c)) {
            i++;
            continue;
        }
        size_t start = i;
        int64_t v;
        int marker = scan_number(text, len, start, &i, &v);
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
