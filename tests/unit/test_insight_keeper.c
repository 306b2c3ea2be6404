/* Reading Keeper API answers (ctl/insight/keeper.c): the first server of
 * GET /servers, and an instance's Linux on-demand price from GET
 * /server/{vendor}/{type}/prices, region first (the Python rule). The
 * requests themselves are tested against a stand-in (test_report.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "insight/keeper.h"

static void test_servers(void **state)
{
    (void)state;
    struct insight_server s;
    char err[256];
    const char *body =
        "[{\"vendor_id\":\"hcloud\",\"server_id\":\"cx22\",\"name\":\"cx22\",\"api_reference\":\"cx22\","
        "\"display_name\":\"CX22\",\"vcpus\":2,\"memory_amount\":4096,\"gpu_count\":0,\"gpu_memory_total\":null,"
        "\"min_price_ondemand\":0.0065,\"currency\":\"EUR\"},"
        "{\"vendor_id\":\"aws\",\"server_id\":\"t4g.small\",\"min_price_ondemand\":0.0168}]";
    assert_int_equal(insight_keeper_parse_servers(body, &s, err, sizeof(err)), 1);
    assert_string_equal(s.vendor_id, "hcloud");
    assert_string_equal(s.server_id, "cx22");
    assert_string_equal(s.display_name, "CX22");
    assert_true(s.vcpus == 2 && s.memory_mib == 4096 && s.gpus == 0 && s.price_per_hour == 0.0065);
    assert_string_equal(s.currency, "EUR");
    /* No currency: USD, as the Python assumes; no display name: the id. */
    assert_int_equal(insight_keeper_parse_servers("[{\"vendor_id\":\"aws\",\"server_id\":\"t3.micro\","
                                                  "\"min_price_ondemand\":0.0104}]",
                                                  &s, err, sizeof(err)),
                     1);
    assert_string_equal(s.currency, "USD");
    assert_string_equal(s.display_name, "t3.micro");
    assert_int_equal(insight_keeper_parse_servers("[]", &s, err, sizeof(err)), 0);
    /* Not what Keeper sends. */
    static const char *const bad[] = {"", "{\"detail\":\"Not Found\"}", "[1,2", "<html>",
                                      "[{\"server_id\":\"x\"}]", "[{\"min_price_ondemand\":1}]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(insight_keeper_parse_servers(bad[i], &s, err, sizeof(err)), -1);
        assert_true(err[0] != '\0');
    }
}

static void test_instance_price(void **state)
{
    (void)state;
    const char *body =
        "[{\"vendor_id\":\"aws\",\"region_id\":\"us-east-1\",\"zone_id\":\"use1-az1\",\"server_id\":\"m5.large\","
        "\"operating_system\":\"Linux\",\"allocation\":\"spot\",\"unit\":\"hour\",\"price\":0.03,\"currency\":\"USD\"},"
        "{\"region_id\":\"eu-west-1\",\"operating_system\":\"Linux\",\"allocation\":\"ondemand\",\"price\":0.107},"
        "{\"region_id\":\"us-east-1\",\"operating_system\":\"Windows\",\"allocation\":\"ondemand\",\"price\":0.188},"
        "{\"region_id\":\"us-east-1\",\"operating_system\":\"Linux\",\"allocation\":\"ondemand\",\"price\":0.096,"
        "\"currency\":\"USD\"}]";
    double p = 0;
    char cur[8];
    assert_int_equal(insight_keeper_parse_price(body, "us-east-1", &p, cur, sizeof(cur)), 1);
    assert_true(p == 0.096);
    assert_string_equal(cur, "USD");
    /* Not listed in the region: the first Linux on-demand price anywhere. */
    assert_int_equal(insight_keeper_parse_price(body, "ap-south-1", &p, cur, sizeof(cur)), 1);
    assert_true(p == 0.107);
    assert_int_equal(insight_keeper_parse_price(body, NULL, &p, cur, sizeof(cur)), 1);
    assert_true(p == 0.107);
    assert_int_equal(insight_keeper_parse_price("[{\"allocation\":\"spot\",\"operating_system\":\"Linux\","
                                                "\"price\":1}]",
                                                "x", &p, cur, sizeof(cur)),
                     0);
    assert_int_equal(insight_keeper_parse_price("{\"detail\":\"Server not found\"}", "x", &p, cur, sizeof(cur)), -1);
}

/* Path segments of the /prices URL, escaped as curl_easy_escape does. */
static void test_url_escape(void **state)
{
    (void)state;
    const char *cases[][2] = {
        {"Standard_D2s_v3", "Standard_D2s_v3"},
        {"a-b.c~d", "a-b.c~d"},
        {"../x y/?#%", "..%2Fx%20y%2F%3F%23%25"},
        {"\xc3\xa9", "%C3%A9"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *e = insight_url_escape(cases[i][0]);
        assert_string_equal(e, cases[i][1]);
        free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_servers),
        cmocka_unit_test(test_instance_price),
        cmocka_unit_test(test_url_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
