/* run --gpus N: the GPUs the daemon gave the job, made the command's
 * (CUDA_VISIBLE_DEVICES by UUID for NVIDIA, which also names MIG instances;
 * HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES by the card's rank for AMD),
 * and said when fewer than asked for are there or free. */
#include "run/run.h"

#include "rt/json.h"

#include <stdio.h>
#include <string.h>

/* Append "NAME=VALUE\0" to env; false when it does not fit. */
static bool put(char *env, size_t size, size_t *len, const char *name, const char *value)
{
    int n = snprintf(env + *len, size - *len, "%s=%s", name, value);
    if (n < 0 || (size_t)n + 1 > size - *len)
        return false;
    *len += (size_t)n + 1;
    return true;
}

static void join(char *buf, size_t size, const char *item, const char *sep)
{
    size_t at = strlen(buf);
    snprintf(buf + at, size - at, "%s%s", at ? sep : "", item);
}

size_t run_gpus_env(struct json_object *given, unsigned asked, char *env, size_t size)
{
    size_t n = given ? json_object_array_length(given) : 0, n_free = 0, len = 0;
    char cuda[2048] = "", hip[512] = "", busy[1024] = "";
    for (size_t i = 0; i < n; i++) {
        struct json_object *g = json_object_array_get_idx(given, i);
        const char *uuid = rt_json_get_string(g, "uuid"), *vendor = rt_json_get_string(g, "vendor");
        int64_t index = 0;
        bool free = false;
        rt_json_get_i64(g, "index", &index);
        rt_json_get_bool(g, "free", &free);
        char idx[24], what[160];
        snprintf(idx, sizeof(idx), "%lld", (long long)index);
        if (vendor && strcmp(vendor, "amd") == 0)
            join(hip, sizeof(hip), idx, ",");
        else
            join(cuda, sizeof(cuda), uuid ? uuid : idx, ",");
        n_free += free;
        if (!free) {
            snprintf(what, sizeof(what), "GPU %lld (%s)", (long long)index, uuid ? uuid : "?");
            join(busy, sizeof(busy), what, ", ");
        }
    }
    if (n == 0)
        CTL_ERR("warn: --gpus %u: the daemon sees no GPU on this host; the command gets none", asked);
    else if (n < asked)
        CTL_ERR("warn: --gpus %u: the host has %zu; the command gets them all", asked, n);
    if (n && n_free < n)
        CTL_ERR("warn: --gpus %u: %s free; the least busy of the others: %s", asked,
                n_free ? (n_free == 1 ? "only 1 is" : "only some are") : "none is", busy);
    if ((cuda[0] && !put(env, size, &len, "CUDA_VISIBLE_DEVICES", cuda)) ||
        (hip[0] && (!put(env, size, &len, "HIP_VISIBLE_DEVICES", hip) ||
                    !put(env, size, &len, "ROCR_VISIBLE_DEVICES", hip))))
        return 0;
    return len;
}
