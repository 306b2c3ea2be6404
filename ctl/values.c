/* Option values: process IDs, counts, seconds, users, points in time. */
#include "args.h"

#include "rt/util.h"

#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool ctl_parse_pid(const char *s, int64_t *out)
{
    uint64_t v;
    if (!rt_parse_u64(s, &v) || v == 0 || v > INT32_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

bool ctl_parse_count(const char *s, int64_t *out)
{
    uint64_t v;
    if (!rt_parse_u64(s, &v) || v == 0 || v > INT64_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

bool ctl_parse_user(const char *s, int64_t *uid)
{
    uint64_t u;
    const struct passwd *pw = getpwnam(s);
    if (pw)
        *uid = pw->pw_uid;
    else if (rt_parse_u64(s, &u) && u < UINT32_MAX)
        *uid = (int64_t)u;
    else
        return false;
    return true;
}

bool ctl_parse_secs(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0.1 && v <= 3600))
        return false;
    *out = v;
    return true;
}

/* "1h30m", "90s", "2.5d": seconds, or -1. */
static double duration(const char *s)
{
    static const struct {
        char unit;
        double secs;
    } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 7 * 86400}};
    double total = 0;
    if (!*s)
        return -1;
    while (*s) {
        char *end;
        if (*s < '0' || *s > '9')
            return -1;
        double v = strtod(s, &end);
        size_t u = 0;
        while (u < RT_ARRAY_SIZE(units) && units[u].unit != *end)
            u++;
        if (end == s || u == RT_ARRAY_SIZE(units))
            return -1;
        total += v * units[u].secs;
        s = end + 1;
    }
    return isfinite(total) ? total : -1;
}

/* Local time h:m:s on the day `days` after today. */
static double today_at(double now, int days, int h, int m, int s)
{
    time_t t = (time_t)now;
    struct tm tm;
    localtime_r(&t, &tm);
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = s;
    tm.tm_mday += days;
    tm.tm_isdst = -1;
    return (double)mktime(&tm);
}

/* A date, a date and time, or a time of today, in local time; -1 if none. */
static double date_time(const char *s, double now)
{
    static const char *const formats[] = {
        "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d",
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(formats); i++) {
        struct tm tm = {0};
        const char *end = strptime(s, formats[i], &tm);
        if (end && !*end) {
            tm.tm_isdst = -1;
            time_t t = mktime(&tm);
            return t == (time_t)-1 ? -1 : (double)t;
        }
    }
    static const char *const times[] = {"%H:%M:%S", "%H:%M"};
    for (size_t i = 0; i < RT_ARRAY_SIZE(times); i++) {
        struct tm tm = {0};
        const char *end = strptime(s, times[i], &tm);
        if (end && !*end)
            return today_at(now, 0, tm.tm_hour, tm.tm_min, tm.tm_sec);
    }
    return -1;
}

bool ctl_parse_since(const char *s, double now, double *out)
{
    double v;
    if (strcmp(s, "today") == 0) {
        *out = today_at(now, 0, 0, 0, 0);
        return true;
    }
    if (strcmp(s, "yesterday") == 0) {
        *out = today_at(now, -1, 0, 0, 0);
        return true;
    }
    if (s[0] == '@') {
        char *end;
        v = strtod(s + 1, &end);
        if (end == s + 1 || *end || !isfinite(v) || v < 0)
            return false;
        *out = v;
        return true;
    }
    if ((v = duration(s)) >= 0) {
        *out = now - v;
        return true;
    }
    if ((v = date_time(s, now)) >= 0) {
        *out = v;
        return true;
    }
    return false;
}
