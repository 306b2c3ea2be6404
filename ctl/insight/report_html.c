/* The report's document and its tables: the job, the host, statistics of
 * this run and its history, the recommendation and prices. */
#include "insight/report.h"

#include "ctl.h"
#include "insight/html.h"
#include "rt/json.h"
#include "rt/text.h"
#include "rt/util.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char css[] =
    "*{box-sizing:border-box}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1f2937;"
    "background:#f8fafc;margin:0 auto;padding:24px;max-width:1240px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 10px;color:#0f172a}"
    "h3{font-size:14px;margin:0 0 2px;color:#0f172a}"
    "section{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:16px 20px;margin:0 0 16px}"
    ".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:0 16px}"
    "table{border-collapse:collapse}th,td{text-align:left;padding:3px 14px 3px 0;vertical-align:top}"
    "table.facts th{color:#64748b;font-weight:500;white-space:nowrap}"
    "table.stats{width:100%}table.stats td,table.stats thead th{text-align:right;white-space:nowrap}"
    "table.stats thead th{font-weight:600;border-bottom:1px solid #e2e8f0}"
    "table.stats tbody th{color:#64748b;font-weight:500;white-space:nowrap}"
    "table.stats .this{font-weight:600}table.stats .combined{background:#f1f5f9;padding-left:10px}"
    "table.stats tr.differs td{color:#92400e}"
    ".state{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;"
    "vertical-align:middle}"
    ".state.finished{background:#d1fae5;color:#065f46}.state.failed,.state.lost{background:#fee2e2;color:#991b1b}"
    ".state.running{background:#dbeafe;color:#1e40af}.state.stopped{background:#fef3c7;color:#92400e}"
    ".muted{color:#64748b}.big{font-size:18px;font-weight:600;margin:2px 0 8px}"
    "code,pre{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f1f5f9;"
    "border-radius:4px;padding:1px 5px}pre{padding:8px 10px;margin:2px 0 8px;overflow-x:auto}"
    "dl.requests dt{color:#64748b;margin-top:6px}dl.requests dd{margin:2px 0 0}"
    ".chart{margin:0 0 18px}.plot{height:220px;width:100%}"
    ".legend{font-size:12px;min-height:18px;color:#475569}.legend span{margin-right:10px}"
    "footer{color:#64748b;font-size:12px;margin-top:8px}";

static double num(struct json_object *o, const char *k)
{
    double v = 0;
    rt_json_get_double(o, k, &v);
    return v;
}

static void fact_start(FILE *f, const char *label)
{
    fprintf(f, "<tr><th>%s</th><td>", label);
}

static void fact(FILE *f, const char *label, const char *value)
{
    fact_start(f, label);
    html_text(f, value && *value ? value : "—");
    fputs("</td></tr>\n", f);
}

/* ---- the job ---- */

static const struct {
    const char *key, *label;
} metadata_labels[] = {
    {"project_name", "Project"}, {"stage_name", "Stage"}, {"task_name", "Task"},
    {"team", "Team"}, {"env", "Environment"}, {"language", "Language"},
    {"orchestrator", "Orchestrator"}, {"executor", "Executor"},
    {"external_run_id", "External run id"}, {"container_image", "Container image"},
};

/* An argument as a shell would need it: quoted when it has anything but
 * plain characters, so a command with spaces in an argument reads right;
 * one with control characters escaped in $'...' (rt_escape_dup). */
static void shell_word(FILE *f, const char *arg)
{
    if (*arg && strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-") ==
                    strlen(arg)) {
        html_text(f, arg);
        return;
    }
    char *shown = rt_escape_dup(arg);
    if (strcmp(shown, arg) != 0) { /* control characters: as bash's $'...' writes them */
        fputs("$&#39;", f);
        for (const char *p = shown; *p; p++)
            html_text(f, *p == '\'' ? "\\'" : (char[2]){*p, '\0'});
    } else {
        fputs("&#39;", f);
        for (const char *p = arg; *p; p++)
            html_text(f, *p == '\'' ? "'\\''" : (char[2]){*p, '\0'});
    }
    fputs("&#39;", f);
    free(shown);
}

static void job_section(FILE *f, struct json_object *job)
{
    struct json_object *md = rt_json_get_object(job, "metadata");
    char buf[256];
    fputs("<section id=\"job\"><h2>Job</h2><table class=\"facts\">\n", f);
    snprintf(buf, sizeof(buf), "%lld", (long long)num(job, "id"));
    fact(f, "Id", buf);
    fact(f, "Name", rt_json_get_string(job, "name"));
    fact(f, "State", rt_json_get_string(job, "state"));
    fact(f, "End", ctl_fmt_end(buf, sizeof(buf), job, false));
    char user[64];
    ctl_fmt_user((int64_t)num(job, "owner_uid"), user, sizeof(user));
    int n = snprintf(buf, sizeof(buf), "%s (uid %lld)", user, (long long)num(job, "owner_uid"));
    if (num(job, "pid") > 0)
        snprintf(buf + n, sizeof(buf) - (size_t)n, ", root pid %lld", (long long)num(job, "pid"));
    fact(f, "Owner", buf);
    ctl_job_tracking(job, buf, sizeof(buf));
    fact(f, "Tracked", buf);
    struct json_object *cmd = rt_json_get_array(md, "command");
    if (cmd) {
        fact_start(f, "Command");
        fputs("<code>", f);
        for (size_t i = 0; i < json_object_array_length(cmd); i++) {
            if (i)
                fputc(' ', f);
            shell_word(f, json_object_get_string(json_object_array_get_idx(cmd, i)));
        }
        fputs("</code></td></tr>\n", f);
    }
    for (size_t i = 0; i < sizeof(metadata_labels) / sizeof(metadata_labels[0]); i++) {
        const char *v = rt_json_get_string(md, metadata_labels[i].key);
        if (v)
            fact(f, metadata_labels[i].label, v);
    }
    struct json_object *tags = rt_json_get_array(md, "tags");
    if (tags && json_object_array_length(tags)) {
        fact_start(f, "Tags");
        for (size_t i = 0; i < json_object_array_length(tags); i++) {
            fputs(i ? " <code>" : "<code>", f);
            html_text(f, json_object_get_string(json_object_array_get_idx(tags, i)));
            fputs("</code>", f);
        }
        fputs("</td></tr>\n", f);
    }
    ctl_fmt_time(buf, sizeof(buf), num(job, "started_at"));
    fact(f, "Started", buf);
    double ended;
    if (rt_json_get_double(job, "ended_at", &ended))
        ctl_fmt_time(buf, sizeof(buf), ended);
    else
        snprintf(buf, sizeof(buf), "still running");
    fact(f, "Ended", buf);
    struct json_object *s = rt_json_get_object(job, "summary");
    ctl_fmt_duration(buf, sizeof(buf), num(s, "duration_secs"));
    fact(f, "Duration", buf);
    snprintf(buf, sizeof(buf), "%lld, every %.3g s", (long long)num(s, "samples"), num(job, "interval_secs"));
    fact(f, "Samples", buf);
    /* Requested against used (docs/efficiency.md). */
    ctl_fmt_request(buf, sizeof(buf), rt_json_get_object(job, "request"));
    if (buf[0]) {
        fact(f, "Asked for", buf);
        struct json_object *eff = rt_json_get_object(job, "efficiency");
        static const char *const keys[] = {"cpu_pct", "memory_pct", "gpu_pct"}, *const what[] = {"CPU", "memory", "GPU"};
        size_t len = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < 3; i++) {
            double v;
            if (rt_json_get_double(eff, keys[i], &v) && len < sizeof(buf))
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s %.0f%%", len ? ", " : "", what[i], v);
        }
        fact(f, "Efficiency", buf[0] ? buf : "unknown");
    }
    struct json_object *notes = rt_json_get_array(job, "notes");
    for (size_t i = 0; notes && i < json_object_array_length(notes); i++)
        fact(f, "Note", rt_json_get_string(json_object_array_get_idx(notes, i), "text"));
    fputs("</table></section>\n", f);
}

/* ---- the host ---- */

static void host_section(FILE *f, const struct insight_host *h)
{
    struct json_object *o = h->host;
    char buf[512];
    fputs("<section id=\"host\"><h2>Host</h2><table class=\"facts\">\n", f);
    fact(f, "Hostname", rt_json_get_string(o, "hostname"));
    fact(f, "OS", rt_json_get_string(o, "os"));
    fact(f, "Kernel", rt_json_get_string(o, "kernel"));
    fact(f, "CPU", rt_json_get_string(o, "cpu_model"));
    int64_t v = 0;
    rt_json_get_i64(o, "vcpus", &v);
    snprintf(buf, sizeof(buf), "%lld", (long long)v);
    fact(f, "vCPUs", v > 0 ? buf : NULL);
    buf[0] = '\0';
    if (rt_json_get_i64(o, "memory_mib", &v))
        ctl_fmt_bytes(buf, sizeof(buf), (double)v * 1048576.0);
    fact(f, "Memory", buf);
    double gb;
    buf[0] = '\0';
    if (rt_json_get_double(o, "storage_gb", &gb))
        snprintf(buf, sizeof(buf), "%.0f GB", gb);
    fact(f, "Storage", buf);
    int64_t n = 0, vram;
    rt_json_get_i64(o, "gpu_count", &n);
    if (n > 0) {
        const char *model = rt_json_get_string(o, "gpu_model");
        int len = snprintf(buf, sizeof(buf), "%lld × %s", (long long)n, model ? model : "unknown model");
        if (rt_json_get_i64(o, "gpu_memory_mib", &vram) && len > 0 && (size_t)len < sizeof(buf)) {
            char b[32];
            ctl_fmt_bytes(b, sizeof(b), (double)vram * 1048576.0);
            snprintf(buf + len, sizeof(buf) - (size_t)len, ", %s VRAM in all", b);
        }
        fact(f, "GPUs", buf);
    } else {
        fact(f, "GPUs", "none");
    }
    if (h->cloud) {
        fact(f, "Cloud", rt_json_get_string(h->cloud, "vendor_id"));
        fact(f, "Region", rt_json_get_string(h->cloud, "region_id"));
        fact(f, "Zone", rt_json_get_string(h->cloud, "zone_id"));
        fact(f, "Instance type", rt_json_get_string(h->cloud, "instance_type"));
    } else {
        fact(f, "Cloud", "not detected");
    }
    fputs("</table></section>\n", f);
}

/* ---- statistics ---- */

/* A cell: a figure for people, with its exact value for scripts. */
static void stat_cell(FILE *f, const char *stat, enum rt_fig_unit unit, bool has, double v, const char *run,
                      const char *cls)
{
    fprintf(f, "<td class=\"%s\" data-stat=\"%s\" data-run=\"%s\"", cls, stat, run);
    if (!has) {
        fputs(">—</td>", f);
        return;
    }
    char buf[64];
    if (unit == RT_UNIT_SECS)
        ctl_fmt_duration(buf, sizeof(buf), v);
    else if (unit == RT_UNIT_BYTES)
        ctl_fmt_bytes(buf, sizeof(buf), v);
    else
        snprintf(buf, sizeof(buf), "%.2f", v);
    fprintf(f, " data-value=\"%.17g\">%s</td>", v, buf);
}

/* The statistics table's rows: the duration, the job's figures (the rows
 * of rt_fig_totals with a statistics name), the host's. */
enum stat_kind { S_DURATION, S_FIG, S_HOST };
struct stat_row {
    enum stat_kind kind;
    const char *stat, *title;
    enum rt_fig_unit unit;
    size_t fig;                  /* S_FIG: its rt_fig_totals row; S_HOST: offset in insight_stats */
};

static void stat_cells(FILE *f, const struct stat_row *row, const struct insight_stats *s, const char *run,
                       const char *cls)
{
    bool has = row->kind == S_DURATION || (row->kind == S_FIG ? s->has_fig[row->fig] : s->has_host);
    double v = row->kind == S_DURATION ? s->duration_secs
               : row->kind == S_FIG    ? s->fig[row->fig]
                                       : *(const double *)(const void *)((const char *)s + row->fig);
    stat_cell(f, row->stat, row->unit, has, v, run, cls);
}

static const struct stat_row host_rows[] = {
    {S_HOST, "host_net_in_bytes", "Network in (host)", RT_UNIT_BYTES, offsetof(struct insight_stats, net_in_bytes)},
    {S_HOST, "host_net_out_bytes", "Network out (host)", RT_UNIT_BYTES, offsetof(struct insight_stats, net_out_bytes)},
    {S_HOST, "host_disk_space_peak_bytes", "Disk space used, peak (host)", RT_UNIT_BYTES,
     offsetof(struct insight_stats, space_peak_bytes)},
};

static void stats_row(FILE *f, const struct insight_analysis *a, const struct stat_row *row)
{
    fprintf(f, "<tr><th>%s</th>", row->title);
    char id[32];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)a->run.st.id);
    stat_cells(f, row, &a->run.st, id, "this");
    for (size_t i = 0; i < a->nhist; i++) {
        snprintf(id, sizeof(id), "%llu", (unsigned long long)a->hist[i].st.id);
        stat_cells(f, row, &a->hist[i].st, id, "hist");
    }
    if (a->nhist)
        stat_cells(f, row, &a->combined, "combined", "combined");
    fputs("</tr>\n", f);
}

static void run_header(FILE *f, const struct insight_run *r, const char *cls)
{
    char when[32];
    ctl_fmt_time(when, sizeof(when), num(r->job, "started_at"));
    when[10] = '\0'; /* the date is enough to tell runs apart here */
    fprintf(f, "<th class=\"%s\">job %llu<br><span class=\"muted\">%s, %s</span></th>", cls,
            (unsigned long long)r->st.id, when, rt_json_get_string(r->job, "state"));
}

/* ---- what differs between the runs ---- */

/* The values of one tag key in a run's tags ("lr=0.1" has key "lr"), joined
 * by ", "; NULL when the run has no such tag. */
static char *tag_values(struct json_object *md, const char *key, size_t klen)
{
    struct json_object *tags = rt_json_get_array(md, "tags");
    char *out = NULL;
    for (size_t i = 0; tags && i < json_object_array_length(tags); i++) {
        const char *t = json_object_get_string(json_object_array_get_idx(tags, i));
        const char *eq = strchr(t, '=');
        if (!eq || (size_t)(eq - t) != klen || strncmp(t, key, klen) != 0)
            continue;
        char *more = rt_xasprintf("%s%s%s", out ? out : "", out ? ", " : "", eq + 1);
        free(out);
        out = more;
    }
    return out;
}

static char *command_of(struct json_object *md)
{
    struct json_object *cmd = rt_json_get_array(md, "command");
    char *out = NULL;
    for (size_t i = 0; cmd && i < json_object_array_length(cmd); i++) {
        char *more = rt_xasprintf("%s%s%s", out ? out : "", out ? " " : "",
                                  json_object_get_string(json_object_array_get_idx(cmd, i)));
        free(out);
        out = more;
    }
    return out;
}

/* A row of values, one per run, when they are not all the same. */
static void differing_row(FILE *f, const char *title, const char *stat, char **v, const struct insight_analysis *a,
                          bool code)
{
    size_t n = a->nhist + 1, same = 1;
    for (size_t i = 1; i < n; i++)
        same += (!v[i] && !v[0]) || (v[i] && v[0] && strcmp(v[i], v[0]) == 0);
    if (same == n)
        return;
    fputs("<tr class=\"differs\"><th>", f);
    html_text(f, title);
    fputs("</th>", f);
    for (size_t i = 0; i < n; i++) {
        const struct insight_run *r = i ? &a->hist[i - 1] : &a->run;
        fprintf(f, "<td class=\"%s\" data-stat=\"", i ? "hist" : "this");
        html_text(f, stat);
        fprintf(f, "\" data-run=\"%llu\">%s", (unsigned long long)r->st.id, code && v[i] ? "<code>" : "");
        char *shown = v[i] ? rt_escape_dup(v[i]) : NULL;
        html_text(f, shown ? shown : "—");
        fprintf(f, "%s</td>", code && v[i] ? "</code>" : "");
        free(shown);
    }
    fputs("<td class=\"combined\"></td></tr>\n", f);
}

/* What tells the runs apart: the tags (by key: a sweep over --tag lr=…),
 * the metadata and the command that are not the same in every run. */
static void differing_rows(FILE *f, const struct insight_analysis *a)
{
    size_t n = a->nhist + 1;
    char **v = rt_xcalloc(n, sizeof(char *));
    struct json_object **md = rt_xcalloc(n, sizeof(*md)), *keys = json_object_new_object();
    for (size_t i = 0; i < n; i++)
        md[i] = rt_json_get_object(i ? a->hist[i - 1].job : a->run.job, "metadata");
    for (size_t i = 0; i < n; i++) { /* tag keys in the order runs have them */
        struct json_object *tags = rt_json_get_array(md[i], "tags");
        for (size_t k = 0; tags && k < json_object_array_length(tags); k++) {
            const char *t = json_object_get_string(json_object_array_get_idx(tags, k));
            const char *eq = strchr(t, '=');
            char *key = eq ? rt_xasprintf("%.*s", (int)(eq - t), t) : NULL;
            if (key && !json_object_object_get_ex(keys, key, NULL)) {
                json_object_object_add(keys, key, NULL);
                for (size_t r = 0; r < n; r++)
                    v[r] = tag_values(md[r], key, strlen(key));
                char *title = rt_xasprintf("Tag %s", key), *stat = rt_xasprintf("tag:%s", key);
                differing_row(f, title, stat, v, a, true);
                free(title);
                free(stat);
                for (size_t r = 0; r < n; r++)
                    free(v[r]);
            }
            free(key);
        }
    }
    json_object_put(keys);
    for (size_t m = 0; m < sizeof(metadata_labels) / sizeof(metadata_labels[0]); m++) {
        for (size_t r = 0; r < n; r++)
            v[r] = (char *)rt_json_get_string(md[r], metadata_labels[m].key);
        differing_row(f, metadata_labels[m].label, metadata_labels[m].key, v, a, false);
    }
    for (size_t r = 0; r < n; r++)
        v[r] = command_of(md[r]);
    differing_row(f, "Command", "command", v, a, true);
    for (size_t r = 0; r < n; r++)
        free(v[r]);
    free(v);
    free(md);
}

static void stats_section(FILE *f, const struct insight_analysis *a)
{
    const char *name = rt_json_get_string(a->run.job, "name");
    fputs("<section id=\"stats\"><h2>Statistics</h2>\n<p class=\"muted\">", f);
    if (a->nhist) {
        html_textf(f, "This run and the %zu earlier ended run%s named \"%s\" of the same user; combined: ", a->nhist,
                   a->nhist == 1 ? "" : "s", name);
        fputs("means and durations averaged, peaks and totals the largest. The first rows are what differs "
              "between the runs: their tags, metadata and command, where not the same in all.", f);
    } else if (name) {
        html_textf(f, "No earlier ended runs named \"%s\" of the same user.", name);
    } else {
        fputs("The job has no name, so it has no history: runs are matched by name.", f);
    }
    fputs(" Memory is PSS (proportional set size: shared pages divided among their users). The host's "
          "figures are those of this run only.</p>\n", f);
    fputs("<table class=\"stats\"><thead><tr><th></th>", f);
    run_header(f, &a->run, "this");
    for (size_t i = 0; i < a->nhist; i++)
        run_header(f, &a->hist[i], "hist");
    if (a->nhist)
        fprintf(f, "<th class=\"combined\">combined<br><span class=\"muted\">%zu runs</span></th>", a->nhist + 1);
    fputs("</tr></thead><tbody>\n", f);
    if (a->nhist)
        differing_rows(f, a);
    stats_row(f, a, &(struct stat_row){S_DURATION, "duration_secs", "Duration", RT_UNIT_SECS, 0});
    for (size_t k = 0; k < rt_fig_ntotals; k++) {
        const struct rt_fig_total *t = &rt_fig_totals[k];
        if (t->stat && a->combined.has_fig[k]) /* none of the runs has a GPU figure: no row */
            stats_row(f, a, &(struct stat_row){S_FIG, t->stat, t->title, t->unit, k});
    }
    for (size_t k = 0; k < sizeof(host_rows) / sizeof(host_rows[0]); k++)
        stats_row(f, a, &host_rows[k]);
    fputs("</tbody></table></section>\n", f);
}

/* ---- recommendation and prices ---- */

/* Hourly prices with 4 decimals, the cost of a run (often a fraction of a
 * cent) with 6. */
static void money(FILE *f, double amount, int decimals, const char *currency)
{
    if (strcmp(currency, "USD") == 0)
        fprintf(f, "$%.*f", decimals, amount);
    else
        html_textf(f, "%.*f %s", decimals, amount, currency);
}

static void prices_part(FILE *f, const struct insight_report *r)
{
    const struct insight_prices *p = r->prices;
    fputs("<h3>Cheapest cloud server</h3><p id=\"prices\">", f);
    if (!p->asked) {
        html_textf(f, "Prices were not looked up (%s).", r->prices_off);
    } else if (p->error[0]) {
        html_textf(f, "No prices: the price source at %s did not answer (%s). Nothing else in this report "
                      "depends on it.", r->keeper_url, p->error);
    } else if (!p->have_server) {
        html_textf(f, "No server listed by %s fits the recommendation.", r->keeper_url);
    } else {
        const struct insight_server *s = &p->server;
        double dur = r->a->run.st.duration_secs;
        fputs("<strong>", f);
        html_text(f, s->display_name);
        fputs("</strong> (", f);
        html_textf(f, "%s %s", s->vendor_id, s->server_id);
        fprintf(f, "): %.0f vCPUs, %.1f GiB memory", s->vcpus, s->memory_mib / 1024.0);
        if (s->gpus > 0)
            fprintf(f, ", %.0f GPUs", s->gpus);
        fputs(", ", f);
        money(f, s->price_per_hour, 4, s->currency);
        fputs(" per hour on demand: ", f);
        money(f, s->price_per_hour * dur / 3600.0, 6, s->currency);
        fputs(" for a run as long as this one.", f);
        if (p->have_current && r->host->cloud) {
            double cur = p->current_per_hour * dur / 3600.0, rec = s->price_per_hour * dur / 3600.0;
            fputs("<br>This run on its own instance (", f);
            html_textf(f, "%s %s", rt_json_get_string(r->host->cloud, "vendor_id"),
                       rt_json_get_string(r->host->cloud, "instance_type"));
            fputs(") cost ", f);
            money(f, cur, 6, p->current_currency);
            fputs(" at ", f);
            money(f, p->current_per_hour, 4, p->current_currency);
            fputs(" per hour", f);
            if (cur > 0 && strcmp(p->current_currency, s->currency) == 0)
                fprintf(f, "; the recommended server would cost %.0f%% %s", fabs(cur - rec) / cur * 100,
                        rec <= cur ? "less" : "more");
            fputs(".", f);
        }
        html_textf(f, " Prices from %s: on-demand list prices, without storage, traffic or discounts.",
                   r->keeper_url);
    }
    fputs("</p>\n", f);
}

static void recommendation_section(FILE *f, const struct insight_report *r)
{
    const struct insight_analysis *a = r->a;
    char buf[512];
    fputs("<section id=\"recommendation\"><h2>Recommendation for the next run</h2>\n", f);
    insight_rec_people(&a->rec, buf, sizeof(buf));
    fputs("<p class=\"big\" id=\"rec-people\">", f);
    html_text(f, buf);
    fputs("</p>\n<p class=\"muted\">", f);
    fprintf(f, "From %zu run%s: CPUs are the mean cores rounded (at least 1), or the cores a phase of 10 s or more "
               "held, rounded up, when that is more; memory the peak memory (what it could not do without) × 1.2 "
               "rounded up to 128, 256, 512, 1024, 2048 MiB or whole GiB",
            a->nhist + 1, a->nhist ? "s" : "");
    if (insight_has_gpu(&a->combined))
        fputs("; GPUs the peak GPU use rounded (at least 1 when used); VRAM the peak × 1.2 rounded the same way", f);
    fputs(".</p>\n", f);
    insight_rec_cpu_why(&a->rec, buf, sizeof(buf));
    if (buf[0]) { /* a phase asks for more than the mean: say so, and what the Python rule gives */
        fputs("<p id=\"rec-cpu-why\">CPUs: ", f);
        html_text(f, buf);
        fputs(".</p>\n", f);
    }
    fputs("<dl class=\"requests\">", f);
    insight_rec_slurm(&a->rec, buf, sizeof(buf));
    fputs("<dt>Slurm</dt><dd><code id=\"rec-slurm\">", f);
    html_text(f, buf);
    insight_rec_kubernetes(&a->rec, "", buf, sizeof(buf));
    fputs("</code></dd><dt>Kubernetes (container)</dt><dd><pre id=\"rec-kubernetes\">", f);
    html_text(f, buf);
    insight_rec_metaflow(&a->rec, buf, sizeof(buf));
    fputs("</pre></dd><dt>Metaflow</dt><dd><code id=\"rec-metaflow\">", f);
    html_text(f, buf);
    fputs("</code></dd></dl>\n", f);
    prices_part(f, r);
    fputs("</section>\n", f);
}

bool insight_report_write(FILE *f, const struct insight_report *r)
{
    struct json_object *job = r->a->run.job;
    const char *name = rt_json_get_string(job, "name");
    const char *state = rt_json_get_string(job, "state");
    unsigned long long id = (unsigned long long)r->a->run.st.id;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    html_textf(f, "Job %llu%s%s: resource-tracker report", id, name ? " " : "", name ? name : "");
    fprintf(f, "</title>\n<style>%s</style>\n<style>%s</style>\n</head><body>\n", r->dy->css, css);
    fprintf(f, "<header><h1>Job %llu", id);
    if (name) {
        fputs(": ", f);
        html_text(f, name);
    }
    fputs(" <span class=\"state ", f);
    html_text(f, state);
    fputs("\">", f);
    html_text(f, state);
    fputs("</span></h1><p class=\"muted\">", f);
    char when[32], dur[32];
    ctl_fmt_time(when, sizeof(when), num(job, "started_at"));
    ctl_fmt_duration(dur, sizeof(dur), r->a->run.st.duration_secs);
    const char *host = rt_json_get_string(r->host->host, "hostname");
    html_textf(f, "on %s, started %s, ran %s", host ? host : "an unknown host", when, dur);
    fputs("</p></header>\n<div class=\"grid\">", f);
    job_section(f, job);
    host_section(f, r->host);
    fputs("</div>\n", f);
    stats_section(f, r->a);
    recommendation_section(f, r);
    insight_report_charts(f, r);
    ctl_fmt_time(when, sizeof(when), r->generated_at);
    fprintf(f, "<footer>Generated by resource-trackerctl %s at %s. Charts: dygraphs, from the Debian "
               "package libjs-dygraphs (MIT licence).</footer>\n",
            RT_VERSION, when);
    insight_report_chart_scripts(f, r);
    fputs("</body></html>\n", f);
    return !ferror(f);
}
