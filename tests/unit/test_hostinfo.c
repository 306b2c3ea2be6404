/* Host info against fixture trees (tests/fixtures/hostinfo/<case>/{proc,sys,etc})
 * with exact values, plus a sanity check on the live machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "facts/hostinfo.h"
#include "system/log.h"
#include "rt/json.h"
#include "rt/util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Collect from fixture case `name`; returns the number of unknown fields. */
static int collect_fixture(const char *name, struct rt_host_info *h)
{
    const char *fixtures = getenv("RT_FIXTURES");
    assert_non_null(fixtures);
    char proc[PATH_MAX], sys[PATH_MAX], etc[PATH_MAX];
    snprintf(proc, sizeof(proc), "%s/hostinfo/%s/proc", fixtures, name);
    snprintf(sys, sizeof(sys), "%s/hostinfo/%s/sys", fixtures, name);
    snprintf(etc, sizeof(etc), "%s/hostinfo/%s/etc", fixtures, name);
    struct rt_roots r;
    assert_int_equal(rt_roots_open(&r, proc, sys), 0);
    int unknown = rt_host_info_collect_at(&r, etc, h);
    rt_roots_close(&r);
    return unknown;
}

static void test_cloud_vm_with_mixed_disks(void **state)
{
    (void)state;
    struct rt_host_info h;
    collect_fixture("aws", &h);
    assert_string_equal(h.id, "i-0abc123def4567890");
    assert_string_equal(h.hostname, "ip-10-0-0-5");
    assert_int_equal(h.vcpus, 4);
    assert_string_equal(h.cpu_model, "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz");
    assert_int_equal(h.memory_mib, 15737); /* 16114816 kB / 1024, floored */
    assert_string_equal(h.os, "Amazon Linux 2023.6.20250107");
    assert_string_equal(h.kernel, "6.1.119-129.201.amzn2023.x86_64");
    /* nvme0n1 (via a symlink) + nvme1n1 (4Kn, size still in 512 B units) +
     * sda + sdb; not dm-0 (over nvme1n1), md0 (over sda, sdb), the hidden
     * multipath path, loop, ram, zram, sr. */
    assert_int_equal(h.storage_bytes,
                     (209715200ULL + 1953525168ULL + 2 * 976773168ULL) * 512);

    rt_host_info_set_gpus(&h, "NVIDIA H100 80GB HBM3", 8, 8 * 81559);
    rt_strlcpy(h.ip, "10.0.0.5", sizeof(h.ip)); /* the live address otherwise */
    struct json_object *o = rt_host_info_to_json(&h);
    assert_string_equal(rt_json_plain(o),
        "{\"host_id\":\"i-0abc123def4567890\",\"host_hostname\":\"ip-10-0-0-5\","
        "\"host_ip\":\"10.0.0.5\",\"host_server_allocation\":null,\"host_vcpus\":4,"
        "\"host_cpu_model\":\"Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz\","
        "\"host_memory_mib\":15737,\"host_gpu_model\":\"NVIDIA H100 80GB HBM3\","
        "\"host_gpu_count\":8,\"host_gpu_memory_mib\":652472,"
        "\"host_storage_gb\":2107.794792448}");
    json_object_put(o);
    /* GetHostInfo's facts: no id, no address. */
    o = rt_host_info_facts_json(&h);
    assert_string_equal(rt_json_plain(o),
        "{\"hostname\":\"ip-10-0-0-5\",\"os\":\"Amazon Linux 2023.6.20250107\","
        "\"kernel\":\"6.1.119-129.201.amzn2023.x86_64\","
        "\"cpu_model\":\"Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz\",\"vcpus\":4,"
        "\"memory_mib\":15737,\"storage_gb\":2107.795,\"gpu_model\":\"NVIDIA H100 80GB HBM3\","
        "\"gpu_count\":8,\"gpu_memory_mib\":652472}");
    json_object_put(o);
}

static void test_placeholder_asset_tag_falls_back_to_machine_id(void **state)
{
    (void)state;
    struct rt_host_info h;
    collect_fixture("vm", &h);
    assert_string_equal(h.id, "8f14e45fceea167a5a36dedd4bea2543");
}

static void test_no_dmi_no_model_no_disks(void **state)
{
    (void)state;
    struct rt_host_info h;
    collect_fixture("baremetal", &h);
    assert_string_equal(h.id, "6c1d6f3aa5b04b6e9f0a7c2d8e4b1a93"); /* no board_asset_tag file */
    assert_string_equal(h.hostname, "gpu-node-01");
    assert_int_equal(h.vcpus, 2);
    assert_string_equal(h.cpu_model, ""); /* aarch64: no "model name" */
    assert_int_equal(h.memory_mib, 1023);
    assert_int_equal(h.storage_bytes, 0);
    /* /usr/lib/os-release without PRETTY_NAME; no osrelease in the proc root. */
    assert_string_equal(h.os, "Ubuntu \"Noble\" 24.04");
    struct utsname u;
    assert_int_equal(uname(&u), 0);
    assert_string_equal(h.kernel, u.release);

    rt_host_info_set_gpus(&h, "ignored", 0, 4096); /* no GPU: all three null */
    rt_strlcpy(h.ip, "", sizeof(h.ip));
    struct json_object *o = rt_host_info_to_json(&h);
    assert_string_equal(rt_json_plain(o),
        "{\"host_id\":\"6c1d6f3aa5b04b6e9f0a7c2d8e4b1a93\",\"host_hostname\":\"gpu-node-01\","
        "\"host_ip\":null,\"host_server_allocation\":null,\"host_vcpus\":2,"
        "\"host_cpu_model\":null,\"host_memory_mib\":1023,\"host_gpu_model\":null,"
        "\"host_gpu_count\":null,\"host_gpu_memory_mib\":null,\"host_storage_gb\":null}");
    json_object_put(o);
}

static void test_garbage_degrades_to_unknown(void **state)
{
    (void)state;
    struct rt_host_info h;
    int unknown = collect_fixture("broken", &h);
    assert_string_equal(h.id, "");  /* O.E.M. placeholder, "uninitialized" machine id */
    assert_string_equal(h.hostname, "broken-host");
    assert_int_equal(h.vcpus, 0);
    assert_string_equal(h.cpu_model, "");
    assert_int_equal(h.memory_mib, 0); /* "MemTotal:" without a value */
    assert_int_equal(h.storage_bytes, 0); /* no sys/block at all */
    assert_string_equal(h.os, ""); /* an unterminated quote, an empty NAME */
    assert_int_equal(unknown, 5 + !h.ip[0]);
}

static void test_asset_tag_placeholders(void **state)
{
    (void)state;
    static const char *const junk[] = {
        "Not Specified", "Default string", "To Be Filled By O.E.M.", "None", "NONE", "N/A",
        "Unknown", "No Asset Tag", "Chassis Asset Tag", "0000000000", "-", "...", "",
        "Not Available", "tag\twith tab",
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(junk); i++)
        assert_false(rt_host_asset_tag_usable(junk[i]));
    assert_true(rt_host_asset_tag_usable("i-0abc123def4567890"));
    assert_true(rt_host_asset_tag_usable("RACK42-NODE07"));
    assert_true(rt_host_asset_tag_usable("phonenet-1")); /* "none" only as a whole word */
}

static struct sockaddr_in v4(const char *text)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, text, &a.sin_addr);
    return a;
}

static void test_first_ipv4(void **state)
{
    (void)state;
    struct sockaddr_in lo = v4("127.0.0.1"), odd = v4("127.0.1.1"), eth = v4("10.1.2.3"),
                       second = v4("192.168.0.7");
    struct sockaddr_in6 six = {.sin6_family = AF_INET6};
    struct ifaddrs e4 = {.ifa_name = "wlan0", .ifa_flags = IFF_UP, .ifa_addr = (struct sockaddr *)&second};
    struct ifaddrs e3 = {.ifa_next = &e4, .ifa_name = "eth0", .ifa_flags = IFF_UP, .ifa_addr = (struct sockaddr *)&eth};
    struct ifaddrs e2 = {.ifa_next = &e3, .ifa_name = "dummy0", .ifa_addr = (struct sockaddr *)&odd};
    struct ifaddrs e1 = {.ifa_next = &e2, .ifa_name = "eth0", .ifa_addr = (struct sockaddr *)&six};
    struct ifaddrs e0 = {.ifa_next = &e1, .ifa_name = "tun0"}; /* no address */
    struct ifaddrs l = {.ifa_next = &e0, .ifa_name = "lo", .ifa_flags = IFF_LOOPBACK, .ifa_addr = (struct sockaddr *)&lo};
    char buf[INET_ADDRSTRLEN];
    assert_true(rt_host_first_ipv4(&l, buf, sizeof(buf)));
    assert_string_equal(buf, "10.1.2.3");
    e0.ifa_next = NULL;
    assert_false(rt_host_first_ipv4(&l, buf, sizeof(buf)));
}

/* The real /proc and /sys: the same numbers the kernel reports elsewhere. */
static void test_live_machine(void **state)
{
    (void)state;
    struct rt_roots r;
    assert_int_equal(rt_roots_open(&r, NULL, NULL), 0);
    struct rt_host_info h;
    rt_host_info_collect(&r, &h);
    rt_roots_close(&r);
    char name[256];
    assert_int_equal(gethostname(name, sizeof(name)), 0);
    assert_string_equal(h.hostname, name);
    assert_int_equal(h.vcpus, get_nprocs());
    struct sysinfo si;
    assert_int_equal(sysinfo(&si), 0);
    /* sysinfo's totalram is MemTotal in bytes. */
    assert_int_equal(h.memory_mib, (uint64_t)si.totalram * si.mem_unit / (1024 * 1024));
    struct json_object *o = rt_host_info_to_json(&h);
    assert_int_equal(json_object_object_length(o), 11);
    json_object_put(o);
    assert_true(h.os[0] && h.kernel[0]);
}

int main(void)
{
    rt_log_init(RT_LOG_STDERR, LOG_ERR); /* fixtures trigger the expected warnings */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cloud_vm_with_mixed_disks),
        cmocka_unit_test(test_placeholder_asset_tag_falls_back_to_machine_id),
        cmocka_unit_test(test_no_dmi_no_model_no_disks),
        cmocka_unit_test(test_garbage_degrades_to_unknown),
        cmocka_unit_test(test_asset_tag_placeholders),
        cmocka_unit_test(test_first_ipv4),
        cmocka_unit_test(test_live_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
