/* resource-trackerctl recommend JOB [--history N] [--json] */
#include "args.h"
#include "insight/analysis.h"
#include "insight/insight.h"
#include "insight/options.h"

#include "rt/json.h"

#include <string.h>

static const char usage[] =
    "Usage: resource-trackerctl recommend [OPTIONS] JOB\n"
    "Resources for JOB's next run from this run and its last N (default 5) ended runs\n"
    "with the same name: for people, and as Slurm, Kubernetes and Metaflow requests.\n\n"
    "  -n, --history N         earlier runs to combine (0 to 100)\n"
    "  -f, --format FORMAT     text or json; --json is --format json\n"
    "  -h, --help              this help\n";

static const struct ctl_opt opts[] = {
    {"history", 'n', "N", INSIGHT_RULE_HISTORY, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_recommend_spec = {
    .verb = "recommend",
    .usage = usage,
    .opts = opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON,
    .operand = CTL_KIND_JOB,
};

int ctl_insight_recommend_line(struct rt_vl_client *c, struct json_object *job, unsigned history, char *buf,
                               size_t size)
{
    struct insight_analysis a;
    int rc = insight_analysis_load(c, job, history, false, &a);
    if (!rc) {
        char people[256], slurm[256];
        char why[256];
        insight_rec_people(&a.rec, people, sizeof(people));
        insight_rec_slurm(&a.rec, slurm, sizeof(slurm));
        insight_rec_cpu_why(&a.rec, why, sizeof(why));
        snprintf(buf, size, "%s (Slurm: %s)%s%s", people, slurm, why[0] ? "\n           CPUs: " : "", why);
    }
    insight_analysis_free(&a);
    return rc;
}

static void print_row(const char *label, const struct insight_stats *s, bool gpu)
{
    char pss[32], vram[32];
    ctl_fmt_bytes(pss, sizeof(pss), insight_memory_peak(s));
    char sustained[16] = "-";
    if (insight_has(s, "sustained_cores"))
        snprintf(sustained, sizeof(sustained), "%.2f", insight_fig(s, "sustained_cores"));
    printf("  %-12s %10.2f %10s %12s", label, insight_fig(s, "avg_cores"), sustained, pss);
    if (gpu) {
        ctl_fmt_bytes(vram, sizeof(vram), insight_fig(s, "gpu_peak_vram_bytes"));
        if (insight_has_gpu(s))
            printf(" %10.2f %12s", insight_fig(s, "gpu_peak_usage"), vram);
        else
            printf(" %10s %12s", "-", "-");
    }
    printf("\n");
}

/* The recommendation against what the job asked for: "asked for 8, used
 * 1.90 on average: ask for 2". */
static void print_against_request(const struct insight_analysis *a)
{
    struct json_object *req = rt_json_get_object(a->run.job, "request");
    double v;
    if (!req || !json_object_object_length(req))
        return;
    char b1[32], b2[32];
    printf("\nAgainst what it asked for:\n");
    if (rt_json_get_double(req, "cpus", &v))
        printf("  CPUs     asked for %g, used %.2f on average: ask for %u\n", v, insight_fig(&a->combined, "avg_cores"),
               a->rec.cpus);
    if (rt_json_get_double(req, "memory_bytes", &v)) {
        ctl_fmt_bytes(b1, sizeof(b1), v);
        ctl_fmt_bytes(b2, sizeof(b2), insight_fig(&a->combined, "peak_pss_bytes"));
        printf("  Memory   asked for %s, peak PSS %s: ask for %llu MiB\n", b1, b2,
               (unsigned long long)a->rec.memory_mib);
    }
    if (rt_json_get_double(req, "gpus", &v))
        printf("  GPUs     asked for %g, peak use %.2f: ask for %u\n", v, insight_fig(&a->combined, "gpu_peak_usage"),
               a->rec.gpus);
    ctl_print_request(stdout, a->run.job, "  ");
}

static void print_people(const struct insight_analysis *a)
{
    const char *name = rt_json_get_string(a->run.job, "name");
    printf("Job %llu%s%s%s: ", (unsigned long long)a->run.st.id, name ? " (" : "", name ? name : "", name ? ")" : "");
    if (a->nhist)
        printf("this run and %zu earlier run%s with its name\n", a->nhist, a->nhist == 1 ? "" : "s");
    else
        printf("this run only (%s)\n",
               name ? "no earlier ended runs with its name" : "no name to find earlier runs by");
    bool gpu = insight_has_gpu(&a->combined);
    printf("  %-12s %10s %10s %12s", "", "mean cores", "sustained", "peak memory");
    if (gpu)
        printf(" %10s %12s", "peak GPUs", "peak VRAM");
    printf("\n");
    char label[32];
    snprintf(label, sizeof(label), "job %llu", (unsigned long long)a->run.st.id);
    print_row(label, &a->run.st, gpu);
    for (size_t i = 0; i < a->nhist; i++) {
        snprintf(label, sizeof(label), "job %llu", (unsigned long long)a->hist[i].st.id);
        print_row(label, &a->hist[i].st, gpu);
    }
    if (a->nhist)
        print_row("combined", &a->combined, gpu);
    char buf[512];
    insight_rec_people(&a->rec, buf, sizeof(buf));
    printf("\nNext run: %s\n", buf);
    insight_rec_cpu_why(&a->rec, buf, sizeof(buf));
    if (buf[0])
        printf("  CPUs: %s\n", buf);
    printf("  CPUs: the mean cores rounded (at least 1), or the cores a phase of 10 s or more held, rounded up, when "
           "more; memory: the peak memory (what it could not do without) x 1.2, rounded up\n");
    if (gpu)
        printf("  GPUs: the peak GPU use rounded (at least 1 if used); VRAM: the peak x 1.2, rounded up\n");
    print_against_request(a);
    insight_rec_slurm(&a->rec, buf, sizeof(buf));
    printf("\nSlurm:       %s\n", buf);
    insight_rec_kubernetes(&a->rec, "  ", buf, sizeof(buf));
    printf("Kubernetes:\n%s", buf);
    insight_rec_metaflow(&a->rec, buf, sizeof(buf));
    printf("Metaflow:    %s\n", buf);
}

static void print_json(const struct insight_analysis *a)
{
    struct json_object *o = json_object_new_object(), *runs = json_object_new_array();
    json_object_object_add(o, "id", json_object_new_int64((int64_t)a->run.st.id));
    json_object_array_add(runs, insight_stats_json(&a->run.st));
    for (size_t i = 0; i < a->nhist; i++)
        json_object_array_add(runs, insight_stats_json(&a->hist[i].st));
    json_object_object_add(o, "runs", runs);
    json_object_object_add(o, "combined", insight_stats_json(&a->combined));
    json_object_object_add(o, "memory_figure", json_object_new_string(insight_has(&a->combined, "memory_peak_bytes")
                                                                           ? "memory_peak" : "pss"));
    json_object_object_add(o, "recommendation", insight_rec_json(&a->rec));
    static const char *const keys[] = {"request", "efficiency", "notes"};
    for (size_t i = 0; i < 3; i++) {
        struct json_object *v = NULL;
        json_object_object_get_ex(a->run.job, keys[i], &v);
        json_object_object_add(o, keys[i], v ? json_object_get(v) : NULL);
    }
    ctl_print_json(stdout, o);
    json_object_put(o);
}

int ctl_recommend(struct ctl *ctl, int argc, char **argv)
{
    unsigned history = INSIGHT_DEFAULT_HISTORY;
    const char *job;
    struct ctl_args args;
    ctl_args_init(&args, ctl, &ctl_recommend_spec);
    for (int c; (c = ctl_args_next(&args, argc, argv)) != CTL_ARGS_END;) {
        if (c == CTL_ARGS_STOP)
            return args.rc;
        if (c == 'n' && !insight_opt_history(optarg, &history))
            return ctl_args_invalid(&args, c, optarg);
    }
    int rc = ctl_args_operands(&args, argc, argv, &job, 1, 1);
    if (rc)
        return rc;
    struct rt_vl_client cl = {.fd = -1};
    struct insight_analysis a = {0};
    rc = insight_analysis_fetch(ctl, job, history, false, &cl, &a);
    bool not_started = false;
    int64_t code = -1;
    if (!rc && rt_json_get_bool(a.run.job, "not_started", &not_started) && not_started) {
        rt_json_get_i64(a.run.job, "exit_code", &code);
        CTL_ERR("recommend: job %llu's command did not start (exit status %lld): nothing ran to size",
                (unsigned long long)a.run.st.id, (long long)code);
        rc = RT_EXIT_FAILURE;
    } else if (!rc && !a.run.st.samples) {
        CTL_ERR("recommend: job %llu has no samples yet", (unsigned long long)a.run.st.id);
        rc = RT_EXIT_FAILURE;
    }
    if (!rc) {
        if (ctl->json)
            print_json(&a);
        else
            print_people(&a);
    }
    insight_analysis_free(&a);
    rt_vl_client_close(&cl);
    return rc;
}
