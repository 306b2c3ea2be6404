#include "collect/roots.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int rt_roots_open(struct rt_roots *r, const char *proc_root, const char *sys_root)
{
    rt_strlcpy(r->proc, proc_root ? proc_root : "/proc", sizeof(r->proc));
    rt_strlcpy(r->sys, sys_root ? sys_root : "/sys", sizeof(r->sys));
    r->proc_fd = open(r->proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (r->proc_fd < 0)
        return -errno;
    r->sys_fd = open(r->sys, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (r->sys_fd < 0) {
        int e = errno;
        close(r->proc_fd);
        r->proc_fd = -1;
        return -e;
    }
    return 0;
}

void rt_roots_close(struct rt_roots *r)
{
    if (r->proc_fd >= 0)
        close(r->proc_fd);
    if (r->sys_fd >= 0)
        close(r->sys_fd);
    r->proc_fd = r->sys_fd = -1;
}
