/* A job's request: `--request` text (cpus, mem with binary units as Slurm's
 * --mem, gpus), the JobRequest object and its checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rt/json.h"
#include "rt/request.h"

#include <errno.h>

static void test_parse_all_keys(void **state)
{
    (void)state;
    struct rt_request r;
    char why[256] = "";
    assert_int_equal(rt_request_parse("cpus=8,mem=64G,gpus=2", &r, why, sizeof(why)), 0);
    assert_true(r.cpus == 8);
    assert_true(r.memory_bytes == 64ULL << 30);
    assert_int_equal(r.gpus, 2);
    /* any order, spaces, fractions, other units and spellings */
    assert_int_equal(rt_request_parse(" mem = 1.5GiB , cpus=0.5 ", &r, why, sizeof(why)), 0);
    assert_true(r.cpus == 0.5);
    assert_true(r.memory_bytes == 3ULL << 29);
    assert_int_equal(r.gpus, 0);
    assert_int_equal(rt_request_parse("mem=512m", &r, why, sizeof(why)), 0);
    assert_true(r.memory_bytes == 512ULL << 20);
    assert_true(r.cpus == 0);
    assert_int_equal(rt_request_parse("gpus=0", &r, why, sizeof(why)), 0);
    assert_true(rt_request_empty(&r));
}

static void refused(const char *text, const char *needle)
{
    struct rt_request r = {.cpus = 3};
    char why[256] = "";
    assert_int_equal(rt_request_parse(text, &r, why, sizeof(why)), -EINVAL);
    if (!strstr(why, needle))
        fail_msg("'%s': message '%s' lacks '%s'", text, why, needle);
    assert_true(r.cpus == 3); /* untouched */
}

static void test_parse_refuses(void **state)
{
    (void)state;
    refused("", "empty");
    refused("cpus", "not KEY=VALUE");
    refused("cores=4", "unknown key 'cores'");
    refused("cpus=4,cpus=5", "given twice");
    refused("cpus=0", "cpus=0");
    refused("cpus=-1", "cpus=-1");
    refused("cpus=lots", "cpus=lots");
    refused("cpus=1e9", "cpus=1e9");
    refused("mem=1024", "a unit"); /* bytes or MiB? neither is assumed */
    refused("mem=64X", "mem=64X");
    refused("mem=64GB2", "mem=64GB2");
    refused("mem=-1G", "mem=-1G");
    refused("mem=9999P", "mem=9999P");
    refused("gpus=1.5", "gpus=1.5");
    refused("gpus=100000", "gpus=100000");
    refused("cpus=2,,gpus=1", "not KEY=VALUE");
}

static void test_json_round_trip(void **state)
{
    (void)state;
    struct rt_request r = {.cpus = 2.5, .memory_bytes = 1ULL << 30, .gpus = 1}, back;
    struct json_object *uuids = json_object_new_array();
    json_object_array_add(uuids, json_object_new_string("GPU-1f2e3d4c-0000-1111-2222-333344445555"));
    struct json_object *o = rt_request_to_json(&r, uuids);
    assert_string_equal(rt_json_plain(o), "{\"cpus\":2.5,\"memory_bytes\":1073741824,\"gpus\":1,"
                                          "\"gpu_uuids\":[\"GPU-1f2e3d4c-0000-1111-2222-333344445555\"]}");
    assert_null(rt_request_from_json(o, &back));
    assert_true(back.cpus == 2.5 && back.memory_bytes == 1ULL << 30 && back.gpus == 1);
    json_object_put(o);
    json_object_put(uuids);

    struct rt_request none = {0};
    o = rt_request_to_json(&none, NULL);
    assert_string_equal(rt_json_plain(o), "{}");
    json_object_put(o);
}

static void from_json_refuses(const char *text, const char *key)
{
    struct json_object *o = json_tokener_parse(text);
    struct rt_request r;
    const char *bad = rt_request_from_json(o, &r);
    if (!bad || strcmp(bad, key) != 0)
        fail_msg("%s: got %s, expected %s", text, bad ? bad : "(valid)", key);
    json_object_put(o);
}

static void test_from_json_refuses(void **state)
{
    (void)state;
    from_json_refuses("[]", "request");
    from_json_refuses("{\"cpus\":0}", "request.cpus");
    from_json_refuses("{\"cpus\":\"8\"}", "request.cpus");
    from_json_refuses("{\"cpus\":1e300}", "request.cpus");
    from_json_refuses("{\"memory_bytes\":-5}", "request.memory_bytes");
    from_json_refuses("{\"memory_bytes\":1.5}", "request.memory_bytes");
    from_json_refuses("{\"gpus\":-1}", "request.gpus");
    from_json_refuses("{\"gpus\":5000}", "request.gpus");
    from_json_refuses("{\"gpu_uuids\":\"GPU-1\"}", "request.gpu_uuids");
    from_json_refuses("{\"gpu_uuids\":[\"GPU 1\"]}", "request.gpu_uuids");
    from_json_refuses("{\"gpu_uuids\":[\"\"]}", "request.gpu_uuids");
    from_json_refuses("{\"gpu_uuids\":[7]}", "request.gpu_uuids");
    from_json_refuses("{\"cores\":4}", "request");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_all_keys),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_from_json_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
