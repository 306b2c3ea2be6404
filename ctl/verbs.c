/* start, stop, jobs, status, samples, info. */
#include "ctl.h"

#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define M(name) RT_VL_INTERFACE "." name

/* Arguments of the verbs that take no options of their own but --json:
 * "[--json] [--] [ARG...]" with min..max positional arguments. An unknown
 * option is an error, never a job name ("--" ends the options, for a name
 * that starts with '-'). extra: a flag of the verb (NULL for none).
 * Returns 0, -1 after printing help, or RT_EXIT_USAGE after an error. */
static int verb_args(struct ctl *ctl, int argc, char **argv, const char *usage, const char *extra,
                     bool *extra_set, const char **pos, int min, int max)
{
    int n = 0;
    bool options = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && a[0] == '-' && a[1]) {
            if (strcmp(a, "--") == 0) {
                options = false;
            } else if (strcmp(a, "--json") == 0) {
                ctl->json = true;
            } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                fputs(usage, stdout);
                return -1;
            } else if (extra && strcmp(a, extra) == 0) {
                *extra_set = true;
            } else {
                CTL_ERR("unknown option for %s: %s", argv[0], a);
                fputs(usage, stderr);
                return RT_EXIT_USAGE;
            }
        } else if (n < max) {
            pos[n++] = a;
        } else {
            CTL_ERR("unexpected argument for %s: %s", argv[0], a);
            fputs(usage, stderr);
            return RT_EXIT_USAGE;
        }
    }
    if (n < min) {
        CTL_ERR("%s needs a JOB (an id or a name)", argv[0]);
        fputs(usage, stderr);
        return RT_EXIT_USAGE;
    }
    for (int k = n; k < max; k++)
        pos[k] = NULL;
    return 0;
}

static double dbl(struct json_object *o, const char *k)
{
    double v = 0;
    rt_json_get_double(o, k, &v);
    return v;
}

static int64_t i64(struct json_object *o, const char *k)
{
    int64_t v = 0;
    rt_json_get_i64(o, k, &v);
    return v;
}

/* Connect and call; on success *p are the reply's parameters. */
static int simple_call(struct ctl *ctl, const char *method, struct json_object *params,
                       struct rt_vl_client *c, struct json_object **reply, struct json_object **p)
{
    int rc = ctl_connect(ctl, c, false);
    if (rc) {
        json_object_put(params);
        return rc;
    }
    return ctl_call(c, method, params, reply, p);
}

/* ---- start / stop ---- */

int ctl_start(struct ctl *ctl, int argc, char **argv)
{
    struct ctl_meta meta;
    ctl_meta_init(&meta);
    long long pid = 0;
    int rc = RT_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        int m = ctl_meta_option(&meta, argc, argv, &i);
        if (m < 0)
            goto out;
        if (m > 0)
            continue;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("Usage: resource-trackerctl start [--json] --pid PID [--name NAME] [--interval SECS]\n"
                   "                                 [metadata options as for run]\n"
                   "Track the process tree of an existing process you own as a job.\n");
            rc = 0;
            goto out;
        } else if (strcmp(argv[i], "--json") == 0) {
            ctl->json = true;
        } else if ((strcmp(argv[i], "--pid") == 0 || strcmp(argv[i], "-p") == 0) && i + 1 < argc) {
            char *end;
            pid = strtoll(argv[++i], &end, 10);
            if (*end || pid <= 0) {
                CTL_ERR("invalid --pid: %s", argv[i]);
                goto out;
            }
        } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            meta.job_name = argv[++i];
        } else {
            CTL_ERR("%s for start: %s", argv[i][0] == '-' ? "unknown option" : "unexpected argument", argv[i]);
            goto out;
        }
    }
    if (!pid) {
        CTL_ERR("start needs --pid PID");
        goto out;
    }
    ctl_meta_from_env(&meta);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "pid", json_object_new_int64(pid));
    if (meta.job_name)
        json_object_object_add(p, "name", json_object_new_string(meta.job_name));
    if (meta.interval > 0)
        json_object_object_add(p, "interval_secs", json_object_new_double(meta.interval));
    json_object_object_add(p, "metadata", json_object_get(meta.metadata));
    ctl_upload_params(p);
    /* The process, pinned now: the daemon then tracks this one even if it
     * ends and its PID is reused before the call arrives. Without pidfds
     * (kernel < 5.3, seccomp) the daemon goes by the PID. */
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pidfd >= 0)
        json_object_object_add(p, "pidfd", json_object_new_int(0));
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    rc = ctl_connect(ctl, &c, false);
    if (rc)
        json_object_put(p);
    else
        rc = ctl_call_fd(&c, M("StartJob"), p, pidfd, &reply, &rp);
    if (pidfd >= 0)
        close(pidfd);
    if (!rc) {
        struct json_object *job = rt_json_get_object(rp, "job");
        if (ctl->json)
            ctl_print_json(stdout, job);
        else
            printf("%lld\n", (long long)i64(job, "id"));
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
out:
    ctl_meta_free(&meta);
    return rc;
}

static void print_summary_line(struct json_object *job)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    char dur[32], mem[32];
    ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
    ctl_fmt_bytes(mem, sizeof(mem), dbl(s, "peak_rss_bytes"));
    printf("job %lld %s after %s: %.2f CPU seconds, %.2f cores on average, peak memory %s\n",
           (long long)i64(job, "id"), rt_json_get_string(job, "state"), dur, dbl(s, "cpu_secs"),
           dbl(s, "avg_cores"), mem);
}

int ctl_stop(struct ctl *ctl, int argc, char **argv)
{
    const char *job;
    int rc = verb_args(ctl, argc, argv,
                       "Usage: resource-trackerctl stop [--json] JOB\n"
                       "Stop tracking JOB (an id or a name); its processes keep running.\n",
                       NULL, NULL, &job, 1, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct json_object *p = json_object_new_object();
    ctl_job_ref(p, job);
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    rc = simple_call(ctl, M("StopJob"), p, &c, &reply, &rp);
    if (!rc) {
        if (ctl->json)
            ctl_print_json(stdout, rt_json_get_object(rp, "job"));
        else
            print_summary_line(rt_json_get_object(rp, "job"));
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}

/* ---- jobs ---- */

int ctl_jobs(struct ctl *ctl, int argc, char **argv)
{
    bool running = false;
    int rc = verb_args(ctl, argc, argv,
                       "Usage: resource-trackerctl jobs [--json] [--running]\n"
                       "List the jobs you may see, newest first.\n",
                       "--running", &running, NULL, 0, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct json_object *p = json_object_new_object();
    if (running)
        json_object_object_add(p, "running_only", json_object_new_boolean(1));
    struct rt_vl_client c = {.fd = -1};
    struct json_object *jobs = NULL;
    rc = ctl_connect(ctl, &c, false);
    if (rc)
        json_object_put(p);
    else
        rc = ctl_list_jobs(&c, p, &jobs);
    if (!rc) {
        if (ctl->json) {
            ctl_print_json(stdout, jobs);
        } else {
            printf("%-6s %-20s %-9s %-8s %-10s %-19s %9s %8s %8s %10s\n", "ID", "NAME", "STATE", "PID",
                   "USER", "STARTED", "DURATION", "AVG CPU", "PEAK CPU", "PEAK MEM");
            for (size_t i = 0; i < json_object_array_length(jobs); i++) {
                struct json_object *j = json_object_array_get_idx(jobs, i);
                struct json_object *s = rt_json_get_object(j, "summary");
                char user[64], started[32], dur[32], mem[32];
                const char *name = rt_json_get_string(j, "name");
                ctl_fmt_time(started, sizeof(started), dbl(j, "started_at"));
                ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
                ctl_fmt_bytes(mem, sizeof(mem), dbl(s, "peak_rss_bytes"));
                printf("%-6lld %-20.20s %-9s %-8lld %-10.10s %-19s %9s %8.2f %8.2f %10s\n",
                       (long long)i64(j, "id"), name ? name : "-", rt_json_get_string(j, "state"),
                       (long long)i64(j, "pid"), ctl_fmt_user(i64(j, "owner_uid"), user, sizeof(user)), started,
                       dur, dbl(s, "avg_cores"), dbl(s, "peak_cores"), mem);
            }
        }
    }
    json_object_put(jobs);
    rt_vl_client_close(&c);
    return rc;
}

/* ---- status ---- */

static void print_host(struct json_object *s)
{
    struct json_object *cpu = rt_json_get_object(s, "cpu");
    struct json_object *mem = rt_json_get_object(s, "memory");
    struct json_object *cores = rt_json_get_array(cpu, "per_core_pct");
    size_t ncores = cores ? json_object_array_length(cores) : 0;
    char ts[32], b1[32], b2[32], b3[32];
    ctl_fmt_time(ts, sizeof(ts), dbl(s, "timestamp_secs"));
    printf("Host sample at %s\n", ts);
    printf("CPU      %.2f of %zu cores busy, user %.2fs, system %.2fs, %lld processes\n",
           dbl(cpu, "utilization_pct"), ncores, dbl(cpu, "utime_secs"), dbl(cpu, "stime_secs"),
           (long long)i64(cpu, "process_count"));
    printf("Cores   ");
    for (size_t i = 0; i < ncores; i++)
        printf(" %5.1f%%", json_object_get_double(json_object_array_get_idx(cores, i)));
    printf("\n");
    ctl_fmt_bytes(b1, sizeof(b1), dbl(mem, "used_mib") * 1048576.0);
    ctl_fmt_bytes(b2, sizeof(b2), dbl(mem, "total_mib") * 1048576.0);
    ctl_fmt_bytes(b3, sizeof(b3), dbl(mem, "available_mib") * 1048576.0);
    printf("Memory   %s used of %s (%.1f%%), %s available", b1, b2, dbl(mem, "used_pct"), b3);
    if (dbl(mem, "swap_total_mib") > 0) {
        ctl_fmt_bytes(b1, sizeof(b1), dbl(mem, "swap_used_mib") * 1048576.0);
        printf(", swap %s used", b1);
    }
    printf("\n");
    struct json_object *disks = rt_json_get_array(s, "disk");
    for (size_t i = 0; disks && i < json_object_array_length(disks); i++) {
        struct json_object *d = json_object_array_get_idx(disks, i);
        ctl_fmt_bytes(b1, sizeof(b1), dbl(d, "read_bytes_per_sec"));
        ctl_fmt_bytes(b2, sizeof(b2), dbl(d, "write_bytes_per_sec"));
        printf("Disk     %-10s read %s/s, write %s/s", rt_json_get_string(d, "device"), b1, b2);
        struct json_object *mounts = rt_json_get_array(d, "mounts");
        for (size_t k = 0; mounts && k < json_object_array_length(mounts); k++) {
            struct json_object *m = json_object_array_get_idx(mounts, k);
            ctl_fmt_bytes(b3, sizeof(b3), dbl(m, "total_bytes"));
            printf("%s %s %d%% of %s", k ? "," : ";", rt_json_get_string(m, "mount_point"),
                   ctl_df_pct((uint64_t)i64(m, "used_bytes"), (uint64_t)i64(m, "available_bytes")), b3);
        }
        printf("\n");
    }
    struct json_object *nets = rt_json_get_array(s, "network");
    for (size_t i = 0; nets && i < json_object_array_length(nets); i++) {
        struct json_object *n = json_object_array_get_idx(nets, i);
        ctl_fmt_bytes(b1, sizeof(b1), dbl(n, "rx_bytes_per_sec"));
        ctl_fmt_bytes(b2, sizeof(b2), dbl(n, "tx_bytes_per_sec"));
        const char *state = rt_json_get_string(n, "operstate");
        printf("Network  %-10s receive %s/s, send %s/s (%s)\n", rt_json_get_string(n, "interface"), b1, b2,
               state ? state : "unknown");
    }
    struct json_object *gpus = rt_json_get_array(s, "gpu");
    for (size_t i = 0; gpus && i < json_object_array_length(gpus); i++) {
        struct json_object *g = json_object_array_get_idx(gpus, i);
        ctl_fmt_bytes(b1, sizeof(b1), dbl(g, "vram_used_bytes"));
        ctl_fmt_bytes(b2, sizeof(b2), dbl(g, "vram_total_bytes"));
        printf("GPU      %-10s %s: %.0f%% busy, VRAM %s of %s", rt_json_get_string(g, "host_id"),
               rt_json_get_string(g, "name"), dbl(g, "utilization_pct"), b1, b2);
        double v;
        if (rt_json_get_double(g, "temperature_celsius", &v))
            printf(", %.0f °C", v);
        if (rt_json_get_double(g, "power_watts", &v))
            printf(", %.0f W", v);
        printf("\n");
    }
    if (!gpus || json_object_array_length(gpus) == 0)
        printf("GPU      none\n");
}

static void print_job(struct json_object *j, struct json_object *last)
{
    struct json_object *s = rt_json_get_object(j, "summary");
    struct json_object *md = rt_json_get_object(j, "metadata");
    const char *name = rt_json_get_string(j, "name");
    char user[64], started[32], dur[32], b1[32], b2[32];
    printf("Job %lld%s%s%s: %s", (long long)i64(j, "id"), name ? " (" : "", name ? name : "", name ? ")" : "",
           rt_json_get_string(j, "state"));
    int64_t code;
    if (rt_json_get_i64(j, "exit_code", &code))
        printf(", exit status %lld", (long long)code);
    printf("\n");
    ctl_fmt_time(started, sizeof(started), dbl(j, "started_at"));
    ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
    printf("Owner    %s, root pid %lld\n", ctl_fmt_user(i64(j, "owner_uid"), user, sizeof(user)),
           (long long)i64(j, "pid"));
    printf("Started  %s, ran %s, %lld samples every %.3gs\n", started, dur, (long long)i64(s, "samples"),
           dbl(j, "interval_secs"));
    struct json_object *cmd = rt_json_get_array(md, "command");
    if (cmd) {
        printf("Command ");
        for (size_t i = 0; i < json_object_array_length(cmd); i++)
            printf(" %s", json_object_get_string(json_object_array_get_idx(cmd, i)));
        printf("\n");
    }
    struct json_object *cpu = rt_json_get_object(last, "cpu");
    printf("CPU      %.2f s in total, %.2f cores on average, peak %.2f", dbl(s, "cpu_secs"),
           dbl(s, "avg_cores"), dbl(s, "peak_cores"));
    if (cpu)
        printf(", last %.2f", dbl(cpu, "process_cores_used"));
    printf("\n");
    ctl_fmt_bytes(b1, sizeof(b1), dbl(s, "peak_rss_bytes"));
    ctl_fmt_bytes(b2, sizeof(b2), dbl(s, "peak_pss_bytes"));
    printf("Memory   peak RSS %s, peak PSS %s", b1, b2);
    if (cpu) {
        ctl_fmt_bytes(b1, sizeof(b1), dbl(cpu, "process_rss_mib") * 1048576.0);
        printf(", last RSS %s", b1);
    }
    printf("\n");
    ctl_fmt_bytes(b1, sizeof(b1), dbl(s, "disk_read_bytes"));
    ctl_fmt_bytes(b2, sizeof(b2), dbl(s, "disk_write_bytes"));
    printf("Disk     read %s, written %s\n", b1, b2);
    printf("Children peak %lld", (long long)i64(s, "peak_children"));
    if (cpu)
        printf(", last %lld", (long long)i64(cpu, "process_child_count"));
    printf("\n");
    double v;
    if (rt_json_get_double(s, "gpu_avg_usage", &v)) {
        ctl_fmt_bytes(b1, sizeof(b1), dbl(s, "gpu_peak_vram_bytes"));
        printf("GPU      %.2f GPUs on average, peak VRAM %s, energy ", v, b1);
        if (rt_json_get_double(s, "gpu_energy_joules", &v)) /* null: no energy counter */
            printf("%.1f J\n", v);
        else
            printf("unknown\n");
    }
    struct json_object *up = rt_json_get_object(j, "upload");
    if (up) {
        const char *err = rt_json_get_string(up, "last_error");
        const char *run = rt_json_get_string(up, "run_id");
        printf("Upload   %s, run %s, %lld batches sent, %lld pending%s%s\n", rt_json_get_string(up, "state"),
               run ? run : "-", (long long)i64(up, "batches_sent"), (long long)i64(up, "batches_pending"),
               err ? ", last error: " : "", err ? err : "");
    }
}

int ctl_status(struct ctl *ctl, int argc, char **argv)
{
    const char *ref;
    int rc = verb_args(ctl, argc, argv,
                       "Usage: resource-trackerctl status [--json] [JOB]\n"
                       "Live host figures, or those of JOB.\n",
                       NULL, NULL, &ref, 0, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    if (!ref) {
        rc = simple_call(ctl, M("GetHostSample"), NULL, &c, &reply, &rp);
        if (!rc) {
            if (ctl->json)
                ctl_print_json(stdout, rt_json_get_object(rp, "sample"));
            else
                print_host(rt_json_get_object(rp, "sample"));
        }
        json_object_put(reply);
        rt_vl_client_close(&c);
        return rc;
    }
    struct json_object *p = json_object_new_object();
    ctl_job_ref(p, ref);
    rc = simple_call(ctl, M("GetJob"), p, &c, &reply, &rp);
    if (rc) {
        rt_vl_client_close(&c);
        return rc;
    }
    struct json_object *job = rt_json_get_object(rp, "job");
    /* The latest sample, for the "last" figures. */
    struct json_object *sp = json_object_new_object(), *sreply = NULL, *srp = NULL, *last = NULL;
    int64_t n = i64(rt_json_get_object(job, "summary"), "samples");
    json_object_object_add(sp, "id", json_object_new_int64(i64(job, "id")));
    json_object_object_add(sp, "offset", json_object_new_int64(n > 0 ? n - 1 : 0));
    json_object_object_add(sp, "limit", json_object_new_int64(1));
    if (ctl_call(&c, M("GetJobSamples"), sp, &sreply, &srp) == 0) {
        struct json_object *arr = rt_json_get_array(srp, "samples");
        if (arr && json_object_array_length(arr))
            last = json_object_array_get_idx(arr, 0);
    }
    if (ctl->json) {
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "job", json_object_get(job));
        json_object_object_add(o, "last_sample", last ? json_object_get(last) : NULL);
        ctl_print_json(stdout, o);
        json_object_put(o);
    } else {
        print_job(job, last);
    }
    json_object_put(sreply);
    json_object_put(reply);
    rt_vl_client_close(&c);
    return 0;
}

/* ---- samples ---- */

int ctl_samples(struct ctl *ctl, int argc, char **argv)
{
    const char *job = NULL, *format = "json";
    bool follow = false;
    long long offset = 0;
    bool options = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options || a[0] != '-' || !a[1]) {
            if (job) {
                CTL_ERR("unexpected argument for samples: %s", a);
                return RT_EXIT_USAGE;
            }
            job = a;
        } else if (strcmp(a, "--") == 0) {
            options = false;
        } else if ((strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) && i + 1 < argc) {
            format = argv[++i];
        } else if (strncmp(a, "--format=", 9) == 0) {
            format = a + 9;
        } else if (strcmp(a, "--follow") == 0 || strcmp(a, "-F") == 0) {
            follow = true;
        } else if (strcmp(a, "--offset") == 0 && i + 1 < argc) {
            char *end;
            offset = strtoll(argv[++i], &end, 10);
            if (*end || offset < 0) {
                CTL_ERR("invalid --offset: %s", argv[i]);
                return RT_EXIT_USAGE;
            }
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            printf("Usage: resource-trackerctl samples JOB [--format json|csv] [--follow] [--offset N]\n"
                   "Print JOB's samples as JSON Lines or CSV; --follow waits for new ones until it ends.\n");
            return 0;
        } else {
            CTL_ERR("unknown option for samples: %s", a);
            return RT_EXIT_USAGE;
        }
    }
    if (!job) {
        CTL_ERR("samples needs a JOB (an id or a name)");
        return RT_EXIT_USAGE;
    }
    if (strcmp(format, "json") != 0 && strcmp(format, "csv") != 0) {
        CTL_ERR("invalid --format: %s (json or csv)", format);
        return RT_EXIT_USAGE;
    }
    struct rt_vl_client c = {.fd = -1};
    int rc = ctl_connect(ctl, &c, false);
    if (rc)
        return rc;
    struct json_object *p = json_object_new_object();
    ctl_job_ref(p, job);
    json_object_object_add(p, "offset", json_object_new_int64(offset));
    json_object_object_add(p, "format", json_object_new_string(format));
    if (follow)
        json_object_object_add(p, "follow", json_object_new_boolean(1));
    /* The daemon heads only offset 0 with the header; our output always has one. */
    if (strcmp(format, "csv") == 0 && offset > 0)
        printf("%s\n", RT_CSV_HEADER);
    if (rt_vl_client_send(&c, M("GetJobSamples"), p, RT_VL_MORE) < 0) {
        CTL_ERR("lost the connection to the daemon");
        rt_vl_client_close(&c);
        return RT_EXIT_UNREACHABLE;
    }
    for (;;) {
        struct json_object *reply = NULL;
        int e = rt_vl_client_recv(&c, &reply, -1);
        if (e < 0) {
            CTL_ERR("lost the connection to the daemon: %s", strerror(-e));
            rc = RT_EXIT_UNREACHABLE;
            break;
        }
        if (rt_vl_reply_error(reply)) {
            rc = ctl_report_error(reply);
            json_object_put(reply);
            break;
        }
        struct json_object *rp = rt_vl_reply_params(reply);
        const char *csv = rt_json_get_string(rp, "csv");
        if (csv) {
            fputs(csv, stdout);
        } else {
            struct json_object *arr = rt_json_get_array(rp, "samples");
            for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
                printf("%s\n", rt_json_plain(json_object_array_get_idx(arr, i)));
        }
        fflush(stdout);
        bool more = rt_vl_reply_continues(reply);
        json_object_put(reply);
        if (!more)
            break;
    }
    rt_vl_client_close(&c);
    return rc;
}

/* ---- info ---- */

int ctl_info(struct ctl *ctl, int argc, char **argv)
{
    int rc = verb_args(ctl, argc, argv,
                       "Usage: resource-trackerctl info [--json]\n"
                       "Show the daemon this client talks to.\n",
                       NULL, NULL, NULL, 0, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct rt_vl_client c = {.fd = -1};
    struct json_object *reply = NULL, *rp;
    rc = simple_call(ctl, M("Info"), NULL, &c, &reply, &rp);
    if (!rc) {
        if (ctl->json) {
            json_object_object_add(rp, "socket", json_object_new_string(ctl->used_socket));
            ctl_print_json(stdout, rp);
        } else {
            char up[32], user[64];
            ctl_fmt_duration(up, sizeof(up), dbl(rp, "uptime_secs"));
            bool admin = false;
            rt_json_get_bool(rp, "caller_is_admin", &admin);
            bool um = false;
            rt_json_get_bool(rp, "user_mode", &um);
            printf("Daemon     resource-trackerd %s on %s%s\n", rt_json_get_string(rp, "version"),
                   rt_json_get_string(rp, "hostname"), um ? " (user mode)" : "");
            printf("Socket     %s\n", ctl->used_socket);
            printf("Uptime     %s, sampling every %.3gs\n", up, dbl(rp, "interval_secs"));
            printf("Jobs       %lld running\n", (long long)i64(rp, "jobs_running"));
            printf("GPUs       %lld\n", (long long)i64(rp, "gpus"));
            printf("You        %s%s\n", ctl_fmt_user(i64(rp, "caller_uid"), user, sizeof(user)),
                   admin ? " (administrator: all jobs)" : " (your jobs only)");
        }
    }
    json_object_put(reply);
    rt_vl_client_close(&c);
    return rc;
}
