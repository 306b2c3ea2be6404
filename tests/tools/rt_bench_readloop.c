/* Benchmark yardstick (tests/bench/bench_tick_cpu.py): what a tick costs
 * when the files it needs are only read, never parsed. Every interval, the
 * plain way (open, read to the end, close):
 *   host      /proc/stat, meminfo, diskstats, net/dev, self/mountinfo, the
 *             root cgroup's cpu.stat, operstate/speed/mtu of each interface
 *             but lo, statvfs of /, the /proc listing (the process count);
 *   each job  from its root PID down through task/TID/children: every
 *             process's stat and io, every thread's children.
 *   rt_bench_readloop INTERVAL_SECS [ROOT_PID...]
 * Prints "ready PID"; each SIGUSR1 prints the rounds done so far; exits when
 * stdin closes. Its CPU time per round is the yardstick. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <unistd.h>

static char buf[1 << 16];
static volatile sig_atomic_t report;

static void job_tree(long pid);

static void read_all(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    close(fd);
}

/* Returns the number of numeric entries (processes) of dir. */
static long list(const char *dir)
{
    DIR *d = opendir(dir);
    long n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_name[0] >= '0' && de->d_name[0] <= '9';
    if (d)
        closedir(d);
    return n;
}

/* The file at path into out (NUL-terminated); its length, or -1. */
static ssize_t slurp(const char *path, char *out, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (ssize_t n; len + 1 < size && (n = read(fd, out + len, size - 1 - len)) > 0;)
        len += (size_t)n;
    close(fd);
    out[len] = '\0';
    return (ssize_t)len;
}

static void thread_children(long pid, long tid)
{
    char path[96], kids[4096];
    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", pid, tid);
    if (slurp(path, kids, sizeof(kids)) <= 0)
        return;
    for (char *save = NULL, *t = strtok_r(kids, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
        job_tree(strtol(t, NULL, 10));
}

/* A process and its descendants, as the sampler walks them: stat, io, and
 * the children of each thread (the task list only when it has several). */
static void job_tree(long pid)
{
    char path[64], stat[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (slurp(path, stat, sizeof(stat)) <= 0)
        return;
    snprintf(path, sizeof(path), "/proc/%ld/io", pid);
    read_all(path);
    const char *p = strrchr(stat, ')');
    long threads = 1;
    for (int field = 2; p && *p; p++) /* num_threads is field 20 */
        if (*p == ' ' && ++field == 20) {
            threads = strtol(p + 1, NULL, 10);
            break;
        }
    if (threads <= 1) {
        thread_children(pid, pid);
        return;
    }
    snprintf(path, sizeof(path), "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));)
        if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
            thread_children(pid, strtol(de->d_name, NULL, 10));
    if (d)
        closedir(d);
}

static void host(const char *cpu_stat)
{
    static const char *const files[] = {"/proc/stat", "/proc/meminfo", "/proc/diskstats", "/proc/net/dev",
                                        "/proc/self/mountinfo"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        read_all(files[i]);
    if (cpu_stat)
        read_all(cpu_stat);
    DIR *d = opendir("/sys/class/net");
    for (struct dirent *de; d && (de = readdir(d));) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "lo") == 0)
            continue;
        char path[320];
        static const char *const attrs[] = {"operstate", "speed", "mtu"};
        for (size_t i = 0; i < 3; i++) {
            snprintf(path, sizeof(path), "/sys/class/net/%s/%s", de->d_name, attrs[i]);
            read_all(path);
        }
    }
    if (d)
        closedir(d);
    struct statvfs st;
    statvfs("/", &st);
    list("/proc");
}

static void on_usr1(int sig)
{
    (void)sig;
    report = 1;
}

int main(int argc, char **argv)
{
    double iv = argc > 1 ? atof(argv[1]) : 0;
    if (iv <= 0) {
        fprintf(stderr, "usage: rt_bench_readloop INTERVAL_SECS [ROOT_PID...]\n");
        return 2;
    }
    const char *cpu_stat = access("/sys/fs/cgroup/cpu.stat", R_OK) == 0 ? "/sys/fs/cgroup/cpu.stat"
                           : access("/sys/fs/cgroup/unified/cpu.stat", R_OK) == 0 ? "/sys/fs/cgroup/unified/cpu.stat"
                                                                                 : NULL;
    signal(SIGUSR1, on_usr1);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    long ns = (long)llround(iv * 1e9);
    struct itimerspec its = {.it_interval = {ns / 1000000000L, ns % 1000000000L},
                             .it_value = {ns / 1000000000L, ns % 1000000000L}};
    timerfd_settime(tfd, 0, &its, NULL);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    unsigned long rounds = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = tfd, .events = POLLIN}, {.fd = STDIN_FILENO, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return 1;
        if (report) {
            report = 0;
            printf("rounds %lu\n", rounds);
            fflush(stdout);
        }
        if (p[1].revents) {
            char c;
            if (read(STDIN_FILENO, &c, 1) <= 0)
                return 0;
        }
        if (p[0].revents) {
            unsigned long long exp;
            if (read(tfd, &exp, sizeof(exp)) > 0) {
                host(cpu_stat);
                for (int i = 2; i < argc; i++)
                    job_tree(strtol(argv[i], NULL, 10));
                rounds++;
            }
        }
    }
}
