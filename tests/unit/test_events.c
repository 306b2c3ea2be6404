/* Journal records: exact fields through the test sink, and the same MESSAGE
 * on stderr when not running under journald. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "system/events.h"
#include "system/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The last record, one "FIELD=value" string per line. */
static char last[16384];
static int records;

static void capture(const struct iovec *iov, int n, void *userdata)
{
    (void)userdata;
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(last + len, sizeof(last) - len, "%.*s\n", (int)iov[i].iov_len,
                                (const char *)iov[i].iov_base);
    records++;
}

static const struct rt_event_job train = {
    .id = "42", .name = "train", .owner_uid = 1000, .owner = "alice", .root_pid = 4242,
    .command = "python3 train.py --epochs 3"};

static void test_job_finished(void **state)
{
    (void)state;
    struct rt_job_summary t = {
        .samples = 76,
        .gates = RT_GATE_GPU | RT_GATE_GPU_ENERGY | RT_GATE_TREE | RT_GATE_DISK | RT_GATE_MEM,
        .gate_secs = {10},
        .cpu_secs = 12.3,
        .memory_peak_bytes = 1073741824ULL + 104857600ULL,
        .peak_rss_bytes = 1288490189ULL,
        .peak_pss_bytes = 1073741824ULL,
        .disk_read_bytes = 10485760,
        .disk_write_bytes = 2097152,
        .gpu_usage_secs = 8.72,
        .gpu_peak_vram_bytes = 3221225472ULL,
        .gpu_energy_joules = 1234.5,
        .gpus = json_object_new_array(),
    };
    json_object_array_add(t.gpus, json_object_new_string("GPU-a"));
    json_object_array_add(t.gpus, json_object_new_string("GPU-b"));
    struct rt_event_job_end end = {
        .state = "finished", .exit_status = 0, .duration_usec = 75500000, .processes_max = 5, .totals = &t};
    rt_event_job_finished(&train, &end);
    json_object_put(t.gpus);
    assert_string_equal(last,
                        "JOB_ID=42\n"
                        "JOB_NAME=train\n"
                        "JOB_OWNER_UID=1000\n"
                        "JOB_OWNER=alice\n"
                        "JOB_ROOT_PID=4242\n"
                        "JOB_STATE=finished\n"
                        "JOB_RESULT=exit status 0\n"
                        "EXIT_STATUS=0\n"
                        "JOB_DURATION_USEC=75500000\n"
                        "JOB_DURATION=1min 15s\n"
                        "JOB_SAMPLES=76\n"
                        "JOB_PROCESSES_MAX=5\n"
                        "CPU_USAGE_NSEC=12300000000\n"
                        "CPU_USAGE=12.3s\n"
                        "MEMORY_PEAK_BYTES=1178599424\n"
                        "MEMORY_PEAK=1.1 GiB\n"
                        "MEMORY_PSS_PEAK_BYTES=1073741824\n"
                        "MEMORY_PSS_PEAK=1.0 GiB\n"
                        "MEMORY_RSS_PEAK_BYTES=1288490189\n"
                        "MEMORY_RSS_PEAK=1.2 GiB\n"
                        "IO_METRIC_READ_BYTES=10485760\n"
                        "IO_READ=10.0 MiB\n"
                        "IO_METRIC_WRITE_BYTES=2097152\n"
                        "IO_WRITE=2.0 MiB\n"
                        "GPU_USAGE=2 GPUs, 1234.5 J, GPU memory peak 3.0 GiB, GPU utilization 87.2%\n"
                        "GPU_COUNT=2\n"
                        "GPU_UTILIZATION_AVG_PERCENT=87.2\n"
                        "GPU_MEM_PEAK_BYTES=3221225472\n"
                        "GPU_ENERGY_J=1234.500\n"
                        "MESSAGE=Job 42 (train) of alice (uid 1000) finished after 1min 15s, exit status 0: CPU 12.3s, "
                        "peak memory 1.1 GiB, peak PSS 1.0 GiB, peak RSS 1.2 GiB, read 10.0 MiB, written 2.0 MiB, 2 GPUs, 1234.5 J, "
                        "GPU memory peak 3.0 GiB, GPU utilization 87.2%\n"
                        "MESSAGE_ID=" RT_MSGID_JOB_FINISHED "\n"
                        "PRIORITY=6\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
}

/* Unknown counters and an unknown exit status are left out, not zero; a
 * job without GPUs has no GPU fields. */
static void test_job_finished_unknowns(void **state)
{
    (void)state;
    struct rt_event_job j = {.id = "7", .owner_uid = 0};
    /* Totals lost to a record from before them (as the GPU means of an
     * older daemon's jobs). */
    struct rt_job_summary t = {.samples = 2, .cpu_secs = 1.5};
    const char *lost[] = {"peak_rss_bytes", "peak_pss_bytes", "disk_read_bytes", "disk_write_bytes"};
    for (size_t i = 0; i < 4; i++)
        t.unknown |= 1ull << rt_fig_total_find(lost[i]);
    struct rt_event_job_end end = {.state = "lost", .exit_status = -1, .duration_usec = 2000000, .processes_max = 1,
                                   .totals = &t};
    rt_event_job_finished(&j, &end);
    assert_string_equal(last,
                        "JOB_ID=7\n"
                        "JOB_OWNER_UID=0\n"
                        "JOB_STATE=lost\n"
                        "JOB_RESULT=exit status unknown\n"
                        "JOB_DURATION_USEC=2000000\n"
                        "JOB_DURATION=2.0s\n"
                        "JOB_SAMPLES=2\n"
                        "JOB_PROCESSES_MAX=1\n"
                        "CPU_USAGE_NSEC=1500000000\n"
                        "CPU_USAGE=1.5s\n"
                        "MEMORY_PEAK=unknown\n"
                        "MEMORY_PSS_PEAK=unknown\n"
                        "MEMORY_RSS_PEAK=unknown\n"
                        "IO_READ=unknown\n"
                        "IO_WRITE=unknown\n"
                        "GPU_USAGE=none\n"
                        "MESSAGE=Job 7 of uid 0 was lost after 2.0s, exit status unknown: CPU 1.5s\n"
                        "MESSAGE_ID=" RT_MSGID_JOB_FINISHED "\n"
                        "PRIORITY=6\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
}

/* What the job asked for, its efficiency and its notes: fields of their
 * own, and a word in the message; nothing of notification targets. */
static void test_job_finished_request(void **state)
{
    (void)state;
    struct rt_event_job j = {.id = "9", .owner_uid = 1000};
    struct rt_job_summary t = {.samples = 100, .cpu_secs = 190};
    struct json_object *req = json_tokener_parse("{\"cpus\":8.0,\"memory_bytes\":68719476736,\"gpus\":2}");
    struct json_object *eff = json_tokener_parse("{\"cpu_pct\":23.8,\"memory_pct\":15.0,\"gpu_pct\":null}");
    struct json_object *notes = json_tokener_parse(
        "[{\"id\":\"cpu_efficiency\",\"text\":\"CPU efficiency 24%: ask for 2 (cpus=2).\"},"
        "{\"id\":\"gpu_unused\",\"text\":\"The GPUs were not used.\"}]");
    struct rt_event_job_end end = {.state = "finished", .exit_status = 0, .duration_usec = 100000000,
                                   .processes_max = 1, .totals = &t, .request = req, .efficiency = eff,
                                   .notes = notes};
    rt_event_job_finished(&j, &end);
    const char *fields[] = {"JOB_REQUEST_CPUS=8\n", "JOB_REQUEST_MEMORY_BYTES=68719476736\n", "JOB_REQUEST_GPUS=2\n",
                            "JOB_CPU_EFFICIENCY_PERCENT=23.8\n", "JOB_MEMORY_EFFICIENCY_PERCENT=15.0\n",
                            "JOB_NOTE=CPU efficiency 24%: ask for 2 (cpus=2).\n", "JOB_NOTE=The GPUs were not used.\n",
                            "JOB_NOTES=cpu_efficiency gpu_unused\n",
                            "MESSAGE=Job 9 of uid 1000 finished after 1min 40s, exit status 0: CPU 3min 10s; efficiency cpu 24%, "
                            "memory 15%; 2 notes: cpu_efficiency gpu_unused\n"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (!strstr(last, fields[i]))
            fail_msg("no %s in\n%s", fields[i], last);
    assert_null(strstr(last, "GPU_EFFICIENCY")); /* unknown: left out */
    json_object_put(req);
    json_object_put(eff);
    json_object_put(notes);
}

static void test_job_started_cleans_message(void **state)
{
    (void)state;
    struct rt_event_job j = train;
    j.name = "evil\nMESSAGE_ID=0000";
    j.command = "sh -c : \x1b]52;c;ZXZpbA==\x07\xc2\x9b";
    rt_event_job_started(&j);
    /* The name field keeps the name as given (journald stores it as binary;
     * a name has no control character once StartJob took it); the one-line
     * message does not carry the newline, nor the command a user's terminal
     * escapes (OSC 52 sets the reader's clipboard). */
    assert_string_equal(last,
                        "JOB_ID=42\n"
                        "JOB_NAME=evil\nMESSAGE_ID=0000\n"
                        "JOB_OWNER_UID=1000\n"
                        "JOB_OWNER=alice\n"
                        "JOB_ROOT_PID=4242\n"
                        "JOB_COMMAND=sh -c : \\x1b]52;c;ZXZpbA==\\a\\xc2\\x9b\n"
                        "MESSAGE=Job 42 (evil\\nMESSAGE_ID=0000) started for alice (uid 1000), root pid 4242\n"
                        "MESSAGE_ID=" RT_MSGID_JOB_STARTED "\n"
                        "PRIORITY=6\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
}

static void test_upload_events(void **state)
{
    (void)state;
    struct rt_upload_failure f = {.stage = "batch",
                                  .http_status = 503,
                                  .error = "Service Unavailable",
                                  .attempt = 3,
                                  .retry_in_usec = 40000000,
                                  .queued_batches = 2};
    rt_event_upload_failed(&train, &f);
    assert_string_equal(last,
                        "JOB_ID=42\n"
                        "JOB_NAME=train\n"
                        "JOB_OWNER_UID=1000\n"
                        "JOB_OWNER=alice\n"
                        "JOB_ROOT_PID=4242\n"
                        "UPLOAD_STAGE=batch\n"
                        "UPLOAD_HTTP_STATUS=503\n"
                        "UPLOAD_HTTP=HTTP 503\n"
                        "UPLOAD_ERROR=Service Unavailable\n"
                        "UPLOAD_ATTEMPT=3\n"
                        "UPLOAD_RETRY_USEC=40000000\n"
                        "UPLOAD_QUEUE=2\n"
                        "MESSAGE=Upload of job 42 (train) failed at batch with HTTP 503: Service Unavailable "
                        "(attempt 3, next in 40.0s, 2 batches queued)\n"
                        "MESSAGE_ID=" RT_MSGID_UPLOAD_FAILED "\n"
                        "PRIORITY=4\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");

    struct rt_upload_failure g = {.stage = "refresh", .error = "Could not resolve host", .attempt = 1,
                                  .retry_in_usec = 1000000, .queued_batches = 1};
    rt_event_upload_failed(NULL, &g);
    assert_non_null(strstr(last, "MESSAGE=Upload failed at refresh: Could not resolve host (attempt 1, next in "
                                 "1.0s, 1 batch queued)\n"));
    assert_null(strstr(last, "UPLOAD_HTTP_STATUS"));
    assert_null(strstr(last, "JOB_ID"));

    /* What the upload worker knows: job id, run id, stage and error. */
    struct rt_event_job id_only = {.id = "9", .owner_uid = RT_EVENT_UID_UNKNOWN};
    struct rt_upload_failure h = {.stage = "start run", .run_id = "", .error = "Couldn't connect to server"};
    rt_event_upload_failed(&id_only, &h);
    assert_string_equal(last,
                        "JOB_ID=9\n"
                        "UPLOAD_STAGE=start run\n"
                        "UPLOAD_HTTP=no HTTP answer\n"
                        "UPLOAD_ERROR=Couldn't connect to server\n"
                        "UPLOAD_QUEUE=0\n"
                        "MESSAGE=Upload of job 9 failed at start run: Couldn't connect to server; retrying "
                        "with backoff\n"
                        "MESSAGE_ID=" RT_MSGID_UPLOAD_FAILED "\n"
                        "PRIORITY=4\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
    rt_event_upload_recovered(&id_only, "run-9", 1, 0);
    assert_string_equal(last,
                        "JOB_ID=9\n"
                        "UPLOAD_RUN_ID=run-9\n"
                        "UPLOAD_FAILED_ATTEMPTS=1\n"
                        "UPLOAD_OUTAGE=an unknown time\n"
                        "MESSAGE=Upload of job 9 recovered after 1 failed attempt\n"
                        "MESSAGE_ID=" RT_MSGID_UPLOAD_RECOVERED "\n"
                        "PRIORITY=5\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");

    rt_event_upload_recovered(&train, "run-7", 3, 150000000);
    assert_string_equal(last,
                        "JOB_ID=42\n"
                        "JOB_NAME=train\n"
                        "JOB_OWNER_UID=1000\n"
                        "JOB_OWNER=alice\n"
                        "JOB_ROOT_PID=4242\n"
                        "UPLOAD_RUN_ID=run-7\n"
                        "UPLOAD_FAILED_ATTEMPTS=3\n"
                        "UPLOAD_OUTAGE_USEC=150000000\n"
                        "UPLOAD_OUTAGE=2min 30s\n"
                        "MESSAGE=Upload of job 42 (train) recovered after 3 failed attempts over 2min 30s\n"
                        "MESSAGE_ID=" RT_MSGID_UPLOAD_RECOVERED "\n"
                        "PRIORITY=5\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
}

static void test_gpu_and_daemon_events(void **state)
{
    (void)state;
    struct rt_event_gpu g = {.index = 1, .vendor = "nvidia", .name = "NVIDIA H100 80GB HBM3",
                             .uuid = "GPU-5fd3c1e2", .memory_total_bytes = 85520809984ULL};
    rt_event_gpu_lost(&g, "GPU is lost (NVML error 15)");
    assert_string_equal(last,
                        "GPU_INDEX=1\n"
                        "GPU_VENDOR=nvidia\n"
                        "GPU_NAME=NVIDIA H100 80GB HBM3\n"
                        "GPU_UUID=GPU-5fd3c1e2\n"
                        "GPU_MEMORY_TOTAL_BYTES=85520809984\n"
                        "GPU_LOST_REASON=GPU is lost (NVML error 15)\n"
                        "MESSAGE=GPU 1 lost: nvidia NVIDIA H100 80GB HBM3 (GPU-5fd3c1e2): GPU is lost (NVML error "
                        "15)\n"
                        "MESSAGE_ID=" RT_MSGID_GPU_LOST "\n"
                        "PRIORITY=4\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
    rt_event_gpu_appeared(&g);
    assert_non_null(strstr(last, "MESSAGE=GPU 1 appeared: nvidia NVIDIA H100 80GB HBM3 (GPU-5fd3c1e2)\n"
                                 "MESSAGE_ID=" RT_MSGID_GPU_APPEARED "\n"));
    rt_event_gpu_lost(&(struct rt_event_gpu){.index = 2, .vendor = "nvidia", .name = "", .uuid = ""}, "no answer");
    assert_non_null(strstr(last, "GPU_UUID=unknown\n"));
    assert_non_null(strstr(last, "MESSAGE=GPU 2 lost: nvidia (name not read yet): no answer\n"));
    uid_t uids[] = {1000, 1001};
    struct rt_event_job jobs[] = {{.id = "12", .name = "train"}, {.id = "13"}};
    rt_event_gpu_idle(&(struct rt_event_gpu_idle){.gpu = &g, .since = 1700000000.5, .secs = 725,
                                                  .vram_held_bytes = 3ULL << 30, .util_max = 5, .uids = uids,
                                                  .n_uids = 2, .jobs = jobs, .n_jobs = 2});
    assert_string_equal(last,
                        "GPU_INDEX=1\n"
                        "GPU_VENDOR=nvidia\n"
                        "GPU_NAME=NVIDIA H100 80GB HBM3\n"
                        "GPU_UUID=GPU-5fd3c1e2\n"
                        "GPU_MEMORY_TOTAL_BYTES=85520809984\n"
                        "GPU_VRAM_HELD_BYTES=3221225472\n"
                        "GPU_IDLE_UTIL_MAX_PERCENT=5\n"
                        "GPU_IDLE_KIND=held\n"
                        "GPU_IDLE=idle but held\n"
                        "GPU_IDLE_SINCE_USEC=1700000000500000\n"
                        "GPU_IDLE_FOR=12min 5s\n"
                        "GPU_HOLDER_UID=1000\n"
                        "GPU_HOLDER_UID=1001\n"
                        "JOB_ID=12\n"
                        "JOB_NAME=train\n"
                        "JOB_ID=13\n"
                        "MESSAGE=GPU 1 idle but held: nvidia NVIDIA H100 80GB HBM3 (GPU-5fd3c1e2): 3.0 GiB held, use "
                        "at most 5% for 12min 5s; held by uid 1000, uid 1001; jobs: 12 (train), 13\n"
                        "MESSAGE_ID=" RT_MSGID_GPU_IDLE "\n"
                        "PRIORITY=5\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
    struct rt_event_job j = {.id = "12", .name = "train", .owner_uid = 1000};
    rt_event_gpu_xid(&(struct rt_event_gpu_xid){.gpu = &g, .xid = 79, .job = &j});
    assert_non_null(strstr(last, "GPU_XID=79\nJOB_ID=12\nJOB_NAME=train\nJOB_OWNER_UID=1000\n"
                                 "GPU_XID_JOB=job 12 (train)\n"
                                 "MESSAGE=GPU 1 XID error: nvidia NVIDIA H100 80GB HBM3 (GPU-5fd3c1e2): XID 79 "
                                 "during job 12 (train)\nMESSAGE_ID=" RT_MSGID_GPU_XID "\nPRIORITY=4\n"));

    struct rt_event_daemon d = {.version = "0.1.0", .interval_secs = 0.5, .socket_path = "/run/rt.sock",
                                .socket_activated = true, .state_dir = "/var/lib/rt", .jobs_restored = 1,
                                .gpus = 2};
    rt_event_daemon_started(&d);
    assert_string_equal(last,
                        "RT_VERSION=0.1.0\n"
                        "SAMPLING_INTERVAL_USEC=500000\n"
                        "SAMPLING_INTERVAL=0.5s\n"
                        "SOCKET_PATH=/run/rt.sock\n"
                        "SOCKET_ACTIVATED=1\n"
                        "STATE_DIR=/var/lib/rt\n"
                        "JOBS_RESTORED=1\n"
                        "GPU_COUNT=2\n"
                        "MESSAGE=resource-trackerd 0.1.0 started: sampling every 0.5s, socket /run/rt.sock "
                        "(socket-activated), 2 GPUs, 1 running job restored\n"
                        "MESSAGE_ID=" RT_MSGID_DAEMON_STARTED "\n"
                        "PRIORITY=6\n"
                        "SYSLOG_IDENTIFIER=resource-trackerd\n");
    rt_event_daemon_stopped("SIGTERM", 7200000000ULL);
    assert_non_null(strstr(last, "STOP_REASON=SIGTERM\nUPTIME_USEC=7200000000\n"
                                 "MESSAGE=resource-trackerd stopped (SIGTERM) after 2h 0min\n"
                                 "MESSAGE_ID=" RT_MSGID_DAEMON_STOPPED "\n"));

    rt_event_config_reloaded("/etc/rt.conf", RT_CFG_INTERVAL | RT_CFG_SOCKET_PATH | RT_CFG_LOG_LEVEL,
                             RT_CFG_INTERVAL | RT_CFG_SOCKET_PATH);
    assert_non_null(strstr(last, "CONFIG_FILE=/etc/rt.conf\nCONFIG_CHANGED=interval socket log_level\n"
                                 "CONFIG_RESTART_NEEDED=interval socket\n"
                                 "MESSAGE=Configuration /etc/rt.conf reloaded: interval socket log_level "
                                 "(interval socket: at the next restart)\n"));
    rt_event_config_rejected("/etc/rt.conf", "/etc/rt.conf:3: unknown key 'x'");
    assert_non_null(strstr(last, "MESSAGE=Configuration refused, keeping the running one: /etc/rt.conf:3: "
                                 "unknown key 'x'\nMESSAGE_ID=" RT_MSGID_CONFIG_REJECTED "\nPRIORITY=3\n"));
}

/* A very long command is cut; the record stays well formed. */
static void test_long_values(void **state)
{
    (void)state;
    char *cmd = malloc(100000);
    assert_non_null(cmd);
    memset(cmd, 'x', 99999);
    cmd[99999] = '\0';
    struct rt_event_job j = train;
    j.command = cmd;
    j.name = cmd;
    rt_event_job_started(&j);
    free(cmd);
    assert_non_null(strstr(last, "\nMESSAGE_ID=" RT_MSGID_JOB_STARTED "\n"));
    assert_non_null(strstr(last, "xxx) started for alice (uid 1000)"));
    /* Each field is cut at 1024 bytes, "FIELD=" included. */
    const char *c = strstr(last, "JOB_COMMAND=");
    assert_non_null(c);
    assert_int_equal(strchr(c, '\n') - c, 1024);
}

static void test_log_level_filters(void **state)
{
    (void)state;
    int before = records;
    rt_log_set_level(LOG_WARNING);
    rt_event_job_started(&train); /* info: filtered */
    struct rt_upload_failure f = {.stage = "start", .attempt = 1};
    rt_event_upload_failed(&train, &f); /* warning: kept */
    rt_log_set_level(LOG_DEBUG);
    assert_int_equal(records, before + 1);
}

/* Without journald the MESSAGE goes to stderr, one line per event. */
static void test_stderr(void **state)
{
    (void)state;
    char path[] = "/tmp/rt-events-stderr.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    rt_events_set_sink(NULL, NULL);
    rt_log_init(RT_LOG_STDERR, LOG_DEBUG);
    rt_event_job_started(&train);
    struct rt_event_gpu g = {.index = 0, .vendor = "amd", .name = "Instinct MI300X"};
    rt_event_gpu_lost(&g, NULL);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rt_events_set_sink(capture, NULL);

    char buf[1024];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "resource-trackerd: info: Job 42 (train) started for alice (uid 1000), root pid 4242\n"
                             "resource-trackerd: warning: GPU 0 lost: amd Instinct MI300X\n");
}

static int setup(void **state)
{
    (void)state;
    rt_log_init(RT_LOG_STDERR, LOG_DEBUG);
    rt_events_set_sink(capture, NULL);
    return 0;
}

/* Has the captured record a field of that name? */
static bool has_field(const char *rec, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = rec; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == '=')
            return true;
    return false;
}

/* Every @FIELD@ of the journal catalog is a field its record carries even
 * when little is known (a job without name, GPU or readable counters, an
 * upload failure without HTTP answer): journalctl would otherwise show the
 * bare field name. */
static void test_catalog_placeholders_are_always_filled(void **state)
{
    (void)state;
    struct rt_event_job j = {.id = "3", .owner_uid = 1000, .root_pid = 77};
    struct rt_job_summary totals = {.unknown = ~0ull};
    struct rt_event_job_end t = {.state = "ended", .exit_status = -1, .totals = &totals};
    struct rt_upload_failure f = {.stage = "start run"};
    struct rt_event_gpu g = {.index = 0, .vendor = "amd", .name = "card0"};
    struct rt_event_daemon d = {.version = "1", .interval_secs = 1, .socket_path = "/s", .state_dir = "/d"};
    struct {
        const char *msgid;
        char rec[sizeof(last)];
    } recs[12];
    size_t n = 0;
#define RECORD(id, call) (call, recs[n].msgid = (id), memcpy(recs[n++].rec, last, sizeof(last)))
    RECORD(RT_MSGID_DAEMON_STARTED, rt_event_daemon_started(&d));
    RECORD(RT_MSGID_DAEMON_STOPPED, rt_event_daemon_stopped("idle", 1));
    RECORD(RT_MSGID_CONFIG_RELOADED, rt_event_config_reloaded("/c", 0, 0));
    RECORD(RT_MSGID_CONFIG_REJECTED, rt_event_config_rejected("/c", "bad"));
    RECORD(RT_MSGID_JOB_STARTED, rt_event_job_started(&j));
    RECORD(RT_MSGID_JOB_FINISHED, rt_event_job_finished(&j, &t));
    RECORD(RT_MSGID_UPLOAD_FAILED, rt_event_upload_failed(NULL, &f));
    RECORD(RT_MSGID_UPLOAD_RECOVERED, rt_event_upload_recovered(NULL, NULL, 1, 0));
    RECORD(RT_MSGID_GPU_APPEARED, rt_event_gpu_appeared(&g));
    RECORD(RT_MSGID_GPU_LOST, rt_event_gpu_lost(&g, NULL));
    RECORD(RT_MSGID_GPU_IDLE, rt_event_gpu_idle(&(struct rt_event_gpu_idle){.gpu = &g, .unused = true}));
    RECORD(RT_MSGID_GPU_XID, rt_event_gpu_xid(&(struct rt_event_gpu_xid){.gpu = &g, .xid = 79}));
#undef RECORD
    char path[4096];
    snprintf(path, sizeof(path), "%s/packaging/resource-tracker.catalog", getenv("RT_SOURCE_DIR"));
    FILE *cat = fopen(path, "r");
    assert_non_null(cat);
    char line[1024];
    const char *rec = NULL;
    int checked = 0;
    while (fgets(line, sizeof(line), cat)) {
        if (line[0] == '#')
            continue;
        if (strncmp(line, "-- ", 3) == 0) {
            rec = NULL;
            for (size_t i = 0; i < n; i++)
                if (strncmp(line + 3, recs[i].msgid, 32) == 0)
                    rec = recs[i].rec;
            assert_non_null(rec); /* every catalog entry is a record we send */
            continue;
        }
        for (char *p = strchr(line, '@'), *q; p && (q = strchr(p + 1, '@')); p = strchr(q + 1, '@')) {
            *q = '\0';
            if (!has_field(rec, p + 1))
                fail_msg("%s: no %s field in\n%s", path, p + 1, rec);
            checked++;
        }
    }
    fclose(cat);
    assert_true(checked >= 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_finished),
        cmocka_unit_test(test_job_finished_unknowns),
        cmocka_unit_test(test_job_finished_request),
        cmocka_unit_test(test_job_started_cleans_message),
        cmocka_unit_test(test_upload_events),
        cmocka_unit_test(test_gpu_and_daemon_events),
        cmocka_unit_test(test_long_values),
        cmocka_unit_test(test_log_level_filters),
        cmocka_unit_test(test_stderr),
        cmocka_unit_test(test_catalog_placeholders_are_always_filled),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
