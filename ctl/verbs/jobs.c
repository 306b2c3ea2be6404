/* jobs: the jobs the caller may see, filtered by the daemon (ListJobs). */
#include "verbs/verbs.h"

#include "rt/text.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define COLS_LIST "id,name,state,exit,pid,user,started,duration,cpu,peak-cpu,memory,rss,eff,command"

enum { USER = 'u', NAME = 'n', SINCE = 's', LIMIT = 'l', RUNNING = 'r', COLUMNS = 'o', LONG = CTL_OPT_LONG };

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
    "  --long                  every column of the table\n"
    "  -o, --columns LIST      these columns, in this order: a comma-separated list of\n"
    "                          " COLS_LIST "\n"
    "  -f, --format FORMAT     text (a table), json or csv; --json is --format json\n"
    "  -h, --help              this help\n\n"
    "The table fits the terminal (or $COLUMNS): the least needed columns are left\n"
    "out until COMMAND, last, has room, and COMMAND is cut to the width left. USER\n"
    "is shown when the jobs are more than one user's. MEMORY is the job's peak\n"
    "memory: its cgroup's for a cgroup job, else the peak PSS of its processes.\n";

static const struct ctl_opt opts[] = {
    {"running", RUNNING, NULL, NULL, CTL_KIND_NONE},
    {"name", NAME, "NAME", NULL, CTL_KIND_NAME},
    {"user", USER, "USER", "a USER is a user name or a numeric uid", CTL_KIND_USER},
    {"since", SINCE, "TIME", CTL_RULE_SINCE, CTL_KIND_NONE},
    {"limit", LIMIT, "N", "a limit is a whole number above 0", CTL_KIND_NONE},
    {"long", LONG, NULL, NULL, CTL_KIND_NONE},
    {"columns", COLUMNS, "LIST", "a LIST is columns separated by commas: " COLS_LIST, CTL_KIND_NONE},
    {NULL, 0, NULL, NULL, CTL_KIND_NONE},
};

const struct ctl_spec ctl_jobs_spec = {
    .verb = "jobs",
    .usage = usage,
    .opts = opts,
    .formats = CTL_FMT_TEXT | CTL_FMT_JSON | CTL_FMT_CSV,
};

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

/* ---- the table ---- */

enum col_id { ID, NAME_, STATE, EXIT, PID, USER_, STARTED, DURATION, CPU, PEAK_CPU, MEMORY, RSS, EFF, COMMAND, NCOLS };

static const struct col {
    const char *key;  /* its name for -o */
    const char *head;
    bool right;       /* a number: aligned right */
    size_t cap;       /* the widest a cell gets (cut with …); 0: none */
    int drop;         /* dropped in a narrow terminal, the highest first; 0: never */
} cols[NCOLS] = {
    [ID] = {"id", "ID", true, 0, 0},
    [NAME_] = {"name", "NAME", false, 24, 0},
    [STATE] = {"state", "STATE", false, 0, 0},
    [EXIT] = {"exit", "EXIT", false, 0, 4},
    [PID] = {"pid", "PID", true, 0, 7},
    [USER_] = {"user", "USER", false, 12, 5},
    [STARTED] = {"started", "STARTED", false, 0, 6},
    [DURATION] = {"duration", "DURATION", true, 0, 2},
    [CPU] = {"cpu", "CPU", true, 0, 3},
    [PEAK_CPU] = {"peak-cpu", "PEAK CPU", true, 0, 8},
    [MEMORY] = {"memory", "MEMORY", true, 0, 1},
    [RSS] = {"rss", "PEAK RSS", true, 0, 9},
    [EFF] = {"eff", "EFF C/M/G%", false, 0, 10},
    [COMMAND] = {"command", "COMMAND", false, 0, 0},
};

#define CMD_MIN 12 /* the command's width at least, when columns are dropped for it */

static const enum col_id default_cols[] = {ID, NAME_, STATE, EXIT, USER_, STARTED, DURATION, CPU, MEMORY, EFF, COMMAND};
static const enum col_id long_cols[] = {ID,  NAME_,    STATE, EXIT,     PID,    USER_, STARTED,
                                        DURATION, CPU, PEAK_CPU, MEMORY, RSS, EFF,   COMMAND};

struct layout {
    enum col_id c[NCOLS];
    size_t n;
    bool chosen; /* -o or --long: every column shown, none dropped */
};

/* "id,name,command": 0, or -1 when a name is none of the columns. */
static int parse_cols(struct layout *l, const char *list)
{
    l->n = 0;
    l->chosen = true;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int k = -1;
        for (int c = 0; c < NCOLS; c++)
            if (strlen(cols[c].key) == len && strncasecmp(cols[c].key, p, len) == 0)
                k = c;
        if (k < 0 || len == 0 || l->n == NCOLS)
            return -1;
        l->c[l->n++] = (enum col_id)k;
        p += len + (p[len] == ',');
    }
    return l->n ? 0 : -1;
}

/* "MM-DD HH:MM" this year, the date alone before: the table's short form. */
static void started_text(char *buf, size_t size, double unix_secs)
{
    time_t t = (time_t)unix_secs, now = time(NULL);
    struct tm tm, today;
    localtime_r(&t, &tm);
    localtime_r(&now, &today);
    strftime(buf, size, tm.tm_year == today.tm_year ? "%m-%d %H:%M" : "%Y-%m-%d", &tm);
}

/* One cell as text (escaped and cut to its cap by the caller). */
static char *cell(struct json_object *j, enum col_id c)
{
    struct json_object *s = rt_json_get_object(j, "summary");
    char buf[64];
    switch (c) {
    case ID: return rt_xasprintf("%lld", (long long)i64(j, "id"));
    case NAME_: return rt_xstrdup(rt_json_get_string(j, "name") ?: "-");
    case STATE: { /* "!": a GPU of it idle but held, or given to it and unused */
        struct json_object *idle = rt_json_get_array(j, "gpu_idle");
        return rt_xasprintf("%s%s", rt_json_get_string(j, "state") ?: "?",
                            idle && json_object_array_length(idle) ? "!" : "");
    }
    case EXIT: ctl_fmt_end(buf, sizeof(buf), j, true); break;
    case PID: return rt_xasprintf("%lld", (long long)i64(j, "pid"));
    case USER_: ctl_fmt_user(i64(j, "owner_uid"), buf, sizeof(buf)); break;
    case STARTED: started_text(buf, sizeof(buf), dbl(j, "started_at")); break;
    case DURATION: ctl_fmt_duration(buf, sizeof(buf), dbl(s, "duration_secs")); break;
    case CPU: return rt_xasprintf("%.2f", ctl_total0(s, "avg_cores"));
    case PEAK_CPU: return rt_xasprintf("%.2f", ctl_total0(s, "peak_cores"));
    case MEMORY: ctl_fmt_bytes(buf, sizeof(buf), ctl_job_memory(s, NULL)); break;
    case RSS: ctl_fmt_bytes(buf, sizeof(buf), ctl_total0(s, "peak_rss_bytes")); break;
    case EFF: efficiency_text(j, buf, sizeof(buf)); break;
    case COMMAND: {
        char *cmd = ctl_job_command(j);
        return cmd ? cmd : rt_xstrdup("-");
    }
    case NCOLS: break;
    }
    return rt_xstrdup(buf);
}

static void print_table(struct json_object *jobs, struct layout *l)
{
    size_t rows = json_object_array_length(jobs), width[NCOLS] = {0};
    /* USER by default only where the jobs are more than one user's. */
    bool users = false;
    for (size_t i = 1; i < rows && !users; i++)
        users = i64(json_object_array_get_idx(jobs, i), "owner_uid") !=
                i64(json_object_array_get_idx(jobs, 0), "owner_uid");
    /* EFF by default only where a job asked for something. */
    bool asked = false, idle = false;
    for (size_t i = 0; i < rows; i++) {
        struct json_object *j = json_object_array_get_idx(jobs, i), *g = rt_json_get_array(j, "gpu_idle");
        asked |= rt_json_get_object(j, "request") != NULL;
        idle |= g && json_object_array_length(g) > 0;
    }
    for (size_t k = l->n; !l->chosen && k-- > 0;)
        if ((l->c[k] == USER_ && !users) || (l->c[k] == EFF && !asked))
            memmove(&l->c[k], &l->c[k + 1], (--l->n - k) * sizeof(l->c[0]));
    char **text = rt_xcalloc(rows * NCOLS, sizeof(char *));
    for (size_t k = 0; k < l->n; k++) {
        enum col_id c = l->c[k];
        width[c] = strlen(cols[c].head);
        for (size_t i = 0; i < rows; i++) {
            char **t = &text[i * NCOLS + c];
            *t = cell(json_object_array_get_idx(jobs, i), c);
            size_t w = ctl_fmt_width(*t);
            if (cols[c].cap && w > cols[c].cap)
                w = cols[c].cap;
            if (w > width[c])
                width[c] = w;
        }
    }
    /* In a terminal the table fits its width: the least needed columns
     * go until the command, last, has CMD_MIN characters. */
    size_t term = ctl_term_width(), used = 0;
    bool flex = l->n && l->c[l->n - 1] == COMMAND; /* last: it takes the width left */
    for (size_t k = 0; k + flex < l->n; k++)
        used += width[l->c[k]] + 1;
    while (term && flex && !l->chosen && used + CMD_MIN > term) {
        size_t worst = l->n;
        for (size_t k = 0; k < l->n; k++)
            if (cols[l->c[k]].drop && (worst == l->n || cols[l->c[k]].drop > cols[l->c[worst]].drop))
                worst = k;
        if (worst == l->n)
            break;
        used -= width[l->c[worst]] + 1;
        memmove(&l->c[worst], &l->c[worst + 1], (--l->n - worst) * sizeof(l->c[0]));
    }
    if (flex)
        width[COMMAND] = term > used + CMD_MIN ? term - used : term ? CMD_MIN : SIZE_MAX;
    char cut[4096];
    for (size_t i = 0; i <= rows; i++) {
        for (size_t k = 0; k < l->n; k++) {
            enum col_id c = l->c[k];
            size_t w = ctl_fmt_cut(cut, sizeof(cut), i ? text[(i - 1) * NCOLS + c] : cols[c].head, width[c]);
            int pad = width[c] > w && width[c] != SIZE_MAX ? (int)(width[c] - w) : 0;
            printf("%s%*s%s%*s", k ? " " : "", cols[c].right ? pad : 0, "", cut,
                   cols[c].right || k + 1 == l->n ? 0 : pad, "");
        }
        putchar('\n');
    }
    for (size_t i = 0; i < rows * NCOLS; i++)
        free(text[i]);
    free(text);
    if (idle)
        printf("running!: a GPU of the job is idle but held, or was given to it and is unused "
               "(status JOB, gpus)\n");
}

/* RFC 4180: quoted when it holds a comma or a quote. Users' text (a
 * command line) keeps no control character: escaped (rt_escape_into, \\n), so a line
 * break is never in a field. */
static void csv_field(const char *text, bool last)
{
    char *safe = text ? rt_escape_dup(text) : NULL, *s = safe;
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
        char *cmd = ctl_job_command(j);
        csv_field(cmd, true);
        free(cmd);
    }
}

int ctl_jobs(struct ctl *ctl, int argc, char **argv)
{
    struct json_object *filter = json_object_new_object();
    struct layout layout = {.n = RT_ARRAY_SIZE(default_cols)};
    memcpy(layout.c, default_cols, sizeof(default_cols));
    bool table_opts = false;
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
            if ((ok = ctl_parse_user(optarg, &uid))) {
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
        case LONG:
            layout = (struct layout){.n = RT_ARRAY_SIZE(long_cols), .chosen = true};
            memcpy(layout.c, long_cols, sizeof(long_cols));
            table_opts = true;
            break;
        case COLUMNS:
            ok = parse_cols(&layout, optarg) == 0;
            table_opts = true;
            break;
        }
        if (!ok) {
            json_object_put(filter);
            return ctl_args_invalid(&a, o, optarg);
        }
    }
    if (ctl_args_operands(&a, argc, argv, NULL, 0, 0) ||
        (table_opts && ctl->format != CTL_FMT_TEXT &&
         ctl_args_error(&a, "--long and --columns choose the columns of the text table, not of %s",
                        ctl->json ? "JSON" : "CSV"))) {
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
            print_table(jobs, &layout);
    }
    json_object_put(jobs);
    rt_vl_client_close(&c);
    return rc;
}
