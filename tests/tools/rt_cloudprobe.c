/* Run cloud discovery (or host-info collection) once and print the JSON the
 * Sentinel POST /runs body would carry. For tests and manual checks:
 *   rt_cloudprobe [--imds URL] [--alicloud URL] [--connect-ms N]
 *                 [--response-ms N] [--total-ms N] [--disable]
 *                 [--cancel-ms N] [-v]
 *   rt_cloudprobe --host [--proc DIR] [--sys DIR] [--etc DIR]
 * Cloud mode also prints "timing: start_ms=… discovery_ms=… free_ms=…" on
 * stderr. --cancel-ms waits only that long, then frees the discovery
 * (cancelling it) and exits 3 when it was not done. */
#include "facts/cloud.h"
#include "facts/hostinfo.h"
#include "system/http_global.h"
#include "system/log.h"
#include "rt/json.h"
#include "rt/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static int print_host(const char *proc, const char *sys, const char *etc)
{
    struct rt_roots roots;
    if (rt_roots_open(&roots, proc, sys) < 0) {
        fprintf(stderr, "rt_cloudprobe: cannot open the proc/sys roots\n");
        return 1;
    }
    struct rt_host_info h;
    rt_host_info_collect_at(&roots, etc ? etc : "/etc", &h);
    rt_roots_close(&roots);
    struct json_object *o = rt_host_info_to_json(&h);
    printf("%s\n", rt_json_plain(o));
    json_object_put(o);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"imds", required_argument, NULL, 'i'},     {"alicloud", required_argument, NULL, 'a'},
        {"connect-ms", required_argument, NULL, 'c'}, {"response-ms", required_argument, NULL, 'r'},
        {"total-ms", required_argument, NULL, 't'}, {"disable", no_argument, NULL, 'd'},
        {"cancel-ms", required_argument, NULL, 'C'}, {"host", no_argument, NULL, 'H'},           {"proc", required_argument, NULL, 'P'},
        {"sys", required_argument, NULL, 'S'},      {"etc", required_argument, NULL, 'E'},
        {NULL, 0, NULL, 0},
    };
    struct rt_cloud_options o = {0};
    bool host = false;
    const char *proc = NULL, *sys = NULL, *etc = NULL;
    int level = LOG_WARNING, c, wait_ms = -1;
    while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': o.imds_base = optarg; break;
        case 'a': o.alicloud_base = optarg; break;
        case 'c': o.connect_timeout_ms = atoi(optarg); break;
        case 'r': o.response_timeout_ms = atoi(optarg); break;
        case 't': o.total_timeout_ms = atoi(optarg); break;
        case 'd': o.disabled = true; break;
        case 'C': wait_ms = atoi(optarg); break;
        case 'H': host = true; break;
        case 'P': proc = optarg; break;
        case 'S': sys = optarg; break;
        case 'E': etc = optarg; break;
        case 'v': level = LOG_DEBUG; break;
        default: return 2;
        }
    }
    rt_log_init(RT_LOG_STDERR, level);
    if (host)
        return print_host(proc, sys, etc);

    if (!rt_http_global_init())
        return 1;
    uint64_t t0 = rt_mono_ns();
    struct rt_cloud_discovery *d = rt_cloud_discovery_start(&o);
    uint64_t t1 = rt_mono_ns();
    struct rt_cloud_info info;
    bool done = rt_cloud_discovery_wait(d, wait_ms, &info);
    uint64_t t2 = rt_mono_ns();
    rt_cloud_discovery_free(d);
    uint64_t t3 = rt_mono_ns();
    rt_http_global_cleanup();

    fprintf(stderr, "timing: start_ms=%.1f discovery_ms=%.1f free_ms=%.1f\n", (double)(t1 - t0) / 1e6,
            (double)(t2 - t0) / 1e6, (double)(t3 - t2) / 1e6);
    struct json_object *j = rt_cloud_info_to_json(&info);
    printf("%s\n", rt_json_plain(j));
    json_object_put(j);
    return done ? 0 : 3;
}
