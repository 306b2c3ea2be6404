/* The cgroup layer (daemon/cgroup/) from the command line, for
 * tests/integration/test_cgroup.py and for looking at a host by hand.
 * Output is JSON (one object) unless said otherwise; absent figures are
 * null. Exit 0, or 1 with "rt_cgroup: VERB: error" on stderr.
 *   rt_cgroup [--proc-root DIR --sys-root DIR] VERB ARGS…
 *     mounts                      the hierarchies found and the host's mode
 *     read PATH                   the figures (also "gone": the cgroup was removed)
 *     read-removed PATH           open it, remove it (rt_cg_remove), then read
 *     watch PATH SECONDS          read, then wait until it is empty: through
 *                                 inotify on cgroup.events, else polling
 *                                 rt_cgroup_populated every 100 ms; prints how
 *     pids PATH | owner PATH | kill PATH | populated PATH
 *     make PATH | attach PATH PID | remove PATH
 *     where PID                   its cgroups, their limits, and whose they are
 *     classify PATH
 *     container ID|NAME [STATE_ROOT]  a running container: id, runtime, cgroup, name, image */
#include "cgroup/cgroup.h"
#include "cgroup/classify.h"
#include "cgroup/container.h"
#include "cgroup/make.h"
#include "cgroup/place.h"
#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static const char *verb = "";

static int fail(int rc)
{
    fprintf(stderr, "rt_cgroup: %s: %s\n", verb, strerror(-rc));
    return 1;
}

static void print(struct json_object *o)
{
    puts(rt_json_plain(o));
    json_object_put(o);
}

static void put_u64(struct json_object *o, const char *key, bool have, uint64_t v)
{
    json_object_object_add(o, key, !have ? NULL : v == RT_CG_UNLIMITED ? json_object_new_string("max") : rt_json_u64(v));
}

static struct json_object *figures_json(const struct rt_cg_figures *f, int rc)
{
    struct json_object *o = json_object_new_object();
#define G(bit) (((f->have) & (bit)) == (bit))
    put_u64(o, "cpu_usage_usec", G(RT_CGF_CPU), f->cpu_usage_usec);
    put_u64(o, "cpu_user_usec", G(RT_CGF_CPU_SPLIT), f->cpu_user_usec);
    put_u64(o, "cpu_system_usec", G(RT_CGF_CPU_SPLIT), f->cpu_system_usec);
    put_u64(o, "nr_periods", G(RT_CGF_THROTTLE), f->nr_periods);
    put_u64(o, "nr_throttled", G(RT_CGF_THROTTLE), f->nr_throttled);
    put_u64(o, "throttled_usec", G(RT_CGF_THROTTLE), f->throttled_usec);
    put_u64(o, "mem_current", G(RT_CGF_MEM), f->mem_current);
    put_u64(o, "mem_peak", G(RT_CGF_MEM_PEAK), f->mem_peak);
    put_u64(o, "mem_anon", G(RT_CGF_MEM_STAT), f->mem_anon);
    put_u64(o, "mem_file", G(RT_CGF_MEM_STAT), f->mem_file);
    put_u64(o, "mem_shmem", G(RT_CGF_MEM_STAT), f->mem_shmem);
    put_u64(o, "mem_kernel", G(RT_CGF_MEM_KERNEL), f->mem_kernel);
    put_u64(o, "swap_current", G(RT_CGF_SWAP), f->swap_current);
    put_u64(o, "swap_peak", G(RT_CGF_SWAP_PEAK), f->swap_peak);
    put_u64(o, "ev_high", G(RT_CGF_MEM_EV), f->ev_high);
    put_u64(o, "ev_max", G(RT_CGF_MEM_EV_MAX), f->ev_max);
    put_u64(o, "ev_oom", G(RT_CGF_MEM_EV), f->ev_oom);
    put_u64(o, "ev_oom_kill", G(RT_CGF_OOM_KILL), f->ev_oom_kill);
    put_u64(o, "mem_max", G(RT_CGF_MEM_MAX), f->mem_max);
    put_u64(o, "mem_high", G(RT_CGF_MEM_HIGH), f->mem_high);
    put_u64(o, "cpu_quota_usec", G(RT_CGF_CPU_MAX), f->cpu_quota_usec);
    put_u64(o, "cpu_period_usec", G(RT_CGF_CPU_MAX), f->cpu_period_usec);
    put_u64(o, "io_rbytes", G(RT_CGF_IO), f->io_rbytes);
    put_u64(o, "io_wbytes", G(RT_CGF_IO), f->io_wbytes);
    put_u64(o, "io_rios", G(RT_CGF_IO), f->io_rios);
    put_u64(o, "io_wios", G(RT_CGF_IO), f->io_wios);
    put_u64(o, "pids_current", G(RT_CGF_PIDS), f->pids_current);
    put_u64(o, "pids_peak", G(RT_CGF_PIDS_PEAK), f->pids_peak);
    put_u64(o, "psi_cpu_some_usec", G(RT_CGF_PSI_CPU), f->psi_cpu.some_usec);
    put_u64(o, "psi_cpu_full_usec", G(RT_CGF_PSI_CPU_FULL), f->psi_cpu.full_usec);
    put_u64(o, "psi_mem_some_usec", G(RT_CGF_PSI_MEM), f->psi_mem.some_usec);
    put_u64(o, "psi_mem_full_usec", G(RT_CGF_PSI_MEM), f->psi_mem.full_usec);
    put_u64(o, "psi_io_some_usec", G(RT_CGF_PSI_IO), f->psi_io.some_usec);
    put_u64(o, "psi_io_full_usec", G(RT_CGF_PSI_IO), f->psi_io.full_usec);
    json_object_object_add(o, "populated", G(RT_CGF_POPULATED) ? json_object_new_boolean(f->populated) : NULL);
#undef G
    json_object_object_add(o, "gone", json_object_new_boolean(rc == -ENODEV));
    return o;
}

static struct json_object *hier_set(const struct rt_cgroup *cg)
{
    struct json_object *a = json_object_new_array();
    for (int i = 0; i < RT_CG_NHIER; i++)
        if (rt_cgroup_in(cg, i))
            json_object_array_add(a, json_object_new_string(rt_cg_hier_name(i)));
    return a;
}

static int cmd_mounts(const struct rt_cg_host *h)
{
    static const char *const modes[] = {"none", "unified", "hybrid", "legacy"};
    struct json_object *o = json_object_new_object(), *m = json_object_new_object();
    json_object_object_add(o, "mode", json_object_new_string(modes[h->mode]));
    for (int i = 0; i < RT_CG_NHIER; i++)
        json_object_object_add(m, rt_cg_hier_name(i), rt_json_string_or_null(h->m[i].point));
    json_object_object_add(o, "mounts", m);
    print(o);
    return 0;
}

/* Wait until cg is empty: inotify on the v2 cgroup.events, else poll. */
static int cmd_watch(struct rt_cgroup *cg, double seconds)
{
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (in < 0)
        return fail(-errno);
    int wd = rt_cgroup_watch(cg, in);
    uint64_t deadline = rt_mono_ns() + (uint64_t)(seconds * 1e9);
    int rc, wakeups = 0;
    while ((rc = rt_cgroup_populated(cg)) == 1 && rt_mono_ns() < deadline) {
        struct pollfd p = {.fd = in, .events = POLLIN};
        if (poll(&p, 1, wd >= 0 ? 1000 : 100) > 0) {
            char buf[4096];
            while (read(in, buf, sizeof(buf)) > 0)
                wakeups++;
        }
    }
    close(in);
    if (rc < 0 && rc != -ENODEV)
        return fail(rc);
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "empty", json_object_new_boolean(rc != 1));
    json_object_object_add(o, "gone", json_object_new_boolean(rc == -ENODEV));
    json_object_object_add(o, "via", json_object_new_string(wd >= 0 ? "inotify" : "poll"));
    json_object_object_add(o, "wakeups", json_object_new_int(wakeups));
    print(o);
    return 0;
}

static struct json_object *limit_json(uint64_t v, const char *at)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "value", v == RT_CG_UNLIMITED ? json_object_new_string("max") : rt_json_u64(v));
    json_object_object_add(o, "at", rt_json_string_or_null(at));
    return o;
}

static struct json_object *class_json(const char *path)
{
    static const char *const kinds[] = {"none", "slurm", "container", "unit"};
    struct rt_cg_class c;
    rt_cg_classify(path, &c);
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string(kinds[c.kind]));
    json_object_object_add(o, "cgroup", json_object_new_string_len(path, (int)c.len));
    json_object_object_add(o, "name", json_object_new_string(c.name));
    json_object_object_add(o, "id", json_object_new_string(c.id));
    json_object_object_add(o, "job", rt_json_u64(c.job));
    json_object_object_add(o, "uid", json_object_new_int64(c.uid));
    return o;
}

static int cmd_where(const struct rt_roots *roots, const struct rt_cg_host *h, pid_t pid)
{
    struct rt_cg_paths p;
    int rc = rt_cg_pid_paths(roots, pid, &p);
    if (rc < 0)
        return fail(rc);
    struct rt_cg_limits l;
    rt_cg_limits_of(h, &p, &l);
    struct json_object *o = json_object_new_object(), *paths = json_object_new_object(),
                       *kinds = json_object_new_object();
    for (int i = 0; i < RT_CG_NHIER; i++) {
        json_object_object_add(paths, rt_cg_hier_name(i), rt_json_string_or_null(p.path[i]));
        if (p.path[i])
            json_object_object_add(kinds, rt_cg_hier_name(i), class_json(p.path[i]));
    }
    json_object_object_add(o, "paths", paths);
    json_object_object_add(o, "classes", kinds);
    json_object_object_add(o, "mem_max", limit_json(l.mem_max, l.mem_max_at));
    json_object_object_add(o, "mem_high", limit_json(l.mem_high, l.mem_high_at));
    struct json_object *cpu = limit_json(l.cpu_quota_usec, l.cpu_at);
    json_object_object_add(cpu, "period", rt_json_u64(l.cpu_period_usec));
    json_object_object_add(o, "cpu", cpu);
    print(o);
    rt_cg_limits_free(&l);
    rt_cg_paths_free(&p);
    return 0;
}

/* The verbs on an open cgroup. */
static int on_cgroup(const struct rt_cg_host *h, int argc, char **argv)
{
    struct rt_cgroup cg;
    int rc = rt_cgroup_open(&cg, h, argv[0]);
    if (rc < 0)
        return fail(rc);
    int status = 0;
    if (strcmp(verb, "read") == 0) {
        struct rt_cg_figures f;
        rc = rt_cgroup_read(&cg, &f);
        struct json_object *o = figures_json(&f, rc);
        json_object_object_add(o, "path", json_object_new_string(cg.path));
        json_object_object_add(o, "in", hier_set(&cg));
        print(o);
    } else if (strcmp(verb, "read-removed") == 0) {
        rc = rt_cg_remove(h, cg.path);
        if (rc < 0) {
            status = fail(rc);
        } else {
            struct rt_cg_figures f;
            rc = rt_cgroup_read(&cg, &f);
            struct json_object *o = figures_json(&f, rc);
            json_object_object_add(o, "populated_rc", json_object_new_int(rt_cgroup_populated(&cg)));
            print(o);
        }
    } else if (strcmp(verb, "watch") == 0 && argc == 2) {
        status = cmd_watch(&cg, atof(argv[1]));
    } else if (strcmp(verb, "populated") == 0) {
        rc = rt_cgroup_populated(&cg);
        status = rc < 0 ? fail(rc) : (printf("%d\n", rc), 0);
    } else if (strcmp(verb, "pids") == 0) {
        static pid_t pids[65536];
        size_t n;
        rc = rt_cgroup_pids(&cg, pids, RT_ARRAY_SIZE(pids), &n);
        for (size_t i = 0; rc == 0 && i < n; i++)
            printf("%d\n", (int)pids[i]);
        status = rc < 0 ? fail(rc) : 0;
    } else if (strcmp(verb, "owner") == 0) {
        uid_t uid;
        rc = rt_cgroup_owner(&cg, &uid);
        status = rc < 0 ? fail(rc) : (printf("%u\n", (unsigned)uid), 0);
    } else if (strcmp(verb, "kill") == 0) {
        rc = rt_cgroup_kill(&cg);
        status = rc < 0 ? fail(rc) : 0;
    } else if (strcmp(verb, "attach") == 0 && argc == 2) {
        rc = rt_cg_attach(&cg, (pid_t)atoi(argv[1]));
        status = rc < 0 ? fail(rc) : 0;
    } else {
        fprintf(stderr, "rt_cgroup: %s: bad arguments\n", verb);
        status = 2;
    }
    rt_cgroup_close(&cg);
    return status;
}

int main(int argc, char **argv)
{
    const char *proc = NULL, *sys = NULL;
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--proc-root") == 0)
            proc = argv[i + 1];
        else if (strcmp(argv[i], "--sys-root") == 0)
            sys = argv[i + 1];
    }
    if (i >= argc) {
        fprintf(stderr, "usage: rt_cgroup [--proc-root DIR --sys-root DIR] VERB ARGS…\n");
        return 2;
    }
    verb = argv[i++];
    struct rt_roots roots;
    struct rt_cg_host h;
    int rc = rt_roots_open(&roots, proc, sys);
    if (rc < 0)
        return fail(rc);
    rc = rt_cg_host_open(&h, &roots);
    if (rc < 0) {
        rt_roots_close(&roots);
        return fail(rc);
    }
    int status;
    int rest = argc - i;
    if (strcmp(verb, "mounts") == 0)
        status = cmd_mounts(&h);
    else if (strcmp(verb, "make") == 0 && rest == 1)
        status = (rc = rt_cg_make(&h, argv[i])) < 0 ? fail(rc) : 0;
    else if (strcmp(verb, "remove") == 0 && rest == 1)
        status = (rc = rt_cg_remove(&h, argv[i])) < 0 ? fail(rc) : 0;
    else if (strcmp(verb, "where") == 0 && rest == 1)
        status = cmd_where(&roots, &h, (pid_t)atoi(argv[i]));
    else if (strcmp(verb, "classify") == 0 && rest == 1) {
        char norm[4096];
        rc = rt_cg_path_normalize(&h, argv[i], norm, sizeof(norm));
        status = rc < 0 ? fail(rc) : (print(class_json(norm)), 0);
    } else if (strcmp(verb, "container") == 0 && (rest == 1 || rest == 2)) {
        struct rt_container c;
        rc = rt_container_find(&h, rest == 2 ? argv[i + 1] : NULL, argv[i], &c);
        if (rc < 0) {
            status = fail(rc);
        } else {
            struct json_object *o = json_object_new_object();
            json_object_object_add(o, "id", json_object_new_string(c.id));
            json_object_object_add(o, "runtime", json_object_new_string(c.runtime));
            json_object_object_add(o, "cgroup", json_object_new_string(c.cgroup));
            json_object_object_add(o, "name", rt_json_string_or_null(c.name));
            json_object_object_add(o, "image", rt_json_string_or_null(c.image));
            print(o);
            rt_container_free(&c);
            status = 0;
        }
    } else if (rest >= 1)
        status = on_cgroup(&h, rest, argv + i);
    else {
        fprintf(stderr, "rt_cgroup: %s: bad arguments\n", verb);
        status = 2;
    }
    rt_cg_host_close(&h);
    rt_roots_close(&roots);
    return status;
}
