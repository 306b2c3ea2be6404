/* The collectors' scanners and growing read buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "collect/procfile.h"

static void test_scan_u64(void **state)
{
    (void)state;
    const char *p = "  18446744073709551615\t7 18446744073709551616 12abc";
    uint64_t v = 0;
    assert_true(rt_scan_u64(&p, &v));
    assert_true(v == UINT64_MAX);
    assert_true(rt_scan_u64(&p, &v));
    assert_int_equal(v, 7);
    assert_false(rt_scan_u64(&p, &v)); /* overflow */
    assert_string_equal(p, "18446744073709551616 12abc");
    p += 21;
    assert_false(rt_scan_u64(&p, &v)); /* trailing garbage */
    assert_string_equal(p, "12abc");
    p = "-1";
    assert_false(rt_scan_u64(&p, &v));
    p = "   ";
    assert_false(rt_scan_u64(&p, &v));
}

static void test_words_and_lines(void **state)
{
    (void)state;
    char text[] = "a bc\n\nlast  word";
    char *cur = text, *line;
    size_t len;
    line = rt_next_line(&cur);
    assert_string_equal(line, "a bc");
    const char *p = line, *w = rt_scan_word(&p, &len);
    assert_int_equal(len, 1);
    assert_int_equal(*w, 'a');
    w = rt_scan_word(&p, &len);
    assert_int_equal(len, 2);
    assert_null(rt_scan_word(&p, &len));
    assert_int_equal(len, 0);
    /* An empty line ends the iteration like the end of the text would not:
     * callers see it as "" only when it is not at the very end. */
    line = rt_next_line(&cur);
    assert_string_equal(line, "");
    assert_string_equal(rt_next_line(&cur), "last  word");
    assert_null(rt_next_line(&cur));
    assert_int_equal(rt_sat_sub(3, 5), 0);
    assert_int_equal(rt_sat_sub(5, 3), 2);
}

/* A file larger than the buffer is read whole after growing. */
static void test_readbuf_grows(void **state)
{
    (void)state;
    char *dir = fx_copy("host");
    char *big = rt_xmalloc(100001);
    for (int i = 0; i < 100000; i++)
        big[i] = (char)('a' + i % 26);
    big[100000] = '\0';
    fx_write(dir, "proc/big", big);
    struct rt_roots r;
    fx_roots(&r, dir);
    struct rt_readbuf b;
    rt_readbuf_init(&b, 100);
    assert_int_equal(rt_readbuf_load(&b, r.proc_fd, "big"), 100000);
    assert_string_equal(b.data, big);
    assert_int_equal(rt_readbuf_load(&b, r.proc_fd, "stat") > 0, 1);
    assert_int_equal(rt_readbuf_load(&b, r.proc_fd, "missing"), -ENOENT);
    rt_readbuf_free(&b);
    free(big);
    rt_roots_close(&r);
    fx_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_u64),
        cmocka_unit_test(test_words_and_lines),
        cmocka_unit_test(test_readbuf_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
