/* Right-sizing for the next run: the Python tracker's rules
 * (reference/python.md §3.2) over a run combined with its history, and the
 * requests that ask for it in Slurm, Kubernetes and Metaflow. docs/insight.md */
#ifndef RT_INSIGHT_RECOMMEND_H
#define RT_INSIGHT_RECOMMEND_H

#include "insight/stats.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

struct insight_rec {
    unsigned cpus;
    uint64_t memory_mib;
    unsigned gpus;
    uint64_t vram_mib;  /* 0 without GPUs */
    /* The CPUs: the Python tracker's rule (the mean cores rounded) and
     * what a sustained phase held, when that asks for more. */
    unsigned cpus_python;
    double cores_mean, cores_sustained; /* sustained: 0 when unknown (older records) */
};

/* CPUs = max(1, round(mean cores)), the Python tracker's rule, or more: the
 * cores a sustained phase held (sustained_cores, a phase of 10 s or more)
 * rounded up, so that following it never halves the speed of such a phase
 * (0.1 of a core above a whole number is forgiven: 2.05 asks for 2);
 * memory = round_memory(peak memory x 1.2) (the rounding of rt/request.h);
 * GPUs = max(1, round(peak GPU use)) when a GPU was used, else 0;
 * VRAM = round_memory(peak VRAM x 1.2) when any was used, else 0. */
void insight_recommend(const struct insight_stats *combined, struct insight_rec *out);

/* "2 vCPUs, 1024 MiB memory[, 1 GPU with 2048 MiB VRAM]" */
void insight_rec_people(const struct insight_rec *r, char *buf, size_t size);
/* Why the CPUs, when a phase asks for more than the mean: "its busiest
 * stretch held 1.95 cores; the mean, 0.56 cores, would give 1 vCPU (the
 * Python tracker's rule)"; "" when the rules agree. (Not "for 10 s": a
 * shorter job's stretch is all of it.) */
void insight_rec_cpu_why(const struct insight_rec *r, char *buf, size_t size);
/* "--cpus-per-task=2 --mem=1024M[ --gres=gpu:1]" */
void insight_rec_slurm(const struct insight_rec *r, char *buf, size_t size);
/* resources.requests of a Kubernetes container, YAML (GPUs as limits too:
 * extended resources need them); each line starts with indent. */
void insight_rec_kubernetes(const struct insight_rec *r, const char *indent, char *buf, size_t size);
/* "@resources(cpu=2, memory=1024[, gpu=1])" */
void insight_rec_metaflow(const struct insight_rec *r, char *buf, size_t size);
/* {"cpus", "memory_mib", "gpus", "vram_mib", "slurm", "kubernetes": {"requests",
 * "limits"}, "metaflow"} */
struct json_object *insight_rec_json(const struct insight_rec *r);

#endif
