/* Human-readable numbers for tables. */
#include "ctl.h"

#include "rt/json.h"

#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <time.h>

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
    fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE), f);
    fputc('\n', f);
}

const char *ctl_fmt_user(int64_t uid, char *buf, size_t size)
{
    struct passwd *pw = getpwuid((uid_t)uid);
    if (pw)
        snprintf(buf, size, "%s", pw->pw_name);
    else
        snprintf(buf, size, "%lld", (long long)uid);
    return buf;
}
