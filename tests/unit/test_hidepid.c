/* hidepid of a proc mount: the mount options read, and found by the mount
 * of an fd (the real /proc, a tree that is not a proc mount). The rule it
 * feeds is tested against a real hidepid mount in test_gpus.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proc/hidepid.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static void test_parse(void **state)
{
    (void)state;
    struct rt_hidepid h;
    rt_hidepid_parse("rw", &h);
    assert_int_equal(h.level, 0);
    assert_false(h.has_gid);
    rt_hidepid_parse("rw,nosuid,hidepid=2,gid=27", &h);
    assert_int_equal(h.level, 2);
    assert_true(h.has_gid);
    assert_int_equal(h.gid, 27);
    /* the names of Linux 5.8 and later */
    rt_hidepid_parse("rw,hidepid=invisible", &h);
    assert_int_equal(h.level, 2);
    rt_hidepid_parse("rw,hidepid=noaccess", &h);
    assert_int_equal(h.level, 1);
    rt_hidepid_parse("rw,hidepid=ptraceable,subset=pid", &h);
    assert_int_equal(h.level, 4);
    rt_hidepid_parse("rw,hidepid=off,gid=x", &h);
    assert_int_equal(h.level, 0);
    assert_false(h.has_gid); /* not a number: no group */
}

static void test_read(void **state)
{
    (void)state;
    struct rt_hidepid h = {.level = 9};
    int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(rt_hidepid_read(fd, &h), 0);
    assert_int_equal(h.level, 0); /* the test machine's /proc hides nothing */
    close(fd);
    /* a fixture tree is no proc mount: it hides nothing */
    fd = open(getenv("RT_FIXTURES"), O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    h.level = 9;
    assert_int_equal(rt_hidepid_read(fd, &h), 0);
    assert_int_equal(h.level, 0);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
