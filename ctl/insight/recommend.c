#include "insight/recommend.h"

#include "rt/request.h"

#include <math.h>
#include <stdio.h>

void insight_recommend(const struct insight_stats *c, struct insight_rec *out)
{
    out->cores_mean = insight_fig(c, "avg_cores");
    double cpus = rt_round_half_even(out->cores_mean);
    out->cpus_python = cpus >= 1 ? (unsigned)cpus : 1;
    out->cores_sustained = insight_fig(c, "sustained_cores");
    double phase = ceil(out->cores_sustained - 0.1);
    out->cpus = phase > out->cpus_python ? (unsigned)phase : out->cpus_python;
    out->memory_mib = rt_request_round_memory_mib(insight_memory_peak(c) / 1048576.0 * 1.2);
    out->gpus = 0;
    out->vram_mib = 0;
    double gpu_peak = insight_fig(c, "gpu_peak_usage"), vram_peak = insight_fig(c, "gpu_peak_vram_bytes");
    if (gpu_peak > 0) {
        double g = rt_round_half_even(gpu_peak);
        out->gpus = g >= 1 ? (unsigned)g : 1;
    }
    if (vram_peak > 0)
        out->vram_mib = rt_request_round_memory_mib(vram_peak / 1048576.0 * 1.2);
}

void insight_rec_people(const struct insight_rec *r, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%u vCPU%s, %llu MiB memory", r->cpus, r->cpus == 1 ? "" : "s",
                     (unsigned long long)r->memory_mib);
    if (r->gpus && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ", %u GPU%s with %llu MiB VRAM", r->gpus, r->gpus == 1 ? "" : "s",
                 (unsigned long long)r->vram_mib);
}

void insight_rec_cpu_why(const struct insight_rec *r, char *buf, size_t size)
{
    if (r->cpus == r->cpus_python)
        snprintf(buf, size, "%s", "");
    else
        snprintf(buf, size, "its busiest stretch held %.2f cores; the mean, %.2f cores, would give %u vCPU%s "
                            "(the Python tracker's rule)", r->cores_sustained, r->cores_mean, r->cpus_python,
                 r->cpus_python == 1 ? "" : "s");
}

void insight_rec_slurm(const struct insight_rec *r, char *buf, size_t size)
{
    int n = snprintf(buf, size, "--cpus-per-task=%u --mem=%lluM", r->cpus, (unsigned long long)r->memory_mib);
    if (r->gpus && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " --gres=gpu:%u", r->gpus);
}

void insight_rec_kubernetes(const struct insight_rec *r, const char *ind, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%sresources:\n%s  requests:\n%s    cpu: \"%u\"\n%s    memory: %lluMi\n", ind, ind,
                     ind, r->cpus, ind, (unsigned long long)r->memory_mib);
    if (r->gpus && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%s    nvidia.com/gpu: %u\n%s  limits:\n%s    nvidia.com/gpu: %u\n", ind,
                 r->gpus, ind, ind, r->gpus);
}

void insight_rec_metaflow(const struct insight_rec *r, char *buf, size_t size)
{
    if (r->gpus)
        snprintf(buf, size, "@resources(cpu=%u, memory=%llu, gpu=%u)", r->cpus, (unsigned long long)r->memory_mib,
                 r->gpus);
    else
        snprintf(buf, size, "@resources(cpu=%u, memory=%llu)", r->cpus, (unsigned long long)r->memory_mib);
}

struct json_object *insight_rec_json(const struct insight_rec *r)
{
    char buf[512];
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "cpus", json_object_new_int64(r->cpus));
    json_object_object_add(o, "cpus_python", json_object_new_int64(r->cpus_python));
    json_object_object_add(o, "memory_mib", json_object_new_int64((int64_t)r->memory_mib));
    json_object_object_add(o, "gpus", json_object_new_int64(r->gpus));
    json_object_object_add(o, "vram_mib", json_object_new_int64((int64_t)r->vram_mib));
    insight_rec_slurm(r, buf, sizeof(buf));
    json_object_object_add(o, "slurm", json_object_new_string(buf));
    struct json_object *k8s = json_object_new_object(), *req = json_object_new_object();
    snprintf(buf, sizeof(buf), "%u", r->cpus);
    json_object_object_add(req, "cpu", json_object_new_string(buf));
    snprintf(buf, sizeof(buf), "%lluMi", (unsigned long long)r->memory_mib);
    json_object_object_add(req, "memory", json_object_new_string(buf));
    json_object_object_add(k8s, "requests", req);
    if (r->gpus) {
        struct json_object *lim = json_object_new_object();
        json_object_object_add(req, "nvidia.com/gpu", json_object_new_int64(r->gpus));
        json_object_object_add(lim, "nvidia.com/gpu", json_object_new_int64(r->gpus));
        json_object_object_add(k8s, "limits", lim);
    }
    json_object_object_add(o, "kubernetes", k8s);
    insight_rec_metaflow(r, buf, sizeof(buf));
    json_object_object_add(o, "metaflow", json_object_new_string(buf));
    return o;
}
