/* hidepid of a proc mount: find the mount of the fd by its id (statx
 * STATX_MNT_ID) in /proc/self/mountinfo, then read its super options. */
#include "proc/hidepid.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

void rt_hidepid_parse(const char *opts, struct rt_hidepid *out)
{
    *out = (struct rt_hidepid){0};
    char buf[512];
    rt_strlcpy(buf, opts, sizeof(buf));
    char *save = NULL;
    for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        if (strncmp(o, "hidepid=", 8) == 0) {
            const char *v = o + 8;
            out->level = !strcmp(v, "off") ? 0 : !strcmp(v, "noaccess") ? 1 : !strcmp(v, "invisible") ? 2
                       : !strcmp(v, "ptraceable") ? 4 : atoi(v);
        } else if (strncmp(o, "gid=", 4) == 0) {
            uint64_t g;
            if (rt_parse_u64(o + 4, &g) && g < (gid_t)-1) {
                out->has_gid = true;
                out->gid = (gid_t)g;
            }
        }
    }
}

int rt_hidepid_read(int proc_fd, struct rt_hidepid *out)
{
    struct statx stx;
    if (statx(proc_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0)
        return -errno;
    if (!(stx.stx_mask & STATX_MNT_ID))
        return -ENOSYS;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char line[4096];
    int r = -ENOENT;
    while (r == -ENOENT && fgets(line, sizeof(line), f)) {
        unsigned long long id;
        if (sscanf(line, "%llu", &id) != 1 || id != stx.stx_mnt_id)
            continue;
        /* "… - FSTYPE SOURCE SUPER_OPTIONS" */
        char *sep = strstr(line, " - ");
        char fstype[64], source[256], opts[1024];
        *out = (struct rt_hidepid){0};
        if (sep && sscanf(sep + 3, "%63s %255s %1023s", fstype, source, opts) == 3 && strcmp(fstype, "proc") == 0)
            rt_hidepid_parse(opts, out);
        r = 0;
    }
    fclose(f);
    return r;
}
