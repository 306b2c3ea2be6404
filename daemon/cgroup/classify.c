#include "cgroup/classify.h"

#include "rt/util.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct comp {
    const char *s;
    size_t n;
};

#define MAX_COMPS 128

static bool is(const struct comp *c, const char *lit)
{
    return c->n == strlen(lit) && memcmp(c->s, lit, c->n) == 0;
}

static bool starts(const struct comp *c, const char *lit)
{
    size_t n = strlen(lit);
    return c->n >= n && memcmp(c->s, lit, n) == 0;
}

static bool ends(const struct comp *c, const char *lit)
{
    size_t n = strlen(lit);
    return c->n >= n && memcmp(c->s + c->n - n, lit, n) == 0;
}

static bool digits(const char *s, size_t n, uint64_t *v)
{
    char buf[24];
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return rt_str_all_digits(buf) && rt_parse_u64(buf, v);
}

/* "PREFIXdigitsSUFFIX" */
static bool numbered(const struct comp *c, const char *prefix, const char *suffix, uint64_t *v)
{
    size_t p = strlen(prefix), s = strlen(suffix);
    return c->n > p + s && starts(c, prefix) && ends(c, suffix) && digits(c->s + p, c->n - p - s, v);
}

bool rt_cg_is_container_id(const char *s, size_t len)
{
    if (len != 64)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* A Slurm job identifier (SLUID, Slurm 26.05+): 's' and 13 characters of
 * Crockford's base32 in upper case ("sEKNKTV3WPV500"). */
static bool sluid(const struct comp *c)
{
    if (c->n != 14 || c->s[0] != 's')
        return false;
    for (size_t i = 1; i < c->n; i++) {
        char ch = c->s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z')) || ch == 'I' || ch == 'L' || ch == 'O' ||
            ch == 'U')
            return false;
    }
    return true;
}

static void copy_name(struct rt_cg_class *out, const struct comp *c)
{
    size_t n = c->n < sizeof(out->name) ? c->n : sizeof(out->name) - 1;
    memcpy(out->name, c->s, n);
    out->name[n] = '\0';
}

static size_t end_of(const char *path, const struct comp *c)
{
    return (size_t)(c->s + c->n - path);
}

static bool slurm(const char *path, const struct comp *c, size_t n, struct rt_cg_class *out)
{
    uint64_t uid, job = 0;
    /* v1: /slurm[_NODE]/uid_U/job_N */
    if (n >= 3 && (is(&c[0], "slurm") || starts(&c[0], "slurm_")) && numbered(&c[1], "uid_", "", &uid) &&
        numbered(&c[2], "job_", "", &job)) {
        out->uid = (int64_t)uid;
        out->job = job;
        out->len = end_of(path, &c[2]);
        copy_name(out, &c[2]);
        return true;
    }
    /* v2: …/slurmstepd.scope/job_N or /SLUID (--enable-multiple-slurmd: NODE_slurmstepd.scope) */
    for (size_t i = 0; i + 1 < n; i++) {
        if (!is(&c[i], "slurmstepd.scope") && !ends(&c[i], "_slurmstepd.scope"))
            continue;
        if (!numbered(&c[i + 1], "job_", "", &job) && !sluid(&c[i + 1]))
            return false;
        out->job = job;
        out->len = end_of(path, &c[i + 1]);
        copy_name(out, &c[i + 1]);
        return true;
    }
    return false;
}

static bool container(const char *path, const struct comp *c, size_t n, struct rt_cg_class *out)
{
    static const struct {
        const char *prefix, *runtime;
    } scopes[] = {
        {"docker-", "docker"},
        {"libpod-", "podman"},
        {"cri-containerd-", "containerd"},
        {"crio-", "cri-o"},
    };
    bool kube = false;
    for (size_t i = 0; i < n; i++) {
        const char *runtime = NULL, *id = NULL;
        kube |= starts(&c[i], "kubepods");
        for (size_t k = 0; k < RT_ARRAY_SIZE(scopes) && !runtime; k++) {
            size_t p = strlen(scopes[k].prefix);
            if (starts(&c[i], scopes[k].prefix) && ends(&c[i], ".scope") &&
                rt_cg_is_container_id(c[i].s + p, c[i].n - p - 6)) {
                runtime = scopes[k].runtime;
                id = c[i].s + p;
            }
        }
        /* cgroupfs drivers: /docker/ID, /libpod_parent/libpod-ID, /kubepods/…/podUID/ID */
        if (!runtime && i > 0 && rt_cg_is_container_id(c[i].s, c[i].n)) {
            if (is(&c[i - 1], "docker"))
                runtime = "docker";
            else if (kube && starts(&c[i - 1], "pod"))
                runtime = "kubernetes";
            id = c[i].s; /* (used only with a runtime) */
        }
        if (!runtime && i > 0 && is(&c[i - 1], "libpod_parent") && starts(&c[i], "libpod-") &&
            rt_cg_is_container_id(c[i].s + 7, c[i].n - 7)) {
            runtime = "podman";
            id = c[i].s + 7;
        }
        if (runtime) {
            out->len = end_of(path, &c[i]);
            rt_strlcpy(out->name, runtime, sizeof(out->name));
            memcpy(out->id, id, 64);
            out->id[64] = '\0';
            return true;
        }
    }
    return false;
}

enum rt_cg_kind rt_cg_classify(const char *path, struct rt_cg_class *out)
{
    memset(out, 0, sizeof(*out));
    out->uid = -1;
    struct comp c[MAX_COMPS];
    size_t n = 0;
    for (const char *p = path; *p && n < MAX_COMPS;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *e = strchrnul(p, '/');
        c[n++] = (struct comp){p, (size_t)(e - p)};
        p = e;
    }
    uint64_t v;
    for (size_t i = 0; i < n; i++)
        if (numbered(&c[i], "user-", ".slice", &v) || numbered(&c[i], "user@", ".service", &v))
            out->uid = (int64_t)v;
    if (slurm(path, c, n, out))
        out->kind = RT_CG_KIND_SLURM;
    else if (container(path, c, n, out))
        out->kind = RT_CG_KIND_CONTAINER;
    else {
        for (size_t i = n; i-- > 0;) {
            if (ends(&c[i], ".service") || ends(&c[i], ".scope")) {
                out->kind = RT_CG_KIND_UNIT;
                out->len = end_of(path, &c[i]);
                copy_name(out, &c[i]);
                break;
            }
        }
    }
    return out->kind;
}
