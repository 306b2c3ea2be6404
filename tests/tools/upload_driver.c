/* Drives the upload worker the way the daemon does, one command per stdin
 * line, one JSON reply per command on stdout (tests/integration/test_upload_*).
 *
 *   upload_driver --spool DIR --api URL [--token T] [--s3-endpoint URL]
 *       [--s3-region R] [--interval-ms N] [--cap BYTES] [--backoff-base-ms N]
 *       [--backoff-max-ms N] [--refresh-margin-s N] [--timeout-ms N]
 *       [--inline-after N] [--exit-wait-ms N] [--probe-url FMT] [--log-level L]
 * Commands:
 *   begin ID TOKEN|- JSON   row ID CSV   end ID CODE (-1: unknown)
 *   exit ID CODE (a late status)   status ID   resumed
 *   bench ID N (time N row appends)     stop MS       quit
 */
#include "system/log.h"
#include "rt/util.h"
#include "upload/upload.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reply_status(struct rt_upload_worker *w, uint64_t id)
{
    struct rt_upload_status st;
    rt_upload_job_status(w, id, &st);
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "tracked", json_object_new_boolean(st.tracked));
    json_object_object_add(o, "ended", json_object_new_boolean(st.ended));
    json_object_object_add(o, "finished", json_object_new_boolean(st.finished));
    json_object_object_add(o, "abandoned", json_object_new_boolean(st.abandoned));
    json_object_object_add(o, "run_id", json_object_new_string(st.run_id));
    json_object_object_add(o, "sent", json_object_new_uint64(st.batches_sent));
    json_object_object_add(o, "pending", json_object_new_uint64(st.batches_pending));
    json_object_object_add(o, "dropped", json_object_new_uint64(st.batches_dropped));
    json_object_object_add(o, "bytes_pending", json_object_new_uint64(st.bytes_pending));
    json_object_object_add(o, "failures", json_object_new_int(st.failures));
    json_object_object_add(o, "last_error", json_object_new_string(st.last_error));
    printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

int main(int argc, char **argv)
{
    struct rt_upload_config cfg = {0};
    int level = LOG_INFO;
    static const struct option opts[] = {
        {"spool", required_argument, 0, 's'},        {"api", required_argument, 0, 'a'},
        {"token", required_argument, 0, 't'},        {"s3-endpoint", required_argument, 0, 'e'},
        {"s3-region", required_argument, 0, 'r'},    {"interval-ms", required_argument, 0, 'i'},
        {"cap", required_argument, 0, 'c'},          {"backoff-base-ms", required_argument, 0, 'b'},
        {"backoff-max-ms", required_argument, 0, 'B'}, {"refresh-margin-s", required_argument, 0, 'm'},
        {"timeout-ms", required_argument, 0, 'T'},   {"inline-after", required_argument, 0, 'n'},
        {"probe-url", required_argument, 0, 'p'},    {"log-level", required_argument, 0, 'l'},
        {"exit-wait-ms", required_argument, 0, 'x'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': cfg.spool_dir = optarg; break;
        case 'a': cfg.api_url = optarg; break;
        case 't': cfg.default_token = optarg; break;
        case 'e': cfg.s3_endpoint = optarg; break;
        case 'r': cfg.s3_region = optarg; break;
        case 'i': cfg.upload_interval_ms = (unsigned)atoi(optarg); break;
        case 'c': cfg.spool_max_bytes = strtoull(optarg, NULL, 10); break;
        case 'b': cfg.backoff_base_ms = (unsigned)atoi(optarg); break;
        case 'B': cfg.backoff_max_ms = (unsigned)atoi(optarg); break;
        case 'm': cfg.refresh_margin_s = (unsigned)atoi(optarg); break;
        case 'T': cfg.request_timeout_ms = cfg.connect_timeout_ms = (unsigned)atoi(optarg); break;
        case 'n': cfg.inline_after_failures = (unsigned)atoi(optarg); break;
        case 'p': cfg.region_probe_url = optarg; break;
        case 'x': cfg.exit_wait_ms = (unsigned)atoi(optarg); break;
        case 'l': level = rt_log_level_from_string(optarg); break;
        default: return 2;
        }
    }
    rt_log_init(RT_LOG_STDERR, level < 0 ? LOG_INFO : level);
    struct rt_upload_worker *w = rt_upload_worker_new(&cfg);
    if (!w)
        return 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("{\"ready\":true}\n");

    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        char cmd[16] = "";
        unsigned long long id = 0;
        int off = 0;
        if (sscanf(line, "%15s %n", cmd, &off) < 1)
            continue;
        const char *rest = line + off;
        if (strcmp(cmd, "begin") == 0) {
            char token[256];
            int o2 = 0;
            if (sscanf(rest, "%llu %255s %n", &id, token, &o2) < 2) {
                printf("{\"error\":\"usage\"}\n");
                continue;
            }
            struct json_object *fields = json_tokener_parse(rest + o2);
            int r = rt_upload_job_begin(w, id, strcmp(token, "-") ? token : NULL, fields);
            json_object_put(fields);
            printf("{\"rc\":%d}\n", r);
        } else if (strcmp(cmd, "row") == 0) {
            int o2 = 0;
            sscanf(rest, "%llu %n", &id, &o2);
            char *row = rt_xasprintf("%s\n", rest + o2);
            rt_upload_job_rows(w, id, row, strlen(row));
            free(row);
            printf("{\"rc\":0}\n");
        } else if (strcmp(cmd, "end") == 0) {
            int code = 0;
            sscanf(rest, "%llu %d", &id, &code);
            rt_upload_job_end(w, id, code);
            printf("{\"rc\":0}\n");
        } else if (strcmp(cmd, "exit") == 0) {
            int code = 0;
            sscanf(rest, "%llu %d", &id, &code);
            rt_upload_job_set_exit(w, id, code);
            printf("{\"rc\":0}\n");
        } else if (strcmp(cmd, "status") == 0) {
            sscanf(rest, "%llu", &id);
            reply_status(w, id);
        } else if (strcmp(cmd, "resumed") == 0) {
            uint64_t *ids;
            size_t k = rt_upload_resumed_running(w, &ids);
            printf("[");
            for (size_t i = 0; i < k; i++)
                printf("%s%llu", i ? "," : "", (unsigned long long)ids[i]);
            printf("]\n");
            free(ids);
        } else if (strcmp(cmd, "bench") == 0) {
            unsigned long long count = 0;
            sscanf(rest, "%llu %llu", &id, &count);
            static const char row[] =
                "1767225600,312,0.510,0.120,0.6300,20480,3100,210,8000,5000,6000,0,4096,250.000000,"
                "120.000000,130.000000,1200,800,0.0000,0.0000,0,4242,3,0.4100,0.0300,0.4400,512,0,4096,"
                "0.0000,0.0000,0\n";
            uint64_t t0 = rt_mono_ns();
            for (unsigned long long i = 0; i < count; i++)
                rt_upload_job_rows(w, id, row, sizeof(row) - 1);
            uint64_t dt = rt_mono_ns() - t0;
            printf("{\"ns_per_row\":%.1f}\n", count ? (double)dt / (double)count : 0.0);
        } else if (strcmp(cmd, "stop") == 0) {
            int ms = atoi(rest);
            uint64_t t0 = rt_mono_ns();
            rt_upload_worker_stop(w, ms);
            printf("{\"stopped_ms\":%llu}\n", (unsigned long long)((rt_mono_ns() - t0) / 1000000));
        } else if (strcmp(cmd, "quit") == 0) {
            break;
        } else {
            printf("{\"error\":\"unknown command\"}\n");
        }
    }
    free(line);
    rt_upload_worker_free(w);
    return rc;
}
