/* Parsing varlink messages: UTF-8 validation, strict JSON, error reasons. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt/util.h"
#include "rt/varlink.h"

#include <string.h>

#define S(lit) (lit), (sizeof(lit) - 1)

static void test_utf8(void **state)
{
    (void)state;
    assert_true(rt_utf8_valid(S("")));
    assert_true(rt_utf8_valid(S("plain ascii")));
    assert_true(rt_utf8_valid(S("\xc3\xa9t\xc3\xa9")));            /* été */
    assert_true(rt_utf8_valid(S("\xe2\x82\xac")));                 /* U+20AC */
    assert_true(rt_utf8_valid(S("\xed\x9f\xbf")));                 /* U+D7FF */
    assert_true(rt_utf8_valid(S("\xee\x80\x80")));                 /* U+E000 */
    assert_true(rt_utf8_valid(S("\xf0\x9f\x98\x80")));             /* U+1F600 */
    assert_true(rt_utf8_valid(S("\xf4\x8f\xbf\xbf")));             /* U+10FFFF */
    assert_true(rt_utf8_valid("a\0b", 3));                         /* NUL is a character */
    assert_false(rt_utf8_valid(S("\xff")));
    assert_false(rt_utf8_valid(S("\x80")));                        /* lone continuation */
    assert_false(rt_utf8_valid(S("\xc3\x28")));                    /* bad continuation */
    assert_false(rt_utf8_valid(S("\xc0\xaf")));                    /* overlong '/' */
    assert_false(rt_utf8_valid(S("\xc1\xbf")));
    assert_false(rt_utf8_valid(S("\xe0\x9f\xbf")));                /* overlong */
    assert_false(rt_utf8_valid(S("\xed\xa0\x80")));                /* surrogate D800 */
    assert_false(rt_utf8_valid(S("\xed\xbf\xbf")));                /* surrogate DFFF */
    assert_false(rt_utf8_valid(S("\xf0\x8f\xbf\xbf")));            /* overlong */
    assert_false(rt_utf8_valid(S("\xf4\x90\x80\x80")));            /* U+110000 */
    assert_false(rt_utf8_valid(S("\xf5\x80\x80\x80")));
    assert_false(rt_utf8_valid(S("\xe2\x82")));                    /* truncated */
    assert_false(rt_utf8_valid(S("ok\xf0\x9f\x98")));
    assert_false(rt_utf8_valid(S("\xe2\x28\xac")));                /* bad third byte */
}

static void expect_error(const char *msg, size_t len, const char *reason)
{
    char err[160] = "";
    struct json_object *o = rt_vl_parse_strict(msg, len, err, sizeof(err));
    assert_null(o);
    if (!strstr(err, reason))
        fail_msg("\"%.*s\": got \"%s\", expected \"%s\"", (int)len, msg, err, reason);
}

static void test_strict_parse(void **state)
{
    (void)state;
    char err[160];
    struct json_object *o = rt_vl_parse_strict(S(" {\"method\":\"a.B\"}\n"), err, sizeof(err));
    assert_non_null(o);
    json_object_put(o);
    expect_error(S("42"), "must be a JSON object");
    expect_error(S("null"), "must be a JSON object");
    expect_error(S("[1]"), "must be a JSON object");
    expect_error(S(""), "invalid JSON");
    expect_error(S("{\"a\":1,}"), "invalid JSON");
    expect_error(S("{\"a\":/*x*/1}"), "invalid JSON");
    expect_error(S("{\"a\":01}"), "invalid JSON");
    expect_error(S("{\"a\":\"\xc0\xaf\"}"), "not UTF-8");
    expect_error(S("{\"a\":1} x"), "invalid JSON");
    expect_error(S("{\"a\":1}{}"), "invalid JSON");
    expect_error(S("{\"a\":"), "invalid JSON");
    /* The lenient parser (trusted input) still takes json-c's extensions. */
    o = rt_vl_parse(S("{\"a\":1,}"), err, sizeof(err));
    assert_non_null(o);
    json_object_put(o);
    assert_null(rt_vl_parse(S("7"), err, sizeof(err)));
    assert_string_equal(err, "a message must be a JSON object");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_strict_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
