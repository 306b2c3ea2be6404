#include "system/process_limits.h"

#include "system/log.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <sys/resource.h>

/* Jobs' files, the state directory, sockets of the upload worker, GPUs. */
#define OWN_DESCRIPTORS 256

void rt_process_malloc_setup(void)
{
    /* glibc raises its mmap threshold to the size of each mmapped block
     * freed (up to 32 MiB): after one large reply, later ones would come
     * from the heap and the RSS would stay at its peak. A fixed threshold
     * keeps large blocks in mmap. */
    if (!mallopt(M_MMAP_THRESHOLD, 256 * 1024))
        rt_debug("mallopt(M_MMAP_THRESHOLD) was refused");
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
