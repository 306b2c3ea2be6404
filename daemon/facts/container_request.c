#include "facts/container_request.h"

#include "cgroup/classify.h"
#include "rt/json.h"
#include "rt/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FILE_MAX (4u << 20) /* a hostconfig.json or an OCI spec */

/* Any JSON value, nested at most 64 deep, nothing but white space after it. */
static struct json_object *parse(const char *txt, size_t len)
{
    struct json_tokener *tok = json_tokener_new_ex(64);
    struct json_object *o = json_tokener_parse_ex(tok, txt, (int)len);
    size_t end = o ? json_tokener_get_parse_end(tok) : 0;
    while (o && end < len && isspace((unsigned char)txt[end]))
        end++;
    if (o && end != len) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    return o;
}

/* A root-owned JSON state file, whole, not through a link: NULL with *err
 * (-ENOENT, -EINVAL …). */
static struct json_object *read_json(const char *path, int *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0) {
        *err = errno == ELOOP ? -EINVAL : -errno;
        return NULL;
    }
    struct stat st;
    struct json_object *o = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && st.st_size > 0 &&
        (uint64_t)st.st_size <= STATE_FILE_MAX) {
        char *txt = rt_xmalloc((size_t)st.st_size + 1);
        ssize_t n = read(fd, txt, (size_t)st.st_size);
        if (n == st.st_size)
            o = parse(txt, (size_t)n);
        free(txt);
    }
    close(fd);
    *err = o ? 0 : -EINVAL;
    return o;
}

static void set_cpus(struct rt_request *r, double cpus)
{
    if (cpus > 0 && cpus <= RT_REQUEST_MAX_CPUS)
        r->cpus = round(cpus * 1000) / 1000;
}

static void set_memory(struct rt_request *r, int64_t bytes)
{
    if (bytes > 0 && (uint64_t)bytes <= RT_REQUEST_MAX_MEMORY)
        r->memory_bytes = (uint64_t)bytes;
}

/* A quota of QUOTA microseconds per PERIOD: QUOTA/PERIOD CPUs. */
static void quota_cpus(struct rt_request *r, int64_t quota, int64_t period)
{
    if (quota > 0)
        set_cpus(r, (double)quota / (double)(period > 0 ? period : 100000));
}

static void add_uuid(struct json_object **uuids, const char *id)
{
    if (!(rt_str_starts_with(id, "GPU-") || rt_str_starts_with(id, "MIG-")) || strlen(id) > RT_REQUEST_UUID_MAX)
        return;
    if (!*uuids)
        *uuids = json_object_new_array();
    if (json_object_array_length(*uuids) < RT_REQUEST_MAX_UUIDS)
        json_object_array_add(*uuids, json_object_new_string(id));
}

static bool gpu_capability(struct json_object *caps)
{
    for (size_t k = 0; caps && k < json_object_array_length(caps); k++) {
        struct json_object *set = json_object_array_get_idx(caps, k);
        for (size_t m = 0; json_object_is_type(set, json_type_array) && m < json_object_array_length(set); m++) {
            const char *c = json_object_get_string(json_object_array_get_idx(set, m));
            if (c && strcmp(c, "gpu") == 0)
                return true;
        }
    }
    return false;
}

/* HostConfig.DeviceRequests of --gpus: a count, or the devices by index or
 * UUID ("all" is -1: how many is the host's to say, not the container's). */
static void docker_gpus(struct json_object *reqs, struct rt_request *r, struct json_object **uuids)
{
    uint64_t gpus = 0;
    for (size_t i = 0; reqs && i < json_object_array_length(reqs); i++) {
        struct json_object *dr = json_object_array_get_idx(reqs, i), *ids = rt_json_get_array(dr, "DeviceIDs");
        int64_t count = 0;
        if (!gpu_capability(rt_json_get_array(dr, "Capabilities")))
            continue;
        if (ids && json_object_array_length(ids)) {
            for (size_t k = 0; k < json_object_array_length(ids); k++) {
                struct json_object *id = json_object_array_get_idx(ids, k);
                if (json_object_is_type(id, json_type_string))
                    add_uuid(uuids, json_object_get_string(id));
            }
            gpus += json_object_array_length(ids);
        } else if (rt_json_get_i64(dr, "Count", &count) && count > 0) {
            gpus += (uint64_t)count;
        }
    }
    if (gpus <= RT_REQUEST_MAX_GPUS)
        r->gpus = (uint32_t)gpus;
}

static int docker(const char *root, const char *id, struct rt_request *r, struct json_object **uuids)
{
    char path[PATH_MAX];
    int err;
    if (snprintf(path, sizeof(path), "%s/var/lib/docker/containers/%s/hostconfig.json", root, id) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    struct json_object *hc = read_json(path, &err);
    if (!hc)
        return err;
    int64_t nano = 0, quota = 0, period = 0, mem = 0;
    if (rt_json_get_i64(hc, "NanoCpus", &nano) && nano > 0)
        set_cpus(r, (double)nano / 1e9);
    else if (rt_json_get_i64(hc, "CpuQuota", &quota))
        quota_cpus(r, quota, rt_json_get_i64(hc, "CpuPeriod", &period) ? period : 0);
    if (rt_json_get_i64(hc, "Memory", &mem))
        set_memory(r, mem);
    docker_gpus(rt_json_get_array(hc, "DeviceRequests"), r, uuids);
    json_object_put(hc);
    return 0;
}

/* The OCI spec podman ran the container with: its limits and GPU devices
 * (--device nvidia.com/gpu=N through CDI, or /dev/nvidiaN: one node each). */
static void podman_spec(struct json_object *spec, struct rt_request *r)
{
    struct json_object *linux_ = rt_json_get_object(spec, "linux"), *res = rt_json_get_object(linux_, "resources");
    struct json_object *cpu = rt_json_get_object(res, "cpu");
    int64_t quota = 0, period = 0, mem = 0;
    if (rt_json_get_i64(cpu, "quota", &quota))
        quota_cpus(r, quota, rt_json_get_i64(cpu, "period", &period) ? period : 0);
    if (rt_json_get_i64(rt_json_get_object(res, "memory"), "limit", &mem))
        set_memory(r, mem);
    struct json_object *devs = rt_json_get_array(linux_, "devices");
    uint32_t gpus = 0;
    for (size_t i = 0; devs && i < json_object_array_length(devs); i++) {
        const char *p = rt_json_get_string(json_object_array_get_idx(devs, i), "path");
        gpus += p && rt_str_starts_with(p, "/dev/nvidia") && p[11] && rt_str_all_digits(p + 11);
    }
    if (gpus <= RT_REQUEST_MAX_GPUS)
        r->gpus = gpus;
}

/* The spec under any storage driver's directory (overlay-containers, vfs-…). */
static int podman(const char *root, const char *id, struct rt_request *r)
{
    char dir[PATH_MAX], path[PATH_MAX + 128];
    if (snprintf(dir, sizeof(dir), "%s/var/lib/containers/storage", root) >= (int)sizeof(dir))
        return -ENAMETOOLONG;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    int rc = -ENOENT;
    struct dirent *e;
    while (rc == -ENOENT && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 11 || strcmp(e->d_name + n - 11, "-containers") != 0 || n > 64)
            continue;
        if (snprintf(path, sizeof(path), "%s/%s/%s/userdata/config.json", dir, e->d_name, id) >= (int)sizeof(path))
            continue;
        struct json_object *spec = read_json(path, &rc);
        if (spec)
            podman_spec(spec, r);
        json_object_put(spec);
    }
    closedir(d);
    return rc;
}

int rt_container_request(const char *state_root, const char *runtime, const char *id, struct rt_request *out,
                         struct json_object **gpu_uuids)
{
    memset(out, 0, sizeof(*out));
    *gpu_uuids = NULL;
    if (!id || !rt_cg_is_container_id(id, strlen(id)))
        return -EINVAL;
    const char *root = state_root && strcmp(state_root, "/") != 0 ? state_root : "";
    if (strcmp(runtime, "docker") == 0)
        return docker(root, id, out, gpu_uuids);
    if (strcmp(runtime, "podman") == 0)
        return podman(root, id, out);
    return -EOPNOTSUPP;
}
