#include "rt/json.h"

#include <json-c/printbuf.h>

#include "rt/sample.h"
#include "rt/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* k / 10^d in plain decimals, trailing zeros dropped, ".0" if whole. */
static size_t format_scaled(int64_t k, int d, char *buf)
{
    char tmp[32];
    uint64_t a = k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
    int i = (int)sizeof(tmp), digits = 0;
    do {
        tmp[--i] = (char)('0' + a % 10);
        a /= 10;
        if (++digits == d)
            tmp[--i] = '.';
    } while (a || digits <= d);
    if (tmp[i] == '.')
        tmp[--i] = '0';
    size_t n = 0;
    if (k < 0)
        buf[n++] = '-';
    size_t len = sizeof(tmp) - (size_t)i;
    memcpy(buf + n, tmp + i, len);
    n += len;
    if (d > 0) {
        while (buf[n - 1] == '0' && buf[n - 2] != '.')
            n--;
    } else {
        memcpy(buf + n, ".0", 2);
        n += 2;
    }
    buf[n] = '\0';
    return n;
}

size_t rt_json_format_double(double v, int decimals, char buf[RT_JSON_DOUBLE_MAX])
{
    if (!isfinite(v))
        return 0;
    static const double pow10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
    if (decimals >= 0 && decimals <= 6) {
        /* Rounded to d places and below 2^50 / 10^d, the shortest form that
         * reads back is the d-place decimal itself: its neighbours are more
         * than 4 doubles apart. */
        double m = round(v * pow10[decimals]);
        if (fabs(m) < 0x1p50)
            return format_scaled((int64_t)m, decimals, buf);
    }
    if (decimals >= 0)
        v = rt_round_dec(v, decimals);
    if (v == 0.0)
        v = 0.0; /* no "-0.0" */
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(buf, RT_JSON_DOUBLE_MAX, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, RT_JSON_DOUBLE_MAX, "%.*g", prec, v);
    /* %g switches to exponents early (100 -> "1e+02"); use plain decimals for
     * everyday magnitudes. */
    char *e = strchr(buf, 'e');
    if (e && fabs(v) >= 1e-7 && fabs(v) < 1e17) {
        int exp10 = atoi(e + 1);
        int decimals_needed = prec - 1 - exp10;
        snprintf(buf, RT_JSON_DOUBLE_MAX, "%.*f", decimals_needed > 0 ? decimals_needed : 0, v);
    }
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    return strlen(buf);
}

struct json_object *rt_json_double(double v, int decimals)
{
    char buf[RT_JSON_DOUBLE_MAX];
    if (!rt_json_format_double(v, decimals, buf))
        return NULL;
    double r = decimals >= 0 ? rt_round_dec(v, decimals) : v;
    return json_object_new_double_s(r == 0.0 ? 0.0 : r, buf);
}

struct json_object *rt_json_string_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

struct json_object *rt_json_u64(uint64_t v)
{
    return json_object_new_uint64(v);
}

static struct json_object *get(struct json_object *o, const char *key, json_type t)
{
    struct json_object *v;
    if (!o || !json_object_is_type(o, json_type_object))
        return NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, t))
        return NULL;
    return v;
}

bool rt_json_get_u64(struct json_object *o, const char *key, uint64_t *out)
{
    struct json_object *v = get(o, key, json_type_int);
    if (!v)
        return false;
    if (json_object_get_int64(v) < 0)
        return false;
    *out = json_object_get_uint64(v);
    return true;
}

bool rt_json_get_i64(struct json_object *o, const char *key, int64_t *out)
{
    struct json_object *v = get(o, key, json_type_int);
    if (!v)
        return false;
    *out = json_object_get_int64(v);
    return true;
}

bool rt_json_get_double(struct json_object *o, const char *key, double *out)
{
    struct json_object *v = get(o, key, json_type_double);
    if (!v)
        v = get(o, key, json_type_int);
    if (!v)
        return false;
    *out = json_object_get_double(v);
    return true;
}

bool rt_json_get_bool(struct json_object *o, const char *key, bool *out)
{
    struct json_object *v = get(o, key, json_type_boolean);
    if (!v)
        return false;
    *out = json_object_get_boolean(v);
    return true;
}

const char *rt_json_get_string(struct json_object *o, const char *key)
{
    struct json_object *v = get(o, key, json_type_string);
    return v ? json_object_get_string(v) : NULL;
}

struct json_object *rt_json_get_object(struct json_object *o, const char *key)
{
    return get(o, key, json_type_object);
}

struct json_object *rt_json_get_array(struct json_object *o, const char *key)
{
    return get(o, key, json_type_array);
}

const char *rt_json_plain(struct json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

void rt_json_utf8_escape(struct json_object *o)
{
    if (json_object_is_type(o, json_type_string)) {
        const char *s = json_object_get_string(o);
        size_t len = (size_t)json_object_get_string_len(o);
        if (!rt_utf8_valid(s, len)) {
            char *e = rt_utf8_escape(s, len);
            json_object_set_string(o, e);
            free(e);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            rt_json_utf8_escape(json_object_array_get_idx(o, i));
    } else if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, key, val) {
            (void)key;
            rt_json_utf8_escape(val);
        }
    }
}

/* The bytes a JSON string cannot hold as they are. */
#define C8(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1, [c + 4] = 1, [c + 5] = 1, [c + 6] = 1, [c + 7] = 1
static const unsigned char needs_escape[256] = {C8(0), C8(8), C8(16), C8(24), ['"'] = 1, ['\\'] = 1};
#undef C8

/* Whether any of 8 bytes is one of those: each test is exact for "any" (a
 * borrow runs on only past a byte that matched), and the quote and the
 * backslash share the top bit of ~x as they have none of their own. */
static bool word_needs_escape(const char *p)
{
    const uint64_t ones = 0x0101010101010101u, top = 0x8080808080808080u;
    uint64_t x;
    memcpy(&x, p, sizeof(x));
    uint64_t m = (x - ones * 0x20) | ((x ^ ones * '"') - ones) | ((x ^ ones * '\\') - ones);
    return (m & ~x & top) != 0;
}

void rt_json_put_string(struct printbuf *pb, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    printbuf_memappend_fast(pb, "\"", 1);
    size_t from = 0, i = 0;
    while (i < len) {
        /* CSV pages: a row's bytes at a time up to its newline */
        while (len - i >= 8 && !word_needs_escape(s + i))
            i += 8;
        if (i == len)
            break;
        unsigned char c = (unsigned char)s[i];
        if (!needs_escape[c]) {
            i++;
            continue;
        }
        const char *esc = c == '\b' ? "\\b" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                        : c == '\f' ? "\\f" : c == '"' ? "\\\"" : c == '\\' ? "\\\\" : NULL;
        printbuf_memappend_fast(pb, s + from, (int)(i - from));
        if (esc) {
            printbuf_memappend_fast(pb, esc, 2);
        } else {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            printbuf_memappend_fast(pb, u, (int)sizeof(u));
        }
        from = ++i;
    }
    printbuf_memappend_fast(pb, s + from, (int)(i - from));
    printbuf_memappend_fast(pb, "\"", 1);
}
