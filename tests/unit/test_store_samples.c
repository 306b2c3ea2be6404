/* The store rebuilds job samples byte for byte what the daemon wrote before
 * it: a job's line was the host sample's JSON tree with the job fields set
 * and serialised again (json-c), its CSV row made from that stored line.
 * Same data through the old way and through the store (live, stored hot,
 * sealed, after a reopen, after moving an old samples file in), on random
 * host samples of every shape (cores, disks, mounts, GPUs, interfaces,
 * strings that look like the job fields, a first sample without its
 * interval) and random job figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "jobs/summary.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "rt/varlink.h"
#include "store/figures.h"
#include "store/job_sample.h"
#include "store/migrate.h"
#include "store/samples.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define JOBS 3

static double rnd(void)
{
    return (double)rand() / RAND_MAX;
}

/* A value as collectors give them: any double, sometimes round. */
static double val(double scale)
{
    switch (rand() % 5) {
    case 0:
        return 0;
    case 1:
        return round(rnd() * scale);
    default:
        return rnd() * scale;
    }
}

static const char *const odd_strings[] = {
    "sda", "nvme0n1", "/", "/mnt/a,\"job_id\":null,\"job_name\":null,\"memory\":{",
    "\"timestamp_secs\":1,\"tracked_pid\":null}", "back\\slash", "ünïcode ✓", "12.5", "-0", "tab\there",
    "\"process_child_count\":", "",
};

static const char *odd(void)
{
    return odd_strings[rand() % RT_ARRAY_SIZE(odd_strings)];
}

/* A host sample of random shape and values (tick n). */
static void host_sample(struct rt_sample *s, unsigned n, bool first)
{
    rt_sample_reset(s);
    struct rt_arena *a = &s->arena;
    s->timestamp_ms = (1700000000ULL + n) * 1000 + (uint64_t)(rand() % 1000);
    s->timestamp_secs = s->timestamp_ms / 1000;
    s->has_interval = !first;
    s->actual_interval_ms = 1000 + (uint64_t)(rand() % 7);
    s->nominal_interval_secs = 1;
    s->cpu.n_cores = 1 + (size_t)(rand() % 130);
    s->cpu.per_core_pct = rt_arena_alloc(a, s->cpu.n_cores * sizeof(double));
    for (size_t i = 0; i < s->cpu.n_cores; i++)
        s->cpu.per_core_pct[i] = val(100);
    s->cpu.utilization_pct = val((double)s->cpu.n_cores);
    s->cpu.utime_secs = val(100);
    s->cpu.stime_secs = val(10);
    s->cpu.process_count = (uint32_t)(rand() % 100000);
    s->cpu.has_cgroup = rand() % 2;
    s->cpu.cgroup_usage_secs = val(1e6);
    s->cpu.cgroup_utilization_pct = val(64);
    s->memory = (struct rt_memory){.total_mib = 1u << 20, .free_mib = (uint64_t)val(1e6),
                                   .available_mib = (uint64_t)val(1e6), .used_mib = (uint64_t)val(1e6),
                                   .used_pct = val(100), .buffers_mib = (uint64_t)val(1e4),
                                   .cached_mib = (uint64_t)val(1e5), .swap_total_mib = 4096,
                                   .swap_used_mib = (uint64_t)val(4096), .swap_used_pct = val(100),
                                   .active_mib = (uint64_t)val(1e5), .inactive_mib = (uint64_t)val(1e5)};
    s->n_disks = (size_t)(rand() % 17);
    s->disks = rt_arena_alloc(a, (s->n_disks + 1) * sizeof(*s->disks));
    for (size_t i = 0; i < s->n_disks; i++) {
        struct rt_disk *d = &s->disks[i];
        *d = (struct rt_disk){.device = odd(), .model = rand() % 2 ? odd() : NULL, .vendor = NULL,
                              .serial = rand() % 3 ? "S3R1AL" : NULL, .device_type = rand() % 2 ? "nvme" : NULL,
                              .has_capacity = rand() % 2, .capacity_bytes = (uint64_t)val(4e12),
                              .stacked = rand() % 4 == 0, .read_bytes_per_sec = val(3e9),
                              .write_bytes_per_sec = val(2e9), .read_bytes_total = (uint64_t)val(1e15),
                              .write_bytes_total = (uint64_t)val(1e15)};
        d->n_mounts = (size_t)(rand() % 3);
        d->mounts = rt_arena_alloc(a, (d->n_mounts + 1) * sizeof(*d->mounts));
        for (size_t k = 0; k < d->n_mounts; k++)
            d->mounts[k] = (struct rt_mount){.mount_point = odd(), .filesystem = "xfs",
                                             .total_bytes = (uint64_t)val(4e12), .used_bytes = (uint64_t)val(4e12),
                                             .available_bytes = (uint64_t)val(4e12), .used_pct = val(100)};
    }
    s->n_nets = (size_t)(rand() % 9);
    s->nets = rt_arena_alloc(a, (s->n_nets + 1) * sizeof(*s->nets));
    for (size_t i = 0; i < s->n_nets; i++)
        s->nets[i] = (struct rt_netif){.interface = odd(), .mac_address = "02:42:ac:11:00:02", .driver = odd(),
                                       .operstate = "up", .has_speed = rand() % 2, .speed_mbps = 100000,
                                       .has_mtu = true, .mtu = 9000, .rx_bytes_per_sec = val(1e10),
                                       .tx_bytes_per_sec = val(1e10), .rx_bytes_total = (uint64_t)val(1e15),
                                       .tx_bytes_total = (uint64_t)val(1e15)};
    s->has_gpu_backend = rand() % 3 != 0;
    s->n_gpus = s->has_gpu_backend ? (size_t)(rand() % 9) : 0;
    s->gpus = rt_arena_alloc(a, (s->n_gpus + 1) * sizeof(*s->gpus));
    for (size_t i = 0; i < s->n_gpus; i++) {
        struct rt_gpu *g = &s->gpus[i];
        *g = (struct rt_gpu){.uuid = "GPU-0d5e3c4a-1111-2222-3333-444455556666", .name = odd(), .host_id = "0",
                             .vendor = rand() % 2 ? "nvidia" : "amd", .utilization_pct = val(100),
                             .vram_total_bytes = 85899345920, .vram_used_bytes = (uint64_t)val(8e10),
                             .vram_used_pct = val(100), .has_temperature = rand() % 2,
                             .temperature_celsius = (uint32_t)(rand() % 90), .has_power = rand() % 2,
                             .power_watts = val(700), .has_frequency = true, .frequency_mhz = 1980,
                             .has_energy = rand() % 2, .energy_joules = val(1e9)};
        g->n_detail = (size_t)(rand() % 3);
        g->detail = rt_arena_alloc(a, (g->n_detail + 1) * sizeof(*g->detail));
        for (size_t k = 0; k < g->n_detail; k++)
            g->detail[k] = (struct rt_kv){k ? "driver" : "pci_bus_id", odd()};
    }
    s->job = (struct rt_job_figures){.gates = s->has_gpu_backend ? RT_GATE_GPU : 0, .gpu_usage = val(8),
                                     .gpu_vram_bytes = (uint64_t)(val(8e4) * RT_MIB),
                                     .gpu_utilized = (uint32_t)(rand() % 9)};
}

/* A job's figures at the precision the store keeps. */
static struct rt_job_figures figures(const struct rt_sample *host)
{
    struct rt_job_figures f = {
        .interval_ms = 900 + (uint64_t)(rand() % 300),
        .child_count = (uint32_t)(rand() % 50),
        .cores_used = rt_figures_round(val(130), 4),
        .utime_secs = rt_figures_round((double)(rand() % 20000) / 100, 4),
        .stime_secs = rt_figures_round((double)(rand() % 2000) / 100, 4),
        .rss_bytes = (uint64_t)val(1e12),
        .pss_bytes = (uint64_t)val(1e12),
        .disk_read_bytes = (uint64_t)val(1e12),
        .disk_write_bytes = (uint64_t)val(1e12),
        .gates = (host->has_gpu_backend ? RT_GATE_GPU : 0) | (rand() % 2 ? RT_GATE_GPU_ENERGY : 0),
        .gpu_usage = rt_figures_round(val(8), 4),
        .gpu_utilized = (uint32_t)(rand() % 9),
        .gpu_vram_bytes = (uint64_t)val(8e10),
        .gpu_energy_joules = rt_figures_round(val(1000), 6),
    };
    return f;
}

static const char *const names[JOBS] = {NULL, "train-1", "t\"q\\uote/é"};

/* The old way: the host tree with the job's fields set, serialised. */
static char *old_line(struct json_object *host_obj, const struct rt_sample *host, uint64_t id, int32_t pid,
                      uint64_t ts, const struct rt_job_figures *f)
{
    struct rt_sample sm = *host;
    sm.job_id = id;
    sm.job_name = names[id % JOBS];
    sm.has_job = true;
    sm.tracked_pid = pid;
    sm.job = *f;
    sm.host_timestamp_ms = host->timestamp_ms;
    rt_sample_json_set_job(host_obj, &sm);
    json_object_object_add(host_obj, "timestamp_ms", rt_json_u64(ts));
    json_object_object_add(host_obj, "timestamp_secs", rt_json_u64(ts / 1000));
    json_object_object_add(host_obj, "actual_interval_ms", rt_json_u64(f->interval_ms));
    return rt_xstrdup(json_object_to_json_string_ext(host_obj, JSON_FLAGS));
}

/* The CSV row GetJobSamples made from a stored line; repeated: its host
 * part is the previous line's. */
static char *old_row(const char *line, bool repeated)
{
    char err[128];
    struct json_object *o = rt_vl_parse(line, strlen(line), err, sizeof(err));
    assert_non_null(o);
    struct rt_sample s;
    rt_sample_init(&s);
    assert_int_equal(rt_sample_from_json(o, &s, err, sizeof(err)), 0);
    s.host_repeated = repeated;
    char row[4096];
    size_t n = rt_sample_to_csv(&s, row, sizeof(row));
    assert_true(n < sizeof(row));
    rt_sample_free(&s);
    json_object_put(o);
    return rt_xstrdup(row);
}

struct expect {
    char **lines, **rows;
    uint64_t *ts;
    size_t n, cap;
};

static void expect_add(struct expect *e, char *line, bool repeated)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        e->lines = rt_xrealloc(e->lines, e->cap * sizeof(char *));
        e->rows = rt_xrealloc(e->rows, e->cap * sizeof(char *));
        e->ts = rt_xrealloc(e->ts, e->cap * sizeof(uint64_t));
    }
    e->lines[e->n] = line;
    e->rows[e->n++] = old_row(line, repeated);
}

/* line with its host_timestamp_ms set to ts, or without it (an older
 * daemon's line). */
static char *host_ts_as(const char *line, uint64_t ts, bool keep)
{
    const char *k = strstr(line, "\"host_timestamp_ms\":");
    assert_non_null(k);
    const char *v = k + strlen("\"host_timestamp_ms\":"), *end = v + strspn(v, "0123456789");
    assert_int_equal(*end, ',');
    return keep ? rt_xasprintf("%.*s%" PRIu64 "%s", (int)(v - line), line, ts, end)
                : rt_xasprintf("%.*s%s", (int)(k - line), line, end + 1);
}

static void expect_free(struct expect *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->lines[i]);
        free(e->rows[i]);
    }
    free(e->lines);
    free(e->rows);
    free(e->ts);
}

static char dir[64];
static int state_fd, jobs_fd;

static void add_figures(void *sum, const struct rt_job_figures *f)
{
    rt_job_summary_add(sum, f);
}

static void open_store(struct rt_samples *s, struct rt_figlog **fl)
{
    char err[256];
    assert_int_equal(rt_samples_open(s, state_fd, jobs_fd, 0700, 0600, 1 << 20, err, sizeof(err)), 0);
    for (uint64_t id = 1; id <= JOBS; id++) {
        char sub[8];
        snprintf(sub, sizeof(sub), "%" PRIu64, id);
        mkdirat(jobs_fd, sub, 0700);
        fl[id - 1] = rt_samples_job_log(s, id);
        assert_non_null(fl[id - 1]);
        rt_samples_job_load(s, fl[id - 1], UINT64_MAX, add_figures, &(struct rt_job_summary){0}, 1.0);
    }
}

static void close_store(struct rt_samples *s, struct rt_figlog **fl)
{
    for (int i = 0; i < JOBS; i++)
        rt_figlog_unref(fl[i]);
    rt_samples_close(s);
}

/* What the store gives back for job id equals what the old way wrote. */
static void check_read(struct rt_samples *s, struct rt_figlog *fl, uint64_t id, const struct expect *e)
{
    char *name = rt_job_name_json(names[id % JOBS]);
    struct rt_job_view jv = {.id = id, .name_json = name, .pid = (int32_t)(1000 + id)};
    for (int csv = 0; csv < 2; csv++) {
        struct rt_buf out = {0};
        uint64_t next = 0;
        /* In pages of uneven sizes, across blocks. */
        for (size_t page = 7; next < e->n; page = page * 3 % 101 + 1) {
            uint64_t from = next;
            rt_samples_read(s, fl, &jv, from, e->n, page, 64u << 20, csv, &out, &next);
            assert_true(next > from);
        }
        rt_buf_byte(&out, 0);
        const char *p = (const char *)out.p;
        for (size_t i = 0; i < e->n; i++) {
            const char *want = csv ? e->rows[i] : e->lines[i];
            size_t len = strlen(want);
            if (strncmp(p, want, len) != 0 || (!csv && p[len] != '\n'))
                fail_msg("job %" PRIu64 " sample %zu (%s) differs:\nold: %s\nnew: %.*s", id, i, csv ? "csv" : "json",
                         want, (int)strcspn(p, "\n"), p);
            p += len + !csv;
        }
        assert_int_equal(*p, 0);
        rt_buf_free(&out);
    }
    free(name);
}

static void test_rebuilt_byte_for_byte(void **state)
{
    (void)state;
    srand(2024);
    struct rt_samples s;
    struct rt_figlog *fl[JOBS];
    open_store(&s, fl);
    struct expect e[JOBS] = {{0}};
    struct rt_sample host;
    rt_sample_init(&host);
    enum { ticks = 150 };
    uint64_t variant[ticks][2 * JOBS] = {{0}}; /* timestamps the lines show per tick: host samples they need */
    for (unsigned t = 0; t < ticks; t++) {
        host_sample(&host, t, t == 0 || t == 77);
        struct json_object *host_obj = rt_sample_to_json(&host);
        char *text = rt_xstrdup(json_object_to_json_string_ext(host_obj, JSON_FLAGS));
        struct rt_host_text ht;
        assert_true(rt_host_text_parse(text, strlen(text), &ht));
        rt_samples_host_tick(&s, text, strlen(text));
        struct rt_csv_host ch = {0};
        rt_csv_host_from_sample(&host, &ch);
        for (uint64_t id = 1, rep = 0; id <= JOBS; id += !rep) {
            if (t % (unsigned)id) /* jobs at different intervals */
                continue;
            struct rt_job_figures f = figures(&host);
            /* Now and then a final sample between ticks, and one right
             * after the tick's sample, whose host part repeats. */
            uint64_t ts = rep ? e[id - 1].ts[e[id - 1].n - 1] + 1 + (uint64_t)(rand() % 300)
                              : host.timestamp_ms + (rand() % 3 == 0 ? 1 + (uint64_t)(rand() % 1500) : 0);
            bool repeated = rep;
            rep = !rep && rand() % 4 == 0;
            for (int k = 0; k < 2 * JOBS; k++)
                if (!variant[t][k] || variant[t][k] == ts) {
                    variant[t][k] = ts;
                    break;
                }
            char *line = old_line(host_obj, &host, id, (int32_t)(1000 + id), ts, &f);
            /* Live: the sampler's line and row. */
            char *name = rt_job_name_json(names[id % JOBS]);
            struct rt_job_sample js = {.job_id = id, .name_json = name, .pid = (int32_t)(1000 + id),
                                       .timestamp_ms = ts, .host_repeated = repeated, .f = &f};
            struct rt_buf live = {0};
            rt_job_sample_json(&ht, &js, &live);
            rt_buf_byte(&live, 0);
            assert_string_equal((const char *)live.p, line);
            live.len = 0;
            assert_true(rt_job_sample_csv(ch.v, ch.n, &js, &live));
            rt_buf_byte(&live, 0);
            expect_add(&e[id - 1], line, repeated);
            e[id - 1].ts[e[id - 1].n - 1] = ts;
            assert_string_equal((const char *)live.p, e[id - 1].rows[e[id - 1].n - 1]);
            rt_buf_free(&live);
            free(name);
            assert_true(rt_samples_append(&s, fl[id - 1], &f, ts));
        }
        rt_csv_host_free(&ch);
        if (t == 60) /* no job running for a moment: the host block is sealed */
            rt_samples_job_ended(&s, fl[0], true);
        json_object_put(host_obj);
        free(text);
    }
    rt_samples_job_ended(&s, fl[1], false); /* an ended job: sealed; the others hot */
    for (uint64_t id = 1; id <= JOBS; id++)
        check_read(&s, fl[id - 1], id, &e[id - 1]);
    close_store(&s, fl);
    /* After a restart, from what is on disk. */
    open_store(&s, fl);
    for (uint64_t id = 1; id <= JOBS; id++)
        check_read(&s, fl[id - 1], id, &e[id - 1]);
    /* Every CSV row from the map (sealed blocks decode their CSV columns
     * only: the map's check once failed on those, and each row was parsed). */
    assert_int_equal(s.host_rows_parsed, 0);
    close_store(&s, fl);

    /* An older daemon's samples file of the same lines (without
     * host_timestamp_ms) moves in and reads back the same, sharing host
     * samples with the lines of other jobs; each line's host part is then
     * of its own time, none known to repeat. */
    struct expect mig[JOBS] = {{0}};
    for (int i = 0; i < JOBS; i++)
        for (size_t k = 0; k < e[i].n; k++)
            expect_add(&mig[i], host_ts_as(e[i].lines[k], e[i].ts[k], true), false);
    open_store(&s, fl);
    uint64_t before = rt_seglog_count(&s.host);
    struct rt_migration *m = rt_migration_new();
    for (uint64_t id = 1; id <= JOBS; id++) {
        rt_figlog_remove(fl[id - 1]);
        rt_figlog_unref(fl[id - 1]);
        char path[32];
        snprintf(path, sizeof(path), "%" PRIu64 "/samples.jsonl", id);
        int fd = openat(jobs_fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        for (size_t i = 0; i < e[id - 1].n; i++) {
            char *old = host_ts_as(e[id - 1].lines[i], 0, false);
            assert_true(write(fd, old, strlen(old)) > 0);
            assert_int_equal(write(fd, "\n", 1), 1);
            free(old);
        }
        close(fd);
        char *name = rt_job_name_json(names[id % JOBS]);
        struct rt_job_summary sum = {0};
        struct rt_migrate_job mj = {.id = id, .name_json = name, .pid = (int32_t)(1000 + id), .interval_secs = 1,
                                    .ended = id == 2, .replay_from = 0, .fn = add_figures, .ctx = &sum};
        fl[id - 1] = rt_migrate_job(&s, m, &mj);
        assert_non_null(fl[id - 1]);
        assert_int_equal(sum.samples, e[id - 1].n);
        assert_int_equal(rt_seglog_count(&fl[id - 1]->log), e[id - 1].n);
        rt_job_summary_free(&sum);
        free(name);
        check_read(&s, fl[id - 1], id, &mig[id - 1]);
    }
    rt_migration_free(m);
    /* One host sample per host sample the lines show: lines of different
     * jobs at the same tick share it. */
    uint64_t distinct = 0;
    for (unsigned t = 0; t < ticks; t++)
        for (int k = 0; k < 2 * JOBS; k++)
            distinct += variant[t][k] != 0;
    assert_int_equal(rt_seglog_count(&s.host) - before, distinct);
    close_store(&s, fl);
    rt_sample_free(&host);
    for (int i = 0; i < JOBS; i++) {
        expect_free(&e[i]);
        expect_free(&mig[i]);
    }
}

/* An older daemon's lines: without the figures that came later (null in
 * this sample) nor timestamp_ms. They move in as figures and a host sample,
 * not as text kept as it was (which every read would parse again), and read
 * back with the same values, the later figures null; a line that says
 * something the store cannot rebuild (a timestamp_ms that is not its
 * second's) is kept as it was. */
static void test_older_lines_move_in_as_figures(void **state)
{
    (void)state;
    srand(7);
    struct rt_samples s;
    struct rt_figlog *fl[JOBS];
    open_store(&s, fl);
    rt_figlog_remove(fl[0]);
    rt_figlog_unref(fl[0]);
    enum { N = 40 };
    char *lines[N];
    struct rt_sample host;
    rt_sample_init(&host);
    int fd = openat(jobs_fd, "1/samples.jsonl", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    size_t dropped = 0;
    for (unsigned t = 0; t < N; t++) {
        host_sample(&host, t, false);
        struct rt_job_figures f = figures(&host);
        struct json_object *o = rt_sample_to_json(&host);
        free(old_line(o, &host, 1, 1001, host.timestamp_ms, &f));
        struct json_object *cpu = rt_json_get_object(o, "cpu");
        for (size_t i = 0; i < rt_fig_nsamples; i++) {
            const char *k = rt_fig_samples[i].json;
            struct json_object *v;
            if (k && json_object_object_get_ex(cpu, k, &v) && !v && strcmp(k, "process_gpu_usage") != 0) {
                json_object_object_del(cpu, k);
                dropped++;
            }
        }
        if (t == N - 1)
            json_object_object_add(o, "timestamp_ms", rt_json_u64(1000));
        else
            json_object_object_del(o, "timestamp_ms");
        json_object_object_del(o, "host_timestamp_ms");
        lines[t] = rt_xstrdup(json_object_to_json_string_ext(o, JSON_FLAGS));
        assert_true(write(fd, lines[t], strlen(lines[t])) > 0);
        assert_int_equal(write(fd, "\n", 1), 1);
        json_object_put(o);
    }
    close(fd);
    assert_true(dropped > N); /* the lines lack figures a sample has now */
    struct rt_migration *m = rt_migration_new();
    struct rt_job_summary sum = {0};
    char *name = rt_job_name_json(names[1]);
    struct rt_migrate_job mj = {.id = 1, .name_json = name, .pid = 1001, .interval_secs = 1, .ended = true,
                                .fn = add_figures, .ctx = &sum};
    fl[0] = rt_migrate_job(&s, m, &mj);
    assert_non_null(fl[0]);
    rt_migration_free(m);
    rt_job_summary_free(&sum);
    struct rt_seglog_cursor cur;
    rt_seglog_cursor_init(&cur, &fl[0]->log, false);
    struct rt_job_view jv = {.id = 1, .name_json = name, .pid = 1001};
    for (unsigned t = 0; t < N; t++) {
        struct rt_rec r;
        assert_true(rt_seglog_cursor_get(&cur, t, &r));
        struct rt_job_figures f;
        uint64_t hseq, ts;
        assert_int_equal(rt_figures_decode(&r, &f, &hseq, &ts), t < N - 1);
        struct rt_buf out = {0};
        uint64_t next;
        assert_int_equal(rt_samples_read(&s, fl[0], &jv, t, t + 1, 1, 1 << 20, false, &out, &next), 1);
        char err[128];
        struct json_object *want = rt_vl_parse(lines[t], strlen(lines[t]), err, sizeof(err));
        struct json_object *got = rt_vl_parse((const char *)out.p, out.len - 1, err, sizeof(err));
        struct json_object *cpu = rt_json_get_object(got, "cpu"), *v;
        for (size_t i = 0; i < rt_fig_nsamples; i++) {
            const char *k = rt_fig_samples[i].json;
            if (k && t < N - 1 && !json_object_object_get_ex(rt_json_get_object(want, "cpu"), k, NULL)) {
                assert_true(json_object_object_get_ex(cpu, k, &v));
                assert_null(v);
                json_object_object_del(cpu, k);
            }
        }
        if (t < N - 1) { /* its host part is of its own second */
            uint64_t host_ms = 0, secs = 0;
            assert_true(rt_json_get_u64(got, "host_timestamp_ms", &host_ms));
            assert_true(rt_json_get_u64(want, "timestamp_secs", &secs));
            assert_int_equal(host_ms, secs * 1000);
            json_object_object_del(got, "host_timestamp_ms");
        }
        assert_true(json_object_equal(want, got));
        if (t == N - 1) /* kept as it was */
            assert_memory_equal(out.p, lines[t], strlen(lines[t]));
        json_object_put(want);
        json_object_put(got);
        rt_buf_free(&out);
        free(lines[t]);
    }
    rt_seglog_cursor_free(&cur);
    free(name);
    close_store(&s, fl);
    rt_sample_free(&host);
}

/* The CSV rows of a page of many samples are made in two halves at once:
 * the same bytes as pages of a few made one after the other, whatever ends a
 * page (its samples or its bytes), from hot blocks and from sealed ones. */
static void test_csv_halves_read_as_one(void **state)
{
    (void)state;
    srand(99);
    struct rt_samples s;
    struct rt_figlog *fl[JOBS];
    open_store(&s, fl);
    struct rt_sample host;
    rt_sample_init(&host);
    enum { N = 2600 };
    for (unsigned t = 0; t < N; t++) {
        if (t % 500 == 0) /* a shape for a while: each template's CSV map is made once a reader */
            host_sample(&host, t, t == 0);
        host.timestamp_ms = (1700000000ULL + t) * 1000;
        host.timestamp_secs = host.timestamp_ms / 1000;
        struct json_object *o = rt_sample_to_json(&host);
        const char *text = json_object_to_json_string_ext(o, JSON_FLAGS);
        rt_samples_host_tick(&s, text, strlen(text));
        struct rt_job_figures f = figures(&host);
        assert_true(rt_samples_append(&s, fl[0], &f, host.timestamp_ms));
        json_object_put(o);
    }
    struct rt_job_view jv = {.id = 1, .name_json = "\"halves\"", .pid = 1001};
    for (int sealed = 0; sealed < 2; sealed++) {
        if (sealed)
            rt_samples_job_ended(&s, fl[0], true);
        struct rt_buf few = {0}, one = {0}, capped = {0};
        uint64_t next = 0;
        while (next < N) /* pages below the split, one after the other */
            rt_samples_read(&s, fl[0], &jv, next, N, 500, 64u << 20, true, &few, &next);
        assert_int_equal(rt_samples_read(&s, fl[0], &jv, 0, N, 10000, 64u << 20, true, &one, &next), N);
        assert_int_equal(next, N);
        assert_int_equal(one.len, few.len);
        assert_memory_equal(one.p, few.p, few.len);
        /* Pages ended by their bytes: the first half's end is the page's. */
        size_t pages = 0;
        for (next = 0; next < N; pages++) {
            uint64_t from = next;
            rt_samples_read(&s, fl[0], &jv, from, N, 10000, 100000, true, &capped, &next);
            assert_true(next > from);
        }
        assert_true(pages > few.len / 100000);
        assert_int_equal(capped.len, few.len);
        assert_memory_equal(capped.p, few.p, few.len);
        /* A page of max samples ends at max. */
        one.len = 0;
        assert_int_equal(rt_samples_read(&s, fl[0], &jv, 100, N, 2100, 64u << 20, true, &one, &next), 2100);
        assert_int_equal(next, 2200);
        rt_buf_free(&few);
        rt_buf_free(&one);
        rt_buf_free(&capped);
    }
    assert_int_equal(s.host_rows_parsed, 0);
    close_store(&s, fl);
    rt_sample_free(&host);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/rt-store-XXXXXX");
    assert_non_null(mkdtemp(dir));
    state_fd = open(dir, O_RDONLY | O_DIRECTORY);
    mkdirat(state_fd, "jobs", 0700);
    jobs_fd = openat(state_fd, "jobs", O_RDONLY | O_DIRECTORY);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(jobs_fd);
    close(state_fd);
    char *cmd = rt_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rebuilt_byte_for_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_lines_move_in_as_figures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv_halves_read_as_one, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
