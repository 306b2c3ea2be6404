#include "jobs/adopt.h"

#include "cgroup/cgroup.h"
#include "cgroup/classify.h"
#include "cgroup/container.h"
#include "facts/container_request.h"
#include "facts/slurm.h"
#include "jobs/jobs.h"
#include "rt/text.h"
#include "rt/util.h"
#include "store/job_sample.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* How long a Slurm job's adoption waits for a process with its facts. */
#define FACTS_WAIT_SECS 10.0

/* Where the layouts of docs/cgroups.md ("Recognised cgroups") put a job's
 * or a container's cgroup; rt_cg_classify has the last word on each match. */
static const char *const slurm_globs[] = {
    "/slurm*/uid_*/job_*",               /* cgroup/v1: each v1 hierarchy */
    "/system.slice/*slurmstepd.scope/*", /* cgroup/v2: job_ID, or a SLUID */
};
static const char *const container_globs[] = {
    "/system.slice/docker-*.scope",                                     /* docker, systemd driver */
    "/docker/*",                                                        /* docker, cgroupfs driver */
    "/machine.slice/libpod-*.scope",                                    /* podman, root */
    "/libpod_parent/libpod-*",                                          /* podman, cgroupfs */
    "/user.slice/user-*.slice/user@*.service/user.slice/libpod-*.scope", /* rootless podman */
};

/* The v2 tree and one v1 hierarchy hold every cgroup a rule can name: the
 * same path is made in each v1 hierarchy (docs/cgroups.md, "Hybrid hosts"). */
static const enum rt_cg_hier scanned[] = {RT_CG_V2, RT_CG_MEMORY, RT_CG_CPUACCT, RT_CG_PIDS};

struct found {
    char **v;
    size_t n, cap;
};

static void add(struct found *f, const char *path)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->v = rt_xrealloc(f->v, f->cap * sizeof(*f->v));
    }
    f->v[f->n++] = rt_xstrdup(path);
}

/* kind: the class a match must be, exactly (a job's cgroup, not a step's);
 * RT_CG_KIND_NONE: any directory (a configured glob). */
static void match(const struct rt_cg_host *h, const char *pattern, enum rt_cg_kind kind, struct found *f)
{
    bool v1_done = false;
    for (size_t k = 0; k < RT_ARRAY_SIZE(scanned); k++) {
        enum rt_cg_hier hier = scanned[k];
        const char *rel = rt_cg_path_in(h, hier, pattern);
        if (!rel || (hier != RT_CG_V2 && v1_done))
            continue;
        v1_done |= hier != RT_CG_V2;
        char dir[64], g[4096];
        int pre = snprintf(dir, sizeof(dir), "/proc/self/fd/%d", h->m[hier].fd);
        if ((size_t)snprintf(g, sizeof(g), "%s%s", dir, rel) >= sizeof(g))
            continue;
        glob_t gl;
        if (glob(g, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &gl) != 0)
            continue;
        const char *root = strcmp(h->m[hier].root, "/") == 0 ? "" : h->m[hier].root;
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            char path[4096];
            struct rt_cg_class cls;
            if ((size_t)snprintf(path, sizeof(path), "%s%s", root, gl.gl_pathv[i] + pre) >= sizeof(path))
                continue;
            if (kind == RT_CG_KIND_NONE || (rt_cg_classify(path, &cls) == kind && cls.len == strlen(path)))
                add(f, path);
        }
        globfree(&gl);
    }
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **rt_adopt_candidates(const struct rt_cg_host *h, const struct rt_adopt_rules *rules, size_t *n)
{
    struct found f = {0};
    for (size_t i = 0; rules->slurm && i < RT_ARRAY_SIZE(slurm_globs); i++)
        match(h, slurm_globs[i], RT_CG_KIND_SLURM, &f);
    for (size_t i = 0; rules->containers && i < RT_ARRAY_SIZE(container_globs); i++)
        match(h, container_globs[i], RT_CG_KIND_CONTAINER, &f);
    char *globs = rules->globs ? rt_xstrdup(rules->globs) : NULL, *save = NULL;
    for (char *g = globs ? strtok_r(globs, " \t", &save) : NULL; g; g = strtok_r(NULL, " \t", &save))
        match(h, g, RT_CG_KIND_NONE, &f);
    free(globs);
    /* Each once: a cgroup in the v2 tree and a v1 hierarchy, or matched twice. */
    if (f.n)
        qsort(f.v, f.n, sizeof(*f.v), by_path);
    size_t w = 0;
    for (size_t r = 0; r < f.n; r++) {
        if (w && strcmp(f.v[w - 1], f.v[r]) == 0)
            free(f.v[r]);
        else
            f.v[w++] = f.v[r];
    }
    *n = w;
    return f.v;
}

void rt_adopt_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

/* A Slurm job's user, name, scheduler and request, from Slurm's facts.
 * false, filling nothing, while none of its processes carries them (only
 * step_extern runs yet) unless waited: then what there is. */
static bool slurm_facts(const struct rt_cg_host *h, const struct rt_roots *roots, const struct rt_cg_class *cls,
                        struct rt_job *j, char *name, size_t size, bool waited)
{
    struct rt_slurm_job sj = {0};
    int r = rt_slurm_job_read(h, roots, j->cgroup, 0, &sj);
    bool take = r == 0 && (sj.name[0] || waited);
    if (cls->uid >= 0)
        j->owner_uid = (uid_t)cls->uid;
    if (take) {
        if (sj.has_uid)
            j->owner_uid = sj.uid;
        if (sj.name[0])
            rt_strlcpy(name, sj.name, size);
        j->scheduler = rt_slurm_job_scheduler_json(&sj);
        if (!rt_request_empty(&sj.request) || sj.gpu_uuids)
            j->request = rt_request_to_json(&sj.request, sj.gpu_uuids);
    }
    rt_slurm_job_free(&sj);
    return take || waited;
}

/* A container's name, image, job.container and request, from its runtime. */
static void container_facts(const struct rt_cg_host *h, const struct rt_cg_class *cls, struct rt_job *j, char *name,
                            size_t size)
{
    j->owner_uid = cls->uid >= 0 ? (uid_t)cls->uid : 0; /* a user's manager runs rootless ones */
    struct json_object *c = json_object_new_object();
    json_object_object_add(c, "runtime", json_object_new_string(cls->name));
    json_object_object_add(c, "id", json_object_new_string(cls->id));
    struct rt_container ct;
    if (rt_container_find(h, "/", cls->id, &ct) == 0) {
        if (ct.name)
            rt_strlcpy(name, ct.name, size);
        json_object_object_add(c, "name", ct.name ? json_object_new_string(ct.name) : NULL);
        json_object_object_add(c, "image", ct.image ? json_object_new_string(ct.image) : NULL);
        if (ct.image)
            json_object_object_add(j->metadata, "container_image", json_object_new_string(ct.image));
        rt_container_free(&ct);
    }
    j->container = c;
    struct rt_request req;
    struct json_object *uuids = NULL;
    if (rt_container_request("/", cls->name, cls->id, &req, &uuids) == 0 && (!rt_request_empty(&req) || uuids))
        j->request = rt_request_to_json(&req, uuids);
    json_object_put(uuids);
}

/* When the cgroup was made, as near as its directories tell (a directory's
 * times start at its mkdir; adding children and chown move them later):
 * Unix seconds, never after now. */
static double made_at(const struct rt_cgroup *cg)
{
    double t = (double)rt_real_ns() / 1e9;
    for (int h = 0; h < RT_CG_NHIER; h++) {
        struct stat st;
        if (cg->dir[h] < 0 || fstat(cg->dir[h], &st) < 0)
            continue;
        t = fmin(t, fmin((double)st.st_ctim.tv_sec + st.st_ctim.tv_nsec / 1e9,
                         (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9));
    }
    return t;
}

struct rt_job *rt_adopt_job(const struct rt_cg_host *h, const struct rt_roots *roots, const char *path)
{
    struct rt_cgroup cg;
    if (rt_cgroup_open(&cg, h, path) < 0)
        return NULL;
    uid_t owner = 0;
    bool populated = rt_cgroup_populated(&cg) > 0, owned = rt_cgroup_owner(&cg, &owner) == 0;
    double born = made_at(&cg);
    rt_cgroup_close(&cg);
    if (!populated)
        return NULL;
    struct rt_job *j = rt_job_new();
    j->cgroup = rt_xstrdup(path);
    j->adopted = true;
    j->reads_all = true; /* the administrator's rule: the daemon's own eyes */
    j->owner_uid = owned ? owner : 0;
    j->metadata = json_object_new_object();
    char name[256];
    const char *last = strrchr(path, '/');
    rt_strlcpy(name, last ? last + 1 : path, sizeof(name));
    struct rt_cg_class cls;
    enum rt_cg_kind kind = rt_cg_classify(path, &cls);
    bool whole = cls.len == strlen(path);
    /* A Slurm job is adopted once its facts can be read, or when they never
     * come: its first seconds count all the same (count from its start). */
    bool waited = (double)rt_real_ns() / 1e9 - born >= FACTS_WAIT_SECS;
    if (kind == RT_CG_KIND_SLURM && whole && !slurm_facts(h, roots, &cls, j, name, sizeof(name), waited)) {
        rt_job_free(j);
        return NULL;
    }
    else if (kind == RT_CG_KIND_CONTAINER && whole)
        container_facts(h, &cls, j, name, sizeof(name));
    /* A name is a label: one the rule would refuse is the cgroup's own. */
    if (!rt_job_name_valid(name))
        rt_strlcpy(name, last ? last + 1 : path, sizeof(name));
    j->name = rt_job_name_valid(name) ? rt_xstrdup(name) : NULL;
    j->name_json = rt_job_name_json(j->name);
    j->metadata_bytes = rt_job_metadata_size(j->metadata);
    j->state = RT_JOB_RUNNING;
    j->started_at = born; /* what ran before the daemon saw it is the job's too */
    return j;
}

bool rt_adopt_globs_valid(const char *globs, char *why, size_t whylen)
{
    char *copy = rt_xstrdup(globs), *save = NULL;
    const char *bad = NULL;
    size_t n = 0;
    for (char *g = strtok_r(copy, " \t", &save); g && !bad; g = strtok_r(NULL, " \t", &save)) {
        char component[256];
        const char *p = g;
        int r;
        while ((r = rt_cg_path_next(&p, component)) > 0 && strcmp(component, ".") && strcmp(component, ".."))
            ;
        if (++n > RT_ADOPT_MAX_GLOBS)
            bad = "at most 16 patterns";
        else if (g[0] != '/' || r != 0)
            bad = "a pattern is an absolute cgroup path such as /system.slice/*.service, without \".\" or "
                  "\"..\" components";
    }
    free(copy);
    if (bad)
        snprintf(why, whylen, "%s", bad);
    return !bad;
}
