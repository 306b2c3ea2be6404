/* Benchmark helper (tests/bench/bench_store.py): the sample store on a large
 * simulated host. A fixture /proc and /sys of 128 cores, 16 NVMe disks and 8
 * interfaces is generated and moved on every sample (busy and idle cores,
 * some busy disks and links, memory and space drifting); 8 GPUs come from
 * the fake NVML. The real collectors read it on a fake clock, one sample per
 * simulated second, and the real store keeps them for 1 job and, in another
 * state directory, for 10 jobs at once. Printed (JSON): bytes on disk per
 * job-day, the store's cost per tick, reading a job's samples as CSV and as
 * JSON, and what the samples files of before the store would have taken.
 *   rt_bench_store --dir DIR --nvml LIB [--samples N] [--noisy] */
#include "collect/gpu/gpu.h"
#include "collect/host_sampler.h"
#include "rt/json.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "store/samples.h"
#include "system/log.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CORES 128
#define DISKS 16
#define NETS 8
#define GPUS 8
#define BUSY_CORES 96
#define BUSY_DISKS 3
#define BUSY_NETS 2
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static char root[512];
static uint64_t now_ns = 1000000000ULL, real_ns = 1800000000ULL * RT_NSEC_PER_SEC;

static uint64_t clock_mono(void *ctx)
{
    (void)ctx;
    return now_ns;
}

static uint64_t clock_real(void *ctx)
{
    (void)ctx;
    return real_ns;
}

/* ---- the simulated host ---- */

static uint64_t cpu[CORES][8];            /* user nice system idle iowait irq softirq steal */
static uint64_t sectors[DISKS][2], ios[DISKS][2];
static uint64_t net[NETS][2];
static uint64_t mem_free = 200000000, cached = 300000000, space_free[DISKS];

static unsigned rnd(unsigned n)
{
    return (unsigned)rand() % n;
}

static void put(const char *rel, const char *text)
{
    char path[1024], tmp[1040];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        exit(1);
    }
}

static void static_files(void)
{
    char buf[4096], rel[256];
    for (int d = 0; d < DISKS; d++) {
        snprintf(rel, sizeof(rel), "sys/block/nvme%dn1/dev", d);
        snprintf(buf, sizeof(buf), "259:%d\n", d);
        put(rel, buf);
        snprintf(rel, sizeof(rel), "sys/block/nvme%dn1/size", d);
        put(rel, "7501476528\n");
        snprintf(rel, sizeof(rel), "sys/block/nvme%dn1/queue/rotational", d);
        put(rel, "0\n");
        snprintf(rel, sizeof(rel), "sys/block/nvme%dn1/queue/hw_sector_size", d);
        put(rel, "512\n");
        snprintf(rel, sizeof(rel), "sys/block/nvme%dn1/device/model", d);
        put(rel, "SAMSUNG MZQL23T8HCLS-00A07\n");
        snprintf(rel, sizeof(rel), "sys/block/nvme%dn1/device/serial", d);
        snprintf(buf, sizeof(buf), "S64HNE0T%06d\n", 100000 + d);
        put(rel, buf);
        space_free[d] = 3000000000ULL - (uint64_t)d * 100000000ULL;
    }
    size_t n = (size_t)snprintf(buf, sizeof(buf), "21 1 0:30 / / rw,relatime shared:1 - overlay overlay rw\n");
    for (int d = 0; d < DISKS; d++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                              "%d 21 259:%d / /data/%d rw,relatime shared:%d - ext4 /dev/nvme%dn1 rw\n", 30 + d, d,
                              d, d + 2, d);
    put("proc/self/mountinfo", buf);
    for (int i = 0; i < NETS; i++) {
        static const char *const attrs[][2] = {{"operstate", "up\n"}, {"mtu", "9000\n"}, {"speed", "100000\n"}};
        for (size_t k = 0; k < RT_ARRAY_SIZE(attrs); k++) {
            snprintf(rel, sizeof(rel), "sys/class/net/eth%d/%s", i, attrs[k][0]);
            put(rel, attrs[k][1]);
        }
        snprintf(rel, sizeof(rel), "sys/class/net/eth%d/address", i);
        snprintf(buf, sizeof(buf), "0c:42:a1:00:00:%02x\n", i);
        put(rel, buf);
    }
    for (int p = 1; p <= 3; p++) { /* a few processes for the process count */
        snprintf(rel, sizeof(rel), "proc/%d/comm", p);
        put(rel, "x\n");
    }
}

static bool noisy; /* --noisy: every core, disk and link at random */

/* One simulated second of a training node: most cores running the job
 * flat out, data loader cores partly busy, the rest idle; two disks
 * streaming the data set, a checkpoint written every 10 minutes; two
 * links busy, the others quiet. (--noisy: everything at random.) */
static void advance(void)
{
    static char buf[65536];
    static unsigned second;
    second++;
    uint64_t total[8] = {0};
    for (int c = 0; c < CORES; c++) {
        unsigned hz = rnd(10) ? 100 : 99 + 2 * rnd(2), busy;
        if (noisy)
            busy = c < BUSY_CORES ? 95 + rnd(6) : rnd(3);
        else if (c < 96)
            busy = rnd(50) ? hz : hz - 1;
        else if (c < 112)
            busy = 30 + rnd(41);
        else
            busy = rnd(20) ? 0 : 1;
        if (busy > hz)
            busy = hz;
        unsigned sys = noisy ? busy / 20 + rnd(2) : busy / 20;
        cpu[c][0] += busy - sys;
        cpu[c][2] += sys;
        cpu[c][3] += hz - busy;
        for (int k = 0; k < 8; k++)
            total[k] += cpu[c][k];
    }
    size_t n = (size_t)snprintf(buf, sizeof(buf), "cpu  %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                                " %" PRIu64 " %" PRIu64 " %" PRIu64 " 0 0\n", total[0], total[1], total[2], total[3],
                                total[4], total[5], total[6], total[7]);
    for (int c = 0; c < CORES; c++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "cpu%d %" PRIu64 " 0 %" PRIu64 " %" PRIu64 " 0 0 0 0 0 0\n", c,
                              cpu[c][0], cpu[c][2], cpu[c][3]);
    snprintf(buf + n, sizeof(buf) - n, "intr 1\nctxt 1\nbtime 1700000000\nprocesses 4000\nprocs_running 97\n");
    put("proc/stat", buf);

    if (noisy) {
        mem_free += rnd(2000001) - 1000000;
        cached += rnd(200001) - 100000;
    } else {
        mem_free += 4 * (rnd(513) - 256);
        cached += 4 * (rnd(65) - 32);
    }
    snprintf(buf, sizeof(buf),
             "MemTotal:       1056587776 kB\nMemFree:        %" PRIu64 " kB\nMemAvailable:   %" PRIu64
             " kB\nBuffers:          512000 kB\nCached:         %" PRIu64 " kB\nSwapCached:            0 kB\n"
             "Active:         %" PRIu64 " kB\nInactive:       %" PRIu64 " kB\nSwapTotal:             0 kB\n"
             "SwapFree:              0 kB\n",
             mem_free, mem_free + cached, cached, (uint64_t)500000000 + rnd(100000), (uint64_t)100000000 + rnd(100000));
    put("proc/meminfo", buf);

    n = 0;
    for (int d = 0; d < DISKS; d++) {
        if (d < BUSY_DISKS) { /* a data loader reading, checkpoints written now and then */
            uint64_t rd = d < 2 || noisy ? 2000000 + rnd(1000000) : 0;
            uint64_t wr = noisy ? (rnd(10) == 0 ? rnd(4000000) : 0) : (d == 2 && second % 600 < 10 ? 2000000 : 0);
            sectors[d][0] += rd;
            sectors[d][1] += wr;
            ios[d][0] += rd / 256;
            ios[d][1] += wr / 256;
            space_free[d] -= wr * 512 / 4096;
        }
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                              " 259 %d nvme%dn1 %" PRIu64 " 0 %" PRIu64 " 0 %" PRIu64 " 0 %" PRIu64
                              " 0 0 0 0 0 0 0 0 0 0\n", d, d, ios[d][0], sectors[d][0], ios[d][1], sectors[d][1]);
    }
    put("proc/diskstats", buf);

    n = (size_t)snprintf(buf, sizeof(buf), "Inter-|   Receive |  Transmit\n face |bytes    packets|bytes\n");
    for (int i = 0; i < NETS; i++) {
        if (i < BUSY_NETS) {
            net[i][0] += 100000000 + rnd(50000000);
            net[i][1] += 20000000 + rnd(10000000);
        } else if (noisy || rnd(10) == 0) {
            net[i][0] += rnd(2000);
            net[i][1] += rnd(1000);
        }
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                              "  eth%d: %" PRIu64 " 1 0 0 0 0 0 0 %" PRIu64 " 1 0 0 0 0 0 0\n", i, net[i][0],
                              net[i][1]);
    }
    put("proc/net/dev", buf);
    now_ns += RT_NSEC_PER_SEC;
    real_ns += RT_NSEC_PER_SEC;
}

static int fake_statvfs(const char *path, struct statvfs *out, void *ctx)
{
    (void)ctx;
    memset(out, 0, sizeof(*out));
    out->f_frsize = out->f_bsize = 4096;
    int d = -1;
    if (strcmp(path, "/") == 0) {
        out->f_blocks = 100000000;
        out->f_bfree = out->f_bavail = 60000000;
        return 0;
    }
    if (sscanf(path, "/data/%d", &d) != 1 || d < 0 || d >= DISKS)
        return -ENOENT;
    out->f_blocks = 937684566;
    out->f_bfree = out->f_bavail = space_free[d] / 4;
    return 0;
}

static void nvml_config(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        exit(1);
    fprintf(f, "driver=550.54.15\n");
    for (int g = 0; g < GPUS; g++) {
        fprintf(f, "device\n name=NVIDIA H100 80GB HBM3\n uuid=GPU-0d5e3c4a-1111-2222-3333-%012d\n"
                   " pci=00000000:%02x:00.0\n util=", g, 0x17 + g);
        for (int k = 0; k < 16; k++)
            fprintf(f, "%s%u", k ? "," : "", 88 + rnd(13));
        fprintf(f, "\n mem_total=85899345920\n mem_used=%llu\n temp=%u\n power_mw=%u\n clock=1980\n"
                   " energy_mj=%llu\n energy_step_mj=%u\n",
                (unsigned long long)(60000000000ULL + (uint64_t)g * 1000000000ULL), 60 + rnd(10),
                600000 + rnd(100000), (unsigned long long)(1000000000ULL * (uint64_t)(g + 1)),
                30000 + rnd(5000));
    }
    fclose(f);
}

/* ---- the store ---- */

struct store {
    char dir[600];
    int state_fd, jobs_fd;
    struct rt_samples s;
    struct rt_figlog *fl[10];
    int njobs;
    double append_us, append_max_us, old_us;
    int old_fd; /* what the samples files of before would have held: one line per job sample */
    uint64_t old_bytes;
};

static double mono_secs(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void store_open(struct store *st, const char *base, const char *name, int njobs)
{
    char err[256];
    snprintf(st->dir, sizeof(st->dir), "%s/%s", base, name);
    mkdir(st->dir, 0700);
    st->state_fd = open(st->dir, O_RDONLY | O_DIRECTORY);
    mkdirat(st->state_fd, "jobs", 0700);
    st->jobs_fd = openat(st->state_fd, "jobs", O_RDONLY | O_DIRECTORY);
    if (rt_samples_open(&st->s, st->state_fd, st->jobs_fd, 0700, 0600, 16u << 20, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    st->njobs = njobs;
    for (int j = 0; j < njobs; j++) {
        char sub[16];
        snprintf(sub, sizeof(sub), "%d", j + 1);
        mkdirat(st->jobs_fd, sub, 0700);
        st->fl[j] = rt_samples_job_log(&st->s, (uint64_t)j + 1);
    }
    char old[700];
    snprintf(old, sizeof(old), "%s/old-samples.jsonl", st->dir);
    st->old_fd = open(old, O_WRONLY | O_CREAT | O_TRUNC, 0600);
}

/* A training job's figures: busy cores, memory that moves now and then,
 * the data set read, a checkpoint written every 10 minutes, the GPUs busy
 * with their memory allocated. (--noisy: memory and VRAM at random.) */
static struct rt_job_figures job_figures(int j, unsigned i)
{
    unsigned cs = 1000 + rnd(300), ss = 50 + rnd(50);
    struct rt_job_figures f = {
        .interval_ms = 1000 + (rnd(20) == 0),
        .child_count = 8 + (uint32_t)j,
        .cores_used = (double)(cs + ss) / 100,
        .utime_secs = (double)cs / 100,
        .stime_secs = (double)ss / 100,
        .rss_bytes = (40ULL << 30) + (uint64_t)(i / 60) * (1 << 20) + (noisy ? rnd(1 << 20) : 0),
        .pss_bytes = (38ULL << 30) + (uint64_t)(i / 60) * (1 << 20) + (noisy ? rnd(1 << 20) : 0),
        .disk_read_bytes = (uint64_t)rnd(1 << 30) & ~4095ULL,
        .disk_write_bytes = i % 600 < 10 ? 1ULL << 30 : 0,
        .gates = RT_GATE_GPU | RT_GATE_GPU_ENERGY,
        .gpu_usage = (double)(7000 + rnd(1000)) / 1000,
        .gpu_utilized = 8,
        .gpu_vram_bytes = (480ULL << 30) + (noisy ? rnd(1 << 24) : 0),
        .gpu_energy_joules = (double)(4500000 + rnd(1000000)) / 1000,
    };
    return f;
}

static void store_tick(struct store *st, const char *text, size_t len, struct json_object *host_obj,
                       struct rt_sample *sm, unsigned i)
{
    double t0 = mono_secs();
    rt_samples_host_tick(&st->s, text, len);
    struct rt_job_figures f[10];
    for (int j = 0; j < st->njobs; j++) {
        f[j] = job_figures(j, i);
        if (!rt_samples_append(&st->s, st->fl[j], &f[j], sm->timestamp_secs))
            exit(1);
    }
    rt_samples_seal_one(&st->s, st->fl, (size_t)st->njobs);
    double us = (mono_secs() - t0) * 1e6;
    st->append_us += us;
    if (us > st->append_max_us)
        st->append_max_us = us;
    /* Before the store: every job sample was the whole line, in its file
     * (timed; only the first job's file is written, to spare the disk). */
    t0 = mono_secs();
    for (int j = 0; j < st->njobs; j++) {
        sm->job_id = (uint64_t)j + 1;
        sm->has_job = true;
        sm->tracked_pid = 4242;
        sm->job = (struct rt_job_figures){.gates = RT_GATE_GPU, .cores_used = f[j].cores_used,
                                          .utime_secs = f[j].utime_secs, .stime_secs = f[j].stime_secs,
                                          .pss_bytes = f[j].pss_bytes, .rss_bytes = f[j].rss_bytes};
        rt_sample_json_set_job(host_obj, sm);
        size_t n;
        const char *line = json_object_to_json_string_length(host_obj, JSON_FLAGS, &n);
        st->old_bytes += n + 1;
        if (j == 0 && (write(st->old_fd, line, n) != (ssize_t)n || write(st->old_fd, "\n", 1) != 1))
            exit(1);
    }
    st->old_us += (mono_secs() - t0) * 1e6;
}

static uint64_t du(const char *dir)
{
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "du -sb --exclude=old-samples.jsonl '%s'", dir);
    FILE *p = popen(cmd, "r");
    uint64_t n = 0;
    if (!p || fscanf(p, "%" SCNu64, &n) != 1)
        n = 0;
    if (p)
        pclose(p);
    return n;
}

static double read_all(struct store *st, bool csv, uint64_t n, size_t *bytes)
{
    struct rt_job_view jv = {.id = 1, .name_json = "\"train\"", .pid = 4242};
    struct rt_buf out = {0};
    double t0 = mono_secs();
    uint64_t next = 0;
    while (next < n) {
        uint64_t from = next;
        rt_samples_read(&st->s, st->fl[0], &jv, from, n, csv ? 100000 : 1000, 1u << 30, csv, &out, &next);
        if (next == from)
            break;
        if (!csv) { /* pages, as GetJobSamples sends them */
            *bytes += out.len;
            out.len = 0;
        }
    }
    double secs = mono_secs() - t0;
    if (csv)
        *bytes = out.len;
    rt_buf_free(&out);
    return secs;
}

int main(int argc, char **argv)
{
    const char *base = NULL, *nvml = NULL;
    unsigned samples = 86400;
    static const struct option opts[] = {{"dir", required_argument, NULL, 'd'},
                                         {"nvml", required_argument, NULL, 'n'},
                                         {"samples", required_argument, NULL, 's'},
                                         {"noisy", no_argument, NULL, 'z'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            base = optarg;
        else if (c == 'n')
            nvml = optarg;
        else if (c == 's')
            samples = (unsigned)strtoul(optarg, NULL, 10);
        else if (c == 'z')
            noisy = true;
        else
            return 2;
    }
    if (!base || !nvml || samples < 2) {
        fprintf(stderr, "usage: rt_bench_store --dir DIR --nvml LIB [--samples N]\n");
        return 2;
    }
    rt_log_init(RT_LOG_STDERR, LOG_WARNING);
    srand(1);
    snprintf(root, sizeof(root), "%s/fixture", base);
    mkdir(root, 0755);
    static_files();
    advance();
    char cfg[600];
    snprintf(cfg, sizeof(cfg), "%s/nvml.conf", base);
    nvml_config(cfg);
    setenv("FAKE_NVML_CONFIG", cfg, 1);
    struct rt_roots roots;
    char proc[600], sys[600];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(sys, sizeof(sys), "%s/sys", root);
    if (rt_roots_open(&roots, proc, sys) < 0)
        return 1;
    struct rt_collect_hooks hooks = {.mono_ns = clock_mono, .real_ns = clock_real, .statvfs = fake_statvfs};
    struct rt_host_sampler *h = rt_host_sampler_new_hooks(&roots, 1.0, &hooks);
    struct rt_gpu_options go = {.nvml_library = nvml, .poll_interval_secs = 0.002, .disable_amd = true};
    struct rt_gpu_collector *gpu = rt_gpu_collector_new(&roots, &go);
    struct store one = {0}, ten = {0};
    store_open(&one, base, "one-job", 1);
    store_open(&ten, base, "ten-jobs", 10);
    struct rt_sample sm;
    rt_sample_init(&sm);
    size_t host_text = 0, host_n = 0;
    for (unsigned i = 0; i < samples; i++) {
        advance();
        rt_sample_reset(&sm);
        rt_host_sampler_collect(h, &sm);
        rt_gpu_collect(gpu, &sm);
        struct json_object *o = rt_sample_to_json(&sm);
        size_t len;
        char *text = rt_xstrdup(json_object_to_json_string_length(o, JSON_FLAGS, &len));
        host_text += len;
        host_n++;
        store_tick(&one, text, len, o, &sm, i);
        store_tick(&ten, text, len, o, &sm, i);
        free(text);
        json_object_put(o);
        if (i % 8640 == 0)
            fprintf(stderr, "%u/%u samples\r", i, samples);
    }
    fprintf(stderr, "\n");
    /* Jobs that end seal their samples; the timeline follows. */
    for (int j = 0; j < ten.njobs; j++)
        rt_samples_job_ended(&ten.s, ten.fl[j], j == ten.njobs - 1);
    rt_samples_job_ended(&one.s, one.fl[0], true);
    double day = 86400.0 / samples;
    size_t csv_bytes = 0, json_bytes = 0;
    double csv_secs = read_all(&one, true, samples, &csv_bytes);
    double json_secs = read_all(&one, false, samples, &json_bytes);
    struct json_object *r = json_object_new_object();
    json_object_object_add(r, "samples", json_object_new_int64(samples));
    json_object_object_add(r, "host", json_object_new_string(noisy ? "128 cores, 16 disks, 8 interfaces, 8 GPUs; all at random"
                                                                   : "128 cores, 16 disks, 8 interfaces, 8 GPUs; a training node"));
    json_object_object_add(r, "host_sample_json_bytes", json_object_new_int64((int64_t)(host_text / host_n)));
    json_object_object_add(r, "one_job_bytes_per_day", json_object_new_int64((int64_t)((double)du(one.dir) * day)));
    json_object_object_add(r, "ten_jobs_bytes_per_day", json_object_new_int64((int64_t)((double)du(ten.dir) * day)));
    json_object_object_add(r, "old_one_job_bytes_per_day", json_object_new_int64((int64_t)((double)one.old_bytes * day)));
    json_object_object_add(r, "old_ten_jobs_bytes_per_day", json_object_new_int64((int64_t)((double)ten.old_bytes * day)));
    json_object_object_add(r, "store_us_per_tick_one_job", rt_json_double(one.append_us / samples, 1));
    json_object_object_add(r, "store_us_per_tick_ten_jobs", rt_json_double(ten.append_us / samples, 1));
    json_object_object_add(r, "store_max_us_per_tick", rt_json_double(ten.append_max_us, 0));
    json_object_object_add(r, "old_us_per_tick_one_job", rt_json_double(one.old_us / samples, 1));
    json_object_object_add(r, "old_us_per_tick_ten_jobs", rt_json_double(ten.old_us / samples, 1));
    json_object_object_add(r, "read_csv_secs", rt_json_double(csv_secs, 3));
    json_object_object_add(r, "read_csv_bytes", json_object_new_int64((int64_t)csv_bytes));
    json_object_object_add(r, "read_json_secs", rt_json_double(json_secs, 3));
    json_object_object_add(r, "read_json_bytes", json_object_new_int64((int64_t)json_bytes));
    puts(rt_json_plain(r));
    json_object_put(r);
    /* Records, so that a daemon can serve the jobs (bench_store.py reads a
     * day's CSV through GetJobSamples). */
    struct store *all[] = {&one, &ten};
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < all[k]->njobs; j++) {
            char path[32], rec[512];
            snprintf(path, sizeof(path), "%d/job.json", j + 1);
            int n = snprintf(rec, sizeof(rec),
                             "{\"id\":%d,\"name\":\"train\",\"owner_uid\":0,\"pid\":4242,\"starttime\":1,"
                             "\"state\":\"finished\",\"started_at\":1800000000.0,\"ended_at\":%u.0,"
                             "\"interval_secs\":1.0,\"totals\":{\"samples\":%u}}",
                             j + 1, 1800000000u + samples, samples);
            int fd = openat(all[k]->jobs_fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || write(fd, rec, (size_t)n) != n)
                return 1;
            close(fd);
            snprintf(path, sizeof(path), "%d/metadata.json", j + 1);
            fd = openat(all[k]->jobs_fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || write(fd, "{}", 2) != 2)
                return 1;
            close(fd);
        }
    }
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < all[k]->njobs; j++)
            rt_figlog_unref(all[k]->fl[j]);
        rt_samples_close(&all[k]->s);
        close(all[k]->old_fd);
        close(all[k]->jobs_fd);
        close(all[k]->state_fd);
    }
    rt_sample_free(&sm);
    rt_gpu_collector_free(gpu);
    rt_host_sampler_free(h);
    rt_roots_close(&roots);
    return 0;
}
