/* jobs/adopt.c: which cgroups the adopt rules match, on the fixture trees
 * of a pure v2 host (docker and podman scopes, Slurm's cgroup/v2 layouts,
 * ids and SLUIDs) and a pure v1 one (Slurm's cgroup/v1, docker's
 * cgroupfs), which patterns adopt.cgroups takes, and the check that a
 * candidate is populated. Real cgroups and a
 * real Slurm: tests/integration/test_adopt.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "cgroup_host.h"
#include "jobs/adopt.h"

#include <errno.h>
#include <string.h>

#define ID1 "3f1c2d4e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"
#define ID5 "5555555555550000000000000000000000000000000000000000000000000001"
#define ID6 "5555555555550000000000000000000000000000000000000000000000000002"
#define IDP "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define IDR "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* The candidates of rules on fixture `name`, joined by spaces. */
static char *candidates(const char *name, struct rt_adopt_rules rules)
{
    struct host x;
    open_fixture(&x, name);
    size_t n;
    char **v = rt_adopt_candidates(&x.h, &rules, &n);
    char *out = calloc(1, 8192);
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), 8192 - strlen(out), "%s%s", i ? " " : "", v[i]);
    rt_adopt_free(v, n);
    close_host(&x);
    return out;
}

static void check(const char *name, struct rt_adopt_rules rules, const char *want)
{
    char *got = candidates(name, rules);
    assert_string_equal(got, want);
    free(got);
}

static void test_containers(void **state)
{
    (void)state;
    /* Each container's own scope, not conmon's nor a cgroup inside it; a
     * rootless one under its user's manager. */
    check("cgroup/v2", (struct rt_adopt_rules){.containers = true},
          "/machine.slice/libpod-" ID6 ".scope /machine.slice/libpod-" IDP ".scope /system.slice/docker-" ID1
          ".scope /system.slice/docker-" ID5
          ".scope /user.slice/user-65534.slice/user@65534.service/user.slice/libpod-" IDR ".scope");
    check("cgroup/v1", (struct rt_adopt_rules){.containers = true}, "/docker/" ID1);
    check("cgroup/v2", (struct rt_adopt_rules){0}, "");
}

static void test_slurm(void **state)
{
    (void)state;
    /* v2: jobs by id and by SLUID, in a node's own scope too; not the
     * slurmstepd's "system" cgroup, not steps. */
    check("slurm/v2", (struct rt_adopt_rules){.slurm = true},
          "/system.slice/node2_slurmstepd.scope/sEKNKTV3WPV500 /system.slice/node2_slurmstepd.scope/sFNDM35NQ39R00 "
          "/system.slice/slurmstepd.scope/job_12");
    /* v1: the job's cgroup, found once though it is in every hierarchy. */
    check("cgroup/v1", (struct rt_adopt_rules){.slurm = true},
          "/slurm_node1/uid_1000/job_42 /slurm_node1/uid_1000/job_43");
}

static void test_globs(void **state)
{
    (void)state;
    check("cgroup/v2", (struct rt_adopt_rules){.globs = "/system.slice/*.service /limited.slice/* /none/*"},
          "/limited.slice/job.scope /system.slice/old.service");
    char why[256];
    assert_true(rt_adopt_globs_valid("", why, sizeof(why)));
    assert_true(rt_adopt_globs_valid("/system.slice/*.service  /batch/*", why, sizeof(why)));
    assert_false(rt_adopt_globs_valid("system.slice/*", why, sizeof(why)));
    assert_non_null(strstr(why, "absolute cgroup path"));
    assert_false(rt_adopt_globs_valid("/a/../b", why, sizeof(why)));
    assert_false(rt_adopt_globs_valid("/a/./b", why, sizeof(why)));
    assert_false(rt_adopt_globs_valid("/1 /2 /3 /4 /5 /6 /7 /8 /9 /10 /11 /12 /13 /14 /15 /16 /17", why, sizeof(why)));
    assert_string_equal(why, "at most 16 patterns");
}

/* Whether a candidate holds a process, without opening it as a job: v2's
 * cgroup.events; v1's cgroup.procs, below it too (Slurm's tasks). */
static void test_populated(void **state)
{
    (void)state;
    struct host x;
    open_fixture(&x, "cgroup/v2");
    assert_int_equal(rt_cg_path_populated(&x.h, "/system.slice/docker-" ID1 ".scope"), 1);
    assert_int_equal(rt_cg_path_populated(&x.h, "/system.slice/old.service"), 0);
    assert_int_equal(rt_cg_path_populated(&x.h, "/system.slice/gone.service"), -ENOENT);
    close_host(&x);
    open_fixture(&x, "cgroup/v1");
    assert_int_equal(rt_cg_path_populated(&x.h, "/slurm_node1/uid_1000/job_42"), 1);
    assert_int_equal(rt_cg_path_populated(&x.h, "/docker/" ID1), 0);
    close_host(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_containers),
        cmocka_unit_test(test_slurm),
        cmocka_unit_test(test_globs),
        cmocka_unit_test(test_populated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
