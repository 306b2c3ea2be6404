/* The full-screen view of top (ncurses): the host at the top (per-CPU bars,
 * memory, disks, network, GPUs), the job table below, a key line at the
 * bottom. Redrawn on each tick's jobs reply, on keys and on resizes; the
 * terminal is restored however the loop ends. */
#include "live/top.h"

#include "rt/json.h"

#include <curses.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPU_CELL 20      /* "12  [|||||    42%] " */
#define GPU_LINES_MAX 4

struct screen {
    struct top *t;
    bool colors;
    char status[128];    /* a one-off message for the key line */
};

/* ---- drawing helpers ---- */

/* text at (y, x), cut to the screen's width */
static void put(int y, int x, const char *text)
{
    if (y >= LINES || x >= COLS)
        return;
    mvaddnstr(y, x, text, COLS - x);
}

/* "[|||||     42%]" of width w for a fraction 0..1 */
static void bar(struct screen *sc, int y, int x, int w, double frac, const char *label)
{
    if (w < 4 || y >= LINES)
        return;
    if (frac < 0)
        frac = 0;
    if (frac > 1)
        frac = 1;
    int inner = w - 2, fill = (int)(frac * inner + 0.5), len = (int)strlen(label);
    int pair = frac > 0.9 ? 3 : frac > 0.6 ? 2 : 1; /* green, yellow, red */
    put(y, x, "[");
    for (int i = 0; i < inner && x + 1 + i < COLS; i++) {
        bool text = i >= inner - len; /* the label, right-aligned inside */
        char ch = text ? label[i - (inner - len)] : i < fill ? '|' : ' ';
        if (sc->colors && !text)
            attron(COLOR_PAIR(pair));
        mvaddch(y, x + 1 + i, (chtype)ch);
        if (sc->colors && !text)
            attroff(COLOR_PAIR(pair));
    }
    put(y, x + w - 1, "]");
}

static int draw_title(struct screen *sc, int y)
{
    struct top *t = sc->t;
    char when[32], line[512];
    ctl_fmt_time(when, sizeof(when), (double)t->host.timestamp_secs);
    snprintf(line, sizeof(line), "%s  %s  every %.3gs  %s  resource-trackerd %s%s", t->hostname, when + 11,
             t->interval, t->admin && !t->mine_only ? "all users' jobs" : "your jobs", t->version,
             t->paused ? "  [paused]" : "");
    attron(A_BOLD);
    put(y, 0, line);
    attroff(A_BOLD);
    return y + 1;
}

/* Per-CPU bars, four to a line at 80 columns; with too many CPUs for the
 * room, one digit per CPU (its busy tenth, * when over 95 %). */
static int draw_cpu(struct screen *sc, int y, int max_lines)
{
    const struct rt_cpu *c = &sc->t->host.cpu;
    char label[64];
    snprintf(label, sizeof(label), "%.2f/%zu", c->utilization_pct, c->n_cores);
    put(y, 0, "CPU");
    bar(sc, y, 5, COLS / 2 - 5, c->n_cores ? c->utilization_pct / (double)c->n_cores : 0, label);
    snprintf(label, sizeof(label), "  %u processes", c->process_count);
    put(y, COLS / 2, label);
    y++;
    int per_line = COLS / CPU_CELL > 0 ? COLS / CPU_CELL : 1;
    int lines = (int)((c->n_cores + (size_t)per_line - 1) / (size_t)per_line);
    if (lines <= max_lines) {
        for (size_t i = 0; i < c->n_cores; i++) {
            int row = y + (int)i / per_line, col = (int)i % per_line * CPU_CELL;
            char num[24];
            snprintf(num, sizeof(num), "%zu", i);
            put(row, col, num);
            snprintf(label, sizeof(label), "%.0f%%", c->per_core_pct[i]);
            bar(sc, row, col + 4, CPU_CELL - 5, c->per_core_pct[i] / 100.0, label);
        }
        return y + lines;
    }
    int width = COLS - 6 > 1 ? COLS - 6 : 1;
    put(y, 0, "CPUs");
    for (size_t i = 0; i < c->n_cores; i++) {
        double p = c->per_core_pct[i];
        char ch = p >= 95 ? '*' : p < 5 ? '.' : (char)('0' + (int)(p / 10));
        int row = y + (int)i / width;
        if (row >= LINES)
            break;
        mvaddch(row, 5 + (int)i % width, (chtype)ch);
    }
    return y + (int)((c->n_cores + (size_t)width - 1) / (size_t)width);
}

static int draw_memory(struct screen *sc, int y)
{
    const struct rt_memory *m = &sc->t->host.memory;
    char a[32], b[32], label[80];
    int half = COLS / 2;
    ctl_fmt_bytes(a, sizeof(a), (double)(m->used_mib * RT_MIB));
    ctl_fmt_bytes(b, sizeof(b), (double)(m->total_mib * RT_MIB));
    snprintf(label, sizeof(label), "%s/%s", a, b);
    put(y, 0, "Mem");
    bar(sc, y, 5, half - 6, m->total_mib ? (double)m->used_mib / (double)m->total_mib : 0, label);
    ctl_fmt_bytes(a, sizeof(a), (double)(m->swap_used_mib * RT_MIB));
    ctl_fmt_bytes(b, sizeof(b), (double)(m->swap_total_mib * RT_MIB));
    snprintf(label, sizeof(label), "%s/%s", a, b);
    put(y, half, "Swap");
    bar(sc, y, half + 5, COLS - half - 5, m->swap_total_mib ? (double)m->swap_used_mib / (double)m->swap_total_mib : 0,
        label);
    return y + 1;
}

/* Disks and interfaces on one line each, as many as fit. */
static int draw_io(struct screen *sc, int y)
{
    const struct rt_sample *s = &sc->t->host;
    char line[1024], a[32], b[32];
    size_t at = (size_t)snprintf(line, sizeof(line), "Disk");
    for (size_t i = 0; i < s->n_disks && at < sizeof(line); i++) {
        ctl_fmt_bytes(a, sizeof(a), s->disks[i].read_bytes_per_sec);
        ctl_fmt_bytes(b, sizeof(b), s->disks[i].write_bytes_per_sec);
        at += (size_t)snprintf(line + at, sizeof(line) - at, "  %s r %s/s w %s/s", s->disks[i].device, a, b);
    }
    put(y++, 0, line);
    at = (size_t)snprintf(line, sizeof(line), "Net ");
    for (size_t i = 0; i < s->n_nets && at < sizeof(line); i++) {
        ctl_fmt_bytes(a, sizeof(a), s->nets[i].rx_bytes_per_sec);
        ctl_fmt_bytes(b, sizeof(b), s->nets[i].tx_bytes_per_sec);
        at += (size_t)snprintf(line + at, sizeof(line) - at, "  %s rx %s/s tx %s/s", s->nets[i].interface, a, b);
    }
    put(y++, 0, line);
    return y;
}

static int draw_gpus(struct screen *sc, int y)
{
    const struct rt_sample *s = &sc->t->host;
    size_t shown = s->n_gpus > GPU_LINES_MAX ? GPU_LINES_MAX - 1 : s->n_gpus;
    for (size_t i = 0; i < shown; i++) {
        const struct rt_gpu *g = &s->gpus[i];
        char label[16], a[32], b[32], rest[512];
        snprintf(label, sizeof(label), "%.0f%%", g->utilization_pct);
        put(y, 0, "GPU");
        put(y, 4, g->host_id);
        bar(sc, y, 8, 16, g->utilization_pct / 100.0, label);
        ctl_fmt_bytes(a, sizeof(a), (double)g->vram_used_bytes);
        ctl_fmt_bytes(b, sizeof(b), (double)g->vram_total_bytes);
        int n = snprintf(rest, sizeof(rest), " VRAM %s/%s", a, b);
        if (g->has_temperature && n > 0 && (size_t)n < sizeof(rest))
            n += snprintf(rest + n, sizeof(rest) - (size_t)n, " %u C", g->temperature_celsius);
        if (g->has_power && n > 0 && (size_t)n < sizeof(rest))
            n += snprintf(rest + n, sizeof(rest) - (size_t)n, " %.0f W", g->power_watts);
        char holders[256];
        top_gpu_holders(sc->t, g->uuid, holders, sizeof(holders));
        if (n > 0 && (size_t)n < sizeof(rest))
            snprintf(rest + n, sizeof(rest) - (size_t)n, "  %s", holders[0] ? holders : g->name);
        put(y++, 24, rest);
    }
    if (shown < s->n_gpus) {
        char more[64];
        snprintf(more, sizeof(more), "GPU  and %zu more (resource-trackerctl status)", s->n_gpus - shown);
        put(y++, 0, more);
    }
    return y;
}

static void draw_jobs(struct screen *sc, int y, int bottom)
{
    struct top *t = sc->t;
    enum top_col cols[TOP_NCOLS];
    int name_width;
    size_t n = top_layout(t, COLS, cols, &name_width);
    char line[1024];
    top_format_header(t, cols, n, name_width, true, line, sizeof(line));
    attron(A_REVERSE);
    mvhline(y, 0, ' ', COLS);
    put(y, 0, line);
    attroff(A_REVERSE);
    int rows = bottom - y - 1;
    if (rows < 0)
        rows = 0;
    if (t->scroll + (size_t)rows > t->nvis)
        t->scroll = t->nvis > (size_t)rows ? t->nvis - (size_t)rows : 0;
    for (int i = 0; i < rows && t->scroll + (size_t)i < t->nvis; i++) {
        const struct top_row *r = t->vis[t->scroll + (size_t)i];
        top_format_row(r, cols, n, name_width, line, sizeof(line));
        if (r->state != 'R')
            attron(A_DIM);
        put(y + 1 + i, 0, line);
        attroff(A_DIM);
    }
    if (!t->nvis)
        put(y + 1, 0, t->mine_only || !t->admin ? "  (none of your jobs is running)" : "  (no job is running)");
}

static const char *const help_lines[] = {
    "resource-trackerctl top: keys",
    "",
    "  q            quit",
    "  < >  <- ->   sort by the previous / next column",
    "  r            reverse the order",
    "  c m t        sort by cores, memory (RSS), time",
    "  a            all jobs you may see / only yours",
    "  S column !   a GPU of the job is idle but held",
    "  GPU lines    IDLE (idle but held), STALLED, who holds it",
    "  space p      pause / resume",
    "  up down      scroll the jobs (page up / down, home, end)",
    "  h ?          this help (any key closes it)",
};

static void draw_help(void)
{
    int n = (int)(sizeof(help_lines) / sizeof(help_lines[0])), w = 58;
    int y0 = (LINES - n - 2) / 2 > 0 ? (LINES - n - 2) / 2 : 0, x0 = (COLS - w) / 2 > 0 ? (COLS - w) / 2 : 0;
    for (int i = 0; i < n + 2 && y0 + i < LINES; i++) {
        mvhline(y0 + i, x0, ' ', w < COLS ? w : COLS);
        if (i > 0 && i <= n)
            put(y0 + i, x0 + 2, help_lines[i - 1]);
    }
    if (w <= COLS && n + 2 <= LINES) {
        mvhline(y0, x0, '-', w);
        mvhline(y0 + n + 1, x0, '-', w);
    }
}

static void draw(struct screen *sc)
{
    struct top *t = sc->t;
    erase();
    if (!t->have_host) {
        put(0, 0, "waiting for the daemon's first sample...");
        refresh();
        return;
    }
    int y = draw_title(sc, 0);
    /* The host takes at most about half of the screen; the jobs the rest. */
    y = draw_cpu(sc, y, LINES / 6 > 1 ? LINES / 6 : 1);
    y = draw_memory(sc, y);
    y = draw_io(sc, y);
    y = draw_gpus(sc, y);
    draw_jobs(sc, y, LINES - 1);
    attron(A_REVERSE);
    mvhline(LINES - 1, 0, ' ', COLS);
    put(LINES - 1, 0, sc->status[0] ? sc->status : "q quit  < > sort  r reverse  a all/mine  space pause  h help");
    attroff(A_REVERSE);
    if (t->help)
        draw_help();
    refresh();
}

/* ---- keys ---- */

static void sort_by(struct top *t, enum top_col c)
{
    t->sort = c;
    t->reverse = false;
}

/* Sort by the column left (dir -1) or right (+1) of the current one. */
static void sort_step(struct top *t, int dir)
{
    enum top_col cols[TOP_NCOLS];
    int name_width;
    size_t n = top_layout(t, COLS, cols, &name_width);
    size_t k = 0;
    while (k < n && cols[k] != t->sort)
        k++;
    k = k == n ? 0 : (size_t)(((int)k + dir + (int)n) % (int)n);
    sort_by(t, cols[k]);
}

/* Returns false to quit. */
static bool key(struct screen *sc, int ch)
{
    struct top *t = sc->t;
    sc->status[0] = '\0';
    if (t->help && ch != KEY_RESIZE) {
        t->help = false;
        return true;
    }
    int page = LINES / 2 > 1 ? LINES / 2 : 1;
    switch (ch) {
    case 'q': case 'Q': return false;
    case '<': case ',': case KEY_LEFT: sort_step(t, -1); break;
    case '>': case '.': case KEY_RIGHT: sort_step(t, +1); break;
    case 'r': case 'R': t->reverse = !t->reverse; break;
    case 'c': case 'C': sort_by(t, TOP_CORES); break;
    case 'm': case 'M': sort_by(t, TOP_RSS); break;
    case 't': case 'T': sort_by(t, TOP_TIME); break;
    case 'a': case 'A':
        if (t->admin)
            t->mine_only = !t->mine_only;
        else
            snprintf(sc->status, sizeof(sc->status), "you see your own jobs (administrators see everyone's)");
        break;
    case ' ': case 'p': case 'P': t->paused = !t->paused; break;
    case 'h': case 'H': case '?': t->help = true; break;
    case KEY_UP: t->scroll -= t->scroll > 0; break;
    case KEY_DOWN: t->scroll++; break;
    case KEY_PPAGE: t->scroll = t->scroll > (size_t)page ? t->scroll - (size_t)page : 0; break;
    case KEY_NPAGE: t->scroll += (size_t)page; break;
    case KEY_HOME: t->scroll = 0; break;
    case KEY_END: t->scroll = t->nvis; break;
    case KEY_RESIZE: break;
    default: return true;
    }
    top_sort(t);
    return true;
}

/* ---- the loop ---- */

/* What the client prints to a terminal's stderr (a lost stream) would land
 * in the middle of the screen and vanish with it: keep it until the
 * terminal is back. (Redirected stderr is left alone.) */
static FILE *stderr_hold(int *saved)
{
    *saved = -1;
    if (!isatty(STDERR_FILENO))
        return NULL;
    FILE *f = tmpfile();
    if (!f)
        return NULL;
    fflush(stderr);
    *saved = dup(STDERR_FILENO);
    dup2(fileno(f), STDERR_FILENO);
    return f;
}

static void stderr_release(FILE *f, int saved)
{
    if (!f)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(f);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(f);
}

int top_screen_run(struct top *t, struct rt_vl_client *host, struct rt_vl_client *jobs)
{
    setlocale(LC_CTYPE, ""); /* the terminal's character set, not its number format */
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) {
        CTL_ERR("cannot use the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
        return RT_EXIT_FAILURE;
    }
    int saved;
    FILE *held = stderr_hold(&saved);
    struct screen sc = {.t = t};
    cbreak();
    noecho();
    nodelay(stdscr, TRUE);
    keypad(stdscr, TRUE);
    curs_set(0);
    if (has_colors()) {
        start_color();
        use_default_colors();
        init_pair(1, COLOR_GREEN, -1);
        init_pair(2, COLOR_YELLOW, -1);
        init_pair(3, COLOR_RED, -1);
        sc.colors = true;
    }
    draw(&sc);
    int rc = RT_EXIT_OK;
    for (long done = 0;;) {
        int which, sig;
        struct json_object *reply;
        int r = top_wait(host, jobs, true, &which, &reply, &sig);
        if (r == 0)
            break; /* SIGINT, SIGTERM, SIGHUP: restore the terminal and go */
        if (r == 2) {
            bool go_on = true;
            for (int ch; go_on && (ch = getch()) != ERR;)
                go_on = key(&sc, ch);
            if (!go_on)
                break;
            draw(&sc);
            continue;
        }
        if (r != 1) {
            rc = r;
            break;
        }
        struct json_object *p = rt_vl_reply_params(reply);
        bool refresh_due = false;
        if (!t->paused) {
            if (which == 0) {
                r = top_set_host(t, rt_json_get_object(p, "sample"));
            } else {
                top_set_jobs(t, rt_json_get_array(p, "jobs"));
                top_refresh_gpus(t);
                refresh_due = true;
            }
        }
        json_object_put(reply);
        if (r < 0) {
            rc = RT_EXIT_FAILURE;
            break;
        }
        if (refresh_due) {
            draw(&sc);
            if (t->iterations && ++done >= t->iterations)
                break;
        }
    }
    endwin();
    delscreen(scr);
    stderr_release(held, saved);
    return rc;
}
