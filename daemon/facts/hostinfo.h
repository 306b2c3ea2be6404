/* Static facts about the host, collected once at start-up and sent only in
 * the Sentinel `POST /runs` body (never in samples). Sources and the choices
 * made for each field: docs/host-and-cloud.md. */
#ifndef RT_HOSTINFO_H
#define RT_HOSTINFO_H

#include "collect/roots.h"

#include <json-c/json.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ifaddrs;

#define RT_HOST_STR 256

/* Empty strings and zero numbers mean "unknown" (JSON null). */
struct rt_host_info {
    char id[RT_HOST_STR];          /* DMI board asset tag, else /etc/machine-id */
    char hostname[RT_HOST_STR];
    char ip[INET_ADDRSTRLEN];      /* first non-loopback IPv4 address */
    unsigned vcpus;
    char cpu_model[RT_HOST_STR];
    uint64_t memory_mib;           /* MemTotal, floor MiB */
    char os[RT_HOST_STR];          /* os-release PRETTY_NAME; not sent to Sentinel */
    char kernel[RT_HOST_STR];      /* kernel release; not sent to Sentinel */
    uint64_t storage_bytes;        /* whole physical disks, see hostinfo.c */
    /* Filled by the GPU code through rt_host_info_set_gpus(). */
    char gpu_model[RT_HOST_STR];
    unsigned gpu_count;
    uint64_t gpu_memory_mib;
};

/* Collect everything but the GPU fields from the proc/sys roots and /etc
 * (the IP address always comes from the live getifaddrs()). Never fails: a field that cannot be read stays unknown (logged once, this
 * runs once). Returns how many of id, hostname, ip, vcpus, cpu_model,
 * memory and storage stayed unknown. */
int rt_host_info_collect(const struct rt_roots *r, struct rt_host_info *out);
/* The same with another directory in place of /etc (tests). */
int rt_host_info_collect_at(const struct rt_roots *r, const char *etc_dir,
                            struct rt_host_info *out);

/* GPU summary: model of the first GPU, count, total VRAM in MiB (0 = unknown).
 * A count of 0 clears all three. */
void rt_host_info_set_gpus(struct rt_host_info *h, const char *model, unsigned count,
                           uint64_t memory_mib);

/* First IPv4 address of a non-loopback interface outside 127/8, as text.
 * false when there is none. Split out of collection so it can be tested. */
bool rt_host_first_ipv4(const struct ifaddrs *list, char *buf, size_t size);

/* Whether a DMI board_asset_tag value identifies the machine rather than
 * being a vendor placeholder ("Not Specified", "Default string", …). */
bool rt_host_asset_tag_usable(const char *tag);

/* GetHostInfo's HostFacts (the IDL): public facts for reports, without the
 * host id and IP address. The caller owns the object. */
struct json_object *rt_host_info_facts_json(const struct rt_host_info *h);

/* The eleven host_* keys of the POST /runs body, in the documented order,
 * each always present (null when unknown; host_server_allocation always
 * null). The caller owns the object. */
struct json_object *rt_host_info_to_json(const struct rt_host_info *h);

#endif
