/* What a job asked for (its request): CPUs, memory and GPUs, from a
 * scheduler (Slurm), a container's limits or `run --request`. Shared by the
 * client, which parses `--request` and TRACKER_REQUEST, and the daemon, which
 * checks the JobRequest object StartJob carries and reads schedulers' and
 * containers' own descriptions into it. */
#ifndef RT_REQUEST_H
#define RT_REQUEST_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zero means "not asked for" (and shows as a key left out). */
struct rt_request {
    double cpus;             /* cores; fractional for a container's CPU quota */
    uint64_t memory_bytes;
    uint32_t gpus;
};

#define RT_REQUEST_MAX_CPUS 65536.0
#define RT_REQUEST_MAX_GPUS 1024u
#define RT_REQUEST_MAX_MEMORY (1ULL << 60) /* 1 EiB */
#define RT_REQUEST_MAX_UUIDS 64u
#define RT_REQUEST_UUID_MAX 96u            /* "GPU-" + a UUID, "MIG-…" */

/* "cpus=8,mem=64G,gpus=2": each key at most once, in any order. cpus may be
 * fractional (0.5); mem takes a binary unit as Slurm's --mem does (K, M, G,
 * T, with an optional "B" or "iB": 64G = 64 GiB) and no bare numbers. 0, or
 * -EINVAL with what is wrong in why (a clause that names the part). */
int rt_request_parse(const char *text, struct rt_request *out, char *why, size_t whylen);

/* The JobRequest object: {"cpus", "memory_bytes", "gpus"} with the keys of
 * what was not asked for left out; gpu_uuids (borrowed, may be NULL) is added
 * as "gpu_uuids" when it holds any. */
struct json_object *rt_request_to_json(const struct rt_request *r, struct json_object *gpu_uuids);

/* Check a JobRequest object from a client or a record and read it into
 * *out: NULL when valid, else the offending key ("request.cpus", …). Unknown
 * keys are refused; "gpu_uuids" is checked (at most RT_REQUEST_MAX_UUIDS
 * printable strings) but kept only in the object. */
const char *rt_request_from_json(struct json_object *o, struct rt_request *out);

bool rt_request_empty(const struct rt_request *r);

/* The rounding rules of right-sizing (recommend, notes), as the Python
 * tracker's: a memory size in MiB rounded up to 128, 256, 512, 1024 or 2048,
 * above that to the next whole GiB; round half to even as Python's round()
 * (0.5 -> 0, 1.5 -> 2, 2.5 -> 2). */
uint64_t rt_request_round_memory_mib(double mib);
double rt_round_half_even(double x);

/* "1.5G"-style memory sizes with binary units: the bytes, or false. */
bool rt_request_parse_memory(const char *s, uint64_t *out);

#endif
