/* The /proc and /sys parsers: the fixture tree of tests/fixtures/host with
 * the input's files written over it (fuzz_tree.h records: proc/stat,
 * proc/meminfo, proc/diskstats, proc/net/dev, proc/self/mountinfo,
 * sys/block/..., proc/PID/stat, io, status, smaps_rollup,
 * task/TID/children, ...), read through struct rt_roots as the sampler
 * does: two host samples (rates need a previous one) written as JSON, read
 * back and written as CSV; then every process found read whole, and the
 * tree of PID 1 scanned twice, as root and as a user; then the cgroup layer
 * (daemon/cgroup/) on the hierarchies of the input's mountinfo: the cgroups
 * of PID 1 and 42, their limits and owners, each of them and the root
 * opened and read, and the container "web"; every process read as a Slurm
 * job's too (facts/slurm.h). Nothing is written. */
#include "cgroup/cgroup.h"
#include "cgroup/classify.h"
#include "cgroup/container.h"
#include "cgroup/place.h"
#include "collect/host_sampler.h"
#include "facts/slurm.h"
#include "fuzz_tree.h"
#include "proc/access.h"
#include "proc/ptree.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "system/log.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

static char template_[PATH_MAX], work[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rt_log_init(RT_LOG_STDERR, LOG_CRIT);
    const char *base = rt_fuzz_workdir("rt-fuzz-procfs");
    snprintf(template_, sizeof(template_), "%s/template", base);
    snprintf(work, sizeof(work), "%s/work", base);
    if (rt_fuzz_tree_copy(RT_FUZZ_FIXTURES "/host", template_) < 0)
        abort();
    return 0;
}

/* Fake clocks and mount sizes: no statvfs of paths the input names. */
static uint64_t clock_ns;
static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return clock_ns += RT_NSEC_PER_SEC;
}

static int fake_statvfs(const char *p, struct statvfs *out, void *ctx)
{
    (void)p;
    (void)ctx;
    memset(out, 0, sizeof(*out));
    out->f_frsize = out->f_bsize = 4096;
    out->f_blocks = 1 << 20;
    out->f_bfree = out->f_bavail = 1 << 19;
    return 0;
}

static void host(const struct rt_roots *roots)
{
    struct rt_collect_hooks hooks = {.mono_ns = fake_clock, .real_ns = fake_clock, .statvfs = fake_statvfs};
    struct rt_host_sampler *h = rt_host_sampler_new_hooks(roots, 1.0, &hooks);
    struct rt_sample s, back;
    rt_sample_init(&s);
    rt_sample_init(&back);
    for (int i = 0; i < 2; i++) {
        rt_sample_reset(&s);
        rt_host_sampler_collect(h, &s);
    }
    struct json_object *o = rt_sample_to_json(&s);
    char err[256], row[1024];
    if (rt_sample_from_json(o, &back, err, sizeof(err)) < 0) {
        fprintf(stderr, "a sample does not read back: %s\n", err);
        abort();
    }
    rt_sample_to_csv(&back, row, sizeof(row));
    json_object_put(o);
    rt_sample_free(&back);
    rt_sample_free(&s);
    rt_host_sampler_free(h);
}

static void processes(const struct rt_roots *roots)
{
    struct rt_cg_host cg;
    bool have_cg = rt_cg_host_open(&cg, roots) == 0;
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, roots->proc_fd);
    rt_proc_cache_begin_tick(&c);
    char dir[PATH_MAX + 32];
    snprintf(dir, sizeof(dir), "%s/proc", work);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!rt_str_all_digits(de->d_name) || strlen(de->d_name) > 9)
            continue;
        rt_proc_cache_get(&c, atoi(de->d_name), RT_PI_IO | RT_PI_PSS | RT_PI_KIDS | RT_PI_OWNER | RT_PI_CREDS);
        struct rt_slurm_job job = {0};
        if (have_cg)
            rt_slurm_job_read(&cg, roots, NULL, atoi(de->d_name), &job);
        rt_slurm_job_free(&job);
    }
    if (d)
        closedir(d);
    struct rt_pstat st;
    const struct rt_reader user = {.uid = 1000, .gid = 1000};
    const struct rt_reader *readers[] = {NULL, &user};
    for (size_t i = 0; i < 2 && rt_pstat_read(roots->proc_fd, 1, &st) == 0; i++) {
        struct rt_ptree t;
        rt_proc_cache_begin_tick(&c);
        if (rt_ptree_init(&t, &c, 1, st.starttime, true, readers[i]) < 0)
            continue;
        struct rt_ptree_result r;
        for (int k = 0; k < 2; k++) {
            rt_proc_cache_begin_tick(&c);
            rt_ptree_scan(&t, &c, &r);
        }
        rt_ptree_free(&t);
    }
    rt_proc_cache_free(&c);
    if (have_cg)
        rt_cg_host_close(&cg);
}

static void read_cgroup(const struct rt_cg_host *h, const char *path)
{
    struct rt_cgroup cg;
    if (rt_cgroup_open(&cg, h, path) < 0)
        return;
    char again[4096];
    if (rt_cg_path_normalize(NULL, cg.path, again, sizeof(again)) < 0 || strcmp(again, cg.path) != 0) {
        fprintf(stderr, "an opened cgroup's path is not normalised: %s\n", cg.path);
        abort();
    }
    struct rt_cg_figures f;
    for (int i = 0; i < 2; i++)
        rt_cgroup_read(&cg, &f);
    rt_cgroup_populated(&cg);
    pid_t pids[64];
    size_t n;
    uid_t uid;
    rt_cgroup_pids(&cg, pids, RT_ARRAY_SIZE(pids), &n);
    rt_cgroup_owner(&cg, &uid);
    rt_cgroup_close(&cg);
}

static void cgroups(const struct rt_roots *roots)
{
    struct rt_cg_host h;
    if (rt_cg_host_open(&h, roots) < 0)
        return;
    static const pid_t pids[] = {1, 42};
    for (size_t i = 0; i < RT_ARRAY_SIZE(pids); i++) {
        struct rt_cg_paths p;
        if (rt_cg_pid_paths(roots, pids[i], &p) < 0)
            continue;
        struct rt_cg_limits l;
        rt_cg_limits_of(&h, &p, &l);
        rt_cg_limits_free(&l);
        for (int k = 0; k < RT_CG_NHIER; k++) {
            struct rt_cg_class c;
            if (!p.path[k])
                continue;
            if (rt_cg_classify(p.path[k], &c) != RT_CG_KIND_NONE && c.len > strlen(p.path[k]))
                abort();
            read_cgroup(&h, p.path[k]);
        }
        rt_cg_paths_free(&p);
    }
    read_cgroup(&h, "/");
    struct rt_container c;
    if (rt_container_find(&h, work, "web", &c) == 0)
        rt_container_free(&c);
    rt_cg_host_close(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (rt_fuzz_tree_copy(template_, work) < 0)
        abort();
    rt_fuzz_tree_apply(work, data, size, false);
    char proc[PATH_MAX + 32], sys[PATH_MAX + 32];
    snprintf(proc, sizeof(proc), "%s/proc", work);
    snprintf(sys, sizeof(sys), "%s/sys", work);
    struct rt_roots roots;
    if (rt_roots_open(&roots, proc, sys) == 0) {
        host(&roots);
        processes(&roots);
        cgroups(&roots);
        rt_roots_close(&roots);
    }
    rt_fuzz_tree_remove(work);
    return 0;
}
