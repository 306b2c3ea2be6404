/* What a container asked for, without a container runtime: docker's
 * hostconfig.json and the OCI spec podman ran it with (fixtures/containers/,
 * a state root as on a host) read into a request; damaged files refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "facts/container_request.h"
#include "fixture.h"
#include "rt/json.h"

#define D1 "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
#define D2 "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define P1 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void expect(const char *root, const char *runtime, const char *id, int rc, const char *request)
{
    struct rt_request r = {.cpus = 99};
    struct json_object *uuids = (struct json_object *)1;
    assert_int_equal(rt_container_request(root, runtime, id, &r, &uuids), rc);
    struct json_object *o = rt_request_to_json(&r, uuids);
    if (strcmp(rt_json_plain(o), request) != 0)
        fail_msg("%s %s: %s, expected %s", runtime, id, rt_json_plain(o), request);
    json_object_put(o);
    json_object_put(uuids);
}

static void test_docker(void **state)
{
    (void)state;
    char *r = fx_path("containers");
    /* --cpus 2.5 --memory 8g --gpus device=UUID,UUID */
    expect(r, "docker", D1, 0,
           "{\"cpus\":2.5,\"memory_bytes\":8589934592,\"gpus\":2,\"gpu_uuids\":["
           "\"GPU-5c8e2f1a-7b3d-4e9f-8a6c-1d2e3f4a5b6c\",\"GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d\"]}");
    /* --cpu-quota 50000 (the default period), --gpus 1, no memory limit; a
     * device request for something else is no GPU */
    expect(r, "docker", D2, 0, "{\"cpus\":0.5,\"gpus\":1}");
    expect(r, "docker", P1, -ENOENT, "{}");
    expect(r, "docker", "../../../etc/passwd", -EINVAL, "{}"); /* not an id */
    expect(r, "cri-o", D1, -EOPNOTSUPP, "{}");
    free(r);
}

static void test_podman(void **state)
{
    (void)state;
    char *r = fx_path("containers");
    /* --cpus 4 --memory 2g --device nvidia.com/gpu=0 (nvidiactl and uvm are no GPUs) */
    expect(r, "podman", P1, 0, "{\"cpus\":4.0,\"memory_bytes\":2147483648,\"gpus\":1}");
    expect(r, "podman", D1, -ENOENT, "{}");
    expect("/nonexistent", "podman", P1, -ENOENT, "{}");
    free(r);
}

static void test_damaged(void **state)
{
    (void)state;
    char *dir = fx_copy("containers");
    /* values of the wrong kind are left out, nothing else */
    fx_write(dir, "var/lib/docker/containers/" D1 "/hostconfig.json",
             "{\"NanoCpus\":\"2\",\"Memory\":-1,\"DeviceRequests\":{\"Count\":1},\"CpuQuota\":[1]}");
    expect(dir, "docker", D1, 0, "{}");
    /* not JSON, empty, more than one value: refused whole */
    fx_write(dir, "var/lib/docker/containers/" D1 "/hostconfig.json", "{\"Memory\": ");
    expect(dir, "docker", D1, -EINVAL, "{}");
    fx_write(dir, "var/lib/docker/containers/" D1 "/hostconfig.json", "");
    expect(dir, "docker", D1, -EINVAL, "{}");
    fx_write(dir, "var/lib/docker/containers/" D1 "/hostconfig.json", "{\"Memory\":1} {\"Memory\":2}");
    expect(dir, "docker", D1, -EINVAL, "{}");
    /* a link is not followed, a file not root's is not believed */
    char *cmd = rt_xasprintf("cd '%s/var/lib/docker/containers/%s' && rm hostconfig.json && "
                             "ln -s ../%s/hostconfig.json hostconfig.json",
                             dir, D1, D2);
    fx_sh(cmd);
    free(cmd);
    expect(dir, "docker", D1, -EINVAL, "{}");
    cmd = rt_xasprintf("chown 1:1 '%s/var/lib/docker/containers/%s/hostconfig.json'", dir, D2);
    fx_sh(cmd);
    free(cmd);
    expect(dir, "docker", D2, -EINVAL, "{}");
    fx_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docker),
        cmocka_unit_test(test_podman),
        cmocka_unit_test(test_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
