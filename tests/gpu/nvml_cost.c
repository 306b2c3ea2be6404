/* A libnvidia-ml.so.1 that stands in front of the real one and counts what
 * each NVML call costs the caller: calls, the calling thread's CPU time and
 * wall time, per function. bench_gpu_tick.py puts it first on the daemon's
 * LD_LIBRARY_PATH: the driver's own cost of the daemon's queries is the
 * yardstick for the daemon's CPU per tick.
 *
 *   NVML_COST_REAL  the real library's path (required)
 *   NVML_COST_OUT   a file the counters live in (mapped shared, so the
 *                   bench reads them while the daemon runs): one record per
 *                   function, char name[48] then u64 calls, cpu_ns, wall_ns
 *
 * Every NVML entry point the daemon resolves takes at most six integer or
 * pointer arguments, so one forwarding signature serves them all. Every
 * name is exported: one the real library lacks answers FUNCTION_NOT_FOUND,
 * which switches that field off in the daemon (an old driver measures less
 * than it would alone). */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NAMES(X)                                                                                               \
    X(nvmlInit) X(nvmlInit_v2) X(nvmlShutdown) X(nvmlErrorString) X(nvmlSystemGetDriverVersion)                \
    X(nvmlDeviceGetCount) X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetHandleByIndex)                               \
    X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetName) X(nvmlDeviceGetUUID) X(nvmlDeviceGetPciInfo)         \
    X(nvmlDeviceGetPciInfo_v2) X(nvmlDeviceGetPciInfo_v3) X(nvmlDeviceGetUtilizationRates)                    \
    X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetTemperature) X(nvmlDeviceGetPowerUsage)                          \
    X(nvmlDeviceGetClockInfo) X(nvmlDeviceGetTotalEnergyConsumption) X(nvmlDeviceGetProcessUtilization)        \
    X(nvmlDeviceGetComputeRunningProcesses) X(nvmlDeviceGetComputeRunningProcesses_v2)                         \
    X(nvmlDeviceGetComputeRunningProcesses_v3) X(nvmlDeviceGetGraphicsRunningProcesses)                        \
    X(nvmlDeviceGetGraphicsRunningProcesses_v2) X(nvmlDeviceGetGraphicsRunningProcesses_v3)                    \
    X(nvmlDeviceGetMigMode) X(nvmlDeviceGetMaxMigDeviceCount) X(nvmlDeviceGetMigDeviceHandleByIndex)           \
    X(nvmlDeviceGetGpuInstanceId) X(nvmlDeviceGetComputeInstanceId) X(nvmlDeviceGetTotalEccErrors)             \
    X(nvmlDeviceGetRetiredPages) X(nvmlDeviceGetRemappedRows) X(nvmlDeviceGetCurrentClocksEventReasons)        \
    X(nvmlDeviceGetCurrentClocksThrottleReasons) X(nvmlDeviceRegisterEvents) X(nvmlEventSetCreate)             \
    X(nvmlEventSetFree) X(nvmlEventSetWait) X(nvmlEventSetWait_v2) X(nvmlGpmQueryDeviceSupport)                \
    X(nvmlGpmSampleAlloc) X(nvmlGpmSampleFree) X(nvmlGpmSampleGet) X(nvmlGpmMigSampleGet) X(nvmlGpmMetricsGet)

#define ENUM(n) I_##n,
enum { NAMES(ENUM) N_FUNCS };
#define STR(n) #n,
static const char *const names[] = {NAMES(STR)};

struct record {
    char name[48];
    uint64_t calls, cpu_ns, wall_ns;
};

typedef long (*fn)(long, long, long, long, long, long);
static void *real;
static fn funcs[N_FUNCS];
static struct record *rec;

static uint64_t now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((constructor)) static void setup(void)
{
    const char *path = getenv("NVML_COST_REAL"), *out = getenv("NVML_COST_OUT");
    real = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!real) {
        fprintf(stderr, "nvml_cost: cannot load NVML_COST_REAL (%s)\n", path ? dlerror() : "not set");
        return;
    }
    for (int i = 0; i < N_FUNCS; i++)
        funcs[i] = (fn)dlsym(real, names[i]);
    size_t size = sizeof(struct record) * N_FUNCS;
    int fd = out ? open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (fd >= 0 && ftruncate(fd, (off_t)size) == 0) {
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        rec = m == MAP_FAILED ? NULL : m;
    }
    if (fd >= 0)
        close(fd);
    for (int i = 0; rec && i < N_FUNCS; i++)
        snprintf(rec[i].name, sizeof(rec[i].name), "%s", names[i]);
}

static long forward(int i, long a, long b, long c, long d, long e, long f)
{
    if (!funcs[i])
        return 13; /* NVML_ERROR_FUNCTION_NOT_FOUND */
    uint64_t c0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
    long r = funcs[i](a, b, c, d, e, f);
    uint64_t w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_THREAD_CPUTIME_ID);
    if (rec) {
        __atomic_add_fetch(&rec[i].calls, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&rec[i].cpu_ns, c1 - c0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&rec[i].wall_ns, w1 - w0, __ATOMIC_RELAXED);
    }
    return r;
}

#define WRAP(n)                                                                                                \
    long n(long a, long b, long c, long d, long e, long f);                                                    \
    long n(long a, long b, long c, long d, long e, long f) { return forward(I_##n, a, b, c, d, e, f); }
NAMES(WRAP)
