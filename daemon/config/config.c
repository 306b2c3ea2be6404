/* The configuration file (libconfig syntax) with its drop-ins, command-line
 * overrides and reload; the keys are described once in keys.c. */
#include "config/config.h"

#include "config/dropins.h"
#include "config/keys.h"
#include "rt/util.h"

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- defaults ---- */

void rt_config_defaults(struct rt_config *c)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < rt_config_nkeys; i++) {
        struct raw r = {.type = CONFIG_TYPE_STRING, .s = rt_config_keys[i].dflt, .cli = true};
        char why[256];
        if (rt_config_set_value(&rt_config_keys[i], &r, c, why, sizeof(why)) < 0)
            abort(); /* a default the key refuses: caught by test_config */
    }
}

/* ---- the file ---- */

static const struct key *find_key(const char *group, const char *name, bool cli)
{
    for (size_t i = 0; i < rt_config_nkeys; i++) {
        const struct key *k = &rt_config_keys[i];
        if ((k->where == CLI_ONLY && !cli) || strcmp(k->name, name) != 0)
            continue;
        if ((group == NULL) == (k->group == NULL) && (!group || strcmp(group, k->group) == 0))
            return k;
    }
    return NULL;
}

static bool is_group_name(const char *name)
{
    for (size_t i = 0; i < rt_config_ngroups; i++)
        if (strcmp(rt_config_groups[i], name) == 0)
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
    char *file[RT_CONFIG_MAX_KEYS];
    unsigned line[RT_CONFIG_MAX_KEYS];
};

static void seen_set(struct seen *seen, const struct key *k, const char *file, unsigned line)
{
    size_t i = (size_t)(k - rt_config_keys);
    free(seen->file[i]);
    seen->file[i] = rt_xstrdup(file); /* an @include'd file's name dies with its parser */
    seen->line[i] = line;
}

static void seen_free(struct seen *seen)
{
    for (size_t i = 0; i < rt_config_nkeys; i++)
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
            rt_config_err(err, errlen, "%s:%u: %s: expected a group { ... }, got %s", file, line, full,
                    rt_config_type_name(config_setting_type(s)));
            return -EINVAL;
        }
        for (int i = 0; i < config_setting_length(s); i++)
            if (load_setting(file, name, config_setting_get_elem(s, (unsigned)i), c, seen, err, errlen) < 0)
                return -EINVAL;
        return 0;
    }
    const struct key *k = find_key(group, name, false);
    if (!k) {
        rt_config_err(err, errlen, "%s:%u: unknown key '%s'", file, line, full);
        return -EINVAL;
    }
    struct raw r = raw_from_setting(s);
    char why[256];
    if (rt_config_set_value(k, &r, c, why, sizeof(why)) < 0) {
        rt_config_err(err, errlen, "%s:%u: %s: %s", file, line, full, why);
        return -EINVAL;
    }
    seen_set(seen, k, file, line);
    return 0;
}

/* "FILE:LINE: " of a cross-field error: where limits.a was set, else limits.b. */
static void where_set(const struct seen *seen, const char *a, const char *b, char *buf, size_t size)
{
    size_t k = (size_t)(find_key("limits", a, false) - rt_config_keys);
    if (seen && !seen->line[k])
        k = (size_t)(find_key("limits", b, false) - rt_config_keys);
    buf[0] = '\0';
    if (seen && seen->line[k])
        snprintf(buf, size, "%s:%u: ", seen->file[k], seen->line[k]);
}

static int validate(const struct rt_config *c, const struct seen *seen, char *err, size_t errlen)
{
    char where[PATH_MAX + 32];
    if (c->max_connections_per_uid > c->max_connections) {
        where_set(seen, "max_connections_per_user", "max_connections", where, sizeof(where));
        rt_config_err(err, errlen, "%slimits.max_connections_per_user: %u exceeds limits.max_connections (%u)", where,
                c->max_connections_per_uid, c->max_connections);
        return -EINVAL;
    }
    if (c->reserved_connections >= c->max_connections) {
        where_set(seen, "reserved_connections", "max_connections", where, sizeof(where));
        rt_config_err(err, errlen, "%slimits.reserved_connections: %u leaves no room under limits.max_connections (%u)",
                where, c->reserved_connections, c->max_connections);
        return -EINVAL;
    }
    if (c->max_buffer_per_uid > c->max_buffer_total) {
        char a[32], b[32];
        rt_config_format_size(c->max_buffer_per_uid, a, sizeof(a));
        rt_config_format_size(c->max_buffer_total, b, sizeof(b));
        where_set(seen, "max_buffer_per_user", "max_buffer_total", where, sizeof(where));
        rt_config_err(err, errlen, "%slimits.max_buffer_per_user: %s exceeds limits.max_buffer_total (%s)", where, a, b);
        return -EINVAL;
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
        int e = errno;
        if (optional && e == ENOENT)
            return 0;
        rt_config_err(err, errlen, "%s: %s", file, strerror(e));
        return -e;
    }
    /* libconfig's scanner exits the process on a read error (a directory). */
    struct stat st;
    int e = fstat(fileno(f), &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (e) {
        rt_config_err(err, errlen, "%s: %s", file, strerror(e));
        fclose(f);
        return -e;
    }
    config_t cfg;
    config_init(&cfg);
    int rc = -EINVAL;
    if (config_read(&cfg, f) != CONFIG_TRUE) {
        /* libconfig says "syntax error" or names what it did not accept, but
         * not the setting: quote the line it stopped at. */
        const char *in = config_error_file(&cfg); /* set when the error is in an @include */
        char text[84];
        if (source_line(in ? in : file, config_error_line(&cfg), text, sizeof(text)))
            rt_config_err(err, errlen, "%s:%d: %s in '%s'", in ? in : file, config_error_line(&cfg),
                    config_error_text(&cfg), text);
        else
            rt_config_err(err, errlen, "%s:%d: %s", in ? in : file, config_error_line(&cfg), config_error_text(&cfg));
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
    int rc = rt_config_files_list(path ? path : RT_DEFAULT_CONFIG_FILE, &files, err, errlen);
    if (rc < 0)
        return rc;
    /* Work on a copy: a refused file leaves the caller's configuration alone. */
    struct rt_config tmp = *c;
    struct seen seen = {{0}, {0}};
    for (size_t i = 0; i < files.n; i++)
        if ((rc = load_file(files.paths[i], i == 0 && !path, &tmp, &seen, err, errlen)) < 0)
            goto out;
    if ((rc = validate(&tmp, &seen, err, errlen)) < 0)
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
        rt_config_err(err, errlen, "unknown key '%s'", key);
        return -EINVAL;
    }
    struct raw r = {.type = CONFIG_TYPE_STRING, .s = value, .cli = true};
    char why[256];
    if (rt_config_set_value(k, &r, &o->values, why, sizeof(why)) < 0) {
        rt_config_err(err, errlen, "%s: %s", key, why);
        return -EINVAL;
    }
    o->set |= k->bit;
    return 0;
}

void rt_config_apply_overrides(struct rt_config *c, const struct rt_config_overrides *o)
{
    for (size_t i = 0; i < rt_config_nkeys; i++)
        if (o->set & rt_config_keys[i].bit)
            memcpy((char *)c + rt_config_keys[i].offset, (const char *)&o->values + rt_config_keys[i].offset, rt_config_keys[i].size);
}

int rt_config_reload(const char *path, const struct rt_config_overrides *o, struct rt_config *c, char *err,
                     size_t errlen)
{
    struct rt_config tmp;
    rt_config_defaults(&tmp);
    int r = rt_config_load(path, &tmp, err, errlen);
    if (r < 0)
        return r;
    if (o)
        rt_config_apply_overrides(&tmp, o);
    if ((r = rt_config_validate(&tmp, err, errlen)) < 0)
        return r;
    *c = tmp;
    return 0;
}

uint64_t rt_config_diff(const struct rt_config *a, const struct rt_config *b)
{
    uint64_t bits = 0;
    for (size_t i = 0; i < rt_config_nkeys; i++) {
        const struct key *k = &rt_config_keys[i];
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

uint64_t rt_config_adopt(struct rt_config *running, const struct rt_config *next)
{
    uint64_t changed = rt_config_diff(running, next), waiting = 0;
    for (size_t i = 0; i < rt_config_nkeys; i++) {
        const struct key *k = &rt_config_keys[i];
        if (!(changed & k->bit))
            continue;
        if (k->apply == LIVE)
            memcpy((char *)running + k->offset, (const char *)next + k->offset, k->size);
        else
            waiting |= k->bit;
    }
    return waiting;
}

const char *rt_config_key_name(uint64_t bit)
{
    for (size_t i = 0; i < rt_config_nkeys; i++)
        if (rt_config_keys[i].bit == bit)
            return rt_config_keys[i].path;
    return "?";
}


void rt_config_write(FILE *f, const struct rt_config *c)
{
    for (size_t i = 0; i < rt_config_nkeys; i++)
        if (!rt_config_keys[i].group && rt_config_keys[i].where != CLI_ONLY) {
            fprintf(f, "%s = ", rt_config_keys[i].name);
            rt_config_write_value(f, &rt_config_keys[i], c);
            fputs(";\n", f);
        }
    for (size_t g = 0; g < rt_config_ngroups; g++) {
        fprintf(f, "\n%s: {\n", rt_config_groups[g]);
        for (size_t i = 0; i < rt_config_nkeys; i++)
            if (rt_config_keys[i].group && strcmp(rt_config_keys[i].group, rt_config_groups[g]) == 0) {
                fprintf(f, "  %s = ", rt_config_keys[i].name);
                rt_config_write_value(f, &rt_config_keys[i], c);
                fputs(";\n", f);
            }
        fputs("};\n", f);
    }
    fputs("\n# command line only:\n", f);
    for (size_t i = 0; i < rt_config_nkeys; i++)
        if (rt_config_keys[i].where == CLI_ONLY) {
            fprintf(f, "# %s = ", rt_config_keys[i].name);
            rt_config_write_value(f, &rt_config_keys[i], c);
            fputs(";\n", f);
        }
}
