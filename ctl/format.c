/* Human-readable numbers and text cells for tables. */
#include "ctl.h"

#include "rt/json.h"
#include "rt/text.h"
#include "rt/util.h"

#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

void ctl_fmt_bytes(char *buf, size_t size, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%.0f B", bytes);
    else
        snprintf(buf, size, "%.*f %s", bytes < 10 ? 2 : bytes < 100 ? 1 : 0, bytes, units[u]);
}

/* The space reserved for root is neither used nor available to users, so
 * df's Use% (and this) is not used / size: 19% where used/size says 7%. */
int ctl_df_pct(uint64_t used, uint64_t avail)
{
    uint64_t total = used + avail;
    return total ? (int)((used * 100 + total - 1) / total) : 0;
}

void ctl_fmt_duration(char *buf, size_t size, double secs)
{
    if (secs < 60) {
        snprintf(buf, size, "%.1fs", secs);
        return;
    }
    long s = lround(secs);
    if (s < 3600)
        snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%ldh%02ldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, size, "%ldd%02ldh", s / 86400, s % 86400 / 3600);
}

void ctl_fmt_time(char *buf, size_t size, double unix_secs)
{
    time_t t = (time_t)unix_secs;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

void ctl_print_json(FILE *f, struct json_object *o)
{
    /* json-c escapes C0 controls; DEL and C1 controls (U+0080–U+009F, which
     * terminals act on too) it writes as they are: \u escapes here. Such
     * bytes occur only inside strings, where an escape means the same. */
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == 0x7f)
            fputs("\\u007f", f);
        else if (c == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] < 0xa0)
            fprintf(f, "\\u00%02x", (unsigned char)*++s);
        else
            fputc(c, f);
    }
    fputc('\n', f);
}

const char *ctl_fmt_user(int64_t uid, char *buf, size_t size)
{
    /* A table asks for the same few users row after row (top and the
     * exporter every tick, users interleaved): each getpwuid reads the user
     * database again. */
    static struct {
        int64_t uid;
        char name[256];
    } cache[32];
    static size_t n, next;
    size_t k = 0;
    while (k < n && cache[k].uid != uid)
        k++;
    if (k == n) {
        k = n < 32 ? n++ : next++ % 32;
        struct passwd *pw = getpwuid((uid_t)uid);
        cache[k].uid = uid;
        if (pw)
            snprintf(cache[k].name, sizeof(cache[k].name), "%s", pw->pw_name);
        else
            snprintf(cache[k].name, sizeof(cache[k].name), "%lld", (long long)uid);
    }
    snprintf(buf, size, "%s", cache[k].name);
    return buf;
}

size_t ctl_term_width(void)
{
    const char *env = getenv("COLUMNS");
    uint64_t v;
    struct winsize ws;
    if (env && rt_parse_u64(env, &v) && v > 0 && v < 100000)
        return (size_t)v;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 0;
}

/* Columns a shown piece takes: an escape its characters, a character one. */
static size_t piece_width(const char *piece, size_t n)
{
    return piece[0] == '\\' ? n : 1;
}

size_t ctl_fmt_width(const char *s)
{
    char piece[RT_ESCAPE_MAX];
    size_t len = strlen(s), total = 0, used;
    for (size_t i = 0; i < len; i += used)
        total += piece_width(piece, rt_escape_next(s + i, len - i, piece, &used));
    return total;
}

size_t ctl_fmt_cut(char *buf, size_t size, const char *s, size_t width)
{
    char piece[RT_ESCAPE_MAX];
    size_t len = strlen(s), total = ctl_fmt_width(s), used, n = 0, c = 0;
    size_t keep = total <= width ? total : width ? width - 1 : 0;
    for (size_t i = 0; i < len; i += used) {
        size_t k = rt_escape_next(s + i, len - i, piece, &used), w = piece_width(piece, k);
        if (c + w > keep || n + k + sizeof("…") > size)
            break; /* an escape is never cut; room for the ellipsis and the NUL */
        memcpy(buf + n, piece, k);
        n += k;
        c += w;
    }
    if (c < total && width && n + sizeof("…") <= size) {
        memcpy(buf + n, "…", sizeof("…") - 1);
        n += sizeof("…") - 1;
        c++;
    }
    if (size)
        buf[n] = '\0';
    return c;
}

void ctl_fmt_cell(char *buf, size_t size, const char *s, size_t width)
{
    size_t c = ctl_fmt_cut(buf, size, s ? s : "-", width), n = strlen(buf);
    for (; c < width && n + 1 < size; c++)
        buf[n++] = ' ';
    buf[n] = '\0';
}

/* A job's command line (metadata.command), arguments joined by spaces. */
char *ctl_job_command(struct json_object *j)
{
    struct json_object *cmd = rt_json_get_array(rt_json_get_object(j, "metadata"), "command");
    size_t n = cmd ? json_object_array_length(cmd) : 0;
    if (!n)
        return NULL;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(json_object_get_string(json_object_array_get_idx(cmd, i))) + 1;
    char *s = rt_xmalloc(len), *p = s;
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%s", i ? " " : "", json_object_get_string(json_object_array_get_idx(cmd, i)));
    return s;
}
