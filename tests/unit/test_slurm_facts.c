/* Slurm job facts without Slurm: the job processes' environment, and the
 * job's own files where the environment says nothing, in the cgroups of the
 * v1 and v2 plugins (job ids and SLUIDs; fixture trees in fixtures/slurm/;
 * which cgroup is a job's is cgroup/classify.c's, tested in test_cgroup_place). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "facts/slurm.h"
#include "fixture.h"
#include "rt/json.h"

#define ENV(s) s, sizeof(s) - 1

static void test_env(void **state)
{
    (void)state;
    struct rt_slurm_job j = {0};
    assert_false(rt_slurm_env_parse(ENV("PATH=/bin\0HOME=/root\0"), &j));
    assert_true(rt_slurm_env_parse(ENV("SLURM_JOB_ID=31\0SLURM_JOB_NAME=a b\0SLURM_CPUS_ON_NODE=3\0"
                                       "SLURM_MEM_PER_CPU=100\0SLURM_JOB_ACCOUNT=\0"),
                                   &j));
    assert_int_equal(j.job_id, 31);
    assert_string_equal(j.name, "a b");
    assert_string_equal(j.account, ""); /* empty: unknown */
    assert_true(j.request.cpus == 3);
    assert_true(j.request.memory_bytes == 300ULL << 20);
    assert_int_equal(j.request.gpus, 0);
    assert_null(j.gpu_uuids);
    rt_slurm_job_free(&j);

    /* the node's share of SLURM_JOB_CPUS_PER_NODE; GPUs from CUDA's list,
     * by UUID, and a name that only looks like a variable is not one */
    struct rt_slurm_job k = {0};
    assert_true(rt_slurm_env_parse(ENV("XSLURM_JOB_ID=1\0SLURM_JOBID=32\0SLURM_JOB_CPUS_PER_NODE=4(x2),2\0"
                                       "SLURM_NODEID=1\0SLURM_MEM_PER_NODE=512\0"
                                       "CUDA_VISIBLE_DEVICES=GPU-aa,MIG-bb\0"),
                                   &k));
    assert_int_equal(k.job_id, 32);
    assert_true(k.request.cpus == 4);
    assert_true(k.request.memory_bytes == 512ULL << 20);
    assert_int_equal(k.request.gpus, 2);
    assert_string_equal(rt_json_plain(k.gpu_uuids), "[\"GPU-aa\",\"MIG-bb\"]");
    rt_slurm_job_free(&k);

    struct rt_slurm_job m = {0};
    assert_true(rt_slurm_env_parse(ENV("SLURM_JOB_ID=33\0SLURM_JOB_CPUS_PER_NODE=4(x2),2\0SLURM_NODEID=2\0"
                                       "CUDA_VISIBLE_DEVICES=NoDevFiles\0SLURM_JOB_GPUS=\0"
                                       "SLURM_GPUS_ON_NODE=1\0SLURM_JOB_UID=77\0"),
                                   &m));
    assert_true(m.request.cpus == 2);
    assert_int_equal(m.request.gpus, 1);
    assert_true(m.has_uid);
    assert_int_equal(m.uid, 77);
    rt_slurm_job_free(&m);

    /* garbage does not count */
    struct rt_slurm_job g = {0};
    assert_false(rt_slurm_env_parse(ENV("SLURM_JOB_ID=12a\0"), &g));
    assert_true(rt_slurm_env_parse(ENV("SLURM_JOB_ID=5\0SLURM_CPUS_ON_NODE=x\0SLURM_JOB_CPUS_PER_NODE=(x2)\0"
                                       "SLURM_MEM_PER_NODE=-3"),
                                   &g));
    assert_true(g.request.cpus == 0 && g.request.memory_bytes == 0);
    rt_slurm_job_free(&g);
}

struct tree {
    struct rt_roots roots;
    struct rt_cg_host h;
    char *base;
};

static struct tree open_tree(const char *name)
{
    struct tree t = {.base = fx_path(name)};
    fx_roots(&t.roots, t.base);
    assert_int_equal(rt_cg_host_open(&t.h, &t.roots), 0);
    return t;
}

static void close_tree(struct tree *t)
{
    rt_cg_host_close(&t->h);
    rt_roots_close(&t->roots);
    free(t->base);
}

static void assert_json(struct json_object *o, const char *expected)
{
    assert_string_equal(rt_json_plain(o), expected);
    json_object_put(o);
}

static void test_read_v1(void **state)
{
    (void)state;
    struct tree t = open_tree("slurm/v1");
    struct rt_slurm_job j;
    /* a batch task: everything from its environment */
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 101, &j), 0);
    assert_json(rt_slurm_job_scheduler_json(&j), "{\"kind\":\"slurm\",\"job_id\":7,\"name\":\"train-resnet\","
                                                 "\"account\":\"physics\",\"partition\":\"gpu\",\"user\":\"alice\"}");
    assert_json(rt_request_to_json(&j.request, j.gpu_uuids), "{\"cpus\":4.0,\"memory_bytes\":4294967296,\"gpus\":2}");
    assert_string_equal(j.gpu_ids, "0,1");
    assert_true(j.has_uid && j.uid == 1000);
    rt_slurm_job_free(&j);

    /* the extern step's process has no job environment: the same facts
     * come from the batch task found through the job's cgroup */
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 102, &j), 0);
    assert_int_equal(j.job_id, 7);
    assert_string_equal(j.name, "train-resnet");
    rt_slurm_job_free(&j);
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, "/slurm_node1/uid_1000/job_7", 0, &j), 0);
    assert_string_equal(j.account, "physics");
    rt_slurm_job_free(&j);

    /* srun: memory only in the job's cgroup limit; this node's CPUs; the
     * path as a v1 hierarchy's mount shows it is the same cgroup */
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, "/sys/fs/cgroup/memory/slurm_node1/uid_1001/job_8/step_0/task_0", 0, &j), 0);
    assert_json(rt_slurm_job_scheduler_json(&j), "{\"kind\":\"slurm\",\"job_id\":8,\"name\":\"interactive\","
                                                 "\"account\":null,\"partition\":\"debug\",\"user\":\"bob\"}");
    assert_json(rt_request_to_json(&j.request, j.gpu_uuids), "{\"cpus\":2.0,\"memory_bytes\":209715200}");
    rt_slurm_job_free(&j);

    /* only an extern step (an allocation someone logged into): the id from
     * the path and slurmstepd, the user from the path; no memory limit, and
     * v1 CPUs only from the environment: nothing asked for that is known */
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 121, &j), 0);
    assert_json(rt_slurm_job_scheduler_json(&j), "{\"kind\":\"slurm\",\"job_id\":9,\"name\":null,"
                                                 "\"account\":null,\"partition\":null,\"user\":null}");
    assert_true(j.has_uid && j.uid == 1002);
    assert_json(rt_request_to_json(&j.request, j.gpu_uuids), "{}");
    rt_slurm_job_free(&j);

    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 130, &j), -ENOENT); /* not a job's */
    rt_slurm_job_free(&j);
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 4242, &j), -ENOENT); /* gone */
    rt_slurm_job_free(&j);
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, "/user.slice", 0, &j), -ENOENT);
    rt_slurm_job_free(&j);
    close_tree(&t);
}

static void test_read_v2(void **state)
{
    (void)state;
    struct tree t = open_tree("slurm/v2");
    struct rt_slurm_job j;
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 200, &j), 0); /* slurmstepd: the task's facts */
    assert_json(rt_slurm_job_scheduler_json(&j), "{\"kind\":\"slurm\",\"job_id\":12,\"name\":\"llm\","
                                                 "\"account\":\"nlp\",\"partition\":\"a100\",\"user\":\"dave\"}");
    assert_json(rt_request_to_json(&j.request, j.gpu_uuids),
                "{\"cpus\":8.0,\"memory_bytes\":17179869184,\"gpus\":1,"
                "\"gpu_uuids\":[\"GPU-5c8e2f1a-7b3d-4e9f-8a6c-1d2e3f4a5b6c\"]}");
    assert_string_equal(j.gpu_ids, "3");
    rt_slurm_job_free(&j);

    /* named by SLUID: the id from the environment */
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, "/system.slice/node2_slurmstepd.scope/sEKNKTV3WPV500", 0, &j), 0);
    assert_json(rt_slurm_job_scheduler_json(&j), "{\"kind\":\"slurm\",\"job_id\":13,\"sluid\":\"sEKNKTV3WPV500\","
                                                 "\"name\":\"sweep\",\"account\":null,\"partition\":null,"
                                                 "\"user\":\"erin\"}");
    assert_json(rt_request_to_json(&j.request, j.gpu_uuids), "{\"cpus\":1.0,\"memory_bytes\":1073741824}");
    rt_slurm_job_free(&j);

    /* by SLUID with no environment: the id from slurmstepd's title, the
     * user from the task's owner (slurmstepd's root does not count) */
    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 310, &j), 0);
    assert_int_equal(j.job_id, 14);
    assert_string_equal(j.sluid, "sFNDM35NQ39R00");
    assert_true(j.has_uid && j.uid == 1005);
    assert_json(rt_request_to_json(&j.request, j.gpu_uuids), "{\"cpus\":2.0,\"memory_bytes\":536870912}");
    rt_slurm_job_free(&j);

    assert_int_equal(rt_slurm_job_read(&t.h, &t.roots, NULL, 199, &j), -ENOENT); /* slurmstepd's "system" */
    rt_slurm_job_free(&j);
    close_tree(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_read_v1),
        cmocka_unit_test(test_read_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
