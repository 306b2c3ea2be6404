/* The configuration file (libconfig syntax), command-line overrides and
 * reload. Every key is described once in the table below: where it lives in
 * the file, how its value is parsed and checked, and where it is stored. */
#include "config/config.h"

#include "config/dropins.h"
#include "system/log.h"
#include "rt/util.h"

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#define USEC_PER_SEC 1000000ULL
#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)
#define TIB (1024ULL * GIB)

enum kind {
    K_SECS_DOUBLE,   /* duration stored as double seconds */
    K_SECS_U64,      /* duration, whole seconds, uint64_t */
    K_SECS_UINT,     /* duration, whole seconds, unsigned */
    K_BYTES_U64,     /* size, uint64_t */
    K_BYTES_SIZE,    /* size, size_t */
    K_UINT,          /* plain count, unsigned */
    K_SOCKET,        /* absolute path that fits sun_path */
    K_PATH,          /* absolute path */
    K_GROUP,         /* group name or "" */
    K_URL,           /* http(s) URL or "" */
    K_CREDENTIAL,    /* systemd credential name */
    K_REGION,        /* S3 region name ("us-east-1") or "" */
    K_LOGLEVEL,      /* syslog level name, stored as int */
    K_BOOL,
};

enum where {
    FILE_KEY,            /* the file and the command line */
    CLI_ONLY,            /* not accepted in the file */
};

enum apply {
    RESTART,             /* a running daemon keeps its value until restarted */
    LIVE,                /* a reload applies it at once */
};

struct key {
    const char *path;    /* "upload.interval" */
    const char *group;   /* NULL: top level */
    const char *name;
    enum kind kind;
    uint32_t bit;
    size_t offset, size;
    uint64_t min, max;   /* usec for durations, bytes for sizes, count */
    enum where where;
    const char *dflt;    /* the default, as written on the command line */
    enum apply apply;
};

#define F(m) offsetof(struct rt_config, m), sizeof(((struct rt_config *)0)->m)

/* Top-level keys, then the groups' keys (path = "group.name"). */
#define TOP(n) n, NULL, n
#define IN(g, n) g "." n, g, n
#define DAY (24 * 3600 * USEC_PER_SEC)

/* One row per key: where it is read, its kind and bounds, its default and
 * whether a reload applies it at once. */
static const struct key keys[] = {
    {TOP("interval"), K_SECS_DOUBLE, RT_CFG_INTERVAL, F(interval_secs), 100000, 3600 * USEC_PER_SEC, FILE_KEY,
     "1s", LIVE},
    {TOP("socket"), K_SOCKET, RT_CFG_SOCKET_PATH, F(socket_path), 0, 0, FILE_KEY, RT_DEFAULT_SYSTEM_SOCKET,
     RESTART},
    {TOP("state_dir"), K_PATH, RT_CFG_STATE_DIR, F(state_dir), 0, 0, FILE_KEY, RT_DEFAULT_STATE_DIR, RESTART},
    {TOP("admin_group"), K_GROUP, RT_CFG_ADMIN_GROUP, F(admin_group), 0, 0, FILE_KEY, "resource-tracker", LIVE},
    {TOP("log_level"), K_LOGLEVEL, RT_CFG_LOG_LEVEL, F(log_level), 0, 0, FILE_KEY, "info", LIVE},
    {IN("retention", "max_age"), K_SECS_U64, RT_CFG_RETENTION_MAX_AGE, F(retention_max_age_secs), 0,
     36600 * DAY, FILE_KEY, "30d", LIVE},
    {IN("retention", "max_size"), K_BYTES_U64, RT_CFG_RETENTION_MAX_BYTES, F(retention_max_bytes), 0,
     1024 * TIB, FILE_KEY, "1G", LIVE},
    {IN("retention", "max_jobs_per_user"), K_UINT, RT_CFG_RETENTION_MAX_JOBS, F(retention_max_jobs_per_uid), 1,
     10000000, FILE_KEY, "10000", LIVE},
    {IN("limits", "max_connections"), K_UINT, RT_CFG_MAX_CONNECTIONS, F(max_connections), 1, 65536, FILE_KEY,
     "1024", LIVE},
    {IN("limits", "max_connections_per_user"), K_UINT, RT_CFG_MAX_CONNECTIONS_PER_UID,
     F(max_connections_per_uid), 1, 65536, FILE_KEY, "256", LIVE},
    {IN("limits", "max_jobs_per_user"), K_UINT, RT_CFG_MAX_JOBS_PER_UID, F(max_jobs_per_uid), 1, 100000,
     FILE_KEY, "64", LIVE},
    {IN("limits", "max_sample_rate_per_user"), K_UINT, RT_CFG_MAX_SAMPLE_RATE_PER_UID,
     F(max_sample_rate_per_uid), 1, 100000, FILE_KEY, "100", LIVE},
    {IN("limits", "max_message_size"), K_BYTES_SIZE, RT_CFG_MAX_MESSAGE_BYTES, F(max_message_bytes), 4 * KIB,
     64 * MIB, FILE_KEY, "1M", LIVE},
    {IN("limits", "reserved_connections"), K_UINT, RT_CFG_RESERVED_CONNECTIONS, F(reserved_connections), 0,
     65535, FILE_KEY, "16", LIVE},
    {IN("limits", "max_buffer_per_user"), K_BYTES_SIZE, RT_CFG_MAX_BUFFER_PER_UID, F(max_buffer_per_uid), MIB,
     64 * GIB, FILE_KEY, "64M", LIVE},
    {IN("limits", "max_buffer_total"), K_BYTES_SIZE, RT_CFG_MAX_BUFFER_TOTAL, F(max_buffer_total), MIB, 64 * GIB,
     FILE_KEY, "256M", LIVE},
    {IN("limits", "idle_timeout"), K_SECS_UINT, RT_CFG_IDLE_TIMEOUT, F(idle_timeout_secs), USEC_PER_SEC, DAY,
     FILE_KEY, "1min", LIVE},
    {IN("limits", "message_timeout"), K_SECS_UINT, RT_CFG_MESSAGE_TIMEOUT, F(message_timeout_secs), USEC_PER_SEC,
     3600 * USEC_PER_SEC, FILE_KEY, "10s", LIVE},
    {IN("limits", "reply_timeout"), K_SECS_UINT, RT_CFG_REPLY_TIMEOUT, F(reply_timeout_secs), USEC_PER_SEC, DAY,
     FILE_KEY, "1min", LIVE},
    {IN("upload", "api_url"), K_URL, RT_CFG_API_URL, F(api_url), 0, 0, FILE_KEY, RT_DEFAULT_API_URL, RESTART},
    {IN("upload", "interval"), K_SECS_UINT, RT_CFG_UPLOAD_INTERVAL, F(upload_interval_secs), USEC_PER_SEC,
     DAY, FILE_KEY, "60s", RESTART},
    {IN("upload", "token_credential"), K_CREDENTIAL, RT_CFG_TOKEN_CREDENTIAL, F(token_credential), 0, 0,
     FILE_KEY, "sentinel-token", RESTART},
    {IN("upload", "spool_max_size"), K_BYTES_U64, RT_CFG_SPOOL_MAX_BYTES, F(spool_max_bytes), MIB, TIB,
     FILE_KEY, "256M", RESTART},
    {IN("upload", "s3_endpoint"), K_URL, RT_CFG_S3_ENDPOINT, F(s3_endpoint), 0, 0, FILE_KEY, "", RESTART},
    {IN("upload", "s3_region"), K_REGION, RT_CFG_S3_REGION, F(s3_region), 0, 0, FILE_KEY, "", RESTART},
    {TOP("proc_root"), K_PATH, RT_CFG_PROC_ROOT, F(proc_root), 0, 0, CLI_ONLY, "/proc", RESTART},
    {TOP("sys_root"), K_PATH, RT_CFG_SYS_ROOT, F(sys_root), 0, 0, CLI_ONLY, "/sys", RESTART},
    {TOP("user_mode"), K_BOOL, RT_CFG_USER_MODE, F(user_mode), 0, 0, CLI_ONLY, "false", RESTART},
    {TOP("exit_on_idle"), K_SECS_UINT, RT_CFG_EXIT_ON_IDLE, F(exit_on_idle_secs), 0, 7 * DAY, CLI_ONLY, "0",
     RESTART},
};

static const char *const groups[] = {"retention", "limits", "upload"};

/* A value as found in the file (a libconfig setting) or on the command line
 * (always a string). */
struct raw {
    int type;            /* CONFIG_TYPE_* */
    long long i;
    double f;
    const char *s;
    bool cli;
};

static void fmt_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fmt_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *type_name(int type)
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

static void format_size(uint64_t bytes, char *buf, size_t size)
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
        format_size(v, buf, size);
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
            return -1;
        }
    } else {
        snprintf(why, whylen, "expected %s, got %s", what, type_name(r->type));
        return -1;
    }
    if (*out < k->min || *out > k->max)
        goto range;
    if ((k->kind == K_SECS_U64 || k->kind == K_SECS_UINT) && *out % USEC_PER_SEC) {
        snprintf(why, whylen, "%s is not a whole number of seconds", text);
        return -1;
    }
    return 0;
range: {
    char lo[32], hi[32];
    format_bound(k, k->min, lo, sizeof(lo));
    format_bound(k, k->max, hi, sizeof(hi));
    snprintf(why, whylen, "%s is out of range %s..%s", text, lo, hi);
    return -1;
}
}

static int parse_string(const struct key *k, const struct raw *r, char *why, size_t whylen)
{
    if (r->type != CONFIG_TYPE_STRING) {
        snprintf(why, whylen, "expected a string, got %s", type_name(r->type));
        return -1;
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
            return -1;
        }
        break;
    case K_GROUP:
        if (!valid_group_name(s)) {
            snprintf(why, whylen, "\"%s\" is not a group name", s);
            return -1;
        }
        break;
    case K_URL:
        if (!valid_url(s)) {
            snprintf(why, whylen, "\"%s\" is not an http:// or https:// URL", s);
            return -1;
        }
        break;
    case K_CREDENTIAL:
        if (!valid_credential_name(s)) {
            snprintf(why, whylen, "\"%s\" is not a credential name", s);
            return -1;
        }
        break;
    case K_REGION:
        for (const char *p = s; *p; p++) {
            if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-') {
                snprintf(why, whylen, "\"%s\" is not a region name (like us-east-1)", s);
                return -1;
            }
        }
        break;
    default:
        break;
    }
    if (strlen(s) > max) {
        snprintf(why, whylen, "longer than %zu bytes", max);
        return -1;
    }
    return 0;
}

/* Parse r for key k and store it in c; on error a reason without the key. */
static int set_value(const struct key *k, const struct raw *r, struct rt_config *c, char *why, size_t whylen)
{
    char *field = (char *)c + k->offset;
    uint64_t v;
    switch (k->kind) {
    case K_SECS_DOUBLE:
        if (parse_number(k, r, &v, why, whylen) < 0)
            return -1;
        *(double *)(void *)field = (double)v / USEC_PER_SEC;
        return 0;
    case K_SECS_U64:
    case K_SECS_UINT:
        if (parse_number(k, r, &v, why, whylen) < 0)
            return -1;
        store_uint(field, k->size, v / USEC_PER_SEC);
        return 0;
    case K_BYTES_U64:
    case K_BYTES_SIZE:
    case K_UINT:
        if (parse_number(k, r, &v, why, whylen) < 0)
            return -1;
        store_uint(field, k->size, v);
        return 0;
    case K_LOGLEVEL: {
        if (r->type != CONFIG_TYPE_STRING) {
            snprintf(why, whylen, "expected a string, got %s", type_name(r->type));
            return -1;
        }
        int level = rt_log_level_from_string(r->s);
        if (level < 0) {
            snprintf(why, whylen, "\"%s\" is not a log level (err warning notice info debug)", r->s);
            return -1;
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
            return -1;
        }
        *(bool *)(void *)field = b;
        return 0;
    }
    default:
        if (parse_string(k, r, why, whylen) < 0)
            return -1;
        rt_strlcpy(field, r->s, k->size);
        return 0;
    }
}

/* ---- defaults ---- */

void rt_config_defaults(struct rt_config *c)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++) {
        struct raw r = {.type = CONFIG_TYPE_STRING, .s = keys[i].dflt, .cli = true};
        char why[256];
        if (set_value(&keys[i], &r, c, why, sizeof(why)) < 0)
            abort(); /* a default the key refuses: caught by test_config */
    }
}

/* ---- the file ---- */

static const struct key *find_key(const char *group, const char *name, bool cli)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++) {
        const struct key *k = &keys[i];
        if ((k->where == CLI_ONLY && !cli) || strcmp(k->name, name) != 0)
            continue;
        if ((group == NULL) == (k->group == NULL) && (!group || strcmp(group, k->group) == 0))
            return k;
    }
    return NULL;
}

static bool is_group_name(const char *name)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(groups); i++)
        if (strcmp(groups[i], name) == 0)
            return true;
    return false;
}

static struct raw raw_from_setting(const config_setting_t *s)
{
    struct raw r = {.type = config_setting_type(s)};
    switch (r.type) {
    case CONFIG_TYPE_INT: r.i = config_setting_get_int(s); break;
    case CONFIG_TYPE_INT64: r.i = config_setting_get_int64(s); break;
    case CONFIG_TYPE_FLOAT: r.f = config_setting_get_float(s); break;
    case CONFIG_TYPE_BOOL: r.i = config_setting_get_bool(s); break;
    case CONFIG_TYPE_STRING: r.s = config_setting_get_string(s); break;
    default: break;
    }
    return r;
}

/* Where each key was last set (line 0 = in no file), for cross-field errors. */
struct seen {
    char *file[RT_ARRAY_SIZE(keys)];
    unsigned line[RT_ARRAY_SIZE(keys)];
};

static void seen_set(struct seen *seen, const struct key *k, const char *file, unsigned line)
{
    size_t i = (size_t)(k - keys);
    free(seen->file[i]);
    seen->file[i] = rt_xstrdup(file); /* an @include'd file's name dies with its parser */
    seen->line[i] = line;
}

static void seen_free(struct seen *seen)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++)
        free(seen->file[i]);
}

static int load_setting(const char *file, const char *group, config_setting_t *s, struct rt_config *c,
                        struct seen *seen, char *err, size_t errlen)
{
    const char *name = config_setting_name(s);
    unsigned line = config_setting_source_line(s);
    if (config_setting_source_file(s))
        file = config_setting_source_file(s); /* an @include'd file */
    char full[128];
    if (group)
        snprintf(full, sizeof(full), "%s.%s", group, name);
    else
        rt_strlcpy(full, name, sizeof(full));

    if (!group && is_group_name(name)) {
        if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
            fmt_err(err, errlen, "%s:%u: %s: expected a group { ... }, got %s", file, line, full,
                    type_name(config_setting_type(s)));
            return -1;
        }
        for (int i = 0; i < config_setting_length(s); i++)
            if (load_setting(file, name, config_setting_get_elem(s, (unsigned)i), c, seen, err, errlen) < 0)
                return -1;
        return 0;
    }
    const struct key *k = find_key(group, name, false);
    if (!k) {
        fmt_err(err, errlen, "%s:%u: unknown key '%s'", file, line, full);
        return -1;
    }
    struct raw r = raw_from_setting(s);
    char why[256];
    if (set_value(k, &r, c, why, sizeof(why)) < 0) {
        fmt_err(err, errlen, "%s:%u: %s: %s", file, line, full, why);
        return -1;
    }
    seen_set(seen, k, file, line);
    return 0;
}

/* "FILE:LINE: " of a cross-field error: where limits.a was set, else limits.b. */
static void where_set(const struct seen *seen, const char *a, const char *b, char *buf, size_t size)
{
    size_t k = (size_t)(find_key("limits", a, false) - keys);
    if (seen && !seen->line[k])
        k = (size_t)(find_key("limits", b, false) - keys);
    buf[0] = '\0';
    if (seen && seen->line[k])
        snprintf(buf, size, "%s:%u: ", seen->file[k], seen->line[k]);
}

static int validate(const struct rt_config *c, const struct seen *seen, char *err, size_t errlen)
{
    char where[PATH_MAX + 32];
    if (c->max_connections_per_uid > c->max_connections) {
        where_set(seen, "max_connections_per_user", "max_connections", where, sizeof(where));
        fmt_err(err, errlen, "%slimits.max_connections_per_user: %u exceeds limits.max_connections (%u)", where,
                c->max_connections_per_uid, c->max_connections);
        return -1;
    }
    if (c->reserved_connections >= c->max_connections) {
        where_set(seen, "reserved_connections", "max_connections", where, sizeof(where));
        fmt_err(err, errlen, "%slimits.reserved_connections: %u leaves no room under limits.max_connections (%u)",
                where, c->reserved_connections, c->max_connections);
        return -1;
    }
    if (c->max_buffer_per_uid > c->max_buffer_total) {
        char a[32], b[32];
        format_size(c->max_buffer_per_uid, a, sizeof(a));
        format_size(c->max_buffer_total, b, sizeof(b));
        where_set(seen, "max_buffer_per_user", "max_buffer_total", where, sizeof(where));
        fmt_err(err, errlen, "%slimits.max_buffer_per_user: %s exceeds limits.max_buffer_total (%s)", where, a, b);
        return -1;
    }
    return 0;
}

int rt_config_validate(const struct rt_config *c, char *err, size_t errlen)
{
    return validate(c, NULL, err, errlen);
}

/* The text of line (1-based) of file, trimmed, control characters replaced and
 * cut at a character boundary: a syntax error then shows the setting it is in. */
static bool source_line(const char *file, int line, char *buf, size_t size)
{
    FILE *f = line > 0 ? fopen(file, "re") : NULL;
    if (!f)
        return false;
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = -1;
    for (int i = 0; i < line && (n = getline(&text, &cap, f)) >= 0; i++)
        ;
    fclose(f);
    bool ok = false;
    if (n >= 0) {
        char *p = text, *e = text + n;
        while (p < e && isspace((unsigned char)*p))
            p++;
        while (e > p && isspace((unsigned char)e[-1]))
            e--;
        size_t len = (size_t)(e - p), max = size - 4; /* room for "..." */
        bool cut = len > max;
        if (cut)
            while (len > max || (len && ((unsigned char)p[len] & 0xc0) == 0x80))
                len--;
        for (size_t i = 0; i < len; i++)
            buf[i] = (unsigned char)p[i] < ' ' || p[i] == 0x7f ? '?' : p[i];
        strcpy(buf + len, cut ? "..." : "");
        ok = len > 0;
    }
    free(text);
    return ok;
}

/* One file on top of *c; a missing file is fine when optional. */
static int load_file(const char *file, bool optional, struct rt_config *c, struct seen *seen, char *err,
                     size_t errlen)
{
    FILE *f = fopen(file, "re");
    if (!f) {
        if (optional && errno == ENOENT)
            return 0;
        fmt_err(err, errlen, "%s: %s", file, strerror(errno));
        return -1;
    }
    /* libconfig's scanner exits the process on a read error (a directory). */
    struct stat st;
    int e = fstat(fileno(f), &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (e) {
        fmt_err(err, errlen, "%s: %s", file, strerror(e));
        fclose(f);
        return -1;
    }
    config_t cfg;
    config_init(&cfg);
    int rc = -1;
    if (config_read(&cfg, f) != CONFIG_TRUE) {
        /* libconfig says "syntax error" or names what it did not accept, but
         * not the setting: quote the line it stopped at. */
        const char *in = config_error_file(&cfg); /* set when the error is in an @include */
        char text[84];
        if (source_line(in ? in : file, config_error_line(&cfg), text, sizeof(text)))
            fmt_err(err, errlen, "%s:%d: %s in '%s'", in ? in : file, config_error_line(&cfg),
                    config_error_text(&cfg), text);
        else
            fmt_err(err, errlen, "%s:%d: %s", in ? in : file, config_error_line(&cfg), config_error_text(&cfg));
        goto out;
    }
    config_setting_t *root = config_root_setting(&cfg);
    for (int i = 0; i < config_setting_length(root); i++)
        if (load_setting(file, NULL, config_setting_get_elem(root, (unsigned)i), c, seen, err, errlen) < 0)
            goto out;
    rc = 0;
out:
    config_destroy(&cfg);
    fclose(f);
    return rc;
}

int rt_config_load(const char *path, struct rt_config *c, char *err, size_t errlen)
{
    struct rt_config_files files;
    if (rt_config_files_list(path ? path : RT_DEFAULT_CONFIG_FILE, &files, err, errlen) < 0)
        return -1;
    /* Work on a copy: a refused file leaves the caller's configuration alone. */
    struct rt_config tmp = *c;
    struct seen seen = {{0}, {0}};
    int rc = -1;
    for (size_t i = 0; i < files.n; i++)
        if (load_file(files.paths[i], i == 0 && !path, &tmp, &seen, err, errlen) < 0)
            goto out;
    if (validate(&tmp, &seen, err, errlen) < 0)
        goto out;
    *c = tmp;
    rc = 0;
out:
    seen_free(&seen);
    rt_config_files_free(&files);
    return rc;
}

/* ---- command line, reload, comparison ---- */

static const struct key *find_key_path(const char *key)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return find_key(NULL, key, true);
    char group[32];
    size_t n = (size_t)(dot - key);
    if (n >= sizeof(group))
        return NULL;
    memcpy(group, key, n);
    group[n] = '\0';
    return find_key(group, dot + 1, true);
}

int rt_config_override_set(struct rt_config_overrides *o, const char *key, const char *value, char *err,
                           size_t errlen)
{
    const struct key *k = find_key_path(key);
    if (!k) {
        fmt_err(err, errlen, "unknown key '%s'", key);
        return -1;
    }
    struct raw r = {.type = CONFIG_TYPE_STRING, .s = value, .cli = true};
    char why[256];
    if (set_value(k, &r, &o->values, why, sizeof(why)) < 0) {
        fmt_err(err, errlen, "%s: %s", key, why);
        return -1;
    }
    o->set |= k->bit;
    return 0;
}

void rt_config_apply_overrides(struct rt_config *c, const struct rt_config_overrides *o)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++)
        if (o->set & keys[i].bit)
            memcpy((char *)c + keys[i].offset, (const char *)&o->values + keys[i].offset, keys[i].size);
}

int rt_config_reload(const char *path, const struct rt_config_overrides *o, struct rt_config *c, char *err,
                     size_t errlen)
{
    struct rt_config tmp;
    rt_config_defaults(&tmp);
    if (rt_config_load(path, &tmp, err, errlen) < 0)
        return -1;
    if (o)
        rt_config_apply_overrides(&tmp, o);
    if (rt_config_validate(&tmp, err, errlen) < 0)
        return -1;
    *c = tmp;
    return 0;
}

uint32_t rt_config_diff(const struct rt_config *a, const struct rt_config *b)
{
    uint32_t bits = 0;
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++) {
        const struct key *k = &keys[i];
        const char *pa = (const char *)a + k->offset, *pb = (const char *)b + k->offset;
        bool same;
        if (k->kind == K_SECS_DOUBLE)
            same = *(const double *)(const void *)pa == *(const double *)(const void *)pb;
        else if (k->kind >= K_SOCKET && k->kind <= K_REGION)
            same = strcmp(pa, pb) == 0; /* bytes after the NUL do not count */
        else
            same = memcmp(pa, pb, k->size) == 0;
        if (!same)
            bits |= k->bit;
    }
    return bits;
}

uint32_t rt_config_adopt(struct rt_config *running, const struct rt_config *next)
{
    uint32_t changed = rt_config_diff(running, next), waiting = 0;
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++) {
        const struct key *k = &keys[i];
        if (!(changed & k->bit))
            continue;
        if (k->apply == LIVE)
            memcpy((char *)running + k->offset, (const char *)next + k->offset, k->size);
        else
            waiting |= k->bit;
    }
    return waiting;
}

const char *rt_config_key_name(uint32_t bit)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++)
        if (keys[i].bit == bit)
            return keys[i].path;
    return "?";
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

static void write_value(FILE *f, const struct key *k, const struct rt_config *c)
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
            format_size(v, buf, sizeof(buf));
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

void rt_config_write(FILE *f, const struct rt_config *c)
{
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++)
        if (!keys[i].group && keys[i].where != CLI_ONLY) {
            fprintf(f, "%s = ", keys[i].name);
            write_value(f, &keys[i], c);
            fputs(";\n", f);
        }
    for (size_t g = 0; g < RT_ARRAY_SIZE(groups); g++) {
        fprintf(f, "\n%s: {\n", groups[g]);
        for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++)
            if (keys[i].group && strcmp(keys[i].group, groups[g]) == 0) {
                fprintf(f, "  %s = ", keys[i].name);
                write_value(f, &keys[i], c);
                fputs(";\n", f);
            }
        fputs("};\n", f);
    }
    fputs("\n# command line only:\n", f);
    for (size_t i = 0; i < RT_ARRAY_SIZE(keys); i++)
        if (keys[i].where == CLI_ONLY) {
            fprintf(f, "# %s = ", keys[i].name);
            write_value(f, &keys[i], c);
            fputs(";\n", f);
        }
}
