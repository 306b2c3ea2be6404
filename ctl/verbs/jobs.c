/* jobs: the jobs the caller may see, filtered by the daemon (ListJobs). */
#include "verbs/verbs.h"

#include "rt/util.h"

#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum { USER = 'u', NAME = 'n', SINCE = 's', LIMIT = 'l', RUNNING = 'r' };

static const char usage[] =
    "Usage: resource-trackerctl jobs [OPTIONS]\n"
    "List the jobs you may see, newest first.\n\n"
    "  -r, --running           running jobs only\n"
    "  -n, --name NAME         jobs of that name\n"
    "  -u, --user USER         jobs of USER, a name or a uid (yours; an\n"
    "                          administrator: anyone's)\n"
    "  -s, --since TIME        jobs started since TIME: a date/time (2026-01-31,\n"
    "                          \"2026-01-31 14:00\", 14:00, today, yesterday,\n"
    "                          @UNIX-SECONDS) or a duration ago (90s, 30m, 2h, 3d,\n"
    "                          1w, 1h30m)\n"
    "  -l, --limit N           the newest N only\n"
    "  -f, --format FORMAT     text (a table), json or csv; --json is --format json\n"
    "  -h, --help              this help\n\n"
    "In a terminal (or with $COLUMNS) the COMMAND column is cut to the width.\n";

static const struct ctl_opt opts[] = {
    {"running", RUNNING, NULL, NULL, CTL_KIND_NONE},
    {"name", NAME, "NAME", NULL, CTL_KIND_NAME},
    {"user", USER, "USER", "a USER is a user name or a numeric uid", CTL_KIND_USER},
    {"since", SINCE, "TIME", CTL_RULE_SINCE, CTL_KIND_NONE},
    {"limit", LIMIT, "N", "a limit is a whole number above 0", CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_jobs_spec = {
    .verb = "jobs",
    .usage = usage,
    .opts = opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON | CTL_FMT_CSV,
};

static bool parse_user(const char *s, int64_t *uid)
{
    uint64_t u;
    struct passwd *pw;
    if (rt_parse_u64(s, &u) && u < UINT32_MAX)
        *uid = (int64_t)u;
    else if ((pw = getpwnam(s)))
        *uid = pw->pw_uid;
    else
        return false;
    return true;
}

/* Another user's jobs are an administrator's to list: say so rather than
 * print an empty list (the daemon filters what the caller may see). */
static int check_user(struct rt_vl_client *c, int64_t uid, const char *given)
{
    struct json_object *reply, *rp;
    int rc = ctl_call(c, M("Info"), NULL, &reply, &rp);
    if (rc)
        return rc;
    bool admin = false;
    rt_json_get_bool(rp, "caller_is_admin", &admin);
    if (uid != i64(rp, "caller_uid") && !admin) {
        CTL_ERR("permission denied: --user %s: only administrators list other users' jobs", given);
        rc = RT_EXIT_DENIED;
    }
    json_object_put(reply);
    return rc;
}

/* "SIGKILL" for a signal, the status for an exit, "-" for neither. */
static const char *exit_text(struct json_object *j, char *buf, size_t size)
{
    int64_t v;
    const char *abbrev;
    if (rt_json_get_i64(j, "signal", &v) && (abbrev = sigabbrev_np((int)v)) && strlen(abbrev) <= 4)
        snprintf(buf, size, "SIG%s", abbrev);
    else if (rt_json_get_i64(j, "exit_code", &v))
        snprintf(buf, size, "%lld", (long long)v);
    else if (strcmp(rt_json_get_string(j, "state") ?: "", "lost") == 0 ||
             strcmp(rt_json_get_string(j, "state") ?: "", "ended") == 0)
        snprintf(buf, size, "?"); /* ended, its status not known */
    else
        snprintf(buf, size, "-");
    return buf;
}

/* The command line, arguments joined by spaces (NULL when unknown). */
static char *command_text(struct json_object *j)
{
    struct json_object *cmd = rt_json_get_array(rt_json_get_object(j, "metadata"), "command");
    size_t n = cmd ? json_object_array_length(cmd) : 0;
    if (!n)
        return NULL;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(json_object_get_string(json_object_array_get_idx(cmd, i))) + 1;
    char *s = rt_xmalloc(len), *p = s;
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%s", i ? " " : "", json_object_get_string(json_object_array_get_idx(cmd, i)));
    return s;
}

/* Efficiency against the request, CPU/memory/GPU in percent ("24/15/-"),
 * "-" for a job that asked for nothing. */
static const char *efficiency_text(struct json_object *j, char *buf, size_t size)
{
    struct json_object *e = rt_json_get_object(j, "efficiency");
    static const char *const keys[] = {"cpu_pct", "memory_pct", "gpu_pct"};
    size_t n = 0;
    snprintf(buf, size, "-");
    for (size_t i = 0; e && i < RT_ARRAY_SIZE(keys) && n < size; i++) {
        double v;
        if (rt_json_get_double(e, keys[i], &v))
            n += (size_t)snprintf(buf + n, size - n, "%s%.0f", i ? "/" : "", v);
        else
            n += (size_t)snprintf(buf + n, size - n, "%s-", i ? "/" : "");
    }
    return buf;
}

static void print_table(struct json_object *jobs)
{
    char head[256];
    int fixed = snprintf(head, sizeof(head), "%-6s %-20s %-9s %-7s %-8s %-10s %-19s %9s %8s %8s %10s %-11s  ", "ID",
                         "NAME", "STATE", "EXIT", "PID", "USER", "STARTED", "DURATION", "AVG CPU", "PEAK CPU",
                         "PEAK RSS", "EFF C/M/G%");
    /* The command takes what the terminal has left, 10 characters at least. */
    size_t width = ctl_term_width();
    size_t cmd_width = !width ? SIZE_MAX : width > (size_t)fixed + 10 ? width - (size_t)fixed : 10;
    printf("%sCOMMAND\n", head);
    bool idle_seen = false;
    for (size_t i = 0; i < json_object_array_length(jobs); i++) {
        struct json_object *j = json_object_array_get_idx(jobs, i);
        struct json_object *s = rt_json_get_object(j, "summary");
        char name[128], user[64], user_cell[64], code[16], started[32], dur[32], mem[32], eff[40], cmd_cell[4096];
        ctl_fmt_cell(name, sizeof(name), rt_json_get_string(j, "name"), 20);
        ctl_fmt_cell(user_cell, sizeof(user_cell), ctl_fmt_user(i64(j, "owner_uid"), user, sizeof(user)), 10);
        ctl_fmt_time(started, sizeof(started), dbl(j, "started_at"));
        ctl_fmt_duration(dur, sizeof(dur), dbl(s, "duration_secs"));
        ctl_fmt_bytes(mem, sizeof(mem), ctl_total0(s, "peak_rss_bytes"));
        char *cmd = command_text(j);
        ctl_fmt_cut(cmd_cell, sizeof(cmd_cell), cmd ? cmd : "-", cmd_width);
        free(cmd);
        /* "!": a GPU of it idle but held, or given to it and unused */
        struct json_object *idle = rt_json_get_array(j, "gpu_idle");
        char state[16];
        bool is_idle = idle && json_object_array_length(idle) > 0;
        snprintf(state, sizeof(state), "%s%s", rt_json_get_string(j, "state"), is_idle ? "!" : "");
        idle_seen |= is_idle;
        printf("%-6lld %s %-9s %-7s %-8lld %s %-19s %9s %8.2f %8.2f %10s %-11s  %s\n", (long long)i64(j, "id"), name,
               state, exit_text(j, code, sizeof(code)), (long long)i64(j, "pid"), user_cell, started, dur,
               ctl_total0(s, "avg_cores"), ctl_total0(s, "peak_cores"), mem, efficiency_text(j, eff, sizeof(eff)),
               cmd_cell);
    }
    if (idle_seen)
        printf("running!: a GPU of the job is idle but held, or was given to it and is unused "
               "(status JOB, gpus)\n");
}

/* RFC 4180: quoted when it holds a comma or a quote. Users' text (a
 * command line) keeps no control character: \xHH (rt_text_safe), so a line
 * break is never in a field. */
static void csv_field(const char *text, bool last)
{
    char *safe = text ? rt_text_safe_dup(text) : NULL, *s = safe;
    if (s && s[strcspn(s, ",\"")]) {
        putchar('"');
        for (; *s; s++) {
            if (*s == '"')
                putchar('"');
            putchar(*s);
        }
        putchar('"');
    } else if (s) {
        fputs(s, stdout);
    }
    free(safe);
    putchar(last ? '\n' : ',');
}

static void csv_number(struct json_object *o, const char *key)
{
    struct json_object *v;
    if (json_object_object_get_ex(o, key, &v) && v)
        printf("%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    putchar(',');
}

static void print_csv(struct json_object *jobs)
{
    printf("id,name,state,exit_code,signal,pid,user,owner_uid,started_at,ended_at,duration_secs,cpu_secs,"
           "avg_cores,peak_cores,peak_rss_bytes,peak_pss_bytes,command\n");
    for (size_t i = 0; i < json_object_array_length(jobs); i++) {
        struct json_object *j = json_object_array_get_idx(jobs, i);
        struct json_object *s = rt_json_get_object(j, "summary");
        char user[64];
        printf("%lld,", (long long)i64(j, "id"));
        csv_field(rt_json_get_string(j, "name"), false);
        csv_field(rt_json_get_string(j, "state"), false);
        csv_number(j, "exit_code");
        csv_number(j, "signal");
        csv_number(j, "pid");
        csv_field(ctl_fmt_user(i64(j, "owner_uid"), user, sizeof(user)), false);
        csv_number(j, "owner_uid");
        csv_number(j, "started_at");
        csv_number(j, "ended_at");
        static const char *const totals[] = {"duration_secs", "cpu_secs", "avg_cores", "peak_cores",
                                             "peak_rss_bytes", "peak_pss_bytes"};
        for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++)
            csv_number(s, totals[k]);
        char *cmd = command_text(j);
        csv_field(cmd, true);
        free(cmd);
    }
}

int ctl_jobs(struct ctl *ctl, int argc, char **argv)
{
    struct json_object *filter = json_object_new_object();
    const char *user = NULL;
    int64_t uid = -1, limit;
    double since;
    struct ctl_args a;
    ctl_args_init(&a, ctl, &ctl_jobs_spec);
    for (int o; (o = ctl_args_next(&a, argc, argv)) != CTL_ARGS_END;) {
        bool ok = true;
        switch (o) {
        case CTL_ARGS_STOP:
            json_object_put(filter);
            return a.rc;
        case RUNNING:
            json_object_object_add(filter, "running_only", json_object_new_boolean(1));
            break;
        case NAME:
            json_object_object_add(filter, "name", json_object_new_string(optarg));
            break;
        case USER:
            if ((ok = parse_user(optarg, &uid))) {
                user = optarg;
                json_object_object_add(filter, "owner_uid", json_object_new_int64(uid));
            }
            break;
        case SINCE:
            if ((ok = ctl_parse_since(optarg, (double)rt_real_ns() / 1e9, &since)))
                json_object_object_add(filter, "since", json_object_new_double(since));
            break;
        case LIMIT:
            if ((ok = ctl_parse_count(optarg, &limit)))
                json_object_object_add(filter, "limit", json_object_new_int64(limit));
            break;
        }
        if (!ok) {
            json_object_put(filter);
            return ctl_args_invalid(&a, o, optarg);
        }
    }
    if (ctl_args_operands(&a, argc, argv, NULL, 0, 0)) {
        json_object_put(filter);
        return RT_EXIT_USAGE;
    }
    struct rt_vl_client c = {.fd = -1};
    struct json_object *jobs = NULL;
    int rc = ctl_connect(ctl, &c);
    if (!rc && user)
        rc = check_user(&c, uid, user);
    if (rc)
        json_object_put(filter);
    else
        rc = ctl_list_jobs(&c, filter, &jobs);
    if (!rc) {
        if (ctl->format == CTL_FMT_JSON)
            ctl_print_json(stdout, jobs);
        else if (ctl->format == CTL_FMT_CSV)
            print_csv(jobs);
        else
            print_table(jobs);
    }
    json_object_put(jobs);
    rt_vl_client_close(&c);
    return rc;
}
