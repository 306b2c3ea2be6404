/* The syncer (daemon/store/syncer.c): files handed to it are synced on its
 * thread, in order, missing ones skipped; waiting returns once everything
 * handed over before is done; it holds no descriptor afterwards; freeing it
 * syncs what still waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt/util.h"
#include "store/syncer.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (d && readdir(d))
        n++;
    closedir(d);
    return n;
}

static void test_syncs_in_the_background(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-syncer-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    int fds = open_fds();
    struct rt_syncer *y = rt_syncer_new();
    assert_int_equal(open_fds(), fds); /* no thread, nothing open before the first file */
    char name[32];
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        assert_int_equal(rt_write_file_at(dfd, name, "x\n", 2, 0600, RT_SYNC_NONE), 0);
        rt_syncer_add(y, dfd, name);
    }
    rt_syncer_add(y, dfd, "missing");  /* gone meanwhile: skipped */
    rt_syncer_add(y, dfd, NULL);       /* the directory alone */
    rt_syncer_wait(y);
    assert_int_equal(rt_syncer_done(y), 52);
    assert_int_equal(open_fds(), fds); /* the duplicated directories are closed */
    for (int i = 0; i < 20; i++)
        rt_syncer_add(y, dfd, "f1");
    rt_syncer_free(y);                 /* syncs what waits, ends the thread */
    assert_int_equal(open_fds(), fds);
    close(dfd);
    char *cmd = rt_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syncs_in_the_background),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
