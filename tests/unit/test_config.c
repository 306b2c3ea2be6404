/* The configuration file: a good file with every key, each class of bad
 * file with its exact message, overrides, reload and the writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/keys.h"
#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

static char dir[] = "/tmp/rt-config-test.XXXXXX";
static char path[256];
static char err[1024];

/* Write text to the test's config file and return its path. */
static const char *conf(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Load text over the defaults; the result must be a refusal with this
 * message (after the "PATH:" prefix) and must leave the struct alone. */
static void expect_refused(const char *text, const char *message)
{
    struct rt_config c, before;
    rt_config_defaults(&c);
    before = c;
    err[0] = '\0';
    if (rt_config_load(conf(text), &c, err, sizeof(err)) != -EINVAL)
        fail_msg("accepted: %s", text);
    char want[1024];
    snprintf(want, sizeof(want), "%s:%s", path, message);
    assert_string_equal(err, want);
    assert_int_equal(rt_config_diff(&c, &before), 0);
}

static void test_good_file(void **state)
{
    (void)state;
    struct rt_config c;
    rt_config_defaults(&c);
    const char *text =
        "# every key\n"
        "interval = \"500ms\";\n"
        "socket = \"/run/rt/sock\";\n"
        "state_dir = \"/var/lib/rt\";\n"
        "admin_group = \"gpu-admins\";\n"
        "log_level = \"debug\";\n"
        "retention: {\n"
        "  max_age = \"7d\";\n"
        "  max_size = \"2G\";\n"
        "};\n"
        "limits: {\n"
        "  max_connections = 100;\n"
        "  max_connections_per_user = 10;\n"
        "  max_jobs_per_user = 5;\n"
        "  max_message_size = \"64K\";\n"
        "  reserved_connections = 4;\n"
        "  max_buffer_per_user = \"8M\";\n"
        "  max_buffer_total = \"32M\";\n"
        "  idle_timeout = \"5min\";\n"
        "  message_timeout = 3;\n"
        "  reply_timeout = \"90s\";\n"
        "};\n"
        "upload: {\n"
        "  api_url = \"https://sentinel.example.com/api\";\n"
        "  interval = \"2min\";\n"
        "  token_credential = \"team-token\";\n"
        "  spool_max_size = 8388608;\n"
        "};\n"
        "gpu: {\n"
        "  idle_after = \"30min\";\n"
        "  idle_util_max = 0;\n"
        "  idle_vram_min = \"1G\";\n"
        "};\n";
    assert_int_equal(rt_config_load(conf(text), &c, err, sizeof(err)), 0);
    assert_true(c.interval_secs == 0.5);
    assert_string_equal(c.socket_path, "/run/rt/sock");
    assert_string_equal(c.state_dir, "/var/lib/rt");
    assert_string_equal(c.admin_group, "gpu-admins");
    assert_int_equal(c.log_level, LOG_DEBUG);
    assert_int_equal(c.retention_max_age_secs, 7 * 86400);
    assert_int_equal(c.retention_max_bytes, 2ULL << 30);
    assert_int_equal(c.max_connections, 100);
    assert_int_equal(c.max_connections_per_uid, 10);
    assert_int_equal(c.max_jobs_per_uid, 5);
    assert_int_equal(c.max_message_bytes, 65536);
    assert_int_equal(c.reserved_connections, 4);
    assert_int_equal(c.max_buffer_per_uid, 8 << 20);
    assert_int_equal(c.max_buffer_total, 32 << 20);
    assert_int_equal(c.idle_timeout_secs, 300);
    assert_int_equal(c.message_timeout_secs, 3);
    assert_int_equal(c.reply_timeout_secs, 90);
    assert_string_equal(c.api_url, "https://sentinel.example.com/api");
    assert_int_equal(c.upload_interval_secs, 120);
    assert_string_equal(c.token_credential, "team-token");
    assert_int_equal(c.spool_max_bytes, 8388608);
    assert_int_equal(c.gpu_idle_after_secs, 1800);
    assert_int_equal(c.gpu_idle_util_max, 0);
    assert_int_equal(c.gpu_idle_vram_min_bytes, 1ULL << 30);
    /* not in the file: untouched */
    assert_string_equal(c.proc_root, "/proc");
}

static void test_plain_numbers_and_units(void **state)
{
    (void)state;
    struct rt_config c;
    rt_config_defaults(&c);
    const char *text = "interval = 2;\n"
                       "retention: { max_age = 0; max_size = \"1TiB\"; };\n"
                       "upload: { interval = 3600.0; api_url = \"\"; };\n"
                       "admin_group = \"\";\n";
    assert_int_equal(rt_config_load(conf(text), &c, err, sizeof(err)), 0);
    assert_true(c.interval_secs == 2.0);
    assert_int_equal(c.retention_max_age_secs, 0);
    assert_int_equal(c.retention_max_bytes, 1ULL << 40);
    assert_int_equal(c.upload_interval_secs, 3600);
    assert_string_equal(c.api_url, "");
    assert_string_equal(c.admin_group, "");

    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(conf("interval = 0.25; retention: { max_age = \"2w\"; };"), &c, err,
                                    sizeof(err)), 0);
    assert_true(c.interval_secs == 0.25);
    assert_int_equal(c.retention_max_age_secs, 14 * 86400);
}

static void test_missing_files(void **state)
{
    (void)state;
    struct rt_config c;
    rt_config_defaults(&c);
    char missing[300];
    snprintf(missing, sizeof(missing), "%s/nope.conf", dir);
    assert_int_equal(rt_config_load(missing, &c, err, sizeof(err)), -ENOENT);
    char want[400];
    snprintf(want, sizeof(want), "%s: No such file or directory", missing);
    assert_string_equal(err, want);
    /* The default file may be absent; that is not an error. */
    if (access(RT_DEFAULT_CONFIG_FILE, F_OK) != 0)
        assert_int_equal(rt_config_load(NULL, &c, err, sizeof(err)), 0);
}

#define X45 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

static void test_syntax_errors(void **state)
{
    (void)state;
    /* libconfig names no setting: the message quotes the line it stopped at. */
    expect_refused("interval = 1;\n\nlimits: { max_connections = ; };\n",
                   "3: syntax error in 'limits: { max_connections = ; };'");
    expect_refused("interval = 1;\n  socket = = \"/x\";  \n", "2: syntax error in 'socket = = \"/x\";'");
    expect_refused("interval = 1;\ninterval = 2;\n", "2: duplicate setting name in 'interval = 2;'");
    /* A long line is cut at 80 bytes, not inside a character (the é at byte 79);
     * control characters are masked. */
    expect_refused("upload: { api_url = = \"https://\x01\xc3\xa9" X45 "\xc3\xa9\xc3\xa9yyyyyyyy\"; };\n",
                   "1: syntax error in 'upload: { api_url = = \"https://?\xc3\xa9" X45 "...'");
    /* An error at the end of the file, where no line is left to quote. */
    expect_refused("limits: {\n  max_connections = 1;\n", "3: syntax error");
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_refused("interval = [1, 2];\n",
                   "1: interval: expected a duration such as 30 or \"30s\", got an array");
    expect_refused("\nlimits: { max_connections = \"many\"; };\n",
                   "2: limits.max_connections: expected an integer, got a string");
    expect_refused("limits: { max_message_size = 1.5; };\n",
                   "1: limits.max_message_size: expected a size such as 1048576 or \"1M\", got a number "
                   "with a fraction");
    expect_refused("socket = 5;\n", "1: socket: expected a string, got an integer");
    expect_refused("log_level = true;\n", "1: log_level: expected a string, got a boolean");
    expect_refused("upload = 5;\n", "1: upload: expected a group { ... }, got an integer");
    expect_refused("retention: { max_age = (1, \"d\"); };\n",
                   "1: retention.max_age: expected a duration such as 30 or \"30s\", got a list");
}

static void test_unknown_keys(void **state)
{
    (void)state;
    expect_refused("interval = 1;\nintreval = 2;\n", "2: unknown key 'intreval'");
    expect_refused("upload: {\n  api_url = \"https://x\";\n  token = \"secret\";\n};\n",
                   "3: unknown key 'upload.token'");
    expect_refused("limits: { upload: { interval = 1; }; };\n", "1: unknown key 'limits.upload'");
    expect_refused("proc_root = \"/tmp\";\n", "1: unknown key 'proc_root'");
    expect_refused("sampling: { interval = 1; };\n", "1: unknown key 'sampling'");

    /* A key in an @include'd file is reported with that file's name. */
    char inc[300], text[400], want[400];
    snprintf(inc, sizeof(inc), "%s/extra.conf", dir);
    FILE *f = fopen(inc, "w");
    assert_non_null(f);
    fputs("interval = 2;\n\nupload: { retries = 3; };\n", f);
    fclose(f);
    snprintf(text, sizeof(text), "log_level = \"info\";\n@include \"%s\"\n", inc);
    struct rt_config c;
    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(conf(text), &c, err, sizeof(err)), -EINVAL);
    snprintf(want, sizeof(want), "%s:3: unknown key 'upload.retries'", inc);
    assert_string_equal(err, want);
    unlink(inc);
}

static void test_out_of_range(void **state)
{
    (void)state;
    expect_refused("interval = 0.01;\n", "1: interval: 0.01 is out of range 100ms..1h");
    expect_refused("interval = \"2h\";\n", "1: interval: \"2h\" is out of range 100ms..1h");
    expect_refused("limits: { max_connections = 0; };\n",
                   "1: limits.max_connections: 0 is out of range 1..65536");
    expect_refused("limits: { max_jobs_per_user = -1; };\n",
                   "1: limits.max_jobs_per_user: -1 is out of range 1..100000");
    expect_refused("limits: { max_message_size = \"128M\"; };\n",
                   "1: limits.max_message_size: \"128M\" is out of range 4K..64M");
    expect_refused("upload: { spool_max_size = 1000; };\n",
                   "1: upload.spool_max_size: 1000 is out of range 1M..1T");
    expect_refused("upload: { interval = \"1.5s\"; };\n",
                   "1: upload.interval: \"1.5s\" is not a whole number of seconds");
    expect_refused("retention: { max_age = \"30x\"; };\n",
                   "1: retention.max_age: \"30x\" is not a duration (units: ms s min h d w)");
    expect_refused("retention: { max_size = \"-1G\"; };\n",
                   "1: retention.max_size: \"-1G\" is not a size (units: K M G T)");
    expect_refused("limits: { max_connections = 10; max_connections_per_user = 20; };\n",
                   "1: limits.max_connections_per_user: 20 exceeds limits.max_connections (10)");
    expect_refused("limits: {\n max_connections = 10;\n max_connections_per_user = 5;\n};\n",
                   "2: limits.reserved_connections: 16 leaves no room under limits.max_connections (10)");
    expect_refused("limits: {\n max_buffer_total = \"32M\";\n};\n",
                   "2: limits.max_buffer_per_user: 64M exceeds limits.max_buffer_total (32M)");
    expect_refused("limits: { max_buffer_per_user = 1000; };\n",
                   "1: limits.max_buffer_per_user: 1000 is out of range 1M..64G");
    expect_refused("limits: { idle_timeout = 0; };\n", "1: limits.idle_timeout: 0 is out of range 1s..1d");
    expect_refused("gpu: { idle_util_max = 101; };\n", "1: gpu.idle_util_max: 101 is out of range 0..100");
    expect_refused("gpu: { idle_after = \"8d\"; };\n", "1: gpu.idle_after: \"8d\" is out of range 1s..7d");
    expect_refused("limits: { message_timeout = \"2h\"; };\n",
                   "1: limits.message_timeout: \"2h\" is out of range 1s..1h");
    expect_refused("limits: { reply_timeout = \"1.5s\"; };\n",
                   "1: limits.reply_timeout: \"1.5s\" is not a whole number of seconds");
    expect_refused("socket = \"run/sock\";\n", "1: socket: \"run/sock\" is not an absolute path");
    expect_refused("socket = \"/run/resource-tracker/a-very-long-name-that-does-not-fit-in-sun-path-because-"
                   "it-goes-on-and-on-and-on-and-on.sock\";\n",
                   "1: socket: longer than 107 bytes");
    expect_refused("log_level = \"loud\";\n",
                   "1: log_level: \"loud\" is not a log level (err warning notice info debug)");
    expect_refused("upload: { api_url = \"ftp://x\"; };\n",
                   "1: upload.api_url: \"ftp://x\" is not an http:// or https:// URL");
    expect_refused("upload: { token_credential = \"../etc/shadow\"; };\n",
                   "1: upload.token_credential: \"../etc/shadow\" is not a credential name");
    expect_refused("admin_group = \"wheel users\";\n", "1: admin_group: \"wheel users\" is not a group name");
    expect_refused("notes: { cpu_efficiency_below = 101; };\n", "1: notes.cpu_efficiency_below: 101 is out of range 0..100");
    expect_refused("notify: { adopted = \"mailto:%u,root\"; };\n",
                   "1: notify.adopted: \"mailto:%u,root\" is not an http:// or https:// URL or mailto:ADDRESS (%u: the user)");
    expect_refused("notify: { adopted = \"mailto:%s\"; };\n",
                   "1: notify.adopted: \"mailto:%s\" is not an http:// or https:// URL or mailto:ADDRESS (%u: the user)");
    struct rt_config c;
    rt_config_defaults(&c);
    assert_int_equal(rt_config_load(conf("notify: { adopted = \"mailto:%u@lab.example.org\"; };\n"), &c, err,
                                    sizeof(err)),
                     0);
    assert_string_equal(c.notify_adopted, "mailto:%u@lab.example.org");
}

static void test_overrides_and_reload(void **state)
{
    (void)state;
    struct rt_config_overrides o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(rt_config_override_set(&o, "interval", "0.5", err, sizeof(err)), 0);
    assert_int_equal(rt_config_override_set(&o, "proc_root", "/tmp/proc", err, sizeof(err)), 0);
    assert_int_equal(rt_config_override_set(&o, "user_mode", "yes", err, sizeof(err)), 0);
    assert_int_equal(rt_config_override_set(&o, "upload.spool_max_size", "2M", err, sizeof(err)), 0);
    assert_int_equal(o.set, RT_CFG_INTERVAL | RT_CFG_PROC_ROOT | RT_CFG_USER_MODE | RT_CFG_SPOOL_MAX_BYTES);

    assert_int_equal(rt_config_override_set(&o, "interval", "fast", err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "interval: fast is not a duration (units: ms s min h d w)");
    assert_int_equal(rt_config_override_set(&o, "limits.max_connections", "lots", err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "limits.max_connections: expected an integer, got lots");
    assert_int_equal(rt_config_override_set(&o, "nope", "1", err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "unknown key 'nope'");
    assert_int_equal(o.set, RT_CFG_INTERVAL | RT_CFG_PROC_ROOT | RT_CFG_USER_MODE | RT_CFG_SPOOL_MAX_BYTES);

    /* Flags win over the file; the rest of the file applies. */
    struct rt_config c;
    rt_config_defaults(&c);
    conf("interval = 5; upload: { interval = 30; spool_max_size = \"1G\"; };\n");
    assert_int_equal(rt_config_reload(path, &o, &c, err, sizeof(err)), 0);
    assert_true(c.interval_secs == 0.5);
    assert_int_equal(c.upload_interval_secs, 30);
    assert_int_equal(c.spool_max_bytes, 2 * 1024 * 1024);
    assert_string_equal(c.proc_root, "/tmp/proc");
    assert_true(c.user_mode);

    /* A bad file on reload keeps the running configuration. */
    struct rt_config running = c;
    conf("interval = 5; upload: { interval = 0; };\n");
    assert_int_equal(rt_config_reload(path, &o, &c, err, sizeof(err)), -EINVAL);
    assert_int_equal(rt_config_diff(&c, &running), 0);
    char want[512];
    snprintf(want, sizeof(want), "%s:1: upload.interval: 0 is out of range 1s..1d", path);
    assert_string_equal(err, want);

    /* A good one is applied; the diff names what changed. Keys that left
     * the file fall back to their defaults. */
    conf("socket = \"/run/other.sock\";\nupload: { interval = 30; };\n");
    assert_int_equal(rt_config_reload(path, &o, &c, err, sizeof(err)), 0);
    uint32_t d = rt_config_diff(&running, &c);
    assert_int_equal(d, RT_CFG_SOCKET_PATH);
    struct rt_config adopted = running;
    assert_int_equal(rt_config_adopt(&adopted, &c), RT_CFG_SOCKET_PATH);
    assert_string_equal(adopted.socket_path, running.socket_path);
    /* A live key is taken at once, a restart key waits. */
    conf("log_level = \"debug\";\nlimits: { max_jobs_per_user = 3; };\n"
         "upload: { interval = 30; api_url = \"https://example.com\"; };\n");
    assert_int_equal(rt_config_reload(path, &o, &c, err, sizeof(err)), 0);
    adopted = running;
    assert_int_equal(rt_config_adopt(&adopted, &c), RT_CFG_API_URL);
    assert_int_equal(adopted.log_level, c.log_level);
    assert_int_equal(adopted.max_jobs_per_uid, 3);
    assert_string_equal(adopted.api_url, running.api_url);
    assert_string_equal(rt_config_key_name(RT_CFG_SOCKET_PATH), "socket");
    assert_string_equal(rt_config_key_name(RT_CFG_UPLOAD_INTERVAL), "upload.interval");

    /* A flag can break a cross-field rule the file kept. */
    struct rt_config_overrides o2;
    memset(&o2, 0, sizeof(o2));
    assert_int_equal(rt_config_override_set(&o2, "limits.max_connections", "100", err, sizeof(err)), 0);
    assert_int_equal(rt_config_reload(path, &o2, &c, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "limits.max_connections_per_user: 256 exceeds limits.max_connections (100)");
}

/* Write c as --check-config does, load it back (the same), and return the
 * text written. */
static const char *write_and_load(const struct rt_config *c)
{
    static char text[4096];
    struct rt_config back;
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    rt_config_write(f, c);
    fclose(f);
    rt_config_defaults(&back);
    if (rt_config_load(path, &back, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(rt_config_diff(c, &back), 0);
    f = fopen(path, "r");
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* What --check-config prints loads back to the same configuration. */
static void test_write_round_trip(void **state)
{
    (void)state;
    struct rt_config c;
    rt_config_defaults(&c);
    c.interval_secs = 0.1;
    rt_strlcpy(c.api_url, "https://a\"b\\c", sizeof(c.api_url));
    c.retention_max_age_secs = 0;
    c.retention_max_bytes = 12345;
    c.log_level = LOG_WARNING;
    const char *text = write_and_load(&c);
    assert_non_null(strstr(text, "interval = \"100ms\";\n"));
    assert_non_null(strstr(text, "  api_url = \"https://a\\\"b\\\\c\";\n"));
    assert_non_null(strstr(text, "  max_age = 0;\n  max_size = \"12345\";\n"));
    assert_non_null(strstr(text, "  interval = \"1min\";\n"));
    assert_non_null(strstr(text, "log_level = \"warning\";\n"));
    assert_non_null(strstr(text, "# proc_root = \"/proc\";\n"));

    /* Microseconds survive the trip (fuzz_config: "%g" kept six digits). */
    c.interval_secs = 50.55555;
    assert_non_null(strstr(write_and_load(&c), "interval = \"50.55555s\";\n"));
}

/* The sample file documents every key with its default: loading it gives
 * the defaults, and uncommenting every "#key = value" line too. */
static void test_sample_file(void **state)
{
    (void)state;
    const char *src = getenv("RT_SOURCE_DIR");
    assert_non_null(src);
    char sample[512];
    snprintf(sample, sizeof(sample), "%s/etc/resource-trackerd.conf", src);
    struct rt_config c, defaults;
    rt_config_defaults(&c);
    rt_config_defaults(&defaults);
    assert_int_equal(rt_config_load(sample, &c, err, sizeof(err)), 0);
    assert_int_equal(rt_config_diff(&c, &defaults), 0);

    FILE *in = fopen(sample, "r"), *out = fopen(path, "w");
    assert_non_null(in);
    assert_non_null(out);
    char line[512];
    int uncommented = 0;
    while (fgets(line, sizeof(line), in)) {
        char *p = line;
        while (*p == ' ')
            p++;
        /* "#key = value;" (no space after #) is a commented default. */
        if (p[0] == '#' && p[1] >= 'a' && p[1] <= 'z' && strchr(p, '=')) {
            fputs(p + 1, out);
            uncommented++;
        } else if (p[0] != '#') {
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    int file_keys = 0; /* every key of the file is documented there */
    for (size_t i = 0; i < rt_config_nkeys; i++)
        file_keys += rt_config_keys[i].where == FILE_KEY;
    assert_int_equal(uncommented, file_keys);
    assert_int_equal(rt_config_load(path, &c, err, sizeof(err)), 0);
    assert_int_equal(rt_config_diff(&c, &defaults), 0);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof(path), "%s/resource-trackerd.conf", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_plain_numbers_and_units),
        cmocka_unit_test(test_missing_files),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_overrides_and_reload),
        cmocka_unit_test(test_write_round_trip),
        cmocka_unit_test(test_sample_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
