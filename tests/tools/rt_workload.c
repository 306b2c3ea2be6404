/* Test workload with a known CPU ground truth (not installed).
 *
 *   rt_workload [OPTIONS] --out FILE
 *     --start-burn MS          burn MS of CPU first thing (the "held until registered" check)
 *     --children N --child-ms MS
 *                              fork N children that burn MS each (all forked, then all reaped)
 *     --burners N --burn-secs S
 *                              one child process with N threads burning S seconds each
 *     --first-interval N:BURN:SLEEP
 *                              N children that burn BURN ms, then stay alive SLEEP ms
 *     --lazy-reap N:BURN:DELAY N children that burn BURN ms and exit; reaped DELAY ms later
 *     --nested BURN:DELAY      a child whose grandchild burns BURN ms; each level reaps DELAY
 *                              ms after its child exited, and the child lingers DELAY ms
 *     --reuse-pid BURN:SLEEP   a child burns BURN ms, lives SLEEP ms, is reaped; a second
 *                              child is then created with the same PID (clone3 set_tid)
 *                              and burns BURN ms
 *     --grow MIB:MS            touch MIB of new memory, 1 MiB at a time over MS ms, and
 *                              keep it until the end (a memory grower)
 *     --write MIB:FILE         write MIB to FILE, 1 MiB at a time, each fdatasync'ed (a
 *                              disk writer: the bytes reach the disk as ours)
 *     --sleep-ms MS            sleep MS before reporting
 *     --out FILE               write {"pid","starttime","start_realtime","cpu_secs",…} there
 *
 * cpu_secs is getrusage(RUSAGE_SELF) + getrusage(RUSAGE_CHILDREN) after every
 * child was reaped: what wait4() reports to our parent.
 *
 *   rt_workload --spawn-at PID -- CMD [ARGS…]
 *     run CMD as a child with exactly that PID (clone3 set_tid, needs
 *     CAP_SYS_ADMIN); wait for it and exit with its status. Exits 75 when the
 *     PID is taken. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    fprintf(stderr, "rt_workload: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double clock_secs(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Busy-loop until this thread used ms of CPU. */
static void burn_ms(double ms)
{
    double end = clock_secs(CLOCK_THREAD_CPUTIME_ID) + ms / 1000.0;
    volatile uint64_t x = 0;
    while (clock_secs(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 10000; i++)
            x = x + (uint64_t)i * 2654435761u;
    (void)x;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static pid_t fork_or_die(void)
{
    pid_t p = fork();
    if (p < 0)
        die("fork");
    return p;
}

static void reap(pid_t pid)
{
    while (waitpid(pid, NULL, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
}

/* A child at exactly `pid` (clone3 with set_tid); returns like fork(). */
static pid_t fork_at(pid_t pid)
{
    pid_t tid[1] = {pid};
    struct clone_args ca;
    memset(&ca, 0, sizeof(ca));
    ca.exit_signal = SIGCHLD;
    ca.set_tid = (uint64_t)(uintptr_t)tid;
    ca.set_tid_size = 1;
    return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

static void *burner_thread(void *arg)
{
    burn_ms(*(double *)arg * 1000.0);
    return NULL;
}

static void burners(int n, double secs)
{
    if (fork_or_die() == 0) {
        pthread_t t[64];
        n = n > 64 ? 64 : n;
        for (int i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, burner_thread, &secs) != 0)
                _exit(1);
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        _exit(0);
    }
}

static int parse3(const char *s, double *a, double *b, double *c)
{
    return sscanf(s, "%lf:%lf:%lf", a, b, c) == 3 ? 0 : -1;
}

static int parse2(const char *s, double *a, double *b)
{
    return sscanf(s, "%lf:%lf", a, b) == 2 ? 0 : -1;
}

static uint64_t own_starttime(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ' && ++field == 22)
            return strtoull(p + 1, NULL, 10);
    return 0;
}

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static int spawn_at(pid_t pid, char **cmd)
{
    pid_t c = fork_at(pid);
    if (c < 0) {
        fprintf(stderr, "rt_workload: clone3 at pid %d: %s\n", (int)pid, strerror(errno));
        return errno == EEXIST ? 75 : 1;
    }
    if (c == 0) {
        execvp(cmd[0], cmd);
        _exit(127);
    }
    int st;
    while (waitpid(c, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* mmap, not malloc: the memory stays until exit without a leak report. */
static void grow(const char *spec)
{
    double mib = 0, ms = 0;
    if (sscanf(spec, "%lf:%lf", &mib, &ms) != 2 || mib < 1) {
        fprintf(stderr, "rt_workload: --grow MIB:MS, not %s\n", spec);
        exit(2);
    }
    for (int i = 0; i < (int)mib; i++) {
        char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            die("mmap");
        memset(p, i + 1, 1 << 20);
        sleep_ms(ms / mib);
    }
}

static void write_file(const char *spec)
{
    int mib = atoi(spec);
    const char *path = strchr(spec, ':');
    int fd = path ? open(path + 1, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (mib < 1 || fd < 0) {
        fprintf(stderr, "rt_workload: --write MIB:FILE, not %s\n", spec);
        exit(2);
    }
    static char chunk[1 << 20];
    for (int i = 0; i < mib; i++) {
        memset(chunk, 'a' + i % 26, sizeof(chunk));
        if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk) || fdatasync(fd) < 0)
            die("write");
    }
    close(fd);
}

int main(int argc, char **argv)
{
    double start_real = clock_secs(CLOCK_REALTIME);
    double start_burn = 0, child_ms = 5, burn_secs = 3, sleep_end = 0;
    int children = 0, nburners = 0;
    const char *first = NULL, *lazy = NULL, *nested = NULL, *reuse = NULL, *out = NULL;
    const char *grow_spec = NULL, *write_spec = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--spawn-at") == 0 && v && i + 3 < argc && strcmp(argv[i + 2], "--") == 0)
            return spawn_at((pid_t)atoi(v), &argv[i + 3]);
        if (!v) {
            fprintf(stderr, "rt_workload: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--start-burn") == 0)
            start_burn = atof(v);
        else if (strcmp(a, "--children") == 0)
            children = atoi(v);
        else if (strcmp(a, "--child-ms") == 0)
            child_ms = atof(v);
        else if (strcmp(a, "--burners") == 0)
            nburners = atoi(v);
        else if (strcmp(a, "--burn-secs") == 0)
            burn_secs = atof(v);
        else if (strcmp(a, "--first-interval") == 0)
            first = v;
        else if (strcmp(a, "--lazy-reap") == 0)
            lazy = v;
        else if (strcmp(a, "--nested") == 0)
            nested = v;
        else if (strcmp(a, "--reuse-pid") == 0)
            reuse = v;
        else if (strcmp(a, "--grow") == 0)
            grow_spec = v;
        else if (strcmp(a, "--write") == 0)
            write_spec = v;
        else if (strcmp(a, "--sleep-ms") == 0)
            sleep_end = atof(v);
        else if (strcmp(a, "--out") == 0)
            out = v;
        else {
            fprintf(stderr, "rt_workload: unknown option %s\n", a);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "rt_workload: --out FILE is required\n");
        return 2;
    }
    if (start_burn > 0)
        burn_ms(start_burn);
    double start_burn_done = clock_secs(CLOCK_REALTIME);

    if (nburners > 0)
        burners(nburners, burn_secs);
    for (int i = 0; i < children; i++) {
        if (fork_or_die() == 0) {
            burn_ms(child_ms);
            _exit(0);
        }
    }
    double n, b, s;
    if (first) {
        if (parse3(first, &n, &b, &s) < 0)
            return 2;
        for (int i = 0; i < (int)n; i++) {
            if (fork_or_die() == 0) {
                burn_ms(b);
                sleep_ms(s);
                _exit(0);
            }
        }
    }
    if (lazy) {
        if (parse3(lazy, &n, &b, &s) < 0)
            return 2;
        pid_t kids[256];
        int k = (int)n > 256 ? 256 : (int)n;
        for (int i = 0; i < k; i++) {
            if ((kids[i] = fork_or_die()) == 0) {
                burn_ms(b);
                _exit(0);
            }
        }
        /* Let them all be zombies, then leave them so for a while. */
        for (int i = 0; i < k; i++) {
            siginfo_t si;
            while (waitid(P_PID, (id_t)kids[i], &si, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
            }
        }
        sleep_ms(s);
        for (int i = 0; i < k; i++)
            reap(kids[i]);
    }
    if (nested) {
        if (parse2(nested, &b, &s) < 0)
            return 2;
        pid_t c = fork_or_die();
        if (c == 0) {
            pid_t g = fork_or_die();
            if (g == 0) {
                burn_ms(b);
                _exit(0);
            }
            siginfo_t si;
            waitid(P_PID, (id_t)g, &si, WEXITED | WNOWAIT);
            sleep_ms(s);
            reap(g);
            burn_ms(b / 2);
            sleep_ms(s);
            _exit(0);
        }
        siginfo_t si;
        waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT);
        sleep_ms(s);
        reap(c);
    }
    if (reuse) {
        if (parse2(reuse, &b, &s) < 0)
            return 2;
        pid_t c = fork_or_die();
        if (c == 0) {
            burn_ms(b);
            sleep_ms(s);
            _exit(0);
        }
        reap(c);
        pid_t again = -1;
        /* Someone else may grab the PID first; that is a skipped check, not a failure. */
        for (int tries = 0; tries < 50 && again < 0; tries++) {
            again = fork_at(c);
            if (again < 0 && errno != EEXIST)
                break;
            if (again < 0)
                sleep_ms(10);
        }
        if (again == 0) {
            burn_ms(b);
            sleep_ms(s);
            _exit(0);
        }
        if (again > 0)
            reap(again);
        fprintf(stderr, "rt_workload: reused pid %d: %s\n", (int)c, again == c ? "yes" : "no");
        reuse = again == c ? "yes" : "no";
    }
    if (grow_spec)
        grow(grow_spec);
    if (write_spec)
        write_file(write_spec);
    /* Everything else (the plain children, the burner) is reaped here. */
    while (wait(NULL) > 0 || errno == EINTR) {
    }
    if (sleep_end > 0)
        sleep_ms(sleep_end);

    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    double self_cpu = tv(self.ru_utime) + tv(self.ru_stime);
    double kids_cpu = tv(kids.ru_utime) + tv(kids.ru_stime);
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (!f)
        die(tmp);
    fprintf(f,
            "{\"pid\": %d, \"starttime\": %llu, \"start_realtime\": %.6f, \"start_burn_done\": %.6f, "
            "\"self_cpu_secs\": %.6f, \"children_cpu_secs\": %.6f, \"cpu_secs\": %.6f, "
            "\"pid_reused\": %s}\n",
            (int)getpid(), (unsigned long long)own_starttime(), start_real, start_burn_done, self_cpu,
            kids_cpu, self_cpu + kids_cpu, reuse && strcmp(reuse, "yes") == 0 ? "true" : "false");
    if (fclose(f) != 0 || rename(tmp, out) < 0)
        die(out);
    return 0;
}
