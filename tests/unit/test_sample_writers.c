/* The JSON and CSV writers against a hand-built sample with exact output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "rt/varlink.h"

#include <math.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

static void build(struct rt_sample *s)
{
    rt_sample_init(s);
    struct rt_arena *a = &s->arena;
    s->timestamp_secs = 1795310334;
    s->timestamp_ms = 1795310334025ULL;
    s->has_interval = true;
    s->actual_interval_ms = 1000;
    s->nominal_interval_secs = 1;
    s->cpu.utilization_pct = 1.25;
    s->cpu.n_cores = 2;
    s->cpu.per_core_pct = rt_arena_alloc(a, 2 * sizeof(double));
    s->cpu.per_core_pct[0] = 100.0;
    s->cpu.per_core_pct[1] = 25.0;
    s->cpu.utime_secs = 1.0;
    s->cpu.stime_secs = 0.25;
    s->cpu.process_count = 77;
    s->memory = (struct rt_memory){.total_mib = 1000, .free_mib = 400, .available_mib = 600,
                                   .used_mib = 400, .used_pct = 40.0, .buffers_mib = 10,
                                   .cached_mib = 150, .active_mib = 300, .inactive_mib = 200};
    s->n_disks = 2;
    s->disks = rt_arena_alloc(a, 2 * sizeof(struct rt_disk));
    s->disks[0] = (struct rt_disk){.device = "dm-0", .stacked = true, .read_bytes_per_sec = 4096,
                                   .write_bytes_per_sec = 8192};
    s->disks[0].n_mounts = 1;
    s->disks[0].mounts = rt_arena_alloc(a, sizeof(struct rt_mount));
    s->disks[0].mounts[0] = (struct rt_mount){.mount_point = "/", .filesystem = "ext4",
                                              .total_bytes = 2000000000, .used_bytes = 500000000,
                                              .available_bytes = 1400000000, .used_pct = 25.0};
    s->disks[1] = (struct rt_disk){.device = "sda", .device_type = "ssd", .has_capacity = true,
                                   .capacity_bytes = 4000000000, .read_bytes_per_sec = 4096,
                                   .write_bytes_per_sec = 8192, .read_bytes_total = 40960,
                                   .write_bytes_total = 81920};
    s->n_nets = 1;
    s->nets = rt_arena_alloc(a, sizeof(struct rt_netif));
    s->nets[0] = (struct rt_netif){.interface = "eth0", .operstate = "up", .has_mtu = true, .mtu = 1500,
                                   .rx_bytes_per_sec = 100.5, .tx_bytes_per_sec = 10,
                                   .rx_bytes_total = 1000, .tx_bytes_total = 100};
}

static void test_json_exact(void **state)
{
    (void)state;
    struct rt_sample s;
    build(&s);
    struct json_object *o = rt_sample_to_json(&s);
    const char *expect =
        "{\"actual_interval_ms\":1000,\"cpu\":{\"cgroup_usage_secs\":null,\"cgroup_utilization_pct\":null,"
        "\"per_core_pct\":[100.0,25.0],\"process_cgroup_memory_anon_bytes\":null,"
        "\"process_cgroup_memory_bytes\":null,\"process_cgroup_memory_file_bytes\":null,"
        "\"process_cgroup_memory_kernel_bytes\":null,\"process_cgroup_memory_peak_bytes\":null,"
        "\"process_cgroup_memory_shmem_bytes\":null,\"process_child_count\":null,\"process_cores_used\":null,"
        "\"process_count\":77,\"process_disk_read_bytes\":null,\"process_disk_write_bytes\":null,"
        "\"process_gpu_usage\":null,\"process_gpu_utilized\":null,\"process_gpu_vram_mib\":null,"
        "\"process_memory_bytes\":null,\"process_oom_kills\":null,\"process_pressure_cpu_some_pct\":null,"
        "\"process_pressure_io_full_pct\":null,\"process_pressure_io_some_pct\":null,"
        "\"process_pressure_memory_full_pct\":null,\"process_pressure_memory_some_pct\":null,"
        "\"process_pss_mib\":null,\"process_rss_mib\":null,\"process_stime_secs\":null,"
        "\"process_throttled_pct\":null,\"process_utime_secs\":null,\"stime_secs\":0.25,\"utilization_pct\":1.25,"
        "\"utime_secs\":1.0},"
        "\"disk\":[{\"capacity_bytes\":null,\"device\":\"dm-0\",\"device_type\":null,\"model\":null,"
        "\"mounts\":[{\"available_bytes\":1400000000,\"filesystem\":\"ext4\",\"mount_point\":\"/\","
        "\"total_bytes\":2000000000,\"used_bytes\":500000000,\"used_pct\":25.0}],"
        "\"read_bytes_per_sec\":4096.0,\"read_bytes_total\":0,\"serial\":null,\"stacked\":true,"
        "\"vendor\":null,\"write_bytes_per_sec\":8192.0,\"write_bytes_total\":0},"
        "{\"capacity_bytes\":4000000000,\"device\":\"sda\",\"device_type\":\"ssd\",\"model\":null,"
        "\"mounts\":[],\"read_bytes_per_sec\":4096.0,\"read_bytes_total\":40960,\"serial\":null,"
        "\"stacked\":false,\"vendor\":null,\"write_bytes_per_sec\":8192.0,\"write_bytes_total\":81920}],"
        "\"gpu\":[],\"host_timestamp_ms\":null,\"job_id\":null,\"job_name\":null,"
        "\"memory\":{\"active_mib\":300,\"available_mib\":600,\"buffers_mib\":10,\"cached_mib\":150,"
        "\"free_mib\":400,\"inactive_mib\":200,\"swap_total_mib\":0,\"swap_used_mib\":0,"
        "\"swap_used_pct\":0.0,\"total_mib\":1000,\"used_mib\":400,\"used_pct\":40.0},"
        "\"network\":[{\"driver\":null,\"interface\":\"eth0\",\"mac_address\":null,\"mtu\":1500,"
        "\"operstate\":\"up\",\"rx_bytes_per_sec\":100.5,\"rx_bytes_total\":1000,\"speed_mbps\":null,"
        "\"tx_bytes_per_sec\":10.0,\"tx_bytes_total\":100}],"
        "\"resource-tracker-version\":\"" RT_VERSION "\",\"timestamp_ms\":1795310334025,\"timestamp_secs\":1795310334,\"tracked_pid\":null}";
    assert_string_equal(rt_json_plain(o), expect);
    json_object_put(o);
    rt_sample_free(&s);
}

/* A string as json-c writes it, whatever its bytes and wherever they sit:
 * each byte value at each place of strings of 1 to 24 bytes, alone and
 * beside a quote (the writer skips 8 bytes at a time when none is escaped). */
static void test_json_string_as_json_c_writes_it(void **state)
{
    (void)state;
    char s[24];
    for (size_t len = 1; len <= sizeof(s); len++) {
        for (unsigned b = 0; b < 256; b++) {
            for (size_t at = 0; at < len; at++) {
                for (int pair = 0; pair < 2; pair++) {
                    memset(s, 'x', len);
                    s[at] = (char)b;
                    if (pair)
                        s[len - 1 - at] = '"';
                    struct printbuf *pb = printbuf_new();
                    rt_json_put_string(pb, s, len);
                    struct json_object *o = json_object_new_string_len(s, (int)len);
                    assert_string_equal(pb->buf, json_object_to_json_string_ext(o, RT_VL_JSON_FLAGS));
                    json_object_put(o);
                    printbuf_free(pb);
                }
            }
        }
    }
}

/* The text is what json-c writes for it: read back and written again by
 * json-c (which escapes strings its own way), the same bytes, with strings
 * of every kind of byte and a GPU detail key given twice (its first place,
 * its last value). */
static void test_json_text_as_json_c_writes_it(void **state)
{
    (void)state;
    static const char *const odd[] = {"a/b", "q\"uote", "back\\slash", "tab\tnl\ncr\rbs\bff\f", "\x01\x1f\x7f",
                                      "ünïcode ✓", ""};
    for (size_t k = 0; k < RT_ARRAY_SIZE(odd); k++) {
        struct rt_sample s;
        build(&s);
        s.disks[0].model = odd[k];
        s.disks[0].mounts[0].mount_point = odd[(k + 1) % RT_ARRAY_SIZE(odd)];
        s.nets[0].driver = odd[(k + 2) % RT_ARRAY_SIZE(odd)];
        s.job_name = odd[(k + 3) % RT_ARRAY_SIZE(odd)];
        s.job_id = 9;
        s.has_job = true;
        s.tracked_pid = -1;
        s.n_gpus = 1;
        s.gpus = rt_arena_alloc(&s.arena, sizeof(struct rt_gpu));
        s.gpus[0] = (struct rt_gpu){.uuid = "GPU-1", .name = odd[k], .has_power = true, .power_watts = 12.345};
        s.gpus[0].n_detail = 3;
        s.gpus[0].detail = rt_arena_alloc(&s.arena, 3 * sizeof(struct rt_kv));
        s.gpus[0].detail[0] = (struct rt_kv){"b", "first"};
        s.gpus[0].detail[1] = (struct rt_kv){odd[k], NULL};
        s.gpus[0].detail[2] = (struct rt_kv){"b", "last"};
        struct printbuf *pb = printbuf_new();
        rt_sample_json_text(&s, pb);
        struct json_object *o = json_tokener_parse(pb->buf);
        assert_non_null(o);
        assert_string_equal(json_object_to_json_string_ext(o, RT_VL_JSON_FLAGS), pb->buf);
        struct json_object *detail = json_object_object_get(json_object_array_get_idx(rt_json_get_array(o, "gpu"), 0),
                                                           "detail");
        assert_string_equal(rt_json_get_string(detail, "b"), "last");
        struct json_object_iterator first = json_object_iter_begin(detail);
        assert_string_equal(json_object_iter_peek_name(&first), "b");
        assert_int_equal(json_object_object_length(detail), strcmp(odd[k], "b") ? 2 : 1);
        assert_string_equal(rt_json_get_string(o, "job_name"), s.job_name);
        json_object_put(o);
        printbuf_free(pb);
        rt_sample_free(&s);
    }
}

static void test_json_job_fields_and_roundtrip(void **state)
{
    (void)state;
    struct rt_sample s;
    build(&s);
    s.job_id = 7;
    s.job_name = "train";
    s.has_job = true;
    s.tracked_pid = 4242;
    s.job = (struct rt_job_figures){.gates = RT_GATE_GPU | RT_GATE_TREE | RT_GATE_DISK, .child_count = 3, .cores_used = 1.5, .utime_secs = 1.25,
                                    .stime_secs = 0.25, .pss_bytes = 31 * RT_MIB, .rss_bytes = 40 * RT_MIB,
                                    .disk_read_bytes = 1, .disk_write_bytes = 4096, .gpu_usage = 0.5,
                                    .gpu_vram_bytes = (uint64_t)(811.6875 * RT_MIB), .gpu_utilized = 1};
    struct json_object *o = rt_sample_to_json(&s);
    char *first = strdup(rt_json_plain(o));
    assert_non_null(strstr(first, "\"job_id\":7,\"job_name\":\"train\""));
    assert_non_null(strstr(first, "\"process_child_count\":3,\"process_cores_used\":1.5,\"process_count\":77"));
    assert_non_null(strstr(first, "\"tracked_pid\":4242}"));

    struct rt_sample back;
    rt_sample_init(&back);
    char err[128];
    assert_int_equal(rt_sample_from_json(o, &back, err, sizeof(err)), 0);
    struct json_object *o2 = rt_sample_to_json(&back);
    assert_string_equal(rt_json_plain(o2), first);

    /* Switching the same tree to a host sample nulls every job key. */
    rt_sample_reset(&back);
    rt_sample_json_set_job(o2, &back);
    assert_non_null(strstr(rt_json_plain(o2), "\"job_id\":null,\"job_name\":null"));
    assert_non_null(strstr(rt_json_plain(o2), "\"process_cores_used\":null"));

    free(first);
    json_object_put(o);
    json_object_put(o2);
    rt_sample_free(&back);
    rt_sample_free(&s);
}

static size_t count_fields(const char *line)
{
    size_t n = 1;
    for (; *line && *line != '\n'; line++)
        n += *line == ',';
    return n;
}

static void test_csv(void **state)
{
    (void)state;
    assert_int_equal(count_fields(RT_CSV_HEADER), RT_CSV_COLUMNS);
    struct rt_sample s;
    build(&s);
    char row[1024];
    size_t n = rt_sample_to_csv(&s, row, sizeof(row));
    assert_int_equal(n, strlen(row));
    /* Stacked dm-0 is left out of the I/O sums; its mount counts for space,
     * used as df shows it (not total - available: 100 MB are reserved). */
    assert_string_equal(row, "1795310334.025,77,1.000,0.250,1.2500,400,400,10,150,300,200,4096,8192,"
                             "2.000000,0.500000,1.400000,101,10,0.0000,0.0000,0,,,,,,,,,,,\n");
    assert_int_equal(count_fields(row), RT_CSV_COLUMNS);

    /* A host sample on a GPU host: the host's GPU use in process_gpu_*, as
     * the Rust tracker writes it without a PID. */
    s.job = (struct rt_job_figures){.gates = RT_GATE_GPU, .gpu_usage = 0.5, .gpu_vram_bytes = 1024 * RT_MIB,
                                    .gpu_utilized = 1};
    rt_sample_to_csv(&s, row, sizeof(row));
    assert_non_null(strstr(row, ",0,,,,,,,,,0.5000,1024.0000,1\n"));
    assert_int_equal(count_fields(row), RT_CSV_COLUMNS);

    s.has_job = true;
    s.tracked_pid = 9;
    s.job = (struct rt_job_figures){.gates = RT_GATE_TREE | RT_GATE_DISK, .child_count = 0, .cores_used = 0.99, .utime_secs = 0.99, .pss_bytes = 31 * RT_MIB,
                                    .disk_write_bytes = 4096};
    rt_sample_to_csv(&s, row, sizeof(row));
    assert_non_null(strstr(row, ",9,0,0.9900,0.0000,0.9900,31,0,4096,,,\n"));
    s.job.gates |= RT_GATE_GPU;
    s.job.gpu_usage = 0.25;
    s.job.gpu_vram_bytes = 1024 * RT_MIB;
    s.job.gpu_utilized = 1;
    rt_sample_to_csv(&s, row, sizeof(row));
    assert_non_null(strstr(row, ",31,0,4096,0.2500,1024.0000,1\n"));
    assert_int_equal(count_fields(row), RT_CSV_COLUMNS);

    /* Too small a buffer reports the size needed, like snprintf. */
    char tiny[8];
    size_t need = rt_sample_to_csv(&s, tiny, sizeof(tiny));
    assert_int_equal(need, strlen(row));
    rt_sample_free(&s);
}

static void test_json_double_format(void **state)
{
    (void)state;
    struct { double v; int dec; const char *out; } cases[] = {
        {0.0, 2, "0.0"}, {-0.0, 2, "0.0"}, {1.0, -1, "1.0"}, {0.1, -1, "0.1"},
        {2.0 / 3.0, 4, "0.6667"}, {1e21, -1, "1e+21"}, {123456789.0, 1, "123456789.0"},
        {100.0, 2, "100.0"}, {0.00001, -1, "0.00001"}, {1500.0, 1, "1500.0"}, {-2.5e3, 0, "-2500.0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct json_object *o = rt_json_double(cases[i].v, cases[i].dec);
        assert_string_equal(rt_json_plain(o), cases[i].out);
        json_object_put(o);
    }
    assert_null(rt_json_double(0.0 / 0.0, 2));
}

/* A CSV row made from a stored JSON sample equals the row made from the live
 * sample (the upload sends the latter, `samples --format csv` the former). */
static void test_csv_same_from_json(void **state)
{
    (void)state;
    srand(42);
    for (int iter = 0; iter < 5000; iter++) {
        struct rt_sample s;
        build(&s);
        double r = (double)rand() / RAND_MAX;
        s.actual_interval_ms = 900 + (uint64_t)(rand() % 300);
        s.cpu.utime_secs = r * 3.7;
        s.cpu.stime_secs = r * 0.123456;
        s.cpu.utilization_pct = r * 1.98765;
        s.disks[1].read_bytes_per_sec = (double)(rand() % 1000000) / 0.997;
        s.disks[1].write_bytes_per_sec = r * 130979.95;
        s.nets[0].rx_bytes_per_sec = (double)rand() / 7.0;
        s.has_job = true;
        s.tracked_pid = 7;
        s.job = (struct rt_job_figures){.gates = RT_GATE_GPU | RT_GATE_TREE | RT_GATE_DISK, .utime_secs = r * 0.00015, .stime_secs = r / 3.0,
                                        .cores_used = r * 2.00005, .gpu_usage = r * 0.30005,
                                        .gpu_vram_bytes = (uint64_t)(r * 811.69875 * RT_MIB)};
        char a[1024], b[1024];
        rt_sample_to_csv(&s, a, sizeof(a));
        struct json_object *o = rt_sample_to_json(&s);
        char err[128];
        struct json_object *back = json_tokener_parse(rt_json_plain(o));
        struct rt_sample t;
        rt_sample_init(&t);
        assert_int_equal(rt_sample_from_json(back, &t, err, sizeof(err)), 0);
        rt_sample_to_csv(&t, b, sizeof(b));
        assert_string_equal(a, b);
        json_object_put(o);
        json_object_put(back);
        rt_sample_free(&t);
        rt_sample_free(&s);
    }
}

/* The text of a double as rt_json_double made it before its fast path
 * (the oracle): the shortest %g that reads back, plain for everyday
 * magnitudes, with a '.'. */
static void oracle_double(double v, int decimals, char *buf, size_t size)
{
    if (decimals >= 0)
        v = rt_round_dec(v, decimals);
    if (v == 0.0)
        v = 0.0;
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, size, "%.*g", prec, v);
    char *e = strchr(buf, 'e');
    if (e && fabs(v) >= 1e-7 && fabs(v) < 1e17) {
        int needed = prec - 1 - atoi(e + 1);
        snprintf(buf, size, "%.*f", needed > 0 ? needed : 0, v);
    }
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
}

static void test_json_double_fast_path(void **state)
{
    (void)state;
    srand(11);
    char want[64], got[RT_JSON_DOUBLE_MAX];
    for (int iter = 0; iter < 200000; iter++) {
        int d = rand() % 8 - 1;
        double scale = pow(10, rand() % 18 - 6);
        double v = ((double)rand() / RAND_MAX - 0.3) * scale;
        if (iter % 5 == 0)
            v = (double)(rand() % 100000) / pow(10, rand() % 7); /* exact decimals, ties */
        oracle_double(v, d, want, sizeof(want));
        assert_int_equal(rt_json_format_double(v, d, got), strlen(want));
        assert_string_equal(got, want);
    }
}

/* Rows print their decimals by integers: the same digits as printf's %.Nf,
 * ties and carries included. */
static void test_csv_decimals_as_printf(void **state)
{
    (void)state;
    srand(7);
    for (int iter = 0; iter < 20000; iter++) {
        double x[5];
        for (int i = 0; i < 5; i++) {
            int kind = rand() % 4;
            double r = (double)rand() / RAND_MAX;
            x[i] = kind == 0 ? (double)(rand() % 100000) / 1e4          /* ties for %.3f */
                 : kind == 1 ? r * 1e6 : kind == 2 ? 0.99995 + r * 1e-4 /* carries */
                 : -r * 10;
        }
        /* Integers of every length (written two digits at a time), a PID
         * of the job or none (-1). */
        uint64_t n[6];
        for (int i = 0; i < 6; i++)
            n[i] = ((uint64_t)rand() * (uint64_t)rand()) >> (rand() % 62);
        int32_t pid = iter % 7 == 0 ? -1 : rand() % 4194304;
        /* utime, stime, utilization; one disk with one mount (space). */
        double h[] = {5,           x[0],        x[1],        x[2],        (double)n[0], (double)n[1], (double)n[2],
                      (double)n[3], (double)n[4], (double)n[5], 1,            0,            0,            0,
                      1,           x[3] * 1e9,  x[3] * 4e8,  fabs(x[4]) * 1e8, 0, 0};
        uint64_t vram = (uint64_t)llround(fabs(x[4]) * RT_MIB);
        struct rt_job_figures f = {.gates = RT_GATE_GPU | RT_GATE_TREE | RT_GATE_DISK, .utime_secs = x[1], .stime_secs = x[2], .cores_used = x[0],
                                   .gpu_usage = x[3], .gpu_vram_bytes = vram};
        struct rt_csv_job job = {.has_job = true, .pid = pid, .f = &f};
        char row[1024], want[1024];
        assert_true(rt_csv_row(h, RT_ARRAY_SIZE(h), 1042, 1.0, &job, row, sizeof(row)) > 0);
        double total = x[3] * 1e9 / 1e9, used = x[3] * 4e8 / 1e9, avail = fabs(x[4]) * 1e8 / 1e9;
        snprintf(want, sizeof(want),
                 "1.042,5,%.3f,%.3f,%.4f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,0,0,%.6f,%.6f,%.6f,0,0,0.0000,0.0000,0,%d,0,%.4f,"
                 "%.4f,%.4f,0,0,0,%.4f,%.4f,0\n",
                 rt_round_dec(x[0], 4), rt_round_dec(x[1], 4), rt_round_dec(x[2], 4), h[4], h[5], h[6], h[7], h[8],
                 h[9], total, used, avail, (int)pid,
                 rt_round_dec(x[1], 4), rt_round_dec(x[2], 4), rt_round_dec(x[0], 4), rt_round_dec(x[3], 4),
                 rt_round_dec((double)vram / RT_MIB, 4));
        assert_string_equal(row, want);
        /* Cut short where it does not fit: what fits, ended, and the whole length. */
        char small[24];
        size_t cut = (size_t)iter % sizeof(small) + 1;
        assert_int_equal(rt_csv_row(h, RT_ARRAY_SIZE(h), 1042, 1.0, &job, small, cut), strlen(want));
        assert_int_equal(strlen(small), cut - 1);
        assert_memory_equal(small, want, cut - 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_exact),
        cmocka_unit_test(test_json_text_as_json_c_writes_it),
        cmocka_unit_test(test_json_string_as_json_c_writes_it),
        cmocka_unit_test(test_csv_decimals_as_printf),
        cmocka_unit_test(test_json_double_fast_path),
        cmocka_unit_test(test_json_job_fields_and_roundtrip),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_json_double_format),
        cmocka_unit_test(test_csv_same_from_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
