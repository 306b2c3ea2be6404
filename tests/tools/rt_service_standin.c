/* A stand-in for resource-trackerd that exercises the systemd pieces the
 * way the daemon uses them, for the container test (tests/systemd/):
 * configuration load and SIGHUP reload, socket activation with fallback,
 * READY after the first tick, STATUS, the watchdog fed by a "sampler" tick
 * that the RESOURCE_TRACKERD_TEST_STALL_FILE hook can stall, the token
 * credential, and journal records. No sampling.
 *
 * Requests, one line per connection:
 *   "job NAME\n"  -> job started + finished records; reply "ok\n"
 *   "status\n"    -> "interval=1.000 token=none|present:N activated=0|1\n"
 *   "probe PID\n" -> what the hardened unit lets it read and open:
 *                    "stat=ok io=ok smaps=ok fd=ok diskstats=ok netdev=ok
 *                     inet=ok netlink=ok" (an errno name instead of ok) */
#include "config/config.h"
#include "system/credential.h"
#include "system/events.h"
#include "system/log.h"
#include "system/notify.h"
#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

static struct rt_config cfg;
static const char *config_path; /* NULL: the default file */
static bool activated;
static char token_state[32] = "none";

static int bind_own(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    rt_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
        rt_err("bind %s: %s", path, strerror(errno));
        exit(1);
    }
    chmod(path, 0666);
    return fd;
}

static void read_token(void)
{
    char tok[512];
    ssize_t n = rt_credential_read(cfg.token_credential, tok, sizeof(tok));
    if (n > 0)
        snprintf(token_state, sizeof(token_state), "present:%zd", n);
    else
        snprintf(token_state, sizeof(token_state), n == 0 ? "none" : "error");
    explicit_bzero(tok, sizeof(tok));
}

static const char *try_read(const char *path)
{
    char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return strerrorname_np(errno);
    ssize_t n = read(fd, buf, sizeof(buf));
    int e = errno;
    close(fd);
    return n < 0 ? strerrorname_np(e) : "ok";
}

/* The sandbox as the daemon needs it: other users' /proc files (ptrace
 * access), host-wide /proc and /sys, outbound IP and netlink sockets. */
static void probe(int c, const char *pid)
{
    char io[320], smaps[320], stat[320], fdp[320];
    snprintf(stat, sizeof(stat), "/proc/%s/stat", pid);
    snprintf(io, sizeof(io), "/proc/%s/io", pid);
    snprintf(smaps, sizeof(smaps), "/proc/%s/smaps_rollup", pid);
    snprintf(fdp, sizeof(fdp), "/proc/%s/fd", pid);
    DIR *d = opendir(fdp);
    const char *fd_result = d ? "ok" : strerrorname_np(errno);
    if (d)
        closedir(d);
    dprintf(c, "stat=%s ", try_read(stat));
    dprintf(c, "io=%s ", try_read(io));
    dprintf(c, "smaps=%s ", try_read(smaps));
    dprintf(c, "fd=%s ", fd_result);
    dprintf(c, "diskstats=%s ", try_read("/proc/diskstats"));
    dprintf(c, "netdev=%s ", try_read("/proc/net/dev"));
    /* connect() to a closed local port: refused means IP is allowed */
    int s4 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(0x7f000001)};
    const char *inet = s4 < 0 ? strerrorname_np(errno)
                       : connect(s4, (struct sockaddr *)&sin, sizeof(sin)) == 0 || errno == ECONNREFUSED
                           ? "ok"
                           : strerrorname_np(errno);
    if (s4 >= 0)
        close(s4);
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_GENERIC);
    dprintf(c, "inet=%s netlink=%s\n", inet, nl < 0 ? strerrorname_np(errno) : "ok");
    if (nl >= 0)
        close(nl);
}

static void serve(int lfd)
{
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return;
    char line[256] = "";
    struct pollfd p = {.fd = c, .events = POLLIN};
    ssize_t n = poll(&p, 1, 5000) == 1 ? read(c, line, sizeof(line) - 1) : -1;
    line[n > 0 ? n : 0] = '\0';
    rt_trim(line);
    if (rt_str_starts_with(line, "job ")) {
        struct rt_event_job j = {.id = "1", .name = line + 4, .owner_uid = 0, .root_pid = getpid(),
                                 .command = "standin"};
        struct rt_job_summary t = {.samples = 2, .gates = RT_GATE_TREE | RT_GATE_DISK, .cpu_secs = 1, .peak_rss_bytes = 8192, .peak_pss_bytes = 4096,
                                   .disk_read_bytes = 512, .disk_write_bytes = 1024};
        struct rt_event_job_end end = {.state = "finished", .exit_status = 0, .duration_usec = 1500000,
                                       .processes_max = 1, .totals = &t};
        rt_event_job_started(&j);
        rt_event_job_finished(&j, &end);
        dprintf(c, "ok\n");
    } else if (rt_str_starts_with(line, "probe ") && rt_str_all_digits(line + 6)) {
        probe(c, line + 6);
    } else if (strcmp(line, "status") == 0) {
        dprintf(c, "interval=%.3f token=%s activated=%d\n", cfg.interval_secs, token_state, activated ? 1 : 0);
    } else {
        dprintf(c, "unknown\n");
    }
    close(c);
}

static void reload(void)
{
    rt_notify_reloading();
    char err[1024];
    struct rt_config next = cfg;
    const char *shown = config_path ? config_path : RT_DEFAULT_CONFIG_FILE;
    if (rt_config_reload(config_path, NULL, &next, err, sizeof(err)) < 0) {
        rt_event_config_rejected(shown, err);
    } else {
        /* As the daemon: what waits for a restart is named, not applied. */
        uint32_t changed = rt_config_diff(&cfg, &next);
        rt_event_config_reloaded(shown, changed, rt_config_adopt(&cfg, &next));
        rt_log_set_level(cfg.log_level);
        read_token();
    }
    rt_notify_ready();
}

int main(int argc, char **argv)
{
    rt_log_init(RT_LOG_AUTO, LOG_INFO);
    config_path = argc > 1 ? argv[1] : NULL;
    char err[1024];
    if (rt_config_reload(config_path, NULL, &cfg, err, sizeof(err)) < 0) {
        rt_err("%s", err);
        return RT_EXIT_CONFIG;
    }
    rt_log_set_level(cfg.log_level);
    uint64_t start = rt_mono_ns();

    int lfd = rt_listen_fd_from_systemd(cfg.socket_path);
    activated = lfd >= 0;
    if (lfd < 0)
        lfd = bind_own(cfg.socket_path);
    read_token();

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    const char *stall = getenv("RESOURCE_TRACKERD_TEST_STALL_FILE");
    struct rt_watchdog w;
    rt_watchdog_init(&w);

    uint64_t interval_ns = (uint64_t)(cfg.interval_secs * 1e9);
    struct itimerspec its = {.it_interval = {0, 200000000}, .it_value = {0, 1}};
    timerfd_settime(tfd, 0, &its, NULL);
    uint64_t heartbeat = start, next_tick = start, last_ping = 0;
    bool ready = false;
    for (;;) {
        struct pollfd p[3] = {{.fd = lfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN},
                              {.fd = tfd, .events = POLLIN}};
        if (poll(p, 3, -1) < 0 && errno != EINTR)
            return 1;
        if (p[1].revents) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGHUP) {
                    reload();
                    interval_ns = (uint64_t)(cfg.interval_secs * 1e9);
                } else {
                    break;
                }
            }
        }
        if (p[2].revents) {
            uint64_t exp;
            if (read(tfd, &exp, sizeof(exp)) < 0)
                continue;
            uint64_t now = rt_mono_ns();
            /* the "sampler": one tick per interval unless stalled */
            if (now >= next_tick && !(stall && access(stall, F_OK) == 0)) {
                heartbeat = now;
                next_tick = now + interval_ns;
                if (!ready) {
                    struct rt_event_daemon d = {.version = RT_VERSION, .interval_secs = cfg.interval_secs,
                                                .socket_path = cfg.socket_path, .socket_activated = activated,
                                                .state_dir = cfg.state_dir};
                    rt_event_daemon_started(&d);
                    struct rt_notify_status st = {0};
                    rt_notify_status(&st);
                    rt_notify_ready();
                    ready = true;
                }
            }
            if (w.timeout_ns && now - last_ping >= rt_watchdog_period_ns(&w) / 2) {
                rt_watchdog_check(&w, now, heartbeat, interval_ns);
                last_ping = now;
            }
        }
        if (p[0].revents)
            serve(lfd);
    }
    rt_notify_stopping("Flushing uploads");
    rt_notify_extend_timeout(20000000);
    rt_event_daemon_stopped("SIGTERM", (rt_mono_ns() - start) / 1000);
    if (!activated)
        unlink(cfg.socket_path);
    close(lfd);
    close(sfd);
    close(tfd);
    return 0;
}
