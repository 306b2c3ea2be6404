/* The collectors' scanners and growing read buffer. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
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
    struct rt_readbuf b, none;
    rt_readbuf_init(&b, 100);
    rt_readbuf_init(&none, 100);
    assert_int_equal(rt_readbuf_load(&b, r.proc_fd, "big"), 100000);
    assert_string_equal(b.data, big);
    assert_int_equal(rt_readbuf_load(&none, r.proc_fd, "missing"), -ENOENT);
    rt_readbuf_free(&b);
    rt_readbuf_free(&none);
    free(big);
    rt_roots_close(&r);
    fx_rmtree(dir);
}

/* A file of the kernel's stays open and each read is fresh. */
static void test_kept_pseudo_file(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct rt_keptfile k = RT_KEPTFILE_INIT;
    char a[256], b[256];
    assert_true(rt_keptfile_read(&k, proc, "self/statm", a, sizeof(a)) > 0);
    int fd = k.fd;
    assert_true(fd >= 0);
    assert_int_equal(k.pseudo, 1);
    size_t size = 32u << 20; /* resident once touched: statm's second field moves */
    char *mem = rt_xmalloc(size);
    memset(mem, 1, size);
    assert_true(rt_keptfile_read(&k, proc, "self/statm", b, sizeof(b)) > 0);
    assert_int_equal(k.fd, fd);
    unsigned long size_a, ra, size_b, rb;
    assert_int_equal(sscanf(a, "%lu %lu", &size_a, &ra), 2);
    assert_int_equal(sscanf(b, "%lu %lu", &size_b, &rb), 2);
    assert_true(rb >= ra + (size / 2) / (size_t)sysconf(_SC_PAGESIZE));
    free(mem);
    rt_keptfile_close(&k);
    assert_int_equal(k.fd, -1);
    close(proc);
}

/* A process's file kept open after the process is gone: an error, and the
 * descriptor is not kept. */
static void test_kept_file_of_gone_process(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    char path[32], buf[1024];
    snprintf(path, sizeof(path), "%d/stat", (int)child);
    struct rt_keptfile k = RT_KEPTFILE_INIT;
    assert_true(rt_keptfile_read(&k, proc, path, buf, sizeof(buf)) > 0);
    assert_true(k.fd >= 0);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ssize_t n = rt_keptfile_read(&k, proc, path, buf, sizeof(buf));
    assert_true(n == -ESRCH || n == -ENOENT);
    assert_int_equal(k.fd, -1);
    close(proc);
}

/* Any other file (a fixture's, replaced by a rename) is opened each time. */
static void test_fixture_file_replaced(void **state)
{
    (void)state;
    char *dir = fx_copy("host");
    struct rt_roots r;
    fx_roots(&r, dir);
    struct rt_keptfile k = RT_KEPTFILE_INIT;
    char buf[64];
    fx_write(dir, "proc/value", "one");
    assert_int_equal(rt_keptfile_read(&k, r.proc_fd, "value", buf, sizeof(buf)), 3);
    assert_int_equal(k.pseudo, 0);
    assert_int_equal(k.fd, -1);
    fx_write(dir, "proc/value", "three"); /* written aside and renamed */
    assert_int_equal(rt_keptfile_read(&k, r.proc_fd, "value", buf, sizeof(buf)), 5);
    assert_string_equal(buf, "three");
    assert_true(rt_keptfile_changed(&k));
    rt_roots_close(&r);
    fx_rmtree(dir);
}

/* The mount table's listing says when it changed, once (the disk collector
 * parses it again only then). In a mount namespace of a child's own. */
static void test_mountinfo_changes(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-kept-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t child = fork();
    if (child == 0) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
            _exit(77); /* not allowed here */
        int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct rt_keptfile k = RT_KEPTFILE_INIT;
        char buf[1 << 16];
        if (rt_keptfile_read(&k, proc, "self/mountinfo", buf, sizeof(buf)) <= 0 || k.fd < 0)
            _exit(1);
        if (rt_keptfile_changed(&k))
            _exit(2);
        if (mount("rt-kept", dir, "tmpfs", 0, NULL) < 0)
            _exit(77);
        if (!rt_keptfile_changed(&k) || rt_keptfile_changed(&k))
            _exit(3); /* said once */
        if (rt_keptfile_read(&k, proc, "self/mountinfo", buf, sizeof(buf)) <= 0 || !strstr(buf, "rt-kept"))
            _exit(4);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
    rmdir(dir);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77)
        skip();
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_u64),
        cmocka_unit_test(test_words_and_lines),
        cmocka_unit_test(test_readbuf_grows),
        cmocka_unit_test(test_kept_pseudo_file),
        cmocka_unit_test(test_kept_file_of_gone_process),
        cmocka_unit_test(test_fixture_file_replaced),
        cmocka_unit_test(test_mountinfo_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
