/* The job table of top: rows from StreamJobs, their order, the columns that
 * fit a width and their text. */
#include "live/top.h"

#include "rt/json.h"
#include "rt/sample_json.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct col {
    const char *name;
    int width;       /* NAME: at most; COMMAND: at least (it takes what is left) */
    bool left;       /* text aligned left; sorted A to Z (numbers: largest first) */
    int priority;    /* columns are dropped from the highest number down */
};

static const struct col cols[TOP_NCOLS] = {
    [TOP_ID] = {"ID", 6, false, 0},       [TOP_NAME] = {"NAME", 16, true, 0},
    [TOP_USER] = {"USER", 8, true, 1},    [TOP_STATE] = {"S", 2, true, 5},
    [TOP_CORES] = {"CORES", 6, false, 0}, [TOP_RSS] = {"RSS", 9, false, 2},
    [TOP_PSS] = {"PSS", 9, false, 8},     [TOP_READ] = {"READ/s", 9, false, 6},
    [TOP_WRITE] = {"WRITE/s", 9, false, 7}, [TOP_GPU] = {"GPU", 5, false, 3},
    [TOP_VRAM] = {"VRAM", 9, false, 4},   [TOP_TIME] = {"TIME", 7, false, 2},
    [TOP_COMMAND] = {"COMMAND", 12, true, 0},
};

#define NAME_MIN 8

const char *top_col_name(enum top_col c) { return cols[c].name; }

int top_col_from_name(const char *name)
{
    for (int c = 0; c < TOP_NCOLS; c++) {
        const char *n = cols[c].name;
        size_t len = strcspn(n, "/");
        if (strcasecmp(name, n) == 0 || (strlen(name) == len && strncasecmp(name, n, len) == 0))
            return c;
    }
    if (strcasecmp(name, "state") == 0)
        return TOP_STATE;
    return -1;
}

void top_layout(const struct top *t, int width, struct top_layout *l)
{
    bool gpu = t->have_host && t->host.has_gpu_backend;
    bool on[TOP_NCOLS];
    int used = 0, need = cols[TOP_COMMAND].width + 1; /* the command and its separator */
    for (int c = 0; c < TOP_COMMAND; c++) {
        on[c] = gpu || (c != TOP_GPU && c != TOP_VRAM);
        if (on[c])
            used += cols[c].width + (used ? 1 : 0);
    }
    /* Drop the least needed columns until the command has room, then
     * narrow the name. */
    for (int prio = 8; prio > 0 && used + need > width; prio--)
        for (int c = 0; c < TOP_COMMAND; c++)
            if (on[c] && cols[c].priority == prio && used + need > width) {
                on[c] = false;
                used -= cols[c].width + 1;
            }
    int name = cols[TOP_NAME].width;
    while (name > NAME_MIN && used + need > width) {
        name--;
        used--;
    }
    l->n = 0;
    for (int c = 0; c < TOP_COMMAND; c++)
        if (on[c]) {
            l->col[l->n] = (enum top_col)c;
            l->width[l->n++] = c == TOP_NAME ? name : cols[c].width;
        }
    if (width - used - 1 > 0) {
        l->col[l->n] = TOP_COMMAND;
        l->width[l->n++] = width - used - 1;
    }
}

/* ---- cells ---- */

static void cell(const struct top_row *r, enum top_col c, char *buf, size_t size)
{
    switch (c) {
    case TOP_ID: snprintf(buf, size, "%llu", (unsigned long long)r->id); break;
    case TOP_NAME: snprintf(buf, size, "%s", r->name[0] ? r->name : "-"); break;
    case TOP_USER: snprintf(buf, size, "%s", r->user); break;
    case TOP_STATE: snprintf(buf, size, "%c%s", r->state, r->gpu_idle ? "!" : ""); break;
    case TOP_TIME: ctl_fmt_duration(buf, size, r->duration); break;
    case TOP_COMMAND: snprintf(buf, size, "%s", r->command[0] ? r->command : "-"); break;
    default:
        if (!r->has_current || ((c == TOP_GPU || c == TOP_VRAM) && !r->has_gpu)) {
            snprintf(buf, size, "-");
        } else if (c == TOP_CORES) {
            snprintf(buf, size, "%.2f", r->cores);
        } else if (c == TOP_GPU) {
            snprintf(buf, size, "%.2f", r->gpu);
        } else {
            double v = c == TOP_RSS ? r->rss : c == TOP_PSS ? r->pss : c == TOP_READ ? r->read_rate
                     : c == TOP_WRITE ? r->write_rate : r->vram;
            ctl_fmt_bytes(buf, size, v);
        }
    }
}

size_t top_field(char *buf, size_t size, size_t at, const char *text, int width, bool left, bool last)
{
    char cut[2048];
    int w = width > 0 ? (int)ctl_fmt_cut(cut, sizeof(cut), text, (size_t)width) : 0;
    int pad = width > w ? width - w : 0;
    int n = snprintf(buf + at, at < size ? size - at : 0, "%*s%s%*s%s", left ? 0 : pad, "", width > 0 ? cut : "",
                     left && !last ? pad : 0, "", last ? "" : " ");
    return at + (n > 0 ? (size_t)n : 0);
}

void top_format_header(const struct top *t, const struct top_layout *l, bool mark_sort, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->n && at < size; i++) {
        char h[16];
        const char *mark = mark_sort && l->col[i] == t->sort ? (t->reverse ? "^" : "v") : "";
        snprintf(h, sizeof(h), "%s%s", cols[l->col[i]].name, mark);
        at = top_field(buf, size, at, h, l->width[i], cols[l->col[i]].left, i + 1 == l->n);
    }
}

void top_format_row(const struct top_row *r, const struct top_layout *l, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->n && at < size; i++) {
        char v[sizeof(r->command)];
        cell(r, l->col[i], v, sizeof(v));
        at = top_field(buf, size, at, v, l->width[i], cols[l->col[i]].left, i + 1 == l->n);
    }
}

/* ---- rows ---- */

static char state_letter(const char *s)
{
    if (!s)
        return '?';
    if (strcmp(s, "running") == 0)
        return 'R';
    if (strcmp(s, "failed") == 0)
        return 'X';
    return s[0] == 'f' ? 'F' : s[0] == 's' ? 'S' : s[0] == 'l' ? 'L' : '?';
}

static void row_from_job(const struct top *t, struct json_object *j, struct top_row *r)
{
    memset(r, 0, sizeof(*r));
    uint64_t id = 0;
    int64_t uid = -1;
    rt_json_get_u64(j, "id", &id);
    rt_json_get_i64(j, "owner_uid", &uid);
    r->id = id;
    const char *name = rt_json_get_string(j, "name");
    snprintf(r->name, sizeof(r->name), "%s", name ? name : "");
    ctl_fmt_user(uid, r->user, sizeof(r->user));
    r->mine = uid == (int64_t)t->uid;
    r->state = state_letter(rt_json_get_string(j, "state"));
    char *cmd = ctl_job_command(j);
    snprintf(r->command, sizeof(r->command), "%s", cmd ? cmd : "");
    free(cmd);
    rt_json_get_double(rt_json_get_object(j, "summary"), "duration_secs", &r->duration);
    struct json_object *idle = rt_json_get_array(j, "gpu_idle");
    r->gpu_idle = idle && json_object_array_length(idle) > 0;
    struct json_object *c = rt_json_get_object(j, "current");
    r->has_current = c != NULL;
    rt_json_get_double(c, ctl_fig_now("cores_used"), &r->cores);
    rt_json_get_double(c, ctl_fig_now("rss_bytes"), &r->rss);
    rt_json_get_double(c, ctl_fig_now("pss_bytes"), &r->pss);
    rt_json_get_double(c, ctl_fig_now("disk_read_bytes"), &r->read_rate);
    rt_json_get_double(c, ctl_fig_now("disk_write_bytes"), &r->write_rate);
    r->has_gpu = rt_json_get_double(c, ctl_fig_now("gpu_usage"), &r->gpu);
    rt_json_get_double(c, ctl_fig_now("gpu_vram_bytes"), &r->vram);
}

void top_set_jobs(struct top *t, struct json_object *jobs)
{
    size_t n = jobs ? json_object_array_length(jobs) : 0;
    if (n > t->cap) {
        t->cap = n;
        t->rows = rt_xrealloc(t->rows, n * sizeof(*t->rows));
    }
    t->nrows = n;
    for (size_t i = 0; i < n; i++)
        row_from_job(t, json_object_array_get_idx(jobs, i), &t->rows[i]);
    top_sort(t);
    top_refresh_procs(t);
}

int top_set_host(struct top *t, struct json_object *sample)
{
    char err[128];
    rt_sample_reset(&t->host);
    if (rt_sample_from_json(sample, &t->host, err, sizeof(err)) < 0) {
        CTL_ERR("malformed host sample from the daemon: %s", err);
        return -1;
    }
    t->have_host = true;
    return 0;
}

static double number(const struct top_row *r, enum top_col c)
{
    switch (c) {
    case TOP_ID: return (double)r->id;
    case TOP_CORES: return r->has_current ? r->cores : -1;
    case TOP_RSS: return r->has_current ? r->rss : -1;
    case TOP_PSS: return r->has_current ? r->pss : -1;
    case TOP_READ: return r->has_current ? r->read_rate : -1;
    case TOP_WRITE: return r->has_current ? r->write_rate : -1;
    case TOP_GPU: return r->has_gpu ? r->gpu : -1;
    case TOP_VRAM: return r->has_gpu ? r->vram : -1;
    case TOP_TIME: return r->duration;
    default: return 0;
    }
}

static const struct top *sorting; /* qsort has no context argument */

static int compare(const void *pa, const void *pb)
{
    const struct top_row *a = pa, *b = pb;
    enum top_col c = sorting->sort;
    int d;
    if (c == TOP_NAME || c == TOP_USER || c == TOP_STATE || c == TOP_COMMAND) {
        const char *x = c == TOP_NAME ? a->name : c == TOP_USER ? a->user : c == TOP_COMMAND ? a->command
                      : (char[2]){a->state, 0};
        const char *y = c == TOP_NAME ? b->name : c == TOP_USER ? b->user : c == TOP_COMMAND ? b->command
                      : (char[2]){b->state, 0};
        d = strcmp(x, y);
    } else {
        double x = number(a, c), y = number(b, c);
        d = x > y ? -1 : x < y ? 1 : 0; /* largest first */
    }
    if (sorting->reverse)
        d = -d;
    if (d == 0) /* a stable order between ticks: newest first */
        d = a->id > b->id ? -1 : a->id < b->id ? 1 : 0;
    return d;
}

/* The filter: its text in the name, the user or the command, any case. */
static bool passes(const struct top *t, const struct top_row *r)
{
    const char *f = t->filter;
    return !f[0] || strcasestr(r->name, f) || strcasestr(r->user, f) || strcasestr(r->command, f);
}

void top_sort(struct top *t)
{
    sorting = t;
    if (t->nrows)
        qsort(t->rows, t->nrows, sizeof(*t->rows), compare);
    sorting = NULL;
    t->vis = rt_xrealloc(t->vis, (t->nrows ? t->nrows : 1) * sizeof(*t->vis));
    t->nvis = 0;
    for (size_t k = 0; k < t->nrows; k++)
        if ((!t->mine_only || t->rows[k].mine) && passes(t, &t->rows[k]))
            t->vis[t->nvis++] = &t->rows[k];
    /* The selection stays on its job while it is shown, else on its place. */
    for (size_t k = 0; k < t->nvis; k++)
        if (t->vis[k]->id == t->sel_id)
            t->sel = k;
    if (t->sel >= t->nvis)
        t->sel = t->nvis ? t->nvis - 1 : 0;
    t->sel_id = t->nvis ? t->vis[t->sel]->id : 0;
}

void top_free(struct top *t)
{
    json_object_put(t->gpus);
    free(t->procs);
    free(t->vis);
    free(t->rows);
    rt_sample_free(&t->host);
}
