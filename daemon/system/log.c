#include "system/log.h"

#include "system/user_log.h"

#include "rt/text.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

static bool use_journal;
static int level_max = LOG_INFO;

/* --log-file before the takeover (see log.h); other threads log meanwhile. */
static pthread_mutex_t tee_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool tee_on;
static int tee_fd = -1;
static char early[16384];
static size_t early_len;

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

void rt_log_file_expect(void)
{
    tee_on = true;
}

int rt_log_file_open(int dirfd, const char *path)
{
    int fd = rt_open_beneath(dirfd, path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0)
        return fd;
    pthread_mutex_lock(&tee_mu);
    write_all(fd, early, early_len);
    early_len = 0;
    tee_fd = fd;
    pthread_mutex_unlock(&tee_mu);
    return 0;
}

void rt_log_file_takeover(void)
{
    if (!tee_on)
        return;
    pthread_mutex_lock(&tee_mu);
    fflush(stderr);
    int fd = tee_fd >= 0 ? tee_fd : open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    tee_fd = -1;
    tee_on = false;
    pthread_mutex_unlock(&tee_mu);
}

static void tee_line(const char *line, size_t len)
{
    pthread_mutex_lock(&tee_mu);
    if (tee_fd >= 0) {
        write_all(tee_fd, line, len);
    } else if (tee_on && early_len + len <= sizeof(early)) {
        memcpy(early + early_len, line, len);
        early_len += len;
    }
    pthread_mutex_unlock(&tee_mu);
}

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
    return -EINVAL;
}

static void vlog(int level, const char *fmt, va_list ap)
{
    if (level > level_max)
        return;
    /* Messages carry users' and servers' text (names, errors): no control
     * character of theirs reaches a terminal that reads the log. */
    char raw[2048], line[2048];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    rt_escape_into(line, sizeof(line), raw);
    if (use_journal) {
        sd_journal_print(level, "%s", line);
        return;
    }
    static const char *const prefix[] = {"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"};
    char out[2100];
    int n = snprintf(out, sizeof(out), "resource-trackerd: %s: %s\n", prefix[level & 7], line);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1;
    fputs(out, stderr);
    if (tee_on)
        tee_line(out, len);
}

void rt_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

static pthread_mutex_t user_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rt_user_log user_log;

void rt_log_user(uid_t uid, int level, const char *fmt, ...)
{
    if (level > level_max)
        return;
    pthread_mutex_lock(&user_mu);
    bool allowed = rt_user_log_take(&user_log, uid, rt_mono_ns());
    pthread_mutex_unlock(&user_mu);
    if (!allowed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

static void say_suppressed(uid_t uid, unsigned count, double secs, void *ctx)
{
    (void)ctx;
    rt_log(LOG_NOTICE,
           "%u log message%s caused by uid %u suppressed in the last %.0f s (more than %d at once or %d a second; "
           "job records are never suppressed)",
           count, count == 1 ? "" : "s", (unsigned)uid, secs, RT_USER_LOG_BURST, RT_USER_LOG_PER_SEC);
}

void rt_log_user_summaries(void)
{
    pthread_mutex_lock(&user_mu);
    rt_user_log_summaries(&user_log, rt_mono_ns(), say_suppressed, NULL);
    pthread_mutex_unlock(&user_mu);
}

uint64_t rt_log_user_due(void)
{
    pthread_mutex_lock(&user_mu);
    uint64_t at = rt_user_log_due(&user_log);
    pthread_mutex_unlock(&user_mu);
    return at;
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
