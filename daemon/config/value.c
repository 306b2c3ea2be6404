/* One configuration value: parsed and checked from the file or the command
 * line (durations, sizes, paths, names, URLs), and written back. */
#include "config/keys.h"

#include "jobs/adopt.h"
#include "notice/target.h"

#include "rt/util.h"
#include "system/log.h"

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

void rt_config_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

const char *rt_config_type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP: return "a group";
    case CONFIG_TYPE_INT: return "an integer";
    case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a number with a fraction";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array";
    case CONFIG_TYPE_LIST: return "a list";
    default: return "nothing";
    }
}

/* ---- formatting durations and sizes (messages and rt_config_write) ---- */

static void format_duration(uint64_t usec, char *buf, size_t size)
{
    static const struct { const char *unit; uint64_t usec; } units[] = {
        {"d", 24 * 3600 * USEC_PER_SEC}, {"h", 3600 * USEC_PER_SEC}, {"min", 60 * USEC_PER_SEC},
        {"s", USEC_PER_SEC}, {"ms", 1000},
    };
    if (usec == 0) {
        snprintf(buf, size, "0");
        return;
    }
    for (size_t i = 0; i < RT_ARRAY_SIZE(units); i++)
        if (usec % units[i].usec == 0) {
            snprintf(buf, size, "%llu%s", (unsigned long long)(usec / units[i].usec), units[i].unit);
            return;
        }
    /* Every microsecond, so that it reads back the same ("%g" kept six
     * digits: 50.55555 s came back as 50.5556 s). */
    char frac[8];
    snprintf(frac, sizeof(frac), "%06llu", (unsigned long long)(usec % USEC_PER_SEC));
    for (size_t n = strlen(frac); n > 1 && frac[n - 1] == '0'; n--)
        frac[n - 1] = '\0';
    snprintf(buf, size, "%llu.%ss", (unsigned long long)(usec / USEC_PER_SEC), frac);
}

void rt_config_format_size(uint64_t bytes, char *buf, size_t size)
{
    static const struct { const char *unit; uint64_t bytes; } units[] = {
        {"T", TIB}, {"G", GIB}, {"M", MIB}, {"K", KIB},
    };
    for (size_t i = 0; bytes && i < RT_ARRAY_SIZE(units); i++)
        if (bytes % units[i].bytes == 0) {
            snprintf(buf, size, "%llu%s", (unsigned long long)(bytes / units[i].bytes), units[i].unit);
            return;
        }
    snprintf(buf, size, "%llu", (unsigned long long)bytes);
}

static bool is_duration(enum kind k) { return k == K_SECS_DOUBLE || k == K_SECS_U64 || k == K_SECS_UINT; }
static bool is_size(enum kind k) { return k == K_BYTES_U64 || k == K_BYTES_SIZE; }

static void format_bound(const struct key *k, uint64_t v, char *buf, size_t size)
{
    if (is_duration(k->kind))
        format_duration(v, buf, size);
    else if (is_size(k->kind))
        rt_config_format_size(v, buf, size);
    else
        snprintf(buf, size, "%llu", (unsigned long long)v);
}

/* ---- parsing numbers with units ---- */

/* "<digits>[.<digits>]" followed by a unit; returns the number and sets
 * *unit, or false when the text is not a plain decimal. */
static bool split_number(const char *s, double *num, const char **unit)
{
    const char *p = s;
    bool digits = false, dot = false;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digits = true;
        else if (*p == '.' && !dot)
            dot = true;
        else
            break;
    }
    if (!digits)
        return false;
    char buf[64];
    size_t n = (size_t)(p - s);
    if (n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    *num = strtod(buf, NULL);
    while (*p == ' ')
        p++;
    *unit = p;
    return true;
}

static bool parse_duration_str(const char *s, uint64_t *usec)
{
    static const struct { const char *unit; double usec; } units[] = {
        {"", 1e6}, {"s", 1e6}, {"sec", 1e6}, {"ms", 1e3}, {"m", 60e6}, {"min", 60e6},
        {"h", 3600e6}, {"d", 86400e6}, {"w", 7 * 86400e6},
    };
    double num;
    const char *unit;
    if (!split_number(s, &num, &unit))
        return false;
    for (size_t i = 0; i < RT_ARRAY_SIZE(units); i++)
        if (strcmp(unit, units[i].unit) == 0) {
            double v = num * units[i].usec;
            if (!(v < 1.8e19))
                return false;
            *usec = (uint64_t)llround(v);
            return true;
        }
    return false;
}

static bool parse_size_str(const char *s, uint64_t *bytes)
{
    static const struct { const char *unit; uint64_t mult; } units[] = {
        {"", 1}, {"B", 1}, {"K", KIB}, {"KiB", KIB}, {"M", MIB}, {"MiB", MIB},
        {"G", GIB}, {"GiB", GIB}, {"T", TIB}, {"TiB", TIB},
    };
    uint64_t num = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (num > (UINT64_MAX - 9) / 10)
            return false;
        num = num * 10 + (uint64_t)(*p - '0');
    }
    while (*p == ' ')
        p++;
    for (size_t i = 0; i < RT_ARRAY_SIZE(units); i++)
        if (strcmp(p, units[i].unit) == 0) {
            if (num > UINT64_MAX / units[i].mult)
                return false;
            *bytes = num * units[i].mult;
            return true;
        }
    return false;
}

/* ---- checking strings ---- */

static bool has_control_or_space(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return true;
    return false;
}

static bool valid_group_name(const char *s)
{
    if (*s == '\0')
        return true; /* root only */
    if (*s == '-' || strlen(s) > 32)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-' || *s == '.'))
            return false;
    return true;
}

/* systemd's credential names are file names. */
static bool valid_credential_name(const char *s)
{
    return *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/') && !has_control_or_space(s);
}

static bool valid_url(const char *s)
{
    if (*s == '\0')
        return true; /* uploads disabled */
    const char *rest = rt_str_starts_with(s, "https://") ? s + 8 : rt_str_starts_with(s, "http://") ? s + 7 : NULL;
    return rest && *rest && *rest != '/' && !has_control_or_space(s);
}

static bool parse_bool_str(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(yes); i++) {
        if (strcmp(s, yes[i]) == 0)
            return (*out = true), true;
        if (strcmp(s, no[i]) == 0)
            return (*out = false), true;
    }
    return false;
}

/* ---- one value into the struct ---- */

static void store_uint(void *p, size_t size, uint64_t v)
{
    if (size == sizeof(uint64_t)) {
        uint64_t x = v;
        memcpy(p, &x, sizeof(x));
    } else {
        unsigned x = (unsigned)v;
        memcpy(p, &x, sizeof(x));
    }
}

static uint64_t load_uint(const void *p, size_t size)
{
    if (size == sizeof(uint64_t)) {
        uint64_t x;
        memcpy(&x, p, sizeof(x));
        return x;
    }
    unsigned x;
    memcpy(&x, p, sizeof(x));
    return x;
}

/* How the value looked, for "X is out of range" messages. */
static void raw_text(const struct raw *r, char *buf, size_t size)
{
    if (r->type == CONFIG_TYPE_STRING)
        snprintf(buf, size, r->cli ? "%s" : "\"%s\"", r->s);
    else if (r->type == CONFIG_TYPE_FLOAT)
        snprintf(buf, size, "%g", r->f);
    else
        snprintf(buf, size, "%lld", r->i);
}

/* Numeric kinds: the value in the key's unit (usec, bytes, count). */
static int parse_number(const struct key *k, const struct raw *r, uint64_t *out, char *why, size_t whylen)
{
    bool dur = is_duration(k->kind), sz = is_size(k->kind);
    const char *what = dur ? "a duration such as 30 or \"30s\"" : sz ? "a size such as 1048576 or \"1M\"" : "an integer";
    char text[160];
    raw_text(r, text, sizeof(text));
    if (r->type == CONFIG_TYPE_INT || r->type == CONFIG_TYPE_INT64) {
        if (r->i < 0)
            goto range;
        uint64_t v = (uint64_t)r->i;
        if (dur && v > UINT64_MAX / USEC_PER_SEC)
            goto range;
        *out = dur ? v * USEC_PER_SEC : v;
    } else if (r->type == CONFIG_TYPE_FLOAT && dur) {
        if (!(r->f >= 0) || !(r->f < 1.8e13))
            goto range;
        *out = (uint64_t)llround(r->f * USEC_PER_SEC);
    } else if (r->type == CONFIG_TYPE_STRING && (dur || sz || r->cli)) {
        bool ok = dur ? parse_duration_str(r->s, out) : sz ? parse_size_str(r->s, out) : rt_parse_u64(r->s, out);
        if (!ok) {
            if (r->cli && !dur && !sz)
                snprintf(why, whylen, "expected %s, got %s", what, text);
            else
                snprintf(why, whylen, "%s is not %s (units: %s)", text, dur ? "a duration" : "a size",
                         dur ? "ms s min h d w" : "K M G T");
            return -EINVAL;
        }
    } else {
        snprintf(why, whylen, "expected %s, got %s", what, rt_config_type_name(r->type));
        return -EINVAL;
    }
    if (*out < k->min || *out > k->max)
        goto range;
    if ((k->kind == K_SECS_U64 || k->kind == K_SECS_UINT) && *out % USEC_PER_SEC) {
        snprintf(why, whylen, "%s is not a whole number of seconds", text);
        return -EINVAL;
    }
    return 0;
range: {
    char lo[32], hi[32];
    format_bound(k, k->min, lo, sizeof(lo));
    format_bound(k, k->max, hi, sizeof(hi));
    snprintf(why, whylen, "%s is out of range %s..%s", text, lo, hi);
    return -EINVAL;
}
}

/* A target with "%u" for the job's user, checked as the target it becomes
 * for a user name of letters. */
static bool valid_notify_template(const char *s)
{
    char buf[RT_NOTICE_TARGET_MAX + 1], why[128];
    size_t n = 0;
    for (const char *p = s; *p && n + 8 < sizeof(buf); p++) {
        if (p[0] == '%' && p[1] == 'u') {
            memcpy(buf + n, "user", 4);
            n += 4;
            p++;
        } else if (*p == '%') {
            return false; /* no other escapes */
        } else {
            buf[n++] = *p;
        }
    }
    buf[n] = '\0';
    return n < sizeof(buf) - 8 && rt_notice_target_check(buf, why, sizeof(why)) > 0;
}

static int parse_string(const struct key *k, const struct raw *r, char *why, size_t whylen)
{
    if (r->type != CONFIG_TYPE_STRING) {
        snprintf(why, whylen, "expected a string, got %s", rt_config_type_name(r->type));
        return -EINVAL;
    }
    const char *s = r->s;
    size_t max = k->size - 1;
    switch (k->kind) {
    case K_SOCKET:
        max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
        /* fall through */
    case K_PATH:
        if (s[0] != '/' || has_control_or_space(s)) {
            snprintf(why, whylen, "\"%s\" is not an absolute path", s);
            return -EINVAL;
        }
        break;
    case K_GROUP:
        if (!valid_group_name(s)) {
            snprintf(why, whylen, "\"%s\" is not a group name", s);
            return -EINVAL;
        }
        break;
    case K_URL:
        if (!valid_url(s)) {
            snprintf(why, whylen, "\"%s\" is not an http:// or https:// URL", s);
            return -EINVAL;
        }
        break;
    case K_NOTIFY:
        if (*s && !valid_notify_template(s)) {
            snprintf(why, whylen, "\"%s\" is not an http:// or https:// URL or mailto:ADDRESS (%%u: the user)", s);
            return -EINVAL;
        }
        break;
    case K_GLOBS:
        if (!rt_adopt_globs_valid(s, why, whylen))
            return -EINVAL;
        break;
    case K_CREDENTIAL:
        if (!valid_credential_name(s)) {
            snprintf(why, whylen, "\"%s\" is not a credential name", s);
            return -EINVAL;
        }
        break;
    case K_REGION:
        for (const char *p = s; *p; p++) {
            if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-') {
                snprintf(why, whylen, "\"%s\" is not a region name (like us-east-1)", s);
                return -EINVAL;
            }
        }
        break;
    default:
        break;
    }
    if (strlen(s) > max) {
        snprintf(why, whylen, "longer than %zu bytes", max);
        return -EINVAL;
    }
    return 0;
}

/* Parse r for key k and store it in c; on error a reason without the key. */
int rt_config_set_value(const struct key *k, const struct raw *r, struct rt_config *c, char *why, size_t whylen)
{
    char *field = (char *)c + k->offset;
    uint64_t v;
    switch (k->kind) {
    case K_SECS_DOUBLE:
        if (parse_number(k, r, &v, why, whylen) < 0)
            return -EINVAL;
        *(double *)(void *)field = (double)v / USEC_PER_SEC;
        return 0;
    case K_SECS_U64:
    case K_SECS_UINT:
        if (parse_number(k, r, &v, why, whylen) < 0)
            return -EINVAL;
        store_uint(field, k->size, v / USEC_PER_SEC);
        return 0;
    case K_BYTES_U64:
    case K_BYTES_SIZE:
    case K_UINT:
        if (parse_number(k, r, &v, why, whylen) < 0)
            return -EINVAL;
        store_uint(field, k->size, v);
        return 0;
    case K_LOGLEVEL: {
        if (r->type != CONFIG_TYPE_STRING) {
            snprintf(why, whylen, "expected a string, got %s", rt_config_type_name(r->type));
            return -EINVAL;
        }
        int level = rt_log_level_from_string(r->s);
        if (level < 0) {
            snprintf(why, whylen, "\"%s\" is not a log level (err warning notice info debug)", r->s);
            return -EINVAL;
        }
        *(int *)(void *)field = level;
        return 0;
    }
    case K_BOOL: {
        bool b;
        if (r->type == CONFIG_TYPE_BOOL)
            b = r->i != 0;
        else if (r->type != CONFIG_TYPE_STRING || !parse_bool_str(r->s, &b)) {
            snprintf(why, whylen, "expected true or false");
            return -EINVAL;
        }
        *(bool *)(void *)field = b;
        return 0;
    }
    default:
        if (parse_string(k, r, why, whylen) < 0)
            return -EINVAL;
        rt_strlcpy(field, r->s, k->size);
        return 0;
    }
}

static void write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < ' ')
            fprintf(f, "\\x%02x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

void rt_config_write_value(FILE *f, const struct key *k, const struct rt_config *c)
{
    const char *field = (const char *)c + k->offset;
    char buf[64];
    static const char *const levels[] = {"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"};
    switch (k->kind) {
    case K_SECS_DOUBLE:
        format_duration((uint64_t)llround(*(const double *)(const void *)field * USEC_PER_SEC), buf, sizeof(buf));
        write_string(f, buf);
        break;
    case K_SECS_U64:
    case K_SECS_UINT: {
        uint64_t v = load_uint(field, k->size);
        if (v == 0)
            fputs("0", f);
        else {
            format_duration(v * USEC_PER_SEC, buf, sizeof(buf));
            write_string(f, buf);
        }
        break;
    }
    case K_BYTES_U64:
    case K_BYTES_SIZE: {
        uint64_t v = load_uint(field, k->size);
        if (v == 0)
            fputs("0", f);
        else {
            rt_config_format_size(v, buf, sizeof(buf));
            write_string(f, buf);
        }
        break;
    }
    case K_UINT:
        fprintf(f, "%llu", (unsigned long long)load_uint(field, k->size));
        break;
    case K_LOGLEVEL:
        write_string(f, levels[*(const int *)(const void *)field & 7]);
        break;
    case K_BOOL:
        fputs(*(const bool *)(const void *)field ? "true" : "false", f);
        break;
    default:
        write_string(f, field);
        break;
    }
}
