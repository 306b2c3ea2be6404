#include "proc/procfs.h"

#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

long rt_clk_tck(void)
{
    static long tck;
    if (!tck) {
        long t = sysconf(_SC_CLK_TCK);
        tck = t > 0 ? t : 100;
    }
    return tck;
}

long rt_page_size(void)
{
    static long ps;
    if (!ps) {
        long p = sysconf(_SC_PAGESIZE);
        ps = p > 0 ? p : 4096;
    }
    return ps;
}

int rt_pstat_parse(const char *buf, struct rt_pstat *out)
{
    memset(out, 0, sizeof(*out));
    out->exit_code = -1;
    char *end;
    long pid = strtol(buf, &end, 10);
    const char *rp = strrchr(buf, ')');
    if (end == buf || !rp || rp[1] != ' ')
        return -EINVAL;
    out->pid = (int32_t)pid;
    const char *p = rp + 2;
    /* Fields from 3 (state) onwards, space separated; one pass, the numbers
     * wanted read as the pass goes (a tick parses one per tracked process),
     * up to field 24 (the exit code, field 52, is a zombie's only). */
    out->state = *p;
    int field = 3, last = out->state == 'Z' ? 52 : 24;
    while (*p && field < last) {
        while (*p && *p != ' ')
            p++;
        if (!*p)
            break;
        p++;
        field++;
        bool neg = *p == '-';
        uint64_t v = 0;
        for (p += neg; *p >= '0' && *p <= '9'; p++)
            v = v * 10 + (uint64_t)(*p - '0'); /* wraps on garbage; kernel values fit */
        switch (field) {
        case 4: out->ppid = neg || v > INT32_MAX ? 0 : (int32_t)v; break;
        case 10: case 12: out->faults += v; break;
        case 14: out->utime = v; break;
        case 15: out->stime = v; break;
        case 16: out->cutime = neg ? 0 : v; break;
        case 17: out->cstime = neg ? 0 : v; break;
        case 20: out->num_threads = neg || v > INT32_MAX ? 0 : (int32_t)v; break;
        case 22: out->starttime = v; break;
        case 24: out->rss_pages = v; break;
        case 52: out->exit_code = neg || v > INT32_MAX ? -1 : (int)v; break;
        default: break;
        }
    }
    /* A truncated line (fewer than 24 fields) is garbage for our purposes. */
    return field >= 24 ? 0 : -EINVAL;
}

int rt_pstat_read(int proc_fd, int32_t pid, struct rt_pstat *out)
{
    char path[32], buf[1024];
    snprintf(path, sizeof(path), "%d/stat", (int)pid);
    ssize_t n = rt_read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return n == -ESRCH ? -ENOENT : (int)n;
    return rt_pstat_parse(buf, out);
}

/* Value of "key:" in a "key: value" file. */
static bool field_u64(const char *buf, const char *key, uint64_t *out)
{
    size_t klen = strlen(key);
    for (const char *p = buf; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, key, klen) == 0) {
            p += klen;
            while (*p == ' ' || *p == '\t')
                p++;
            char *end;
            errno = 0;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p || errno)
                return false;
            *out = v;
            return true;
        }
    }
    return false;
}

int rt_pio_parse(const char *buf, uint64_t *read_bytes, uint64_t *write_bytes)
{
    if (!field_u64(buf, "read_bytes:", read_bytes) || !field_u64(buf, "write_bytes:", write_bytes))
        return -EINVAL;
    return 0;
}

int rt_pio_read(int proc_fd, int32_t pid, uint64_t *read_bytes, uint64_t *write_bytes)
{
    char path[32], buf[512];
    snprintf(path, sizeof(path), "%d/io", (int)pid);
    ssize_t n = rt_read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return rt_pio_parse(buf, read_bytes, write_bytes);
}

int rt_ppss_read(int proc_fd, int32_t pid, uint64_t *pss_bytes)
{
    char path[40], buf[2048];
    snprintf(path, sizeof(path), "%d/smaps_rollup", (int)pid);
    ssize_t n = rt_read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    uint64_t kb;
    if (!field_u64(buf, "Pss:", &kb))
        return n == 0 ? -ENODATA : -EINVAL; /* kernel threads and zombies: empty */
    *pss_bytes = kb * 1024;
    return 0;
}

/* The first three numbers after "key:" (real, effective, saved). */
static bool ids3(const char *buf, const char *key, uint32_t out[3])
{
    size_t klen = strlen(key);
    for (const char *p = buf; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, key, klen) != 0)
            continue;
        p += klen;
        for (int i = 0; i < 3; i++) {
            char *end;
            errno = 0;
            unsigned long v = strtoul(p, &end, 10);
            if (end == p || errno || v > UINT32_MAX || (*end != '\t' && *end != ' '))
                return false;
            out[i] = (uint32_t)v;
            p = end;
        }
        return true;
    }
    return false;
}

int rt_pcreds_parse(const char *buf, struct rt_pcreds *out)
{
    uint32_t u[3], g[3];
    if (!ids3(buf, "Uid:", u) || !ids3(buf, "Gid:", g))
        return -EINVAL;
    for (int i = 0; i < 3; i++) {
        out->uid[i] = (uid_t)u[i];
        out->gid[i] = (gid_t)g[i];
    }
    return 0;
}

int rt_pcreds_read(int proc_fd, int32_t pid, struct rt_pcreds *out)
{
    char path[32], buf[4096];
    snprintf(path, sizeof(path), "%d/status", (int)pid);
    ssize_t n = rt_read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return n == -ESRCH ? -ENOENT : (int)n;
    return rt_pcreds_parse(buf, out);
}

int rt_phwm_parse(const char *buf, uint64_t *bytes)
{
    const char *p = strstr(buf, "\nVmHWM:");
    if (!p)
        return -ENODATA;
    char *end;
    unsigned long long kib = strtoull(p + 7, &end, 10);
    if (end == p + 7 || strncmp(end, " kB", 3) != 0 || kib > UINT64_MAX / 1024)
        return -EINVAL;
    *bytes = (uint64_t)kib * 1024;
    return 0;
}

int rt_phwm_read(int proc_fd, int32_t pid, uint64_t *bytes)
{
    char path[32], buf[4096];
    snprintf(path, sizeof(path), "%d/status", (int)pid);
    ssize_t n = rt_read_file_at(proc_fd, path, buf, sizeof(buf));
    if (n < 0)
        return n == -ESRCH ? -ENOENT : (int)n;
    return rt_phwm_parse(buf, bytes);
}

int rt_pdump_owner(int proc_fd, int32_t pid, uid_t *uid, gid_t *gid)
{
    /* Any file of the process would do (not its directory): stat always exists. */
    char path[32];
    snprintf(path, sizeof(path), "%d/stat", (int)pid);
    struct stat st;
    if (fstatat(proc_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ESRCH ? -ENOENT : -errno;
    *uid = st.st_uid;
    *gid = st.st_gid;
    return 0;
}

static void push(int32_t **kids, size_t *n, size_t *cap, int32_t pid)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *kids = rt_xrealloc(*kids, *cap * sizeof(**kids));
    }
    (*kids)[(*n)++] = pid;
}

void rt_pchildren_parse(const char *text, int32_t **kids, size_t *n, size_t *cap)
{
    for (const char *p = text; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (pid > 0 && pid <= INT32_MAX)
            push(kids, n, cap, (int32_t)pid);
        p = end;
    }
}

static int read_children_file(int proc_fd, const char *path, int32_t **kids, size_t *n, size_t *cap)
{
    char buf[8192];
    int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* The file may exceed one buffer for processes with thousands of children:
     * read in chunks and carry a partial number across. */
    char carry[16];
    size_t carry_len = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        for (ssize_t i = 0; i < r; i++) {
            char c = buf[i];
            if (c >= '0' && c <= '9') {
                if (carry_len < sizeof(carry) - 1)
                    carry[carry_len++] = c;
            } else if (carry_len) {
                carry[carry_len] = '\0';
                push(kids, n, cap, (int32_t)strtol(carry, NULL, 10));
                carry_len = 0;
            }
        }
    }
    if (carry_len) {
        carry[carry_len] = '\0';
        push(kids, n, cap, (int32_t)strtol(carry, NULL, 10));
    }
    close(fd);
    return 0;
}

int rt_pchildren_read(int proc_fd, int32_t pid, int32_t num_threads, int32_t **kids, size_t *n,
                      size_t *cap)
{
    char path[300];
    if (num_threads <= 1) {
        snprintf(path, sizeof(path), "%d/task/%d/children", (int)pid, (int)pid);
        return read_children_file(proc_fd, path, kids, n, cap);
    }
    snprintf(path, sizeof(path), "%d/task", (int)pid);
    int dfd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return -e;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!rt_str_all_digits(de->d_name))
            continue;
        snprintf(path, sizeof(path), "%d/task/%s/children", (int)pid, de->d_name);
        int r = read_children_file(proc_fd, path, kids, n, cap);
        if (r == -ENOENT || r == -ESRCH)
            continue; /* a thread that just exited */
        if (r < 0)
            rc = r;
    }
    closedir(d);
    return rc;
}
