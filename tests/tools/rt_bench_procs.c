/* Benchmark helper (tests/bench/): processes that load the tracker.
 *   rt_bench_procs sleepers N       N idle children (forks of this small process)
 *   rt_bench_procs big MIB [nohuge|huge]  one process with MIB of anonymous memory,
 *                                   every page touched; nohuge asks for 4 KiB pages,
 *                                   huge for transparent huge pages (MADV_HUGEPAGE)
 *   rt_bench_procs maps N           one process with N separate touched 4 KiB mappings
 * Prints "ready PID" on stdout once set up, then waits for stdin to close (or
 * SIGTERM/SIGINT) and exits; children die with it (PR_SET_PDEATHSIG). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void wait_for_eof(void)
{
    char buf[64];
    while (read(STDIN_FILENO, buf, sizeof(buf)) > 0 || errno == EINTR)
        errno = 0;
}

static int sleepers(long n)
{
    pid_t parent = getpid();
    pid_t *kids = calloc((size_t)(n > 0 ? n : 1), sizeof(*kids));
    if (!kids)
        return 1;
    for (long i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "fork %ld: %s\n", i, strerror(errno));
            return 1;
        }
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(0);
            for (;;)
                pause();
        }
        kids[i] = p;
    }
    printf("ready %d\n", (int)parent);
    fflush(stdout);
    wait_for_eof();
    for (long i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    free(kids);
    return 0;
}

static int big(long mib, const char *pages)
{
    size_t len = (size_t)mib << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    int advice = strcmp(pages, "nohuge") == 0 ? MADV_NOHUGEPAGE
                 : strcmp(pages, "huge") == 0 ? MADV_HUGEPAGE
                                              : -1;
    if (advice >= 0 && madvise(p, len, advice) < 0)
        perror("madvise");
    long page = sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < len; off += (size_t)page)
        p[off] = 1;
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    wait_for_eof();
    return 0;
}

static int maps(long n)
{
    long page = sysconf(_SC_PAGESIZE);
    /* One reservation, then alternating protections so no two neighbours merge. */
    size_t len = (size_t)n * 2 * (size_t)page;
    char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    for (long i = 0; i < n; i++) {
        char *p = base + (size_t)i * 2 * (size_t)page;
        if (mprotect(p, (size_t)page, PROT_READ | PROT_WRITE) < 0) {
            fprintf(stderr, "mprotect %ld: %s (vm.max_map_count?)\n", i, strerror(errno));
            return 1;
        }
        *p = 1;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    wait_for_eof();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "sleepers") == 0)
        return sleepers(atol(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "big") == 0)
        return big(atol(argv[2]), argc >= 4 ? argv[3] : "");
    if (argc >= 3 && strcmp(argv[1], "maps") == 0)
        return maps(atol(argv[2]));
    fprintf(stderr, "usage: rt_bench_procs sleepers N | big MIB [nohuge|huge] | maps N\n");
    return 2;
}
