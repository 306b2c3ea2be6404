/* AMD back end: amdgpu devices from <sys>/class/drm/cardN/device, read from
 * sysfs (no libdrm), and the parser for DRM fdinfo used by job attribution. */
#include "collect/gpu/gpu_internal.h"

#include "system/log.h"
#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct amd_gpu {
    unsigned card;
    int sys_fd;       /* the collector's, not owned */
    int proc_fd;      /* the collector's, not owned */
    struct gpu_amd_procs *procs;
    int dev_fd;       /* O_PATH fd of class/drm/cardN/device */
    int hwmon_fd;     /* O_PATH fd of device/hwmon/hwmonM, or -1 */
    char pci[32], name[96], uuid[96];
    uint64_t vram_total; /* kept for a runtime-suspended device */
    bool no_busy;
    char err[96];
};

static ssize_t readlink_base(int dirfd, const char *path, char *out, size_t size)
{
    char buf[PATH_MAX];
    ssize_t n = readlinkat(dirfd, path, buf, sizeof(buf) - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    const char *base = strrchr(buf, '/');
    return (ssize_t)rt_strlcpy(out, base ? base + 1 : buf, size);
}

static int open_hwmon(int dev_fd)
{
    int dfd = openat(dev_fd, "hwmon", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    int fd = -1;
    struct dirent *e;
    while (fd < 0 && (e = readdir(d)))
        if (rt_str_starts_with(e->d_name, "hwmon"))
            fd = openat(dirfd(d), e->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
    closedir(d);
    return fd;
}

static bool device_present(const struct amd_gpu *g)
{
    return faccessat(g->dev_fd, "vendor", F_OK, 0) == 0;
}

/* Reading most attributes wakes a runtime-suspended GPU; leave it asleep. */
static bool suspended(const struct amd_gpu *g)
{
    char buf[32];
    return rt_read_str_at(g->dev_fd, "power/runtime_status", buf, sizeof(buf)) > 0 && strcmp(buf, "suspended") == 0;
}

static enum gpu_status amd_util(void *dev, double *pct)
{
    struct amd_gpu *g = dev;
    if (suspended(g)) {
        *pct = 0;
        return GPU_OK;
    }
    uint64_t v;
    int r = g->no_busy ? -ENOENT : rt_read_u64_at(g->dev_fd, "gpu_busy_percent", &v);
    if (r == 0) {
        *pct = v > 100 ? 100 : (double)v;
        return GPU_OK;
    }
    if (!device_present(g)) {
        snprintf(g->err, sizeof(g->err), "device removed");
        return GPU_LOST;
    }
    if (r == -ENOENT)
        g->no_busy = true; /* older kernels: no gpu_busy_percent; EBUSY etc. are transient */
    return GPU_FAILED;
}

/* The current level of pp_dpm_sclk, the line marked '*': "1: 1800Mhz *". */
static bool sclk_from_dpm(int dev_fd, uint32_t *mhz)
{
    char buf[1024];
    if (rt_read_file_at(dev_fd, "pp_dpm_sclk", buf, sizeof(buf)) <= 0)
        return false;
    char *save = NULL; /* pollers of several cards run this concurrently */
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *colon = strchr(line, ':');
        unsigned v;
        if (strchr(line, '*') && colon && sscanf(colon + 1, "%u", &v) == 1) {
            *mhz = v;
            return true;
        }
    }
    return false;
}

static void read_hwmon(const struct amd_gpu *g, struct rt_gpu_dev *d)
{
    uint64_t v;
    if (g->hwmon_fd < 0)
        return;
    if (rt_read_u64_at(g->hwmon_fd, "temp1_input", &v) == 0) { /* millidegrees */
        d->has_temperature = true;
        d->temperature_c = (uint32_t)((v + 500) / 1000);
    }
    if (rt_read_u64_at(g->hwmon_fd, "power1_average", &v) == 0 || rt_read_u64_at(g->hwmon_fd, "power1_input", &v) == 0) {
        d->has_power = true; /* microwatts */
        d->power_w = (double)v / 1e6;
    }
    if (rt_read_u64_at(g->hwmon_fd, "freq1_input", &v) == 0) { /* Hz */
        d->has_frequency = true;
        d->frequency_mhz = (uint32_t)((v + 500000) / 1000000);
    }
}

static void push_proc(struct rt_gpu_dev *d, const struct rt_gpu_proc *p)
{
    if (d->n_procs == d->procs_cap) {
        d->procs_cap = d->procs_cap ? 2 * d->procs_cap : 16;
        d->procs = rt_xrealloc(d->procs, d->procs_cap * sizeof(*d->procs));
    }
    d->procs[d->n_procs++] = *p;
    d->sm_total += p->sm_pct;
    d->procs_vram += p->vram_bytes;
}

static int cmp_proc(const void *a, const void *b)
{
    int32_t x = ((const struct rt_gpu_proc *)a)->pid, y = ((const struct rt_gpu_proc *)b)->pid;
    return (x > y) - (x < y);
}

static enum gpu_status amd_poll(void *dev, struct rt_gpu_dev *d)
{
    struct amd_gpu *g = dev;
    if (!device_present(g)) {
        snprintf(g->err, sizeof(g->err), "device removed");
        return GPU_LOST;
    }
    snprintf(d->name, sizeof(d->name), "%s", g->name);
    snprintf(d->uuid, sizeof(d->uuid), "%s", g->uuid);
    snprintf(d->host_id, sizeof(d->host_id), "%s", g->pci);
    snprintf(d->bus_id, sizeof(d->bus_id), "%s", g->pci);
    d->vram_total = g->vram_total;
    if (suspended(g))
        return GPU_OK; /* asleep: nothing in use, sensors not woken */
    uint64_t v;
    if (rt_read_u64_at(g->dev_fd, "mem_info_vram_total", &v) == 0)
        d->vram_total = g->vram_total = v;
    if (rt_read_u64_at(g->dev_fd, "mem_info_vram_used", &v) == 0)
        d->vram_used = v;
    read_hwmon(g, d);
    if (!d->has_frequency && sclk_from_dpm(g->dev_fd, &d->frequency_mhz))
        d->has_frequency = true;
    gpu_amd_procs_read(g->procs, g->sys_fd, g->proc_fd, g->card, g->pci, d, push_proc);
    if (d->n_procs > 1)
        qsort(d->procs, d->n_procs, sizeof(*d->procs), cmp_proc);
    return GPU_OK;
}

static enum gpu_status amd_recover(void *dev)
{
    struct amd_gpu *g = dev;
    char path[64];
    snprintf(path, sizeof(path), "class/drm/card%u/device", g->card);
    int fd = openat(g->sys_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return GPU_LOST;
    close(g->dev_fd);
    g->dev_fd = fd;
    if (g->hwmon_fd >= 0)
        close(g->hwmon_fd);
    g->hwmon_fd = open_hwmon(fd);
    return device_present(g) ? GPU_OK : GPU_LOST;
}

static const char *amd_last_error(void *dev) { return ((struct amd_gpu *)dev)->err; }

static void amd_destroy(void *dev)
{
    struct amd_gpu *g = dev;
    if (g->dev_fd >= 0)
        close(g->dev_fd);
    if (g->hwmon_fd >= 0)
        close(g->hwmon_fd);
    gpu_amd_procs_free(g->procs);
    free(g);
}

static const struct gpu_dev_ops amd_ops = {
    .util = amd_util, .poll = amd_poll, .recover = amd_recover, .last_error = amd_last_error, .destroy = amd_destroy,
};

/* A card bound to amdgpu, or NULL. */
static struct amd_gpu *probe_card(int sys_fd, int proc_fd, unsigned card)
{
    char path[96], buf[128];
    snprintf(path, sizeof(path), "class/drm/card%u/device/vendor", card);
    if (rt_read_str_at(sys_fd, path, buf, sizeof(buf)) < 0 || strcasecmp(buf, "0x1002") != 0)
        return NULL;
    snprintf(path, sizeof(path), "class/drm/card%u/device/driver", card);
    if (readlink_base(sys_fd, path, buf, sizeof(buf)) < 0 || strcmp(buf, "amdgpu") != 0)
        return NULL; /* e.g. an old card on the radeon driver */
    struct amd_gpu *g = rt_xcalloc(1, sizeof(*g));
    g->card = card;
    g->sys_fd = sys_fd;
    g->proc_fd = proc_fd;
    snprintf(path, sizeof(path), "class/drm/card%u/device", card);
    if (readlink_base(sys_fd, path, g->pci, sizeof(g->pci)) <= 0 ||
        (g->dev_fd = openat(sys_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        free(g);
        return NULL;
    }
    g->procs = gpu_amd_procs_new();
    g->hwmon_fd = open_hwmon(g->dev_fd);
    if (rt_read_str_at(g->dev_fd, "product_name", g->name, sizeof(g->name)) < 0) {
        if (rt_read_str_at(g->dev_fd, "device", buf, sizeof(buf)) < 0)
            rt_strlcpy(buf, "unknown", sizeof(buf));
        snprintf(g->name, sizeof(g->name), "AMD GPU %.32s", buf);
    }
    /* unique_id (a 64-bit serial on datacenter parts) identifies the board;
     * otherwise the PCI address, as the references do. */
    if (rt_read_str_at(g->dev_fd, "unique_id", g->uuid, sizeof(g->uuid)) < 0)
        rt_strlcpy(g->uuid, g->pci, sizeof(g->uuid));
    uint64_t v;
    if (rt_read_u64_at(g->dev_fd, "mem_info_vram_total", &v) == 0)
        g->vram_total = v;
    return g;
}

static int cmp_uint(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

void gpu_amd_discover(int sys_fd, int proc_fd, struct gpu_shared *sh)
{
    int dfd = openat(sys_fd, "class/drm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    unsigned *cards = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        uint64_t card;
        /* cardN only: connectors (card0-DP-1) and render nodes are not devices */
        if (rt_str_starts_with(e->d_name, "card") && rt_parse_u64(e->d_name + 4, &card) && card < 1u << 20) {
            cards = rt_xrealloc(cards, (n + 1) * sizeof(*cards));
            cards[n++] = (unsigned)card;
        }
    }
    closedir(d);
    qsort(cards, n, sizeof(*cards), cmp_uint);
    char (*seen)[32] = rt_xcalloc(n, sizeof(*seen));
    size_t n_seen = 0;
    for (size_t i = 0; i < n; i++) {
        struct amd_gpu *g = probe_card(sys_fd, proc_fd, cards[i]);
        if (!g)
            continue;
        bool dup = false;
        for (size_t k = 0; k < n_seen; k++)
            dup = dup || strcmp(seen[k], g->pci) == 0;
        if (dup) {
            amd_destroy(g);
            continue;
        }
        rt_strlcpy(seen[n_seen++], g->pci, sizeof(seen[0]));
        gpu_shared_add_slot(sh, GPU_AMD, g->card, &amd_ops, g);
    }
    free(seen);
    free(cards);
}

/* "<uint> [KiB|MiB|GiB]" (no unit: bytes) */
static bool parse_bytes(const char *v, uint64_t *out)
{
    if (*v < '0' || *v > '9') /* strtoull would take "-3" */
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v)
        return false;
    while (*end == ' ' || *end == '\t')
        end++;
    unsigned shift = 0;
    if (strcmp(end, "KiB") == 0)
        shift = 10;
    else if (strcmp(end, "MiB") == 0)
        shift = 20;
    else if (strcmp(end, "GiB") == 0)
        shift = 30;
    else if (*end)
        return false;
    if (shift && n > (~0ULL >> shift))
        return false;
    *out = (uint64_t)n << shift;
    return true;
}

static bool parse_ns(const char *v, uint64_t *out)
{
    if (*v < '0' || *v > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v)
        return false;
    while (*end == ' ')
        end++;
    if (*end && strcmp(end, "ns") != 0)
        return false;
    *out = n;
    return true;
}

bool gpu_amd_parse_fdinfo(const char *text, struct gpu_amd_fdinfo *out)
{
    memset(out, 0, sizeof(*out));
    out->gfx_capacity = 1;
    bool amdgpu = false, has_id = false, has_resident = false;
    uint64_t resident = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[256];
        if (len < sizeof(line)) {
            memcpy(line, p, len);
            line[len] = '\0';
            char *colon = strchr(line, ':');
            if (colon) {
                *colon = '\0';
                const char *key = line;
                char *val = rt_trim(colon + 1);
                uint64_t v;
                if (strcmp(key, "drm-driver") == 0)
                    amdgpu = strcmp(val, "amdgpu") == 0;
                else if (strcmp(key, "drm-client-id") == 0)
                    has_id = rt_parse_u64(val, &out->client_id);
                else if (strcmp(key, "drm-pdev") == 0)
                    rt_strlcpy(out->pdev, val, sizeof(out->pdev));
                else if (strcmp(key, "drm-memory-vram") == 0 && parse_bytes(val, &v)) {
                    out->has_vram = true;
                    out->vram_bytes = v;
                } else if (strcmp(key, "drm-resident-vram") == 0 && parse_bytes(val, &v)) {
                    has_resident = true;
                    resident = v;
                } else if (strcmp(key, "drm-engine-gfx") == 0 && parse_ns(val, &v)) {
                    out->has_gfx = true;
                    out->gfx_ns = v;
                } else if (strcmp(key, "drm-engine-capacity-gfx") == 0 && rt_parse_u64(val, &v) && v > 0) {
                    out->gfx_capacity = v;
                }
            }
        }
        p += len + (nl ? 1 : 0);
    }
    if (!out->has_vram && has_resident) { /* kernels that dropped the legacy key */
        out->has_vram = true;
        out->vram_bytes = resident;
    }
    return amdgpu && has_id && out->pdev[0];
}
