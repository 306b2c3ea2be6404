#include "store/migrate.h"

#include "rt/json.h"
#include "rt/util.h"
#include "rt/varlink.h"
#include "store/figures.h"
#include "store/job_sample.h"
#include "system/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* ---- host samples already stored, by a 128-bit hash of their text ---- */

struct slot {
    uint64_t h1, h2, hseq;
    bool used;
};

struct rt_migration {
    struct slot *t;
    size_t cap, n;
};

struct rt_migration *rt_migration_new(void)
{
    return rt_xcalloc(1, sizeof(struct rt_migration));
}

void rt_migration_free(struct rt_migration *m)
{
    if (m)
        free(m->t);
    free(m);
}

static void hash2(const char *p, size_t n, uint64_t *h1, uint64_t *h2)
{
    uint64_t a = 0xcbf29ce484222325ULL, b = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++) {
        a = (a ^ (uint8_t)p[i]) * 0x100000001b3ULL;
        b = (b + (uint8_t)p[i]) * 0xff51afd7ed558ccdULL;
        b ^= b >> 29;
    }
    *h1 = a;
    *h2 = b ^ n;
}

static struct slot *lookup(struct rt_migration *m, uint64_t h1, uint64_t h2)
{
    if (m->n * 2 >= m->cap) {
        struct slot *old = m->t;
        size_t cap = m->cap;
        m->cap = cap ? cap * 2 : 1024;
        m->t = rt_xcalloc(m->cap, sizeof(*m->t));
        m->n = 0;
        for (size_t i = 0; i < cap; i++) {
            if (!old[i].used)
                continue;
            struct slot *s = lookup(m, old[i].h1, old[i].h2);
            *s = old[i];
            m->n++;
        }
        free(old);
    }
    size_t i = (size_t)(h1 % m->cap);
    while (m->t[i].used && (m->t[i].h1 != h1 || m->t[i].h2 != h2))
        i = (i + 1) % m->cap;
    return &m->t[i];
}

/* ---- one line ---- */

#define HOST_TS "host_timestamp_ms"

/* A rebuilt line as an older daemon, which had no host_timestamp_ms, wrote
 * it: the key and its number cut out of buf. */
static void cut_host_ts(struct rt_buf *buf)
{
    static const char key[] = "\"" HOST_TS "\":";
    uint8_t *k = memmem(buf->p, buf->len, key, strlen(key));
    if (!k)
        return;
    size_t at = (size_t)(k - buf->p), end = at + strlen(key);
    while (end < buf->len && buf->p[end] >= '0' && buf->p[end] <= '9')
        end++;
    end += end < buf->len && buf->p[end] == ',';
    memmove(buf->p + at, buf->p + end, buf->len - end);
    buf->len -= end - at;
}

/* The host sample a job line was made from, as far as the line can tell:
 * its job fields as a host sample has them (the line's own replace them
 * again), its interval set aside the same way. */
static const char *host_text(struct json_object *o, size_t *len)
{
    struct json_object *cpu = rt_json_get_object(o, "cpu");
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const char *k = rt_fig_samples[i].json;
        if (k && json_object_object_get_ex(cpu, k, NULL))
            json_object_object_add(cpu, k, NULL);
    }
    if (json_object_object_get_ex(o, HOST_TS, NULL)) /* in place: keys stay sorted */
        json_object_object_add(o, HOST_TS, NULL);
    json_object_object_add(o, "job_id", NULL);
    json_object_object_add(o, "job_name", NULL);
    json_object_object_add(o, "tracked_pid", NULL);
    struct json_object_iterator it = json_object_iter_begin(o), end = json_object_iter_end(o);
    bool first = !json_object_iter_equal(&it, &end) && strcmp(json_object_iter_peek_name(&it), "actual_interval_ms") == 0;
    if (first)
        json_object_object_add(o, "actual_interval_ms", json_object_new_int(0));
    else
        json_object_object_del(o, "actual_interval_ms");
    return json_object_to_json_string_length(o, JSON_FLAGS, len);
}

/* Whether the rebuilt line says what the line says: the same values, and
 * null for the job's figures the line is older than (an older daemon's
 * line has fewer; read back, it shows them as null like any sample whose
 * figure is unknown). */
static bool same_meaning(const char *line, size_t len, const struct rt_buf *rebuilt)
{
    char err[128];
    struct json_object *o = rt_vl_parse(line, len, err, sizeof(err));
    struct json_object *r = rt_vl_parse((const char *)rebuilt->p, rebuilt->len, err, sizeof(err));
    struct json_object *cpu = rt_json_get_object(o, "cpu"), *rcpu = rt_json_get_object(r, "cpu");
    bool same = cpu && rcpu;
    for (size_t i = 0; same && i < rt_fig_nsamples; i++) {
        const char *k = rt_fig_samples[i].json;
        struct json_object *v;
        if (k && !json_object_object_get_ex(cpu, k, NULL) && json_object_object_get_ex(rcpu, k, &v)) {
            same = v == NULL;
            json_object_object_del(rcpu, k);
        }
    }
    same = same && json_object_equal(o, r);
    json_object_put(o);
    json_object_put(r);
    return same;
}

struct counts {
    uint64_t kept, verbatim, garbage;
};

static bool migrate_line(struct rt_samples *s, struct rt_migration *m, const struct rt_migrate_job *j,
                         struct rt_figlog *fl, const char *line, size_t len, struct counts *c, struct rt_buf *buf)
{
    char err[128];
    struct json_object *o = rt_vl_parse(line, len, err, sizeof(err));
    struct rt_job_figures f;
    uint64_t secs = 0, ts;
    if (!o || !json_object_is_type(o, json_type_object) || !rt_figures_from_json(o, j->interval_secs, &f) ||
        !rt_json_get_u64(o, "timestamp_secs", &secs)) {
        json_object_put(o);
        c->garbage++;
        return true; /* dropped, not stored */
    }
    /* Lines from before timestamp_ms: the whole second, as they are read. */
    if (!rt_json_get_u64(o, "timestamp_ms", &ts) || ts / 1000 != secs)
        ts = secs * 1000;
    uint64_t index = c->kept + c->verbatim;
    if (index >= j->replay_from)
        j->fn(j->ctx, &f);
    size_t hlen;
    const char *htext = host_text(o, &hlen);
    struct rt_host_text ht;
    bool same = false;
    if (rt_host_text_parse(htext, hlen, &ht)) {
        struct rt_job_sample js = {.job_id = j->id, .name_json = j->name_json, .pid = j->pid, .timestamp_ms = ts,
                                   .f = &f};
        buf->len = 0;
        rt_job_sample_json(&ht, &js, buf);
        if (!json_object_object_get_ex(o, HOST_TS, NULL))
            cut_host_ts(buf);
        same = (buf->len == len && memcmp(buf->p, line, len) == 0) || same_meaning(line, len, buf);
    }
    bool ok;
    if (same) {
        uint64_t h1, h2;
        hash2(htext, hlen, &h1, &h2);
        struct slot *sl = lookup(m, h1, h2);
        ok = sl->used || rt_samples_store_host(s, htext, hlen, &sl->hseq);
        if (ok && !sl->used) {
            *sl = (struct slot){h1, h2, sl->hseq, true};
            m->n++;
        }
        ok = ok && rt_samples_append_at(s, fl, &f, sl->hseq, ts);
        c->kept += ok;
    } else {
        /* Not a line this store rebuilds: kept as it was, checked JSON. */
        json_object_put(o);
        o = rt_vl_parse(line, len, err, sizeof(err));
        size_t n;
        const char *text = json_object_to_json_string_length(o, JSON_FLAGS, &n);
        ok = rt_samples_append_verbatim(s, fl, text, n);
        c->verbatim += ok;
    }
    json_object_put(o);
    return ok;
}

/* ---- one job ---- */

/* Figures files of an earlier attempt that did not finish. */
static void remove_partial(int jobs_fd, const char *sub)
{
    DIR *d = rt_opendir_sub(jobs_fd, sub);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strncmp(de->d_name, "fig-", 4) == 0 || strncmp(de->d_name, ".fig-", 5) == 0)
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
}

struct rt_figlog *rt_migrate_job(struct rt_samples *s, struct rt_migration *m, const struct rt_migrate_job *j)
{
    char sub[24], path[64];
    snprintf(sub, sizeof(sub), "%" PRIu64, j->id);
    snprintf(path, sizeof(path), "%s/samples.jsonl", sub);
    int fd = rt_open_beneath(s->jobs_fd, path, O_RDONLY, 0);
    if (fd < 0)
        return NULL;
    struct stat st;
    bool have_times = fstat(fd, &st) == 0;
    remove_partial(s->jobs_fd, sub);
    struct rt_figlog *fl = rt_samples_job_log(s, j->id);
    if (!fl) {
        close(fd);
        return NULL;
    }
    struct counts c = {0};
    struct rt_buf line = {0}, buf = {0};
    char chunk[65536];
    ssize_t n;
    bool ok = true;
    while (ok && (n = read(fd, chunk, sizeof(chunk))) > 0) {
        for (const char *p = chunk, *end = chunk + n; ok && p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            rt_buf_put(&line, p, (size_t)((nl ? nl : end) - p));
            if (!nl)
                break;
            ok = migrate_line(s, m, j, fl, (const char *)line.p, line.len, &c, &buf);
            line.len = 0;
            p = nl + 1;
        }
    }
    if (line.len)
        rt_warn("job %" PRIu64 ": dropping a torn last sample line (%zu bytes)", j->id, line.len);
    close(fd);
    /* On disk, for good, before the old file goes. */
    ok = ok && n == 0 && rt_samples_flush(s, fl) && rt_seglog_sync(&s->host) == 0 &&
         (j->ended ? rt_seglog_seal(&fl->log) : rt_seglog_sync(&fl->log)) == 0;
    if (ok && !j->ended && have_times) /* when the job was last seen */
        rt_seglog_set_mtime(&fl->log, &st.st_mtim);
    if (ok && unlinkat(s->jobs_fd, path, 0) < 0)
        ok = false;
    rt_buf_free(&line);
    rt_buf_free(&buf);
    if (!ok) {
        rt_err("job %" PRIu64 ": cannot move its samples to the new store (%s); they stay in %s for the next start",
               j->id, strerror(errno), path);
        rt_figlog_remove(fl);
        rt_figlog_unref(fl);
        return NULL;
    }
    int dfd = rt_open_beneath(s->jobs_fd, sub, O_RDONLY | O_DIRECTORY, 0);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    rt_info("job %" PRIu64 ": %" PRIu64 " samples moved to the new store (%" PRIu64 " kept as they were)", j->id,
            c.kept + c.verbatim, c.verbatim);
    if (c.garbage)
        rt_warn("job %" PRIu64 ": %" PRIu64 " lines of its samples file were not samples and are dropped", j->id,
                c.garbage);
    return fl;
}
