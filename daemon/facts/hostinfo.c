#include "facts/hostinfo.h"

#include "facts/osrelease.h"

#include "system/log.h"
#include "rt/json.h"
#include "rt/util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Placeholders firmware vendors leave in DMI strings (compared lowercase):
 * phrases anywhere in the value, short words only as the whole value. */
static const char *const asset_tag_phrases[] = {
    "not specified", "default string", "to be filled", "o.e.m", "asset tag",
    "not available", "not applicable",
};
static const char *const asset_tag_words[] = {"none", "n/a", "na", "null", "unknown", "tbd"};

bool rt_host_asset_tag_usable(const char *tag)
{
    bool meaningful = false;
    for (const char *p = tag; *p; p++) {
        if (!isprint((unsigned char)*p))
            return false;
        if (isalnum((unsigned char)*p) && *p != '0')
            meaningful = true; /* "0000", "-", "..." are not identities */
    }
    if (!meaningful)
        return false;
    char lower[RT_HOST_STR];
    size_t i = 0;
    for (; tag[i] && i < sizeof(lower) - 1; i++)
        lower[i] = (char)tolower((unsigned char)tag[i]);
    lower[i] = '\0';
    for (size_t k = 0; k < RT_ARRAY_SIZE(asset_tag_phrases); k++)
        if (strstr(lower, asset_tag_phrases[k]))
            return false;
    for (size_t k = 0; k < RT_ARRAY_SIZE(asset_tag_words); k++)
        if (strcmp(lower, asset_tag_words[k]) == 0)
            return false;
    return true;
}

static bool is_machine_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!isxdigit((unsigned char)s[n]))
            return false;
    return n == 32;
}

/* The board asset tag identifies cloud instances (an EC2 instance id) across
 * re-imaging; elsewhere the systemd machine id is the stable identity. */
static void read_host_id(const struct rt_roots *r, const char *etc_dir, struct rt_host_info *h)
{
    char buf[RT_HOST_STR];
    if (rt_read_str_at(r->sys_fd, "class/dmi/id/board_asset_tag", buf, sizeof(buf)) > 0 &&
        rt_host_asset_tag_usable(buf)) {
        rt_strlcpy(h->id, buf, sizeof(h->id));
        return;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/machine-id", etc_dir);
    ssize_t n = rt_read_str_at(AT_FDCWD, path, buf, sizeof(buf));
    if (n > 0 && is_machine_id(buf))
        rt_strlcpy(h->id, buf, sizeof(h->id));
    else
        rt_warn("host info: no usable board asset tag nor machine id in %s (%s)", path,
                n < 0 ? strerror((int)-n) : "not 32 hex digits");
}

/* /proc/sys/kernel/hostname is what gethostname(2) returns for the daemon's
 * UTS namespace; reading it through the proc root keeps tests on fixtures. */
static void read_hostname(const struct rt_roots *r, struct rt_host_info *h)
{
    if (rt_read_str_at(r->proc_fd, "sys/kernel/hostname", h->hostname, sizeof(h->hostname)) > 0)
        return;
    h->hostname[0] = '\0';
    char buf[RT_HOST_STR];
    if (gethostname(buf, sizeof(buf)) == 0) {
        buf[sizeof(buf) - 1] = '\0';
        rt_strlcpy(h->hostname, buf, sizeof(h->hostname));
    }
}

/* os-release(5): <etc>/os-release, else <etc>/../usr/lib/os-release (that
 * is /usr/lib/os-release on the host itself). */
static void read_os(const char *etc_dir, struct rt_host_info *h)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/os-release", etc_dir);
    if (rt_os_release_name(path, h->os, sizeof(h->os)))
        return;
    snprintf(path, sizeof(path), "%s/../usr/lib/os-release", etc_dir);
    if (!rt_os_release_name(path, h->os, sizeof(h->os)))
        rt_warn("host info: no usable os-release in %s or %s/../usr/lib", etc_dir, etc_dir);
}

/* The proc root's osrelease first, like the hostname; else uname(2). */
static void read_kernel(const struct rt_roots *r, struct rt_host_info *h)
{
    if (rt_read_str_at(r->proc_fd, "sys/kernel/osrelease", h->kernel, sizeof(h->kernel)) > 0)
        return;
    struct utsname u;
    rt_strlcpy(h->kernel, uname(&u) == 0 ? u.release : "", sizeof(h->kernel));
}

bool rt_host_first_ipv4(const struct ifaddrs *list, char *buf, size_t size)
{
    for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK))
            continue;
        const struct in_addr *a = &((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr;
        if ((ntohl(a->s_addr) >> 24) == 127)
            continue;
        return inet_ntop(AF_INET, a, buf, (socklen_t)size) != NULL;
    }
    return false;
}

static void read_ip(struct rt_host_info *h)
{
    struct ifaddrs *list;
    if (getifaddrs(&list) < 0) {
        rt_warn("host info: getifaddrs: %s", strerror(errno));
        return;
    }
    if (!rt_host_first_ipv4(list, h->ip, sizeof(h->ip)))
        h->ip[0] = '\0';
    freeifaddrs(list);
}

/* Streamed: /proc/cpuinfo is ~1 KiB per CPU, far beyond a stack buffer on
 * large hosts. */
static void read_cpuinfo(const struct rt_roots *r, struct rt_host_info *h)
{
    int fd = openat(r->proc_fd, "cpuinfo", O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        rt_warn("host info: cannot read %s/cpuinfo: %s", r->proc, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (rt_str_starts_with(line, "processor")) {
            h->vcpus++;
        } else if (!h->cpu_model[0] && rt_str_starts_with(line, "model name")) {
            char *colon = strchr(line, ':');
            if (colon)
                rt_strlcpy(h->cpu_model, rt_trim(colon + 1), sizeof(h->cpu_model));
        }
    }
    free(line);
    fclose(f);
    if (!h->vcpus)
        rt_warn("host info: no processor entries in %s/cpuinfo", r->proc);
}

static void read_memory(const struct rt_roots *r, struct rt_host_info *h)
{
    char buf[8192];
    if (rt_read_file_at(r->proc_fd, "meminfo", buf, sizeof(buf)) < 0) {
        rt_warn("host info: cannot read %s/meminfo", r->proc);
        return;
    }
    const char *line = buf;
    while (line && !rt_str_starts_with(line, "MemTotal:")) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (line && isdigit((unsigned char)line[9 + strspn(line + 9, " \t")])) {
        char *end;
        errno = 0;
        unsigned long long kib = strtoull(line + 9, &end, 10);
        if (errno == 0 && end != line + 9 && strncmp(end, " kB", 3) == 0)
            h->memory_mib = kib / 1024;
    }
    if (!h->memory_mib)
        rt_warn("host info: no usable MemTotal in %s/meminfo", r->proc);
}

/* Not storage: loop/ram/zram are memory or file backed, sr/fd removable
 * media (including cloud config-drive ISOs). */
static const char *const not_disks[] = {"loop", "ram", "zram", "sr", "fd"};

/* Whole physical disks only: /sys/block holds no partitions; a device with
 * members in slaves/ (dm-*, md*, bcache) is built from disks already counted;
 * hidden devices are NVMe multipath paths of a namespace counted through its
 * head. */
static uint64_t storage_bytes(const struct rt_roots *r)
{
    int fd = openat(r->sys_fd, "block", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        rt_warn("host info: cannot list %s/block: %s", r->sys, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 0;
    }
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        bool skip = name[0] == '.';
        for (size_t i = 0; !skip && i < RT_ARRAY_SIZE(not_disks); i++)
            skip = rt_str_starts_with(name, not_disks[i]);
        if (skip)
            continue;
        char path[NAME_MAX + 16];
        uint64_t v;
        snprintf(path, sizeof(path), "%s/hidden", name);
        if (rt_read_u64_at(dirfd(d), path, &v) == 0 && v)
            continue;
        snprintf(path, sizeof(path), "%s/slaves", name);
        if (rt_dir_has_entries_at(dirfd(d), path))
            continue;
        snprintf(path, sizeof(path), "%s/size", name);
        if (rt_read_u64_at(dirfd(d), path, &v) == 0)
            total += v * 512; /* always 512-byte units, whatever the sector size */
    }
    closedir(d);
    return total;
}

int rt_host_info_collect_at(const struct rt_roots *r, const char *etc_dir,
                            struct rt_host_info *out)
{
    memset(out, 0, sizeof(*out));
    read_host_id(r, etc_dir, out);
    read_hostname(r, out);
    read_os(etc_dir, out);
    read_kernel(r, out);
    read_ip(out);
    read_cpuinfo(r, out);
    read_memory(r, out);
    out->storage_bytes = storage_bytes(r);
    return !out->id[0] + !out->hostname[0] + !out->ip[0] + !out->vcpus + !out->cpu_model[0] +
           !out->memory_mib + !out->storage_bytes;
}

int rt_host_info_collect(const struct rt_roots *r, struct rt_host_info *out)
{
    return rt_host_info_collect_at(r, "/etc", out);
}

void rt_host_info_set_gpus(struct rt_host_info *h, const char *model, unsigned count,
                           uint64_t memory_mib)
{
    h->gpu_count = count;
    h->gpu_memory_mib = count ? memory_mib : 0;
    rt_strlcpy(h->gpu_model, count && model ? model : "", sizeof(h->gpu_model));
}

static struct json_object *str_or_null(const char *s)
{
    return s[0] ? json_object_new_string(s) : NULL;
}

static struct json_object *u64_or_null(uint64_t v)
{
    return v ? json_object_new_uint64(v) : NULL;
}

struct json_object *rt_host_info_to_json(const struct rt_host_info *h)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "host_id", str_or_null(h->id));
    json_object_object_add(o, "host_hostname", str_or_null(h->hostname));
    json_object_object_add(o, "host_ip", str_or_null(h->ip));
    json_object_object_add(o, "host_server_allocation", NULL);
    json_object_object_add(o, "host_vcpus", u64_or_null(h->vcpus));
    json_object_object_add(o, "host_cpu_model", str_or_null(h->cpu_model));
    json_object_object_add(o, "host_memory_mib", u64_or_null(h->memory_mib));
    json_object_object_add(o, "host_gpu_model", h->gpu_count ? str_or_null(h->gpu_model) : NULL);
    json_object_object_add(o, "host_gpu_count", u64_or_null(h->gpu_count));
    json_object_object_add(o, "host_gpu_memory_mib", h->gpu_count ? u64_or_null(h->gpu_memory_mib) : NULL);
    json_object_object_add(o, "host_storage_gb",
                           h->storage_bytes ? rt_json_double((double)h->storage_bytes / 1e9, -1) : NULL);
    return o;
}

struct json_object *rt_host_info_facts_json(const struct rt_host_info *h)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "hostname", str_or_null(h->hostname));
    json_object_object_add(o, "os", str_or_null(h->os));
    json_object_object_add(o, "kernel", str_or_null(h->kernel));
    json_object_object_add(o, "cpu_model", str_or_null(h->cpu_model));
    json_object_object_add(o, "vcpus", u64_or_null(h->vcpus));
    json_object_object_add(o, "memory_mib", u64_or_null(h->memory_mib));
    json_object_object_add(o, "storage_gb",
                           h->storage_bytes ? rt_json_double((double)h->storage_bytes / 1e9, 3) : NULL);
    json_object_object_add(o, "gpu_model", h->gpu_count ? str_or_null(h->gpu_model) : NULL);
    json_object_object_add(o, "gpu_count", json_object_new_int64(h->gpu_count));
    json_object_object_add(o, "gpu_memory_mib", h->gpu_count ? u64_or_null(h->gpu_memory_mib) : NULL);
    return o;
}
