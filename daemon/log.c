#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

static bool use_journal;
static int level_max = LOG_INFO;

/* systemd sets JOURNAL_STREAM=dev:ino for a stderr connected to journald. */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    struct stat st;
    unsigned long long dev, ino;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void rt_log_init(enum rt_log_target target, int max_level)
{
    use_journal = target == RT_LOG_JOURNAL || (target == RT_LOG_AUTO && stderr_is_journal());
    level_max = max_level;
}

void rt_log_set_level(int max_level) { level_max = max_level; }
int rt_log_level(void) { return level_max; }
bool rt_log_to_journal(void) { return use_journal; }

int rt_log_level_from_string(const char *s)
{
    static const char *const names[] = {"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"};
    for (int i = 0; i < 8; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    if (strcmp(s, "error") == 0)
        return LOG_ERR;
    if (strcmp(s, "warn") == 0)
        return LOG_WARNING;
    return -1;
}

static void vlog(int level, const char *fmt, va_list ap)
{
    if (level > level_max)
        return;
    if (use_journal) {
        sd_journal_printv(level, fmt, ap);
        return;
    }
    static const char *const prefix[] = {"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"};
    char line[2048];
    vsnprintf(line, sizeof(line), fmt, ap);
    fprintf(stderr, "resource-trackerd: %s: %s\n", prefix[level & 7], line);
}

void rt_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void rt_log_once(bool *once, int level, const char *fmt, ...)
{
    if (*once)
        return;
    *once = true;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}
