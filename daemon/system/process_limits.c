#include "system/process_limits.h"

#include "system/log.h"

#include "rt/util.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Jobs' files, the state directory, sockets of the upload worker, GPUs, and
 * the kernel's files a tick keeps open (collect/procfile.h, proc/kept.h: up
 * to about 250). */
#define OWN_DESCRIPTORS 512

void rt_process_malloc_setup(void)
{
    /* glibc raises its mmap threshold to the size of each mmapped block
     * freed (up to 32 MiB): after one large reply, later ones would come
     * from the heap and the RSS would stay at its peak. A fixed threshold
     * keeps large blocks in mmap. */
    if (!mallopt(M_MMAP_THRESHOLD, 256 * 1024))
        rt_debug("mallopt(M_MMAP_THRESHOLD) was refused");
}

/* Resident pages of this process, from /proc/self/statm (0 when unread). */
static uint64_t resident_kib(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

void rt_process_malloc_release(void)
{
    uint64_t before = resident_kib(), t0 = rt_mono_ns();
    malloc_trim(0);
    rt_debug("memory released: RSS %" PRIu64 " → %" PRIu64 " KiB in %" PRIu64 " µs", before, resident_kib(),
             (rt_mono_ns() - t0) / 1000);
}

void rt_process_fit_descriptors(unsigned connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    rlim_t want = (rlim_t)connections + OWN_DESCRIPTORS;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= want)
        return;
    rlim_t got = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
    if (got > rl.rlim_cur) {
        struct rlimit raised = {got, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) < 0) {
            rt_warn("cannot raise the descriptor limit to %llu: %s", (unsigned long long)got, strerror(errno));
            got = rl.rlim_cur;
        }
    }
    if (got < want)
        rt_notice("only %llu file descriptors (hard limit): fewer than limits.max_connections (%u) can connect",
                  (unsigned long long)got, connections);
}
