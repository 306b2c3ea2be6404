/* Text from users shown to people: control characters escaped as systemd
 * shows them (one function for every view), cells cut at characters and
 * never inside an escape; the rule of a job's name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctl.h"
#include "rt/text.h"

static void check_escape(const char *in, const char *want)
{
    char *got = rt_escape_dup(in);
    assert_string_equal(got, want);
    free(got);
}

static void test_escape(void **state)
{
    (void)state;
    check_escape("python3 train.py", "python3 train.py");
    check_escape("a\nb\tc\rd", "a\\nb\\tc\\rd");
    check_escape("\a\b\v\f", "\\a\\b\\v\\f");
    check_escape("\x1b[2J", "\\x1b[2J");                 /* the escape that clears a screen */
    check_escape("del\x7f", "del\\x7f");
    check_escape("c:\\dir", "c:\\\\dir");                 /* a backslash is not taken for an escape */
    check_escape("r\xc3\xa9sum\xc3\xa9 \xe6\x97\xa5", "r\xc3\xa9sum\xc3\xa9 \xe6\x97\xa5"); /* printable UTF-8 */
    check_escape("\xc2\x9b" "1m", "\\xc2\\x9b1m");       /* C1 CSI */
    check_escape("bad\xff\xc3", "bad\\xff\\xc3");         /* bytes of no character */
    check_escape("\xed\xa0\x80", "\\xed\\xa0\\x80");      /* a surrogate */
    check_escape("", "");
}

static void test_cut(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(ctl_fmt_cut(buf, sizeof(buf), "echo a\nb", 20), 9);
    assert_string_equal(buf, "echo a\\nb");
    /* Cut before an escape that does not fit whole. */
    assert_int_equal(ctl_fmt_cut(buf, sizeof(buf), "ab\x1b[0m", 5), 3);
    assert_string_equal(buf, "ab…");
    assert_int_equal(ctl_fmt_cut(buf, sizeof(buf), "ab\x1b[0m", 7), 7);
    assert_string_equal(buf, "ab\\x1b…");
    assert_int_equal(ctl_fmt_cut(buf, sizeof(buf), "\xc3\xa9t\xc3\xa9 long", 4), 4);
    assert_string_equal(buf, "\xc3\xa9t\xc3\xa9…");
    ctl_fmt_cell(buf, sizeof(buf), "a\tb", 6);
    assert_string_equal(buf, "a\\tb  ");
}

static void test_names(void **state)
{
    (void)state;
    static const char *const good[] = {"train", "train run", "r\xc3\xa9sum\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac",
                                       "lr=0.1,bs=64", "-x", "v2", "a/b", "\"q\"", "1 2"};
    static const char *const bad[] = {"", "123", "a\nb", "tab\there", "esc\x1b", "c1\xc2\x85", "bad\xff",
                                      "del\x7f"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(rt_job_name_valid(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(rt_job_name_valid(bad[i]));
    /* 128 characters, not bytes: 128 two-byte characters pass, 129 do not. */
    char name[2 * 129 + 1] = "";
    for (int i = 0; i < 128; i++)
        strcat(name, "\xc3\xa9");
    assert_true(rt_job_name_valid(name));
    strcat(name, "e");
    assert_false(rt_job_name_valid(name));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
