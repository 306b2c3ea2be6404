/* Logging: journald when running under systemd (or when asked), stderr
 * otherwise. Structured records for events use rt_log_event(). */
#ifndef RT_LOG_H
#define RT_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <syslog.h>

/* target: RT_LOG_AUTO picks the journal when stderr is connected to it. */
enum rt_log_target { RT_LOG_AUTO, RT_LOG_STDERR, RT_LOG_JOURNAL };

void rt_log_init(enum rt_log_target target, int max_level);
void rt_log_set_level(int max_level);
int rt_log_level(void);
bool rt_log_to_journal(void);
/* Parse "err|warning|notice|info|debug" (syslog names); -1 when unknown. */
int rt_log_level_from_string(const char *s);

/* --log-file: until the daemon serves, lines go to stderr (a starting client
 * reads them) and, once rt_log_file_open() could open it, to the file too
 * (earlier lines are kept for it); rt_log_file_takeover() then puts the file
 * (or /dev/null) in place of stderr, which tells the client it is up. */
void rt_log_file_expect(void);
/* path is relative to dirfd; 0 or -errno. */
int rt_log_file_open(int dirfd, const char *path);
void rt_log_file_takeover(void);

void rt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Log only the first time *once is false, then set it: for per-tick
 * conditions (a garbage /proc file) that must not flood the log. */
void rt_log_once(bool *once, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A line that a user's action causes (a refused connection, a job's warning,
 * a failed notification): at most a burst and then a few a second per uid
 * (system/user_log.h); the rest are counted and said in one line per uid by
 * rt_log_user_summaries(), which the main loop calls by rt_log_user_due()
 * (CLOCK_MONOTONIC ns; UINT64_MAX: nothing to say). Job records
 * (system/events.h) never go through it: they are never dropped. */
void rt_log_user(uid_t uid, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rt_log_user_summaries(void);
uint64_t rt_log_user_due(void);

#define rt_err(...) rt_log(LOG_ERR, __VA_ARGS__)
#define rt_warn(...) rt_log(LOG_WARNING, __VA_ARGS__)
#define rt_notice(...) rt_log(LOG_NOTICE, __VA_ARGS__)
#define rt_info(...) rt_log(LOG_INFO, __VA_ARGS__)
#define rt_debug(...) rt_log(LOG_DEBUG, __VA_ARGS__)

#endif
