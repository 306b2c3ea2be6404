/* Cost of per-job AMD attribution: rt_gpu_job_usage on a job whose process
 * (a child) holds N ordinary fds (real /proc), against the fixture AMD sys
 * tree: the first call (full scan) and the steady state (cached DRM fds).
 * usage: gpu_fdinfo_bench SYS_ROOT [NFDS [CALLS]] */
#include "collect/gpu/gpu.h"
#include "system/log.h"
#include "rt/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SYS_ROOT [NFDS [CALLS]]\n", argv[0]);
        return 2;
    }
    int nfds = argc > 2 ? atoi(argv[2]) : 1000;
    int calls = argc > 3 ? atoi(argv[3]) : 200;
    struct rlimit rl = {.rlim_cur = (rlim_t)nfds + 64, .rlim_max = (rlim_t)nfds + 64};
    setrlimit(RLIMIT_NOFILE, &rl);
    int ready[2];
    if (pipe(ready) < 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < nfds; i++)
            if (open("/dev/null", O_RDONLY) < 0)
                _exit(1);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char x;
    if (read(ready[0], &x, 1) != 1) {
        fprintf(stderr, "child failed to open %d fds\n", nfds);
        return 1;
    }
    rt_log_init(RT_LOG_STDERR, LOG_WARNING);
    struct rt_roots r;
    if (rt_roots_open(&r, NULL, argv[1]) != 0) {
        perror("roots");
        return 1;
    }
    struct rt_gpu_options o = {.disable_nvml = true};
    struct rt_gpu_collector *c = rt_gpu_collector_new(&r, &o);
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pid = child;
    struct rt_process_gpu p;
    uint64_t t0 = rt_mono_ns();
    rt_gpu_job_usage(c, j, &pid, 1, 1.0, &p);
    uint64_t t1 = rt_mono_ns();
    for (int i = 0; i < calls; i++)
        rt_gpu_job_usage(c, j, &pid, 1, 1.0, &p);
    uint64_t t2 = rt_mono_ns();
    printf("amd gpus %zu, process with %d fds: full scan %.1f us, then %.1f us per call on average "
           "(full rescans: every 60 calls where /proc/PID/fd reports the fd count, else 10)\n",
           s.n_gpus, nfds, (double)(t1 - t0) / 1e3, (double)(t2 - t1) / calls / 1e3);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    rt_gpu_job_free(j);
    rt_sample_free(&s);
    rt_gpu_collector_free(c);
    rt_roots_close(&r);
    return 0;
}
