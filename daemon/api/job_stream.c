/* GetJobSamples: a job's stored samples in pages, then (follow) its live
 * samples as the sampler takes them, in JSON or CSV. */
#include "api/call.h"
#include "api/job_access.h"
#include "api/methods.h"
#include "api/stream.h"
#include "daemon.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"
#include "rt/util.h"
#include "store/samples.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/printbuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE_DEFAULT 1000
#define PAGE_MAX 10000
#define STREAM_OUTPUT_LOW (1024 * 1024) /* pump samples while less is queued */
/* A page stops after this many bytes of samples, whatever the limit: 10000
 * large samples would exceed the backlog a client may have (16 MiB), and a
 * client reading normally would be dropped. next_offset says where to go on. */
#define PAGE_MAX_BYTES (4 * 1024 * 1024)

struct job_stream {
    struct rt_stream base;
    uint64_t job;
    uint64_t next;    /* next sample index to send */
    bool csv;
    bool follow;      /* until the job ends */
    bool header;      /* the CSV header is still to be sent */
    bool waiting;     /* caught up, waiting for live samples */
};

static void pb_puts(struct printbuf *pb, const char *s)
{
    printbuf_memappend(pb, s, (int)strlen(s));
}

struct page {
    struct rt_buf b;  /* JSON lines, each ending in '\n', or CSV rows */
    size_t n;         /* samples */
    uint64_t next;    /* where the next page starts */
};

/* Up to max samples (and about PAGE_MAX_BYTES) from index `from`, rebuilt
 * from the store: only whole samples, damaged ones skipped. */
static int read_page(struct rt_daemon *d, uint64_t job_id, uint64_t from, size_t max, bool csv, struct page *pg)
{
    memset(pg, 0, sizeof(*pg));
    pg->next = from;
    rt_jobs_lock(&d->jobs);
    struct rt_job *j = rt_jobs_find(&d->jobs, job_id);
    if (!j) {
        rt_jobs_unlock(&d->jobs);
        return -ENOENT;
    }
    struct rt_figlog *fl = rt_figlog_ref(j->fig);
    char *name = rt_xstrdup(j->name_json ? j->name_json : "null");
    struct rt_job_view jv = {.id = j->id, .name_json = name, .pid = j->pid};
    uint64_t end = j->summary.samples;
    rt_jobs_unlock(&d->jobs);
    if (fl)
        pg->n = rt_samples_read(&d->state.samples, fl, &jv, from, end, max, PAGE_MAX_BYTES, csv, &pg->b, &pg->next);
    rt_figlog_unref(fl);
    free(name);
    return 0;
}

/* The CSV header once, first. */
static void csv_header(struct job_stream *s, struct printbuf *pb)
{
    if (!s->header)
        return;
    pb_puts(pb, RT_CSV_HEADER);
    printbuf_strappend(pb, "\n");
    s->header = false;
}

/* Reply for a page: JSON lines as the samples array, or CSV rows. */
static void send_page(struct rt_server *srv, struct rt_conn *conn, struct job_stream *s, const uint8_t *buf,
                      size_t len, bool ended, bool continues)
{
    struct printbuf *pb = printbuf_new();
    if (!s->csv) {
        printbuf_strappend(pb, "{\"parameters\":{\"samples\":[");
        for (size_t i = 0; i < len;) {
            const uint8_t *nl = memchr(buf + i, '\n', len - i);
            size_t l = (size_t)(nl - (buf + i));
            if (i)
                printbuf_strappend(pb, ",");
            printbuf_memappend(pb, (const char *)buf + i, (int)l);
            i += l + 1;
        }
        printbuf_strappend(pb, "],\"csv\":null");
    } else {
        struct printbuf *csv = printbuf_new();
        csv_header(s, csv);
        printbuf_memappend(csv, (const char *)buf, (int)len);
        printbuf_strappend(pb, "{\"parameters\":{\"samples\":null,\"csv\":");
        rt_json_put_string(pb, csv->buf, (size_t)csv->bpos);
        printbuf_free(csv);
    }
    char tail[96];
    snprintf(tail, sizeof(tail), ",\"next_offset\":%" PRIu64 ",\"ended\":%s}%s}", s->next,
             ended ? "true" : "false", continues ? ",\"continues\":true" : "");
    pb_puts(pb, tail);
    rt_conn_send_raw(srv, conn, pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
}

static bool job_progress(struct rt_daemon *d, uint64_t id, uint64_t *produced, bool *ended)
{
    rt_jobs_lock(&d->jobs);
    struct rt_job *j = rt_jobs_find(&d->jobs, id);
    if (j) {
        *produced = j->summary.samples;
        *ended = j->state != RT_JOB_RUNNING;
    }
    rt_jobs_unlock(&d->jobs);
    return j != NULL;
}

static void pump(struct rt_server *srv, struct rt_conn *conn)
{
    struct rt_daemon *d = rt_server_daemon(srv);
    struct job_stream *s = (struct job_stream *)conn->stream;
    while (rt_conn_pending(conn) < STREAM_OUTPUT_LOW) {
        uint64_t produced;
        bool ended;
        if (!job_progress(d, s->job, &produced, &ended)) {
            struct json_object *p = json_object_new_object();
            json_object_object_add(p, "id", rt_json_u64(s->job));
            rt_conn_error(srv, conn, RT_E_PREFIX "NoSuchJob", p);
            rt_conn_done(srv, conn);
            return;
        }
        if (s->next < produced) {
            struct page pg;
            uint64_t want = produced - s->next;
            /* CSV rows are small: pages of many (about PAGE_MAX_BYTES at most) cost the
             * store one decode of each block they span. */
            uint64_t rows = s->csv ? PAGE_MAX : PAGE_DEFAULT;
            if (read_page(d, s->job, s->next, want < rows ? want : rows, s->csv, &pg) < 0 ||
                pg.next == s->next) {
                /* Counted but not on disk yet (disk full): wait for live samples. */
                rt_buf_free(&pg.b);
                s->waiting = true;
                return;
            }
            s->next = pg.next;
            bool last = s->next >= produced && (ended || !s->follow);
            if (pg.n || last)
                send_page(srv, conn, s, pg.b.p, pg.b.len, ended && last, !last);
            rt_buf_free(&pg.b);
            if (last) {
                rt_conn_done(srv, conn);
                return;
            }
            continue;
        }
        if (ended || !s->follow) {
            send_page(srv, conn, s, NULL, 0, ended, false);
            rt_conn_done(srv, conn);
            return;
        }
        s->waiting = true;
        return;
    }
}

static void send_live(struct rt_server *srv, struct rt_conn *conn, struct job_stream *s, const struct rt_sevt *e)
{
    struct printbuf *pb = printbuf_new();
    if (s->csv) {
        struct printbuf *rows = printbuf_new();
        csv_header(s, rows);
        printbuf_memappend(rows, e->csv->data, (int)e->csv->len);
        printbuf_strappend(pb, "{\"parameters\":{\"samples\":null,\"csv\":");
        rt_json_put_string(pb, rows->buf, (size_t)rows->bpos);
        printbuf_free(rows);
    } else {
        printbuf_strappend(pb, "{\"parameters\":{\"samples\":[");
        printbuf_memappend(pb, e->json->data, (int)e->json->len);
        printbuf_strappend(pb, "],\"csv\":null");
    }
    char tail[96];
    snprintf(tail, sizeof(tail), ",\"next_offset\":%" PRIu64 ",\"ended\":false},\"continues\":true}", s->next);
    pb_puts(pb, tail);
    rt_conn_send_raw(srv, conn, pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
}

static void event(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e)
{
    struct job_stream *s = (struct job_stream *)conn->stream;
    if (!s->waiting || e->job_id != s->job)
        return; /* still paging through the file; it will get there */
    if (e->type == RT_SEVT_JOB_SAMPLE && e->index == s->next) {
        s->next++;
        send_live(srv, conn, s, e);
    } else if ((e->type == RT_SEVT_JOB_SAMPLE && e->index > s->next) || e->type == RT_SEVT_JOB_ENDED) {
        s->waiting = false; /* missed some, or the end: read them from the file */
        pump(srv, conn);
    }
}

static bool wants_output(const struct rt_stream *st)
{
    return !((const struct job_stream *)st)->waiting;
}

static const struct rt_stream_ops job_stream_ops = {.pump = pump, .event = event, .wants_output = wants_output};

static void m_get_job_samples(struct rt_call *c)
{
    int64_t offset = rt_call_int(c, "offset", 0);
    int64_t limit = rt_call_int(c, "limit", PAGE_DEFAULT);
    const char *fmt = rt_call_string(c, "format");
    bool csv = fmt && strcmp(fmt, "csv") == 0;
    bool follow = rt_call_bool(c, "follow", false);
    if (follow && !c->more) {
        rt_call_error(c, "org.varlink.service.ExpectedMore", NULL);
        return;
    }
    struct rt_daemon *d = rt_call_daemon(c);
    struct rt_job *j = rt_api_lookup_job(c);
    if (!j)
        return;
    uint64_t id = j->id;
    rt_jobs_unlock(&d->jobs);
    struct job_stream *s = rt_xcalloc(1, sizeof(*s));
    *s = (struct job_stream){.base.ops = &job_stream_ops, .job = id, .next = (uint64_t)offset, .csv = csv,
                             .header = csv && offset == 0, .follow = follow};
    if (c->more) {
        rt_conn_stream(c->conn, &s->base);
        pump(c->srv, c->conn);
        return;
    }
    /* A single page. */
    uint64_t produced = 0;
    bool ended = false;
    struct page pg = {0};
    if (job_progress(d, id, &produced, &ended) && s->next < produced)
        read_page(d, id, s->next, (size_t)limit, csv, &pg);
    if (pg.next > s->next)
        s->next = pg.next;
    send_page(c->srv, c->conn, s, pg.b.p, pg.b.len, ended && s->next >= produced, false);
    rt_buf_free(&pg.b);
    free(s);
}

static const char *const formats[] = {"json", "csv", NULL};

static const struct rt_method methods[] = {
    {.name = "GetJobSamples", .fn = m_get_job_samples, .flags = RT_M_MORE,
     .params = {RT_API_JOB_PARAMS, {.name = "offset", .type = RT_P_INT, RT_RANGE(0, INT64_MAX)},
                {.name = "limit", .type = RT_P_INT, RT_RANGE(1, PAGE_MAX)}, RT_OPT_ONE_OF("format", formats),
                RT_OPT("follow", RT_P_BOOL)}},
};

const struct rt_method_table rt_sample_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
