#include "rt/request.h"

#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool rt_request_empty(const struct rt_request *r)
{
    return r->cpus <= 0 && r->memory_bytes == 0 && r->gpus == 0;
}

uint64_t rt_request_round_memory_mib(double mib)
{
    static const uint64_t steps[] = {128, 256, 512, 1024, 2048};
    if (!(mib > 0)) /* also NaN */
        return steps[0];
    for (size_t i = 0; i < RT_ARRAY_SIZE(steps); i++)
        if (mib <= (double)steps[i])
            return steps[i];
    return (uint64_t)ceil(mib / 1024.0) * 1024;
}

double rt_round_half_even(double x)
{
    double r = round(x);
    if (fabs(x - trunc(x)) == 0.5)
        r = 2.0 * round(x / 2.0);
    return r;
}

bool rt_request_parse_memory(const char *s, uint64_t *out)
{
    static const struct {
        char unit;
        int shift;
    } units[] = {{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}, {'P', 50}};
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v))
        return false;
    size_t u = 0;
    while (u < RT_ARRAY_SIZE(units) && units[u].unit != (*end & ~0x20))
        u++;
    if (u == RT_ARRAY_SIZE(units))
        return false; /* a bare number: bytes or Slurm's MiB? Refused. */
    end++;
    if (strcasecmp(end, "") != 0 && strcasecmp(end, "B") != 0 && strcasecmp(end, "iB") != 0)
        return false;
    double bytes = ldexp(v, units[u].shift);
    if (!(bytes >= 1 && bytes <= (double)RT_REQUEST_MAX_MEMORY))
        return false;
    *out = (uint64_t)llround(bytes);
    return true;
}

static int bad(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

int rt_request_parse(const char *text, struct rt_request *out, char *why, size_t whylen)
{
    struct rt_request r = {0};
    bool seen[3] = {false, false, false};
    char *copy = rt_xstrdup(text), *rest = copy;
    int rc = 0;
    if (!*rt_trim(copy))
        rc = bad(why, whylen, "%s", "it is empty; give cpus=N, mem=SIZE and/or gpus=N, e.g. cpus=8,mem=64G,gpus=2");
    while (rc == 0 && rest) {
        char *item = rt_trim(strsep(&rest, ","));
        char *eq = strchr(item, '=');
        if (!eq) {
            rc = bad(why, whylen, "'%s' is not KEY=VALUE (cpus=N, mem=SIZE, gpus=N)", item);
            break;
        }
        *eq = '\0';
        char *key = rt_trim(item), *val = rt_trim(eq + 1);
        int k = strcmp(key, "cpus") == 0 ? 0 : strcmp(key, "mem") == 0 ? 1 : strcmp(key, "gpus") == 0 ? 2 : -1;
        if (k < 0) {
            rc = bad(why, whylen, "unknown key '%s' (cpus, mem, gpus)", key);
        } else if (seen[k]) {
            rc = bad(why, whylen, "'%s' is given twice", key);
        } else if (k == 0) {
            char *end;
            double v = strtod(val, &end);
            if (end == val || *end || !(v > 0 && v <= RT_REQUEST_MAX_CPUS))
                rc = bad(why, whylen, "cpus=%s is not a number of CPUs above 0 (e.g. cpus=8 or cpus=0.5)", val);
            r.cpus = v;
        } else if (k == 1) {
            if (!rt_request_parse_memory(val, &r.memory_bytes))
                rc = bad(why, whylen, "mem=%s is not a size with a unit (K, M, G or T: e.g. mem=64G)", val);
        } else {
            uint64_t v;
            if (!rt_parse_u64(val, &v) || v > RT_REQUEST_MAX_GPUS)
                rc = bad(why, whylen, "gpus=%s is not a whole number of GPUs", val);
            r.gpus = (uint32_t)v;
        }
        if (k >= 0)
            seen[k] = true;
    }
    free(copy);
    if (rc == 0)
        *out = r;
    return rc;
}

struct json_object *rt_request_to_json(const struct rt_request *r, struct json_object *gpu_uuids)
{
    struct json_object *o = json_object_new_object();
    if (r->cpus > 0)
        json_object_object_add(o, "cpus", rt_json_double(r->cpus, 3));
    if (r->memory_bytes)
        json_object_object_add(o, "memory_bytes", rt_json_u64(r->memory_bytes));
    if (r->gpus)
        json_object_object_add(o, "gpus", json_object_new_int64(r->gpus));
    if (gpu_uuids && json_object_is_type(gpu_uuids, json_type_array) && json_object_array_length(gpu_uuids))
        json_object_object_add(o, "gpu_uuids", json_object_get(gpu_uuids));
    return o;
}

static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

const char *rt_request_from_json(struct json_object *o, struct rt_request *out)
{
    struct rt_request r = {0};
    if (!json_object_is_type(o, json_type_object))
        return "request";
    json_object_object_foreach(o, key, v) {
        if (strcmp(key, "cpus") == 0) {
            if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
                return "request.cpus";
            r.cpus = json_object_get_double(v);
            if (!(r.cpus > 0 && r.cpus <= RT_REQUEST_MAX_CPUS))
                return "request.cpus";
        } else if (strcmp(key, "memory_bytes") == 0) {
            int64_t m = json_object_get_int64(v);
            if (!json_object_is_type(v, json_type_int) || m <= 0 || (uint64_t)m > RT_REQUEST_MAX_MEMORY)
                return "request.memory_bytes";
            r.memory_bytes = (uint64_t)m;
        } else if (strcmp(key, "gpus") == 0) {
            int64_t g = json_object_get_int64(v);
            if (!json_object_is_type(v, json_type_int) || g < 0 || g > RT_REQUEST_MAX_GPUS)
                return "request.gpus";
            r.gpus = (uint32_t)g;
        } else if (strcmp(key, "gpu_uuids") == 0) {
            if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > RT_REQUEST_MAX_UUIDS)
                return "request.gpu_uuids";
            for (size_t i = 0; i < json_object_array_length(v); i++) {
                struct json_object *u = json_object_array_get_idx(v, i);
                if (!json_object_is_type(u, json_type_string) || json_object_get_string_len(u) == 0 ||
                    json_object_get_string_len(u) > (int)RT_REQUEST_UUID_MAX || !printable(json_object_get_string(u)))
                    return "request.gpu_uuids";
            }
        } else {
            return "request";
        }
    }
    if (out)
        *out = r;
    return NULL;
}
