/* Drop-ins: FILE.d/NAME.conf read after the main file in byte order, each
 * overriding the keys it sets; what is not a drop-in is not read; one bad
 * drop-in refuses the whole configuration, naming itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/dropins.h"
#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/rt-dropins-test.XXXXXX";
static char main_file[256], dropin_dir[260];
static char err[1024];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Write text to the drop-in NAME; returns its path (static buffer). */
static const char *dropin(const char *name, const char *text)
{
    static char p[512];
    snprintf(p, sizeof(p), "%s/%s", dropin_dir, name);
    write_file(p, text);
    return p;
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(main_file, sizeof(main_file), "%s/resource-trackerd.conf", dir);
    snprintf(dropin_dir, sizeof(dropin_dir), "%s.d", main_file);
    return mkdir(dropin_dir, 0755);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Each test starts from an empty drop-in directory and no main file. */
static int clean(void **state)
{
    teardown(state);
    rt_strlcpy(dir, "/tmp/rt-dropins-test.XXXXXX", sizeof(dir));
    return setup(state);
}

static void test_later_files_override_the_keys_they_set(void **state)
{
    (void)state;
    write_file(main_file, "interval = 2;\nlog_level = \"debug\";\n"
                          "limits: { max_connections = 1000; max_jobs_per_user = 5; };\n");
    dropin("10-site.conf", "interval = 3;\nlimits: { max_jobs_per_user = 7; };\n");
    dropin("20-host.conf", "interval = \"500ms\";\n");
    struct rt_config c;
    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), 0);
    assert_true(c.interval_secs == 0.5);       /* 20-host.conf, the last */
    assert_int_equal(c.max_jobs_per_uid, 7);   /* 10-site.conf */
    assert_int_equal(c.max_connections, 1000); /* the main file: a group merges per key */
    assert_int_equal(c.log_level, 7);          /* the main file */
    struct rt_config dflt;
    rt_config_defaults(&dflt);
    assert_int_equal(c.max_connections_per_uid, dflt.max_connections_per_uid); /* nobody's */
}

static void test_order_is_by_bytes(void **state)
{
    (void)state;
    /* "10-" < "9-" and "Z" < "a" byte-wise, whatever the locale says. */
    write_file(main_file, "");
    dropin("9-b.conf", "limits: { max_jobs_per_user = 9; };\n");
    dropin("10-a.conf", "limits: { max_jobs_per_user = 10; };\n");
    dropin("a.conf", "admin_group = \"lower\";\n");
    dropin("Z.conf", "admin_group = \"upper\";\n");
    struct rt_config_files files;
    assert_int_equal(rt_config_files_list(main_file, &files, err, sizeof(err)), 0);
    assert_int_equal(files.n, 5);
    const char *want[] = {"10-a.conf", "9-b.conf", "Z.conf", "a.conf"};
    assert_string_equal(files.paths[0], main_file);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(strrchr(files.paths[i + 1], '/') + 1, want[i]);
    rt_config_files_free(&files);

    struct rt_config c;
    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), 0);
    assert_int_equal(c.max_jobs_per_uid, 9);
    assert_string_equal(c.admin_group, "lower");
}

static void test_only_conf_files_are_read(void **state)
{
    (void)state;
    /* Each would be refused if it were read. */
    const char *bad = "bogus = 1;\n";
    write_file(main_file, "# nothing\n");
    dropin(".hidden.conf", bad);
    dropin("10-x.conf~", bad);
    dropin("10-x.conf.dpkg-old", bad);
    dropin("README", bad);
    dropin("x.cfg", bad);
    dropin(".conf", bad);
    dropin("20-ok.conf", "interval = 4;\n");
    struct rt_config c;
    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), 0);
    assert_true(c.interval_secs == 4);
}

static void test_a_bad_dropin_refuses_everything(void **state)
{
    (void)state;
    write_file(main_file, "interval = 2;\n");
    dropin("10-good.conf", "limits: { max_jobs_per_user = 7; };\n");
    const char *bad = dropin("20-bad.conf", "# comment\nlimits: { max_connections = 0; };\n");
    struct rt_config c, before;
    rt_config_defaults(&c);
    before = c;
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), -EINVAL);
    char want[1024];
    snprintf(want, sizeof(want), "%s:2: limits.max_connections: 0 is out of range 1..65536", bad);
    assert_string_equal(err, want);
    assert_int_equal(rt_config_diff(&c, &before), 0); /* not even the good files */

    /* A syntax error and a directory named like a drop-in: refused, not fatal. */
    bad = dropin("20-bad.conf", "interval = ;\n");
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), -EINVAL);
    snprintf(want, sizeof(want), "%s:1: syntax error in 'interval = ;'", bad);
    assert_string_equal(err, want);
    unlink(bad);
    char sub[512];
    snprintf(sub, sizeof(sub), "%s/30-dir.conf", dropin_dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), -EISDIR);
    snprintf(want, sizeof(want), "%s: Is a directory", sub);
    assert_string_equal(err, want);
    assert_int_equal(rt_config_diff(&c, &before), 0);
}

static void test_cross_field_rules_apply_to_the_merge(void **state)
{
    (void)state;
    /* Each file alone is fine; together the per-user limit exceeds the total. */
    write_file(main_file, "limits: {\n  max_connections_per_user = 10;\n};\n");
    dropin("50-small.conf", "limits: { max_connections = 5; };\n");
    struct rt_config c;
    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), -EINVAL);
    char want[1024];
    snprintf(want, sizeof(want), "%s:2: limits.max_connections_per_user: 10 exceeds limits.max_connections (5)",
             main_file);
    assert_string_equal(err, want);
    /* A later drop-in that raises the total makes it whole again. */
    dropin("60-more.conf", "limits: { max_connections = 50; };\n");
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), 0);
    assert_int_equal(c.max_connections, 50);
}

static void test_named_main_file_and_reload(void **state)
{
    (void)state;
    /* A named main file must exist even when drop-ins do. */
    dropin("10-x.conf", "interval = 3;\n");
    struct rt_config c;
    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), -ENOENT);
    char want[1024];
    snprintf(want, sizeof(want), "%s: No such file or directory", main_file);
    assert_string_equal(err, want);

    /* Reload: defaults, files, then flags, which still win. */
    write_file(main_file, "interval = 2;\nupload: { interval = 60; };\n");
    struct rt_config_overrides o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(rt_config_override_set(&o, "upload.interval", "90", err, sizeof(err)), 0);
    assert_int_equal(rt_config_reload(main_file, &o, &c, err, sizeof(err)), 0);
    assert_true(c.interval_secs == 3);
    assert_int_equal(c.upload_interval_secs, 90);
    /* A drop-in removed: its key is back to the main file's value. */
    char p[512];
    snprintf(p, sizeof(p), "%s/10-x.conf", dropin_dir);
    unlink(p);
    struct rt_config before = c;
    assert_int_equal(rt_config_reload(main_file, &o, &c, err, sizeof(err)), 0);
    assert_int_equal(rt_config_diff(&before, &c), RT_CFG_INTERVAL);
    assert_true(c.interval_secs == 2);

    /* The drop-in directory may be missing or not a directory. */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dropin_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), 0);
    write_file(dropin_dir, "interval = ;\n");
    assert_int_equal(rt_config_load(main_file, &c, err, sizeof(err)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_later_files_override_the_keys_they_set, clean),
        cmocka_unit_test_setup(test_order_is_by_bytes, clean),
        cmocka_unit_test_setup(test_only_conf_files_are_read, clean),
        cmocka_unit_test_setup(test_a_bad_dropin_refuses_everything, clean),
        cmocka_unit_test_setup(test_cross_field_rules_apply_to_the_merge, clean),
        cmocka_unit_test_setup(test_named_main_file_and_reload, clean),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
