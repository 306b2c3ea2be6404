#include "facts/slurm.h"

#include "cgroup/classify.h"
#include "cgroup/cgroup.h"
#include "cgroup/place.h"

#include "rt/json.h"
#include "rt/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PIDS 64                  /* processes of a job looked at */
#define ENVIRON_MAX (4u << 20)       /* bytes of one environment read */

static void copy_part(char *dst, size_t size, const char *src, size_t len)
{
    if (len >= size)
        len = size - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* ---- the environment ---- */

static const char *env_get(const char *env, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < len;) {
        const char *e = env + i;
        size_t el = strnlen(e, len - i);
        if (el > nl && e[nl] == '=' && memcmp(e, name, nl) == 0)
            return e + nl + 1;
        i += el + 1;
    }
    return NULL;
}

/* SLURM_JOB_CPUS_PER_NODE: "4(x2),2" is 4, 4, 2 for nodes 0, 1, 2. */
static double cpus_of_node(const char *list, uint64_t node)
{
    while (*list) {
        char *end;
        unsigned long long cpus = strtoull(list, &end, 10), times = 1;
        if (end == list)
            return 0;
        if (strncmp(end, "(x", 2) == 0) {
            char *e2;
            times = strtoull(end + 2, &e2, 10);
            if (e2 == end + 2 || *e2 != ')')
                return 0;
            end = e2 + 1;
        }
        if (node < times)
            return (double)cpus;
        node -= times;
        if (*end != ',')
            return 0;
        list = end + 1;
    }
    return 0;
}

static bool env_u64(const char *env, size_t len, const char *name, uint64_t *out)
{
    const char *v = env_get(env, len, name);
    return v && rt_parse_u64(v, out);
}

static void env_str(const char *env, size_t len, const char *name, char *dst, size_t size)
{
    const char *v = env_get(env, len, name);
    if (v && *v)
        rt_strlcpy(dst, v, size);
}

/* A list of GPUs ("0,1", "GPU-…,GPU-…"): how many, and its UUIDs into *uuids. */
static uint32_t gpu_list(const char *list, struct json_object **uuids)
{
    uint32_t n = 0;
    if (!list || !*list || strcmp(list, "NoDevFiles") == 0)
        return 0;
    char *copy = rt_xstrdup(list), *rest = copy;
    while (rest) {
        char *g = rt_trim(strsep(&rest, ","));
        if (!*g)
            continue;
        n++;
        if ((rt_str_starts_with(g, "GPU-") || rt_str_starts_with(g, "MIG-")) && strlen(g) <= RT_REQUEST_UUID_MAX &&
            (!*uuids || json_object_array_length(*uuids) < RT_REQUEST_MAX_UUIDS)) {
            if (!*uuids)
                *uuids = json_object_new_array();
            json_object_array_add(*uuids, json_object_new_string(g));
        }
    }
    free(copy);
    return n;
}

bool rt_slurm_env_parse(const char *env, size_t len, struct rt_slurm_job *out)
{
    uint64_t id, v;
    if (!env_u64(env, len, "SLURM_JOB_ID", &id) && !env_u64(env, len, "SLURM_JOBID", &id))
        return false;
    out->job_id = id;
    env_str(env, len, "SLURM_JOB_NAME", out->name, sizeof(out->name));
    env_str(env, len, "SLURM_JOB_ACCOUNT", out->account, sizeof(out->account));
    env_str(env, len, "SLURM_JOB_PARTITION", out->partition, sizeof(out->partition));
    env_str(env, len, "SLURM_JOB_USER", out->user, sizeof(out->user));
    if (env_u64(env, len, "SLURM_JOB_UID", &v) && v <= UINT32_MAX) {
        out->has_uid = true;
        out->uid = (uint32_t)v;
    }
    double cpus = 0;
    const char *per_node = env_get(env, len, "SLURM_JOB_CPUS_PER_NODE");
    if (env_u64(env, len, "SLURM_CPUS_ON_NODE", &v) && v > 0)
        cpus = (double)v;
    else if (per_node)
        cpus = cpus_of_node(per_node, env_u64(env, len, "SLURM_NODEID", &v) ? v : 0);
    if (cpus > 0 && cpus <= RT_REQUEST_MAX_CPUS)
        out->request.cpus = cpus;
    if (env_u64(env, len, "SLURM_MEM_PER_NODE", &v) && v > 0)
        out->request.memory_bytes = v << 20;
    else if (env_u64(env, len, "SLURM_MEM_PER_CPU", &v) && v > 0 && cpus > 0)
        out->request.memory_bytes = (uint64_t)(cpus * (double)(v << 20));
    if (out->request.memory_bytes > RT_REQUEST_MAX_MEMORY)
        out->request.memory_bytes = 0;
    /* The job's GPUs on this node, else the step's; CUDA's list may name
     * them by UUID. */
    const char *ids = env_get(env, len, "SLURM_JOB_GPUS");
    if (!ids || !*ids)
        ids = env_get(env, len, "SLURM_STEP_GPUS");
    const char *cuda = env_get(env, len, "CUDA_VISIBLE_DEVICES");
    json_object_put(out->gpu_uuids);
    out->gpu_uuids = NULL;
    uint32_t from_cuda = gpu_list(cuda, &out->gpu_uuids);
    uint32_t gpus = ids && *ids ? gpu_list(ids, &out->gpu_uuids) : from_cuda;
    if (!gpus && env_u64(env, len, "SLURM_GPUS_ON_NODE", &v) && v <= RT_REQUEST_MAX_GPUS)
        gpus = (uint32_t)v;
    out->request.gpus = gpus <= RT_REQUEST_MAX_GPUS ? gpus : 0;
    out->gpu_ids[0] = '\0';
    if (ids && *ids)
        rt_strlcpy(out->gpu_ids, ids, sizeof(out->gpu_ids));
    return true;
}

void rt_slurm_job_free(struct rt_slurm_job *j)
{
    json_object_put(j->gpu_uuids);
    j->gpu_uuids = NULL;
}

/* ---- the job's files ---- */

/* /proc/PID/environ, whole (up to ENVIRON_MAX). */
static char *read_environ(int proc_fd, pid_t pid, size_t *len)
{
    char path[32];
    snprintf(path, sizeof(path), "%d/environ", (int)pid);
    int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 16384, n = 0;
    char *buf = rt_xmalloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= ENVIRON_MAX)
                break;
            cap *= 2;
            buf = rt_xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

/* The first of pid's cgroups that is in a Slurm job (v2's first): its
 * path in *out. 0, -ENOENT when none is, or pid is gone. */
static int cgroup_of_pid(const struct rt_roots *roots, pid_t pid, char *out, size_t size, struct rt_cg_class *cls)
{
    struct rt_cg_paths p;
    int r = pid > 0 ? rt_cg_pid_paths(roots, pid, &p) : -ENOENT;
    if (r < 0)
        return r;
    r = -ENOENT;
    for (int i = 0; i < RT_CG_NHIER && r < 0; i++)
        if (p.path[i] && rt_cg_classify(p.path[i], cls) == RT_CG_KIND_SLURM) {
            rt_strlcpy(out, p.path[i], size);
            r = 0;
        }
    rt_cg_paths_free(&p);
    return r;
}

struct pids {
    pid_t v[MAX_PIDS];
    size_t n;
};

/* The processes of cgroup directory fd and of its children, depth levels down. */
static void add_procs(int fd, struct pids *p, int depth)
{
    char buf[4096];
    if (rt_read_file_at(fd, "cgroup.procs", buf, sizeof(buf)) > 0) {
        char *rest = buf;
        while (rest && p->n < MAX_PIDS) {
            uint64_t v;
            char *l = strsep(&rest, "\n");
            if (rt_parse_u64(l, &v) && v > 0 && v <= INT32_MAX)
                p->v[p->n++] = (pid_t)v;
        }
    }
    DIR *d = depth > 0 ? rt_opendir_sub(fd, ".") : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) && p->n < MAX_PIDS) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        int child = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child >= 0) {
            add_procs(child, p, depth - 1);
            close(child);
        }
    }
    if (d)
        closedir(d);
}

/* The job's processes, its steps' first and step_extern's last: those
 * carry the job's environment, the extern step's do not. */
static void job_pids(int job_fd, struct pids *p)
{
    for (int extern_pass = 0; extern_pass < 2; extern_pass++) {
        DIR *d = rt_opendir_sub(job_fd, ".");
        struct dirent *e;
        while (d && (e = readdir(d)) && p->n < MAX_PIDS) {
            if (e->d_type != DT_DIR || !rt_str_starts_with(e->d_name, "step_") ||
                (strcmp(e->d_name, "step_extern") == 0) != extern_pass)
                continue;
            int step = openat(job_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (step >= 0) {
                add_procs(step, p, 3);
                close(step);
            }
        }
        if (d)
            closedir(d);
    }
}

/* "slurmstepd: [ID.STEP]": the job id, or 0. */
static uint64_t stepd_job_id(int proc_fd, pid_t pid)
{
    char path[32], buf[256];
    snprintf(path, sizeof(path), "%d/cmdline", (int)pid);
    if (rt_read_file_at(proc_fd, path, buf, sizeof(buf)) < 0 || !rt_str_starts_with(buf, "slurmstepd: ["))
        return 0;
    char *end;
    unsigned long long id = strtoull(buf + 13, &end, 10);
    return end != buf + 13 && *end == '.' ? id : 0;
}

static bool real_uid(int proc_fd, pid_t pid, uint32_t *uid)
{
    char path[32], buf[4096];
    snprintf(path, sizeof(path), "%d/status", (int)pid);
    if (rt_read_file_at(proc_fd, path, buf, sizeof(buf)) < 0)
        return false;
    const char *u = strstr(buf, "\nUid:");
    unsigned long v;
    if (!u || sscanf(u + 5, "%lu", &v) != 1)
        return false;
    *uid = (uint32_t)v;
    return true;
}

/* "0-3,8,10-11": how many CPUs. */
static unsigned cpulist_count(const char *s)
{
    unsigned n = 0;
    while (*s && *s != '\n') {
        char *end;
        unsigned long a = strtoul(s, &end, 10), b = a;
        if (end == s)
            return 0;
        if (*end == '-') {
            s = end + 1;
            b = strtoul(s, &end, 10);
            if (end == s || b < a)
                return 0;
        }
        n += (unsigned)(b - a + 1);
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* What task/cgroup set on the job's cgroup: its memory limit (the
 * tightest up the tree), and in v2 its cpuset (v1's has no place in the
 * cgroup layer: v1 jobs' CPUs come from their environment). */
static void request_from_cgroup(const struct rt_cg_host *h, const char *job, struct rt_request *r)
{
    struct rt_cg_limits lim;
    if (!r->memory_bytes && rt_cg_limits_of_path(h, job, &lim) == 0) {
        if (lim.mem_max != RT_CG_UNLIMITED && lim.mem_max > 0 && lim.mem_max <= RT_REQUEST_MAX_MEMORY)
            r->memory_bytes = lim.mem_max;
        rt_cg_limits_free(&lim);
    }
    int fd = r->cpus > 0 ? -1 : rt_cg_open_dir(h, RT_CG_V2, job);
    char buf[512];
    unsigned n = fd >= 0 && rt_read_file_at(fd, "cpuset.cpus.effective", buf, sizeof(buf)) > 0 ? cpulist_count(buf) : 0;
    if (n)
        r->cpus = n;
    if (fd >= 0)
        close(fd);
}

int rt_slurm_job_read(const struct rt_cg_host *h, const struct rt_roots *roots, const char *cgroup, pid_t pid,
                      struct rt_slurm_job *out)
{
    memset(out, 0, sizeof(*out));
    char path[4096], job[4096];
    struct rt_cg_class cls;
    if (cgroup) {
        if (rt_cg_path_normalize(h, cgroup, path, sizeof(path)) < 0 || rt_cg_classify(path, &cls) != RT_CG_KIND_SLURM)
            return -ENOENT;
    } else {
        int r = cgroup_of_pid(roots, pid, path, sizeof(path), &cls);
        if (r < 0)
            return r;
    }
    copy_part(job, sizeof(job), path, cls.len);

    /* pid first, then the job's processes from the first hierarchy that
     * has them (v2, else v1 memory: its steps hold slurmstepd, their
     * task_N directories the tasks) */
    struct pids p = {.n = 0};
    if (pid > 0)
        p.v[p.n++] = pid;
    size_t given = p.n;
    static const enum rt_cg_hier where[] = {RT_CG_V2, RT_CG_MEMORY, RT_CG_PIDS, RT_CG_CPUACCT};
    for (size_t i = 0; i < RT_ARRAY_SIZE(where) && p.n == given; i++) {
        int fd = rt_cg_open_dir(h, where[i], job);
        if (fd >= 0) {
            job_pids(fd, &p);
            close(fd);
        }
    }

    bool from_env = false;
    for (size_t i = 0; i < p.n && !from_env; i++) {
        size_t len = 0;
        char *env = read_environ(roots->proc_fd, p.v[i], &len);
        struct rt_slurm_job e = {0};
        if (env && rt_slurm_env_parse(env, len, &e) && (!cls.job || e.job_id == cls.job)) {
            *out = e;
            from_env = true;
        } else {
            rt_slurm_job_free(&e);
        }
        if (env)
            explicit_bzero(env, len); /* a user's environment may hold secrets */
        free(env);
    }
    if (!out->job_id)
        out->job_id = cls.job;
    for (size_t i = 0; i < p.n && !out->job_id; i++)
        out->job_id = stepd_job_id(roots->proc_fd, p.v[i]);
    if (!rt_str_starts_with(cls.name, "job_"))
        rt_strlcpy(out->sluid, cls.name, sizeof(out->sluid));
    if (cls.uid >= 0 && cls.uid <= UINT32_MAX) {
        out->has_uid = true;
        out->uid = (uint32_t)cls.uid;
    }
    for (size_t i = 0; i < p.n && !out->has_uid; i++)
        if (!stepd_job_id(roots->proc_fd, p.v[i])) /* slurmstepd runs as root */
            out->has_uid = real_uid(roots->proc_fd, p.v[i], &out->uid);
    request_from_cgroup(h, job, &out->request);
    return 0;
}

struct json_object *rt_slurm_job_scheduler_json(const struct rt_slurm_job *j)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string("slurm"));
    json_object_object_add(o, "job_id", j->job_id ? rt_json_u64(j->job_id) : NULL);
    if (j->sluid[0])
        json_object_object_add(o, "sluid", json_object_new_string(j->sluid));
    json_object_object_add(o, "name", j->name[0] ? json_object_new_string(j->name) : NULL);
    json_object_object_add(o, "account", j->account[0] ? json_object_new_string(j->account) : NULL);
    json_object_object_add(o, "partition", j->partition[0] ? json_object_new_string(j->partition) : NULL);
    json_object_object_add(o, "user", j->user[0] ? json_object_new_string(j->user) : NULL);
    return o;
}
