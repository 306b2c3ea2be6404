/* Benchmark helper (tests/bench/bench_latency.py): N varlink clients on
 * their own connections, each calling a method in a loop (one call in flight
 * per connection), driven from one epoll thread so the client side stays
 * cheap next to the daemon. Without --period-ms each client calls again as
 * soon as it has the reply (a closed loop: the daemon's throughput); with
 * it, each client calls every P ms. Prints calls, calls/s and latency
 * percentiles.
 *   rt_bench_clients --socket PATH [--clients N] [--seconds S] [--method NAME]
 *                    [--period-ms P] */
#include "rt/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct client {
    int fd;
    uint64_t sent_ns, next_ns;
    bool busy, done;
    bool mid_reply; /* part of the reply read already */
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int connect_to(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    rt_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "connect %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return fd;
}

static void send_all(int fd, const char *msg, size_t len)
{
    while (len) {
        ssize_t n = write(fd, msg, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "write: %s\n", strerror(errno));
            exit(1);
        }
        msg += n;
        len -= (size_t)n;
    }
}

int main(int argc, char **argv)
{
    const char *sock = NULL, *method = "com.sparecores.ResourceTracker.GetHostSample";
    int nclients = 200;
    double seconds = 10, period_ms = 0;
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},  {"clients", required_argument, NULL, 'c'},
        {"seconds", required_argument, NULL, 't'}, {"method", required_argument, NULL, 'm'},
        {"period-ms", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 's': sock = optarg; break;
        case 'c': nclients = atoi(optarg); break;
        case 't': seconds = atof(optarg); break;
        case 'm': method = optarg; break;
        case 'p': period_ms = atof(optarg); break;
        default: return 2;
        }
    }
    if (!sock || nclients <= 0 || seconds <= 0 || period_ms < 0) {
        fprintf(stderr, "usage: rt_bench_clients --socket PATH [--clients N] [--seconds S] [--method M]\n"
                        "                        [--period-ms P]\n");
        return 2;
    }
    char msg[256];
    int mlen = snprintf(msg, sizeof(msg), "{\"method\":\"%s\"}", method);
    size_t msg_len = (size_t)mlen + 1; /* the NUL terminator is the varlink frame end */

    struct client *cl = rt_xcalloc((size_t)nclients, sizeof(*cl));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < nclients; i++) {
        cl[i].fd = connect_to(sock);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cl[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev);
    }
    size_t cap = 1 << 16, n = 0;
    uint64_t *lat = rt_xmalloc(cap * sizeof(*lat));
    uint64_t errors = 0;
    uint64_t period_ns = (uint64_t)(period_ms * 1e6);
    uint64_t start = rt_mono_ns(), end = start + (uint64_t)(seconds * 1e9), progress = start;
    /* Paced clients start spread over one period, not all at once. */
    for (int i = 0; i < nclients; i++)
        cl[i].next_ns = start + period_ns * (uint64_t)i / (uint64_t)nclients;
    static char buf[1 << 16];
    struct epoll_event evs[64];
    int active = nclients;
    while (active > 0) {
        uint64_t now = rt_mono_ns(), earliest = UINT64_MAX;
        for (int i = 0; i < nclients; i++) {
            struct client *c = &cl[i];
            if (c->busy || c->done)
                continue;
            if (c->next_ns <= now) {
                c->sent_ns = now;
                c->busy = true;
                send_all(c->fd, msg, msg_len);
            } else if (c->next_ns < earliest) {
                earliest = c->next_ns;
            }
        }
        /* ns resolution: paced clients must not wait for the next whole ms. */
        uint64_t wait_ns = earliest == UINT64_MAX ? 1000000000ULL : earliest - now;
        struct timespec ts = {(time_t)(wait_ns / 1000000000ULL), (long)(wait_ns % 1000000000ULL)};
        int ne = epoll_pwait2(ep, evs, 64, &ts, NULL);
        if (ne < 0 && errno == EINTR)
            continue;
        now = rt_mono_ns();
        if (ne <= 0) {
            if (now - progress > 5000000000ULL) {
                fprintf(stderr, "no reply for 5 s\n");
                return 1;
            }
            continue;
        }
        for (int k = 0; k < ne; k++) {
            struct client *c = evs[k].data.ptr;
            ssize_t r = read(c->fd, buf, sizeof(buf));
            if (r <= 0) {
                fprintf(stderr, "connection closed by the daemon\n");
                return 1;
            }
            /* Error replies start with {"error": ... */
            if (!c->mid_reply && r >= 9 && memcmp(buf, "{\"error\"", 9) == 0)
                errors++;
            /* One call in flight: a NUL ends the reply (possibly after several reads). */
            c->mid_reply = !memchr(buf, '\0', (size_t)r);
            if (c->mid_reply)
                continue;
            progress = now;
            if (n == cap) {
                cap *= 2;
                lat = rt_xrealloc(lat, cap * sizeof(*lat));
            }
            lat[n++] = now - c->sent_ns;
            c->busy = false;
            c->next_ns = c->sent_ns + period_ns;
            if (now >= end) {
                c->done = true;
                active--;
            } else if (c->next_ns <= now) { /* closed loop: the next call at once */
                c->sent_ns = rt_mono_ns();
                c->busy = true;
                send_all(c->fd, msg, msg_len);
            }
        }
    }
    if (n == 0) {
        fprintf(stderr, "no call completed\n");
        return 1;
    }
    double wall = (double)(rt_mono_ns() - start) / 1e9;
    qsort(lat, n, sizeof(*lat), cmp_u64);
#define PCT(p) ((double)lat[(size_t)((double)(n - 1) * (p))] / 1e3)
    printf("period_ms=%g clients=%d calls=%zu errors=%llu calls_per_s=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f "
           "p999_us=%.1f max_us=%.1f\n",
           period_ms, nclients, n, (unsigned long long)errors, (double)n / wall, PCT(0.5), PCT(0.9), PCT(0.99),
           PCT(0.999), (double)lat[n - 1] / 1e3);
    for (int i = 0; i < nclients; i++)
        close(cl[i].fd);
    close(ep);
    free(cl);
    free(lat);
    return 0;
}
