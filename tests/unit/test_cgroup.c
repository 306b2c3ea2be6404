/* cgroup/: hierarchies from mountinfo and a cgroup's figures, on fixture
 * trees of a pure v2, a pure v1 (cpu,cpuacct co-mounted) and a hybrid host
 * (tests/fixtures/cgroup/). Real cgroups: tests/integration/test_cgroup.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "cgroup_host.h"
#include "cgroup/cgroup.h"
#include "cgroup/make.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/inotify.h>

#define ID1 "3f1c2d4e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"

static void test_mounts(void **state)
{
    (void)state;
    struct host x;
    open_fixture(&x, "cgroup/v2");
    assert_int_equal(x.h.mode, RT_CG_MODE_UNIFIED);
    assert_string_equal(x.h.m[RT_CG_V2].point, "/sys/fs/cgroup");
    assert_string_equal(x.h.m[RT_CG_V2].root, "/");
    assert_false(x.h.favor_dynmods);
    for (int i = RT_CG_MEMORY; i < RT_CG_NHIER; i++)
        assert_int_equal(x.h.m[i].fd, -1);
    close_host(&x);

    open_fixture(&x, "cgroup/v1");
    assert_int_equal(x.h.mode, RT_CG_MODE_LEGACY);
    assert_int_equal(x.h.m[RT_CG_V2].fd, -1);
    assert_string_equal(x.h.m[RT_CG_MEMORY].point, "/sys/fs/cgroup/memory");
    /* cpu and cpuacct share one hierarchy */
    assert_string_equal(x.h.m[RT_CG_CPU].point, "/sys/fs/cgroup/cpu,cpuacct");
    assert_string_equal(x.h.m[RT_CG_CPUACCT].point, "/sys/fs/cgroup/cpu,cpuacct");
    assert_string_equal(x.h.m[RT_CG_BLKIO].point, "/sys/fs/cgroup/blkio");
    assert_string_equal(x.h.m[RT_CG_PIDS].point, "/sys/fs/cgroup/pids");
    close_host(&x);

    open_fixture(&x, "cgroup/hybrid");
    assert_int_equal(x.h.mode, RT_CG_MODE_HYBRID);
    assert_string_equal(x.h.m[RT_CG_V2].point, "/sys/fs/cgroup/unified");
    assert_string_equal(x.h.m[RT_CG_CPU].point, "/sys/fs/cgroup/cpu");
    assert_string_equal(x.h.m[RT_CG_CPUACCT].point, "/sys/fs/cgroup/cpuacct");
    close_host(&x);

    /* Nothing mounted; a subtree bind-mounted before the whole tree; an
     * escaped mount point; a mount outside the fixture's /sys is skipped. */
    char *dir = fx_copy("cgroup/v2");
    fx_write(dir, "proc/self/mountinfo", "1 0 0:1 / / rw - ext4 /dev/vda rw\n");
    open_host(&x, dir);
    assert_int_equal(x.h.mode, RT_CG_MODE_NONE);
    close_host(&x);
    char *cmd = rt_xasprintf("mkdir -p '%s/sys/fs/cg roup'", dir);
    fx_sh(cmd);
    free(cmd);
    fx_write(dir, "proc/self/mountinfo",
             "30 1 0:25 /system.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
             "31 1 0:25 / /sys/fs/cg\\040roup rw - cgroup2 cgroup2 rw\n"
             "32 1 0:25 / /elsewhere rw - cgroup2 cgroup2 rw\n"
             "33 1 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
    open_host(&x, dir);
    assert_string_equal(x.h.m[RT_CG_V2].point, "/sys/fs/cg roup");
    assert_string_equal(x.h.m[RT_CG_V2].root, "/");
    assert_int_equal(x.h.m[RT_CG_MEMORY].fd, -1); /* no such directory in the fixture */
    assert_false(x.h.favor_dynmods);
    close_host(&x);
    /* favordynmods: a cgroup2 mount option, or every mount's on a kernel
     * booted with cgroup_favordynmods=true (v1 shows it too). */
    static const char *const favoring[] = {
        "31 1 0:25 / /sys/fs/cg\\040roup rw - cgroup2 cgroup2 rw,nsdelegate,favordynmods\n",
        "33 1 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory,favordynmods\n",
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(favoring); i++) {
        fx_write(dir, "proc/self/mountinfo", favoring[i]);
        open_host(&x, dir);
        assert_true(x.h.favor_dynmods);
        close_host(&x);
    }
    fx_write(dir, "proc/self/mountinfo", "34 1 0:27 / /mnt rw - ext4 /dev/vdb rw,favordynmods\n");
    open_host(&x, dir);
    assert_false(x.h.favor_dynmods); /* not a cgroup file system */
    close_host(&x);
    /* Only a subtree mounted: paths map through its root. */
    fx_write(dir, "proc/self/mountinfo",
             "30 1 0:25 /system.slice /sys/fs/cgroup/system.slice rw - cgroup2 cgroup2 rw\n");
    open_host(&x, dir);
    assert_string_equal(x.h.m[RT_CG_V2].root, "/system.slice");
    char out[256];
    assert_int_equal(rt_cg_path_normalize(&x.h, "/sys/fs/cgroup/system.slice/old.service", out, sizeof(out)), 0);
    assert_string_equal(out, "/system.slice/old.service");
    int fd = rt_cg_open_dir(&x.h, RT_CG_V2, "/system.slice/old.service");
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rt_cg_open_dir(&x.h, RT_CG_V2, "/limited.slice"), -ENOENT); /* outside the subtree */
    close_host(&x);
    fx_rmtree(dir);
}

static void test_paths(void **state)
{
    (void)state;
    struct host x;
    open_fixture(&x, "cgroup/hybrid");
    char out[64];
    static const struct {
        const char *in, *out;
        int rc;
    } cases[] = {
        {"/", "/", 0},
        {"//a///b/", "/a/b", 0},
        {"/system.slice/docker-1.scope", "/system.slice/docker-1.scope", 0},
        {"/sys/fs/cgroup/memory/slurm/uid_0", "/slurm/uid_0", 0},
        {"/sys/fs/cgroup/unified", "/", 0},
        {"/sys/fs/cgroup/unified/rt/job1/", "/rt/job1", 0},
        {"/sys/fs/cgroup/memoryx/a", "/sys/fs/cgroup/memoryx/a", 0}, /* not under a mount point */
        {"relative/path", NULL, -EINVAL},
        {"", NULL, -EINVAL},
        {"/a/../b", NULL, -EINVAL},
        {"/a/./b", NULL, -EINVAL},
        {"/sys/fs/cgroup/memory/..", NULL, -EINVAL},
        {"/a/..b/c.", "/a/..b/c.", 0},
        {"/0123456789/0123456789/0123456789/0123456789/0123456789/0123456789", NULL, -ENAMETOOLONG},
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(cases); i++) {
        int rc = rt_cg_path_normalize(&x.h, cases[i].in, out, sizeof(out));
        if (rc != cases[i].rc)
            fail_msg("%s: %d, not %d", cases[i].in, rc, cases[i].rc);
        if (rc == 0 && strcmp(out, cases[i].out) != 0)
            fail_msg("%s: '%s', not '%s'", cases[i].in, out, cases[i].out);
    }
    assert_int_equal(rt_cg_path_normalize(NULL, "/x//y", out, sizeof(out)), 0);
    assert_string_equal(out, "/x/y");
    close_host(&x);
}

/* Every v2 file of a cgroup with the cpu, memory, io and pids controllers. */
static void test_v2_figures(void **state)
{
    (void)state;
    struct host x;
    open_fixture(&x, "cgroup/v2");
    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/system.slice/docker-" ID1 ".scope/"), 0);
    assert_string_equal(cg.path, "/system.slice/docker-" ID1 ".scope");
    assert_true(rt_cgroup_in(&cg, RT_CG_V2));
    assert_false(rt_cgroup_in(&cg, RT_CG_MEMORY));
    struct rt_cg_figures f;
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    assert_int_equal(f.have, (RT_CGF_POPULATED << 1) - 1); /* every group */
    assert_int_equal(f.cpu_usage_usec, 123456789);
    assert_int_equal(f.cpu_user_usec, 100000000);
    assert_int_equal(f.cpu_system_usec, 23456789);
    assert_int_equal(f.nr_periods, 5000);
    assert_int_equal(f.nr_throttled, 1200);
    assert_int_equal(f.throttled_usec, 98765432);
    assert_int_equal(f.mem_current, 536870912);
    assert_int_equal(f.mem_peak, 1073741824);
    assert_int_equal(f.mem_anon, 402653184);
    assert_int_equal(f.mem_file, 100663296);
    assert_int_equal(f.mem_shmem, 8388608);
    assert_int_equal(f.mem_kernel, 16777216);
    assert_int_equal(f.swap_current, 4096000);
    assert_int_equal(f.swap_peak, 8192000);
    assert_int_equal(f.ev_high, 17);
    assert_int_equal(f.ev_max, 3);
    assert_int_equal(f.ev_oom, 2);
    assert_int_equal(f.ev_oom_kill, 1);
    assert_int_equal(f.mem_max, 2147483648);
    assert_true(f.mem_high == RT_CG_UNLIMITED);
    assert_int_equal(f.cpu_quota_usec, 200000);
    assert_int_equal(f.cpu_period_usec, 100000);
    assert_int_equal(f.io_rbytes, 1048576 + 4096);
    assert_int_equal(f.io_wbytes, 2097152 + 8192);
    assert_int_equal(f.io_rios, 101);
    assert_int_equal(f.io_wios, 202);
    assert_int_equal(f.pids_current, 12);
    assert_int_equal(f.pids_peak, 40);
    assert_int_equal(f.psi_cpu.some_usec, 3958483);
    assert_int_equal(f.psi_cpu.full_usec, 1234567);
    assert_int_equal(f.psi_mem.some_usec, 22222);
    assert_int_equal(f.psi_mem.full_usec, 11111);
    assert_int_equal(f.psi_io.some_usec, 555);
    assert_int_equal(f.psi_io.full_usec, 444);
    assert_true(f.populated);
    assert_int_equal(rt_cgroup_populated(&cg), 1);
    uid_t uid = 12345;
    assert_int_equal(rt_cgroup_owner(&cg, &uid), 0);
    assert_int_equal(uid, getuid());
    /* Processes of it and its descendants, once each. */
    pid_t pids[8];
    size_t n;
    assert_int_equal(rt_cgroup_pids(&cg, pids, 8, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(pids[0], 4242);
    assert_int_equal(pids[1], 4243);
    assert_int_equal(pids[2], 4300);
    assert_int_equal(pids[3], 4301);
    assert_int_equal(rt_cgroup_pids(&cg, pids, 3, &n), -E2BIG);
    assert_int_equal(n, 3);
    rt_cgroup_close(&cg);
    close_host(&x);
}

/* An older kernel's files: what is missing is absent, not 0. */
static void test_v2_older_kernel(void **state)
{
    (void)state;
    struct host x;
    open_fixture(&x, "cgroup/v2");
    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/system.slice/old.service"), 0);
    struct rt_cg_figures f;
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    uint32_t absent = RT_CGF_THROTTLE | RT_CGF_MEM_PEAK | RT_CGF_SWAP | RT_CGF_SWAP_PEAK | RT_CGF_MEM_HIGH |
                      RT_CGF_PIDS_PEAK | RT_CGF_PSI_CPU_FULL;
    assert_int_equal(f.have, ((RT_CGF_POPULATED << 1) - 1) & ~absent);
    assert_int_equal(f.cpu_usage_usec, 5000);
    /* kernel = kernel_stack + pagetables + percpu + slab_reclaimable + slab_unreclaimable */
    assert_int_equal(f.mem_kernel, 16384 + 8192 + 1024 + 2048 + 4096);
    assert_true(f.mem_max == RT_CG_UNLIMITED);
    assert_true(f.cpu_quota_usec == RT_CG_UNLIMITED);
    assert_int_equal(f.cpu_period_usec, 100000);
    assert_int_equal(f.io_rbytes + f.io_wbytes + f.io_rios + f.io_wios, 0); /* empty io.stat: no I/O yet */
    assert_int_equal(f.psi_cpu.some_usec, 10);
    assert_int_equal(f.ev_oom_kill, 0);
    assert_false(f.populated);
    assert_int_equal(rt_cgroup_populated(&cg), 0);
    pid_t pids[4];
    size_t n = 99;
    assert_int_equal(rt_cgroup_pids(&cg, pids, 4, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(rt_cgroup_reset_peak(&cg), -EOPNOTSUPP); /* no memory.peak */
    rt_cgroup_close(&cg);
    /* The root cgroup: its v2 cpu.stat, no cgroup.events. */
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/"), 0);
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    assert_int_equal(f.have, RT_CGF_CPU | RT_CGF_CPU_SPLIT);
    assert_int_equal(f.cpu_usage_usec, 999999999);
    rt_cgroup_close(&cg);
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/no/such.scope"), -ENOENT);
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/system.slice/../etc"), -EINVAL);
    close_host(&x);
}

/* Rewrite a fixture file in place, as the kernel's files change under an
 * open descriptor. */
static void overwrite(const char *dir, const char *rel, const char *content)
{
    char *p = rt_xasprintf("%s/sys/fs/cgroup/system.slice/old.service/%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    assert_int_equal(fclose(f), 0);
    free(p);
}

/* Garbage in a file read through an open handle: that group is absent, the
 * others are read; good values are read again once the file is. */
static void test_garbage(void **state)
{
    (void)state;
    char *dir = fx_copy("cgroup/v2");
    struct host x;
    open_host(&x, dir);
    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/system.slice/old.service"), 0);
    overwrite(dir, "memory.current", "12x\n");
    overwrite(dir, "cpu.stat", "usage_usec\nuser_usec 1 2\nsystem_usec 3\n");
    overwrite(dir, "memory.events", "oom_kill 18446744073709551616\nmax 4\n");
    overwrite(dir, "cpu.pressure", "some avg10=0.00 total=\nfull total=5\n");
    struct rt_cg_figures f;
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    assert_false(f.have & (RT_CGF_MEM | RT_CGF_CPU | RT_CGF_CPU_SPLIT | RT_CGF_OOM_KILL | RT_CGF_PSI_CPU));
    assert_true(rt_cg_has(&f, RT_CGF_MEM_STAT | RT_CGF_MEM_EV_MAX | RT_CGF_PSI_MEM));
    assert_int_equal(f.ev_max, 4);
    overwrite(dir, "memory.current", "2048\n");
    overwrite(dir, "cpu.stat", "usage_usec 9\nuser_usec 5\nsystem_usec 4\n");
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    assert_true(rt_cg_has(&f, RT_CGF_MEM | RT_CGF_CPU | RT_CGF_CPU_SPLIT));
    assert_int_equal(f.mem_current, 2048);
    assert_int_equal(f.cpu_usage_usec, 9);
    /* A file longer than the read buffer: io.stat of many devices. */
    char *big = rt_xmalloc(200 * 80);
    size_t len = 0;
    for (int i = 0; i < 200; i++)
        len += (size_t)sprintf(big + len, "8:%d rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n", i);
    overwrite(dir, "io.stat", big);
    free(big);
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    assert_int_equal(f.io_rbytes, 200);
    assert_int_equal(f.io_wios, 800);
    rt_cgroup_close(&cg);
    close_host(&x);
    fx_rmtree(dir);
}

/* A Slurm job of the v1 plugin on a v1 host: cpuacct, v1 cpu throttling and
 * quota, memory, blkio, pids. */
static void test_v1_figures(void **state)
{
    (void)state;
    struct host x;
    open_fixture(&x, "cgroup/v1");
    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/sys/fs/cgroup/memory/slurm_node1/uid_1000/job_42"), 0);
    assert_string_equal(cg.path, "/slurm_node1/uid_1000/job_42");
    for (int i = RT_CG_MEMORY; i < RT_CG_NHIER; i++)
        assert_true(rt_cgroup_in(&cg, i));
    struct rt_cg_figures f;
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    uint32_t want = RT_CGF_CPU | RT_CGF_CPU_SPLIT | RT_CGF_THROTTLE | RT_CGF_MEM | RT_CGF_MEM_PEAK |
                    RT_CGF_MEM_STAT | RT_CGF_MEM_KERNEL | RT_CGF_SWAP | RT_CGF_OOM_KILL | RT_CGF_MEM_EV_MAX |
                    RT_CGF_MEM_MAX | RT_CGF_CPU_MAX | RT_CGF_IO | RT_CGF_PIDS | RT_CGF_PIDS_PEAK;
    assert_int_equal(f.have, want);
    assert_int_equal(f.cpu_usage_usec, 5000000);
    assert_int_equal(f.cpu_user_usec, 4000000); /* 400 ticks at USER_HZ 100 */
    assert_int_equal(f.cpu_system_usec, 1000000);
    assert_int_equal(f.nr_periods, 10);
    assert_int_equal(f.nr_throttled, 2);
    assert_int_equal(f.throttled_usec, 300000);
    assert_int_equal(f.cpu_quota_usec, 150000);
    assert_int_equal(f.cpu_period_usec, 100000);
    assert_int_equal(f.mem_current, 73400320);
    assert_int_equal(f.mem_peak, 99614720);
    assert_int_equal(f.mem_anon, 50331648); /* total_*: the job's steps included */
    assert_int_equal(f.mem_file, 20971520);
    assert_int_equal(f.mem_shmem, 1048576);
    assert_int_equal(f.mem_kernel, 2097152);
    assert_int_equal(f.swap_current, 2097152);
    assert_int_equal(f.ev_oom_kill, 2);
    assert_int_equal(f.ev_max, 57);
    assert_int_equal(f.mem_max, 104857600);
    assert_int_equal(f.io_rbytes, 1010);
    assert_int_equal(f.io_wbytes, 2020);
    assert_int_equal(f.io_rios, 6);
    assert_int_equal(f.io_wios, 8);
    assert_int_equal(f.pids_current, 3);
    assert_int_equal(f.pids_peak, 5);
    /* No cgroup.events in v1: pids.current says it is populated. */
    assert_int_equal(rt_cgroup_populated(&cg), 1);
    assert_int_equal(rt_cgroup_watch(&cg, 0), -EOPNOTSUPP);
    assert_int_equal(rt_cgroup_kill(&cg), -EOPNOTSUPP);
    pid_t pids[4];
    size_t n;
    assert_int_equal(rt_cgroup_pids(&cg, pids, 4, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pids[0], 5000);
    assert_int_equal(pids[1], 5001);
    rt_cgroup_close(&cg);

    /* Without a pids hierarchy: cgroup.procs of the tree, all empty. */
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/slurm_node1/uid_1000/job_43"), 0);
    assert_false(rt_cgroup_in(&cg, RT_CG_PIDS));
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    assert_int_equal(f.have, RT_CGF_CPU | RT_CGF_CPU_SPLIT | RT_CGF_MEM);
    assert_int_equal(rt_cgroup_populated(&cg), 0);
    rt_cgroup_close(&cg);
    close_host(&x);

    /* A process appears in a task's cgroup.procs. */
    char *dir = fx_copy("cgroup/v1");
    open_host(&x, dir);
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/slurm_node1/uid_1000/job_43"), 0);
    fx_write(dir, "sys/fs/cgroup/memory/slurm_node1/uid_1000/job_43/step_0/task_0/cgroup.procs", "77\n");
    assert_int_equal(rt_cgroup_populated(&cg), 1);
    rt_cgroup_close(&cg);
    close_host(&x);
    fx_rmtree(dir);
}

/* The hybrid rule: one path in every hierarchy; CPU, PSI and populated from
 * v2, memory, I/O and pids from v1. A v1-only Slurm job: CPU from cpuacct. */
static void test_hybrid(void **state)
{
    (void)state;
    struct host x;
    open_fixture(&x, "cgroup/hybrid");
    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/rt/job1"), 0);
    assert_true(rt_cgroup_in(&cg, RT_CG_V2));
    assert_false(rt_cgroup_in(&cg, RT_CG_CPU));
    struct rt_cg_figures f;
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    uint32_t want = RT_CGF_CPU | RT_CGF_CPU_SPLIT | RT_CGF_PSI_CPU | RT_CGF_PSI_CPU_FULL | RT_CGF_PSI_MEM |
                    RT_CGF_PSI_IO | RT_CGF_POPULATED | RT_CGF_MEM | RT_CGF_MEM_PEAK | RT_CGF_MEM_STAT |
                    RT_CGF_MEM_KERNEL | RT_CGF_SWAP | RT_CGF_OOM_KILL | RT_CGF_MEM_EV_MAX | RT_CGF_MEM_MAX |
                    RT_CGF_IO | RT_CGF_PIDS | RT_CGF_PIDS_PEAK;
    assert_int_equal(f.have, want);
    assert_int_equal(f.cpu_usage_usec, 7891704); /* v2, not cpuacct.usage's 1 ns */
    assert_int_equal(f.cpu_user_usec, 7000000);
    assert_int_equal(f.mem_current, 10485760);
    assert_int_equal(f.mem_peak, 20971520);
    assert_int_equal(f.mem_anon, 8192);
    assert_int_equal(f.mem_kernel, 65536);
    assert_true(f.mem_max == RT_CG_UNLIMITED);
    assert_int_equal(f.io_rbytes + f.io_wbytes, 0);
    assert_int_equal(f.pids_peak, 4);
    assert_int_equal(f.psi_cpu.some_usec, 3958483);
    assert_int_equal(f.psi_io.full_usec, 3);
    assert_int_equal(rt_cgroup_populated(&cg), 1);
    pid_t pids[4];
    size_t n;
    assert_int_equal(rt_cgroup_pids(&cg, pids, 4, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pids[0], 300);
    rt_cgroup_close(&cg);

    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/slurm_localhost/uid_0/job_2"), 0);
    assert_false(rt_cgroup_in(&cg, RT_CG_V2));
    assert_int_equal(rt_cgroup_read(&cg, &f), 0);
    assert_int_equal(f.have, RT_CGF_CPU | RT_CGF_CPU_SPLIT | RT_CGF_MEM | RT_CGF_MEM_MAX);
    assert_int_equal(f.cpu_usage_usec, 2500000);
    assert_int_equal(f.cpu_user_usec, 2000000);
    assert_int_equal(f.cpu_system_usec, 500000);
    assert_int_equal(f.mem_max, 104857600);
    assert_int_equal(rt_cgroup_populated(&cg), 1); /* task_0's cgroup.procs */
    rt_cgroup_close(&cg);
    close_host(&x);
}

/* cgroup.events changes raise IN_MODIFY on the watch (a fixture file written
 * in place stands in for the kernel's notification). */
static void test_watch(void **state)
{
    (void)state;
    char *dir = fx_copy("cgroup/v2");
    struct host x;
    open_host(&x, dir);
    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/system.slice/docker-" ID1 ".scope"), 0);
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    assert_true(in >= 0);
    int wd = rt_cgroup_watch(&cg, in);
    assert_true(wd >= 0);
    char *p = rt_xasprintf("%s/sys/fs/cgroup/system.slice/docker-" ID1 ".scope/cgroup.events", dir);
    FILE *f = fopen(p, "r+");
    assert_non_null(f);
    fputs("populated 0\nfrozen 0\n", f);
    fclose(f);
    free(p);
    struct pollfd pfd = {.fd = in, .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 5000), 1);
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t r = read(in, buf, sizeof(buf));
    assert_true(r >= (ssize_t)sizeof(struct inotify_event));
    const struct inotify_event *ev = (const void *)buf;
    assert_int_equal(ev->wd, wd);
    assert_true(ev->mask & IN_MODIFY);
    assert_int_equal(rt_cgroup_populated(&cg), 0);
    close(in);
    rt_cgroup_close(&cg);
    close_host(&x);
    fx_rmtree(dir);
}

static bool is_dir(const char *dir, const char *rel, mode_t *mode)
{
    char *p = rt_xasprintf("%s/%s", dir, rel);
    struct stat st;
    bool ok = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
    if (ok && mode)
        *mode = st.st_mode & 07777;
    free(p);
    return ok;
}

static char *slurp(const char *dir, const char *rel)
{
    char *p = rt_xasprintf("%s/%s", dir, rel), buf[256];
    ssize_t n = rt_read_file_at(AT_FDCWD, p, buf, sizeof(buf));
    free(p);
    return n < 0 ? NULL : rt_xstrdup(buf);
}

/* Made in v2 and the v1 memory, cpuacct, blkio and pids hierarchies, not
 * in v1 cpu; attached in each; removed with what is below it. */
static void test_make(void **state)
{
    (void)state;
    static const char *const made[] = {"unified", "memory", "cpuacct", "blkio", "pids"};
    char *dir = fx_copy("cgroup/hybrid");
    struct host x;
    open_host(&x, dir);
    assert_int_equal(rt_cg_make(&x.h, "/tracker/job-7.scope"), 0);
    for (size_t i = 0; i < RT_ARRAY_SIZE(made); i++) {
        char *rel = rt_xasprintf("sys/fs/cgroup/%s/tracker/job-7.scope", made[i]);
        mode_t mode = 0;
        assert_true(is_dir(dir, rel, &mode));
        assert_int_equal(mode, 0755);
        /* what the kernel would show in a new cgroup */
        char *procs = rt_xasprintf("%s/cgroup.procs", rel);
        fx_write(dir, procs, "");
        free(procs);
        free(rel);
    }
    assert_false(is_dir(dir, "sys/fs/cgroup/cpu/tracker", NULL));
    assert_int_equal(rt_cg_make(&x.h, "/tracker/job-7.scope"), -EEXIST);
    assert_int_equal(rt_cg_make(&x.h, "/"), -EINVAL);
    assert_int_equal(rt_cg_make(&x.h, "/tracker/../x"), -EINVAL);

    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open(&cg, &x.h, "/tracker/job-7.scope"), 0);
    assert_int_equal(rt_cg_attach(&cg, 4321), 0);
    for (size_t i = 0; i < RT_ARRAY_SIZE(made); i++) {
        char *rel = rt_xasprintf("sys/fs/cgroup/%s/tracker/job-7.scope/cgroup.procs", made[i]);
        char *text = slurp(dir, rel);
        assert_string_equal(text, "4321\n");
        free(text);
        fx_remove(dir, rel);
        free(rel);
    }
    rt_cgroup_close(&cg);
    char *sub = rt_xasprintf("mkdir -p '%s/sys/fs/cgroup/memory/tracker/job-7.scope/a/b'", dir);
    fx_sh(sub);
    free(sub);
    assert_int_equal(rt_cg_remove(&x.h, "/tracker/job-7.scope"), 0);
    for (size_t i = 0; i < RT_ARRAY_SIZE(made); i++) {
        char *rel = rt_xasprintf("sys/fs/cgroup/%s/tracker/job-7.scope", made[i]);
        assert_false(is_dir(dir, rel, NULL));
        free(rel);
        rel = rt_xasprintf("sys/fs/cgroup/%s/tracker", made[i]);
        assert_true(is_dir(dir, rel, NULL)); /* the parent stays */
        free(rel);
    }
    assert_int_equal(rt_cg_remove(&x.h, "/tracker/job-7.scope"), 0);
    assert_int_equal(rt_cg_remove(&x.h, "/"), -EINVAL);
    close_host(&x);
    fx_rmtree(dir);

    /* v2: memory, io and pids enabled for children down from the root
     * where available (cpu is not asked for). */
    dir = fx_copy("cgroup/v2");
    fx_write(dir, "sys/fs/cgroup/cgroup.subtree_control", "cpu\n");
    open_host(&x, dir);
    assert_int_equal(rt_cg_make(&x.h, "/sys/fs/cgroup/tracker.slice/j1"), 0);
    assert_true(is_dir(dir, "sys/fs/cgroup/tracker.slice/j1", NULL));
    char *text = slurp(dir, "sys/fs/cgroup/cgroup.subtree_control");
    assert_string_equal(text, "+memory +io +pids");
    free(text);
    close_host(&x);
    fx_rmtree(dir);

    /* v1 with cpu,cpuacct co-mounted: one directory there. */
    dir = fx_copy("cgroup/v1");
    open_host(&x, dir);
    assert_int_equal(rt_cg_make(&x.h, "/tracker/j2"), 0);
    assert_true(is_dir(dir, "sys/fs/cgroup/cpu,cpuacct/tracker/j2", NULL));
    assert_true(is_dir(dir, "sys/fs/cgroup/memory/tracker/j2", NULL));
    assert_false(is_dir(dir, "sys/fs/cgroup/cpuset/tracker", NULL));
    close_host(&x);
    fx_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mounts),       cmocka_unit_test(test_paths),
        cmocka_unit_test(test_v2_figures),   cmocka_unit_test(test_v2_older_kernel),
        cmocka_unit_test(test_garbage),      cmocka_unit_test(test_v1_figures),
        cmocka_unit_test(test_hybrid),       cmocka_unit_test(test_watch),
        cmocka_unit_test(test_make),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
