/* cgroup/place.h and cgroup/classify.h: a process's cgroups from
 * /proc/PID/cgroup, the limits up the tree, and whose a cgroup is, on the
 * fixture trees of tests/fixtures/cgroup/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "cgroup_host.h"
#include "cgroup/cgroup.h"
#include "cgroup/classify.h"
#include "cgroup/container.h"
#include "cgroup/place.h"

#include <pwd.h>

#define ID1 "3f1c2d4e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"
#define ID2 "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define ID3 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID4 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define JOB42 "/slurm_node1/uid_1000/job_42"

static void expect_paths(const struct rt_cg_paths *p, const char *const want[RT_CG_NHIER])
{
    for (int i = 0; i < RT_CG_NHIER; i++) {
        if (!want[i] != !p->path[i] || (want[i] && strcmp(want[i], p->path[i]) != 0))
            fail_msg("%s: '%s', not '%s'", rt_cg_hier_name(i), p->path[i] ? p->path[i] : "(none)",
                     want[i] ? want[i] : "(none)");
    }
}

static void test_pid_paths(void **state)
{
    (void)state;
    struct host x;
    struct rt_cg_paths p;
    open_fixture(&x, "cgroup/v2");
    assert_int_equal(rt_cg_pid_paths(&x.roots, 100, &p), 0);
    expect_paths(&p, (const char *[]){"/system.slice/docker-" ID1 ".scope", NULL, NULL, NULL, NULL, NULL});
    rt_cg_paths_free(&p);
    assert_int_equal(rt_cg_pid_paths(&x.roots, 99999, &p), -ENOENT);
    close_host(&x);

    open_fixture(&x, "cgroup/hybrid");
    assert_int_equal(rt_cg_pid_paths(&x.roots, 300, &p), 0);
    expect_paths(&p, (const char *[]){"/rt/job1", "/rt/job1", "/rt/job1", "/", "/rt/job1", "/rt/job1"});
    rt_cg_paths_free(&p);
    close_host(&x);

    /* "cpu,cpuacct" names both; no v2 line on a v1 host. */
    open_fixture(&x, "cgroup/v1");
    assert_int_equal(rt_cg_pid_paths(&x.roots, 500, &p), 0);
    const char *task = JOB42 "/step_0/task_0";
    expect_paths(&p, (const char *[]){NULL, task, task, task, task, task});
    rt_cg_paths_free(&p);
    close_host(&x);

    /* A cgroup name holding a newline cannot override an earlier line. */
    char *dir = fx_copy("cgroup/hybrid");
    fx_write(dir, "proc/600/cgroup", "4:memory:/a//b\n2:cpuacct:/x\n4:memory:/forged\n0::/y\n0::/forged\n3:junk\n");
    open_host(&x, dir);
    assert_int_equal(rt_cg_pid_paths(&x.roots, 600, &p), 0);
    expect_paths(&p, (const char *[]){"/y", "/a/b", "/x", NULL, NULL, NULL});
    rt_cg_paths_free(&p);
    close_host(&x);
    fx_rmtree(dir);
}

static void expect_limit(uint64_t v, const char *at, uint64_t want, const char *want_at)
{
    bool same_at = at && want_at ? strcmp(at, want_at) == 0 : at == want_at;
    if (v != want || !same_at)
        fail_msg("%llu at %s, not %llu at %s", (unsigned long long)v, at ? at : "-", (unsigned long long)want,
                 want_at ? want_at : "-");
}

static void test_limits(void **state)
{
    (void)state;
    struct host x;
    struct rt_cg_paths p;
    struct rt_cg_limits l;
    open_fixture(&x, "cgroup/v2");
    /* The parent's smaller memory.max and quota hold; memory.high is the job's own. */
    assert_int_equal(rt_cg_pid_paths(&x.roots, 101, &p), 0);
    assert_int_equal(rt_cg_limits_of(&x.h, &p, &l), 0);
    expect_limit(l.mem_max, l.mem_max_at, 1073741824, "/limited.slice");
    expect_limit(l.mem_high, l.mem_high_at, 1610612736, "/limited.slice/job.scope");
    expect_limit(l.cpu_quota_usec, l.cpu_at, 50000, "/limited.slice");
    assert_int_equal(l.cpu_period_usec, 100000);
    rt_cg_limits_free(&l);
    rt_cg_paths_free(&p);
    assert_int_equal(rt_cg_limits_of_path(&x.h, "/sys/fs/cgroup/system.slice/docker-" ID1 ".scope", &l), 0);
    expect_limit(l.mem_max, l.mem_max_at, 2147483648, "/system.slice/docker-" ID1 ".scope");
    expect_limit(l.mem_high, l.mem_high_at, RT_CG_UNLIMITED, NULL);
    expect_limit(l.cpu_quota_usec, l.cpu_at, 200000, "/system.slice/docker-" ID1 ".scope");
    rt_cg_limits_free(&l);
    assert_int_equal(rt_cg_limits_of_path(&x.h, "/system.slice/old.service", &l), 0);
    expect_limit(l.mem_max, l.mem_max_at, RT_CG_UNLIMITED, NULL);
    expect_limit(l.cpu_quota_usec, l.cpu_at, RT_CG_UNLIMITED, NULL);
    assert_int_equal(l.cpu_period_usec, 0);
    rt_cg_limits_free(&l);
    assert_int_equal(rt_cg_limits_of_path(&x.h, "../x", &l), -EINVAL);
    close_host(&x);

    /* v1: the step's limit is the nearest of the equal job and step limits;
     * the quota is the job's. */
    open_fixture(&x, "cgroup/v1");
    assert_int_equal(rt_cg_pid_paths(&x.roots, 500, &p), 0);
    assert_int_equal(rt_cg_limits_of(&x.h, &p, &l), 0);
    expect_limit(l.mem_max, l.mem_max_at, 104857600, JOB42 "/step_0");
    expect_limit(l.mem_high, l.mem_high_at, RT_CG_UNLIMITED, NULL);
    expect_limit(l.cpu_quota_usec, l.cpu_at, 150000, JOB42);
    assert_int_equal(l.cpu_period_usec, 100000);
    rt_cg_limits_free(&l);
    rt_cg_paths_free(&p);
    close_host(&x);

    /* Hybrid: the memory limit of a Slurm job seen through v1 memory while
     * the process's v2 and cpu cgroups are the root. */
    open_fixture(&x, "cgroup/hybrid");
    assert_int_equal(rt_cg_pid_paths(&x.roots, 301, &p), 0);
    assert_int_equal(rt_cg_limits_of(&x.h, &p, &l), 0);
    expect_limit(l.mem_max, l.mem_max_at, 104857600, "/slurm_localhost/uid_0/job_2/step_0");
    expect_limit(l.cpu_quota_usec, l.cpu_at, RT_CG_UNLIMITED, NULL);
    rt_cg_limits_free(&l);
    rt_cg_paths_free(&p);
    assert_int_equal(rt_cg_pid_paths(&x.roots, 300, &p), 0);
    assert_int_equal(rt_cg_limits_of(&x.h, &p, &l), 0);
    expect_limit(l.mem_max, l.mem_max_at, RT_CG_UNLIMITED, NULL);
    rt_cg_limits_free(&l);
    rt_cg_paths_free(&p);
    close_host(&x);
}

static void test_classify(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        enum rt_cg_kind kind;
        const char *owner; /* the prefix that is the job's, container's or unit's cgroup */
        const char *name, *id;
        uint64_t job;
        int64_t uid;
    } cases[] = {
        {JOB42 "/step_0/task_0", RT_CG_KIND_SLURM, JOB42, "job_42", "", 42, 1000},
        {"/slurm/uid_0/job_7", RT_CG_KIND_SLURM, "/slurm/uid_0/job_7", "job_7", "", 7, 0},
        {"/system.slice/slurmstepd.scope/job_123/step_0/user/task_0", RT_CG_KIND_SLURM,
         "/system.slice/slurmstepd.scope/job_123", "job_123", "", 123, -1},
        {"/system.slice/node1_slurmstepd.scope/sEKNKTV3WPV500/step_batch", RT_CG_KIND_SLURM,
         "/system.slice/node1_slurmstepd.scope/sEKNKTV3WPV500", "sEKNKTV3WPV500", "", 0, -1},
        {"/system.slice/slurmstepd.scope/system", RT_CG_KIND_UNIT, "/system.slice/slurmstepd.scope",
         "slurmstepd.scope", "", 0, -1},
        {"/slurm_n1/uid_x/job_1", RT_CG_KIND_NONE, "", "", "", 0, -1},
        {"/system.slice/docker-" ID1 ".scope", RT_CG_KIND_CONTAINER, "/system.slice/docker-" ID1 ".scope",
         "docker", ID1, 0, -1},
        {"/docker/" ID1 "/sub", RT_CG_KIND_CONTAINER, "/docker/" ID1, "docker", ID1, 0, -1},
        {"/machine.slice/libpod-" ID2 ".scope/container", RT_CG_KIND_CONTAINER,
         "/machine.slice/libpod-" ID2 ".scope", "podman", ID2, 0, -1},
        {"/machine.slice/libpod-conmon-" ID2 ".scope", RT_CG_KIND_UNIT, "/machine.slice/libpod-conmon-" ID2 ".scope",
         "libpod-conmon-" ID2 ".scope", "", 0, -1},
        {"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID2 ".scope", RT_CG_KIND_CONTAINER,
         "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID2 ".scope", "podman", ID2, 0, 1000},
        {"/libpod_parent/libpod-" ID2, RT_CG_KIND_CONTAINER, "/libpod_parent/libpod-" ID2, "podman", ID2, 0, -1},
        {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice/cri-containerd-" ID3 ".scope",
         RT_CG_KIND_CONTAINER,
         "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice/cri-containerd-" ID3 ".scope",
         "containerd", ID3, 0, -1},
        {"/kubepods.slice/kubepods-pod12_34.slice/crio-" ID3 ".scope", RT_CG_KIND_CONTAINER,
         "/kubepods.slice/kubepods-pod12_34.slice/crio-" ID3 ".scope", "cri-o", ID3, 0, -1},
        {"/kubepods/burstable/pod12-34/" ID3, RT_CG_KIND_CONTAINER, "/kubepods/burstable/pod12-34/" ID3,
         "kubernetes", ID3, 0, -1},
        {"/other/pod12/" ID3, RT_CG_KIND_NONE, "", "", "", 0, -1},
        {"/system.slice/docker-0123.scope", RT_CG_KIND_UNIT, "/system.slice/docker-0123.scope",
         "docker-0123.scope", "", 0, -1},
        {"/system.slice/nginx.service", RT_CG_KIND_UNIT, "/system.slice/nginx.service", "nginx.service", "", 0, -1},
        {"/user.slice/user-1000.slice/session-3.scope", RT_CG_KIND_UNIT, "/user.slice/user-1000.slice/session-3.scope",
         "session-3.scope", "", 0, 1000},
        {"/user.slice/user-1000.slice/user@1000.service/app.slice/app-foo.scope/sub", RT_CG_KIND_UNIT,
         "/user.slice/user-1000.slice/user@1000.service/app.slice/app-foo.scope", "app-foo.scope", "", 0, 1000},
        {"/", RT_CG_KIND_NONE, "", "", "", 0, -1},
        {"/system.slice", RT_CG_KIND_NONE, "", "", "", 0, -1},
        {"/rt/job1", RT_CG_KIND_NONE, "", "", "", 0, -1},
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(cases); i++) {
        struct rt_cg_class c;
        const char *path = cases[i].path;
        if (rt_cg_classify(path, &c) != cases[i].kind)
            fail_msg("%s: kind %d, not %d", path, c.kind, cases[i].kind);
        if (c.len != strlen(cases[i].owner) || strncmp(path, cases[i].owner, c.len) != 0)
            fail_msg("%s: owner '%.*s', not '%s'", path, (int)c.len, path, cases[i].owner);
        if (strcmp(c.name, cases[i].name) != 0 || strcmp(c.id, cases[i].id) != 0)
            fail_msg("%s: name '%s' id '%s'", path, c.name, c.id);
        if (c.job != cases[i].job || c.uid != cases[i].uid)
            fail_msg("%s: job %llu uid %lld", path, (unsigned long long)c.job, (long long)c.uid);
    }
}

static void expect_container(const struct rt_cg_host *h, const char *state, const char *key, const char *id,
                             const char *runtime, const char *cgroup, const char *name, const char *image)
{
    struct rt_container c;
    int rc = rt_container_find(h, state, key, &c);
    if (rc != 0)
        fail_msg("%s: %d", key, rc);
    if (strcmp(c.id, id) != 0 || strcmp(c.runtime, runtime) != 0 || strcmp(c.cgroup, cgroup) != 0)
        fail_msg("%s: %s %s %s", key, c.id, c.runtime, c.cgroup);
    if (!name != !c.name || (name && strcmp(name, c.name) != 0) || !image != !c.image ||
        (image && strcmp(image, c.image) != 0))
        fail_msg("%s: name %s image %s", key, c.name ? c.name : "-", c.image ? c.image : "-");
    rt_container_free(&c);
}

static void expect_no_container(const struct rt_cg_host *h, const char *state, const char *key, int want)
{
    struct rt_container c;
    int rc = rt_container_find(h, state, key, &c);
    if (rc != want)
        fail_msg("%s: %d, not %d", key, rc, want);
    assert_null(c.cgroup);
}

static void test_containers(void **state)
{
    (void)state;
    struct host x;
    char *st = fx_path("cgroup/state");
    open_fixture(&x, "cgroup/v2");
    const char *docker1 = "/system.slice/docker-" ID1 ".scope", *pod2 = "/machine.slice/libpod-" ID2 ".scope";
    /* by id, a prefix of at least 12 digits (any case), or a name */
    expect_container(&x.h, st, ID1, ID1, "docker", docker1, "web", "nginx:1.25");
    expect_container(&x.h, st, "3f1c2d4e5a6b", ID1, "docker", docker1, "web", "nginx:1.25");
    expect_container(&x.h, st, "3F1C2D4E5A6B7C", ID1, "docker", docker1, "web", "nginx:1.25");
    expect_container(&x.h, st, "web", ID1, "docker", docker1, "web", "nginx:1.25");
    expect_container(&x.h, st, "a1b2c3d4e5f6071", ID2, "podman", pod2, "db", "docker.io/library/postgres:16");
    expect_container(&x.h, st, "db", ID2, "podman", pod2, "db", "docker.io/library/postgres:16");
    expect_container(&x.h, st, ID3, ID3, "containerd",
                     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice/"
                     "cri-containerd-" ID3 ".scope",
                     NULL, NULL);
    expect_no_container(&x.h, st, "3f1c2d4e5a6", -ENOENT); /* 11 digits: a name, and none has it */
    expect_no_container(&x.h, st, "555555555555", -ENOTUNIQ);
    expect_no_container(&x.h, st, "twin", -ENOTUNIQ);          /* a docker and a podman container */
    expect_no_container(&x.h, st, "nosuch", -ENOENT);
    expect_no_container(&x.h, st, "", -EINVAL);
    /* rootless podman: the name and image come from the user's own files */
    const char *user4 = "/user.slice/user-65534.slice/user@65534.service/user.slice/libpod-" ID4 ".scope";
    expect_container(&x.h, st, ID4, ID4, "podman", user4, NULL, NULL);
    expect_no_container(&x.h, st, "mine", -ENOENT);
    close_host(&x);

    char *dir = fx_copy("cgroup/state");
    struct passwd *pw = getpwuid(65534);
    assert_non_null(pw);
    char *rel = rt_xasprintf("%s/.local/share/containers/storage/overlay-containers/containers.json", pw->pw_dir);
    fx_write(dir, rel,
             "[{\"id\":\"" ID4 "\",\"names\":[\"mine\"],\"image\":\"eeee\","
             "\"metadata\":\"{\\\"image-name\\\":\\\"quay.io/me/tool:1\\\",\\\"name\\\":\\\"mine\\\"}\"}]");
    open_fixture(&x, "cgroup/v2");
    expect_container(&x.h, dir, ID4, ID4, "podman", user4, NULL, NULL); /* root's file, not the user's */
    char *path = rt_xasprintf("%s/%s", dir, rel);
    assert_int_equal(chown(path, 65534, 65534), 0);
    expect_container(&x.h, dir, ID4, ID4, "podman", user4, "mine", "quay.io/me/tool:1");
    expect_container(&x.h, dir, "mine", ID4, "podman", user4, "mine", "quay.io/me/tool:1");
    /* a state file that is a link is not read */
    char *cfg = rt_xasprintf("%s/var/lib/docker/containers/%s/config.v2.json", dir, ID1);
    assert_int_equal(rename(cfg, path), 0);
    assert_int_equal(symlink(path, cfg), 0);
    expect_container(&x.h, dir, ID1, ID1, "docker", docker1, NULL, NULL);
    free(cfg);
    free(path);
    free(rel);
    close_host(&x);

    /* docker's cgroupfs driver on a v1 host: /docker/ID in v1 memory */
    open_fixture(&x, "cgroup/v1");
    expect_container(&x.h, st, "3f1c2d4e5a6b", ID1, "docker", "/docker/" ID1, "web", "nginx:1.25");
    close_host(&x);
    fx_rmtree(dir);
    free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pid_paths),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_containers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
