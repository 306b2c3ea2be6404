/* The service manager protocol (sd_notify) and socket activation. Call
 * everything here from the main thread only: sd-daemon reads the
 * environment with getenv(), which is not safe against other threads.
 * Without NOTIFY_SOCKET (not under systemd, or Type=simple) the notify calls
 * do nothing and return 0. */
#ifndef RT_NOTIFY_H
#define RT_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* READY=1: at start once the socket listens and the first sample exists,
 * and again after a reload. Returns sd_notify's result (>0 sent). */
int rt_notify_ready(void);

/* RELOADING=1 with MONOTONIC_USEC= (needed by Type=notify-reload on newer
 * systemd, harmless on 252): on SIGHUP, before reading the file. Follow with
 * rt_notify_ready() whether the file was accepted or not. */
int rt_notify_reloading(void);

/* STOPPING=1 with an optional STATUS= line (e.g. "Flushing uploads"). */
int rt_notify_stopping(const char *status);

/* EXTEND_TIMEOUT_USEC=: ask for more time to start or stop (the bounded
 * upload flush), relative to now. */
int rt_notify_extend_timeout(uint64_t usec);

/* What `systemctl status` shows on its Status: line. */
struct rt_notify_status {
    unsigned jobs_running;
    unsigned upload_queue;     /* batches waiting in the spool */
    bool upload_failing;       /* the last upload attempt failed */
    unsigned gpus_nvidia;
    unsigned gpus_amd;
};
/* "Tracking 3 jobs; upload queue 2 (failing); GPUs: 2 NVIDIA, 1 AMD". */
void rt_notify_format_status(const struct rt_notify_status *s, char *buf, size_t size);
/* STATUS=…, sent only when the text changed since the last call, so it can
 * be called every tick. */
int rt_notify_status(const struct rt_notify_status *s);

/* The watchdog, fed from the sampler's heartbeat: the main loop calls
 * rt_watchdog_check every rt_watchdog_period_ns with the time of the
 * sampler's last completed tick; WATCHDOG=1 goes out only while that tick
 * is recent, so a stuck sampler (a hung NVML call) gets the service killed
 * and restarted by systemd after WatchdogSec=. */
struct rt_watchdog {
    uint64_t timeout_ns;       /* WatchdogSec=; 0 = no watchdog */
    bool stalled;              /* the stall was logged */
};
/* Reads WATCHDOG_USEC/WATCHDOG_PID (sd_watchdog_enabled). */
void rt_watchdog_init(struct rt_watchdog *w);
/* How often to call rt_watchdog_check: half the timeout; 0 = never. */
uint64_t rt_watchdog_period_ns(const struct rt_watchdog *w);
/* The sampler counts as alive while its last tick is at most
 * 2 × interval + timeout/2 old. Sends WATCHDOG=1 and returns true when
 * alive; logs the first stall (and the recovery) once. CLOCK_MONOTONIC ns. */
bool rt_watchdog_check(struct rt_watchdog *w, uint64_t now_ns, uint64_t heartbeat_ns, uint64_t interval_ns);

/* Socket activation: the listening socket systemd passed (LISTEN_FDS) that
 * is a Unix stream socket bound to expected_path (NULL: any such socket),
 * with FD_CLOEXEC and O_NONBLOCK set, like rt_listen_unix's. Other passed fds
 * are closed with a warning, and the LISTEN_* variables are removed.
 * Returns -1 when not socket-activated or nothing matched: the daemon then
 * binds the socket itself. */
int rt_listen_fd_from_systemd(const char *expected_path);

#endif
