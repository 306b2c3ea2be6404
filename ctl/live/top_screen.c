/* The full-screen view of top (ncurses): the host at the top (per-CPU bars,
 * memory, disks, network, GPUs), the job table below, a key line at the
 * bottom. Redrawn on each tick's jobs reply, on keys and on resizes; the
 * terminal is restored however the loop ends. */
#include "live/top.h"

#include "rt/json.h"
#include "rt/text.h"

#include <ctype.h>
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

/* text at (y, x), cut to the screen's width: its first COLS - x
 * characters (UTF-8: a character is never cut) */
static void put(int y, int x, const char *text)
{
    if (y >= LINES || x >= COLS)
        return;
    int chars = 0, n = 0;
    for (; text[n]; n++)
        if (((unsigned char)text[n] & 0xc0) != 0x80 && ++chars > COLS - x)
            break;
    mvaddnstr(y, x, text, n);
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
    if (len > inner)
        len = 0; /* figures cut would read as other figures: none rather */
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
    char when[32], line[1024], filter[TOP_FILTER_MAX * 4 + 16] = "";
    ctl_fmt_time(when, sizeof(when), (double)t->host.timestamp_secs);
    if (t->filter[0]) {
        char f[TOP_FILTER_MAX * 4];
        rt_escape_into(f, sizeof(f), t->filter);
        snprintf(filter, sizeof(filter), " [filter: %s]", f);
    }
    snprintf(line, sizeof(line), "%s  %s  %s%s%s  every %.3gs  resource-trackerd %s", t->hostname, when + 11,
             t->admin && !t->mine_only ? "all users' jobs" : "your jobs", filter, t->paused ? " [paused]" : "",
             t->interval, t->version);
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

/* "used/total" for a bar of inner width room: "1.50 GiB/23.5 GiB", or
 * where that is too long and both are in one unit "1.50/23.5 GiB". */
static void mem_label(uint64_t used_mib, uint64_t total_mib, int room, char *buf, size_t size)
{
    char a[32], b[32];
    ctl_fmt_bytes(a, sizeof(a), (double)(used_mib * RT_MIB));
    ctl_fmt_bytes(b, sizeof(b), (double)(total_mib * RT_MIB));
    snprintf(buf, size, "%s/%s", a, b);
    const char *ua = strrchr(a, ' '), *ub = strrchr(b, ' ');
    if ((int)strlen(buf) > room && ua && ub && strcmp(ua, ub) == 0)
        snprintf(buf, size, "%.*s/%s", (int)(ua - a), a, b);
}

/* Memory and swap side by side; one under the other where their figures
 * would not fit in half the width: the bars give way, never the figures. */
static int draw_memory(struct screen *sc, int y)
{
    const struct rt_memory *m = &sc->t->host.memory;
    char mem[80], swap[80];
    int half = COLS / 2, mem_w = half - 6, swap_w = COLS - half - 5;
    mem_label(m->used_mib, m->total_mib, mem_w - 2, mem, sizeof(mem));
    mem_label(m->swap_used_mib, m->swap_total_mib, swap_w - 2, swap, sizeof(swap));
    bool stacked = (int)strlen(mem) > mem_w - 2 || (int)strlen(swap) > swap_w - 2;
    int swap_y = y, swap_x = half;
    if (stacked) {
        mem_w = swap_w = COLS - 5;
        swap_y = y + 1;
        swap_x = 0;
        mem_label(m->used_mib, m->total_mib, mem_w - 2, mem, sizeof(mem));
        mem_label(m->swap_used_mib, m->swap_total_mib, swap_w - 2, swap, sizeof(swap));
    }
    put(y, 0, "Mem");
    bar(sc, y, 5, mem_w, m->total_mib ? (double)m->used_mib / (double)m->total_mib : 0, mem);
    put(swap_y, swap_x, "Swap");
    bar(sc, swap_y, swap_x + 5, swap_w,
        m->swap_total_mib ? (double)m->swap_used_mib / (double)m->swap_total_mib : 0, swap);
    return swap_y + 1;
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

static void head_line(int y, const char *text)
{
    attron(A_REVERSE);
    mvhline(y, 0, ' ', COLS);
    put(y, 0, text);
    attroff(A_REVERSE);
}

static void draw_jobs(struct screen *sc, int y, int bottom)
{
    struct top *t = sc->t;
    struct top_layout l;
    top_layout(t, COLS, &l);
    char line[4096];
    top_format_header(t, &l, true, line, sizeof(line));
    head_line(y, line);
    int rows = bottom - y - 1;
    if (rows < 1)
        rows = 1;
    /* The view follows the selection. */
    if (t->sel < t->scroll)
        t->scroll = t->sel;
    if (t->sel >= t->scroll + (size_t)rows)
        t->scroll = t->sel - (size_t)rows + 1;
    for (int i = 0; i < rows && t->scroll + (size_t)i < t->nvis; i++) {
        const struct top_row *r = t->vis[t->scroll + (size_t)i];
        attr_t a = (r->state != 'R' ? A_DIM : 0) | (t->scroll + (size_t)i == t->sel ? A_BOLD | A_UNDERLINE : 0);
        top_format_row(r, &l, line, sizeof(line));
        attron(a);
        put(y + 1 + i, 0, line);
        attroff(a);
    }
    if (!t->nvis)
        put(y + 1, 0, t->filter[0] ? "  (no job matches the filter: Esc clears it)"
                      : t->mine_only || !t->admin ? "  (none of your jobs is running)" : "  (no job is running)");
}

/* The processes of the job drilled into, in place of the table. */
static void draw_procs(struct screen *sc, int y, int bottom)
{
    struct top *t = sc->t;
    char line[4096], name[64 * 4 + 8] = "";
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i].id == t->drill && t->rows[i].name[0]) {
            char esc[64 * 4];
            rt_escape_into(esc, sizeof(esc), t->rows[i].name);
            snprintf(name, sizeof(name), " %s", esc);
        }
    snprintf(line, sizeof(line), "Job %llu%s: %zu process%s%s", (unsigned long long)t->drill, name, t->nprocs,
             t->nprocs == 1 ? "" : "es", t->drill_ended ? " (it has ended)" : !t->calls ? " (not available)" : "");
    attron(A_BOLD);
    put(y++, 0, line);
    attroff(A_BOLD);
    top_format_proc_header(COLS, line, sizeof(line));
    head_line(y++, line);
    size_t rows = bottom > y ? (size_t)(bottom - y) : 0;
    if (t->scroll + rows > t->nprocs)
        t->scroll = t->nprocs > rows ? t->nprocs - rows : 0;
    for (size_t i = 0; i < rows && t->scroll + i < t->nprocs; i++) {
        top_format_proc(&t->procs[t->scroll + i], COLS, line, sizeof(line));
        put(y + (int)i, 0, line);
    }
}

static const char *const help_lines[] = {
    "resource-trackerctl top: keys",
    "",
    "  q            quit",
    "  up down j k  select a job (page up / down, home, end)",
    "  Enter        its processes (Esc or Backspace: back)",
    "  /            filter: jobs whose name, user or command",
    "               holds the text (Enter); Esc clears it",
    "  < >  <- ->   sort by the previous / next column",
    "  r            reverse the order",
    "  c m t        sort by cores, memory (RSS), time",
    "  a            all jobs you may see / only yours",
    "  S column !   a GPU of the job is idle but held",
    "  GPU lines    IDLE (idle but held), STALLED, who holds it",
    "  space p      pause / resume",
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
    if (t->drill)
        draw_procs(sc, y, LINES - 1);
    else
        draw_jobs(sc, y, LINES - 1);
    char keys[TOP_FILTER_MAX * 4 + 64];
    if (t->editing) {
        char f[TOP_FILTER_MAX * 4];
        rt_escape_into(f, sizeof(f), t->edit);
        snprintf(keys, sizeof(keys), "filter: %s_   Enter apply  Esc clear", f);
    } else {
        snprintf(keys, sizeof(keys), "%s", sc->status[0] ? sc->status
                 : t->drill ? "q quit  Esc back  up down scroll  h help"
                 : "q quit  Enter processes  / filter  < > sort  r reverse  a all/mine  h help");
    }
    head_line(LINES - 1, keys);
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
    struct top_layout l;
    top_layout(t, COLS, &l);
    size_t k = 0, n = l.n;
    while (k < n && l.col[k] != t->sort)
        k++;
    k = k == n ? 0 : (size_t)(((int)k + dir + (int)n) % (int)n);
    sort_by(t, l.col[k]);
}

#define KEY_ESC 27

static bool is_enter(int ch) { return ch == '\n' || ch == '\r' || ch == KEY_ENTER; }
static bool is_backspace(int ch) { return ch == KEY_BACKSPACE || ch == 127 || ch == 8; }

/* Typing the filter: Enter applies it, Esc clears it. */
static void filter_key(struct top *t, int ch)
{
    size_t len = strlen(t->edit);
    if (is_enter(ch)) {
        memcpy(t->filter, t->edit, sizeof(t->filter));
        t->editing = false;
    } else if (ch == KEY_ESC) {
        t->filter[0] = t->edit[0] = '\0';
        t->editing = false;
    } else if (is_backspace(ch)) {
        while (len && ((unsigned char)t->edit[len - 1] & 0xc0) == 0x80)
            len--; /* a UTF-8 character's continuation bytes */
        t->edit[len ? len - 1 : 0] = '\0';
    } else if (ch >= 0x20 && ch < 0x100 && ch != 0x7f && len + 1 < sizeof(t->edit)) {
        t->edit[len] = (char)ch;
        t->edit[len + 1] = '\0';
    }
}

/* The processes of the selected job, or back to the table. */
static void drill(struct top *t, uint64_t id)
{
    t->drill = id;
    t->nprocs = 0;
    t->drill_ended = false;
    t->scroll = 0;
    top_refresh_procs(t);
}

/* Move the selection (or, in the drill-down, the view) by d rows. */
static void select_by(struct top *t, long d)
{
    size_t *at = t->drill ? &t->scroll : &t->sel;
    size_t n = t->drill ? t->nprocs : t->nvis;
    long to = (long)*at + d;
    *at = to < 0 || n == 0 ? 0 : (size_t)to >= n ? n - 1 : (size_t)to;
    if (!t->drill && t->nvis)
        t->sel_id = t->vis[t->sel]->id;
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
    if (t->editing && ch != KEY_RESIZE) {
        filter_key(t, ch);
        top_sort(t);
        return true;
    }
    long page = LINES / 2 > 1 ? LINES / 2 : 1;
    if (t->drill && (ch == KEY_ESC || is_backspace(ch))) {
        drill(t, 0);
        return true;
    }
    if (is_enter(ch) && !t->drill && t->nvis) {
        drill(t, t->vis[t->sel]->id);
        return true;
    }
    switch (ch) {
    case '/':
        t->editing = true;
        memcpy(t->edit, t->filter, sizeof(t->edit));
        break;
    case KEY_ESC: t->filter[0] = '\0'; break;
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
    case KEY_UP: case 'k': select_by(t, -1); break;
    case KEY_DOWN: case 'j': select_by(t, 1); break;
    case KEY_PPAGE: select_by(t, -page); break;
    case KEY_NPAGE: select_by(t, page); break;
    case KEY_HOME: select_by(t, -(long)(t->nrows + t->nprocs)); break;
    case KEY_END: select_by(t, (long)(t->nrows + t->nprocs)); break;
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
    set_escdelay(25); /* Esc is a key here (back, clear): not a wait for a sequence */
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
