#include "jobs/record_log.h"

#include "rt/json.h"
#include "rt/util.h"
#include "rt/varlink.h"
#include "system/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_NAME "records.log"
#define FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

int rt_record_log_open(struct rt_record_log *l, int dir_fd, mode_t mode)
{
    l->fd = rt_open_own_file(dir_fd, LOG_NAME, O_RDWR | O_APPEND, mode);
    if (l->fd < 0)
        return l->fd;
    struct stat st;
    if (fstat(l->fd, &st) < 0)
        return -errno;
    l->dirty = st.st_size > 0;
    return 0;
}

void rt_record_log_close(struct rt_record_log *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

int rt_record_log_append(struct rt_record_log *l, uint64_t id, struct json_object *record, struct json_object *md)
{
    struct json_object *e = json_object_new_object();
    json_object_object_add(e, "id", rt_json_u64(id));
    json_object_object_add(e, "record", json_object_get(record));
    if (md)
        json_object_object_add(e, "metadata", json_object_get(md));
    size_t len;
    const char *txt = json_object_to_json_string_length(e, FLAGS, &len);
    /* One write, so that the line is whole or, cut by a crash, skipped. */
    char *line = rt_xmalloc(len + 1);
    memcpy(line, txt, len);
    line[len] = '\n';
    json_object_put(e);
    ssize_t n = write(l->fd, line, len + 1);
    int r = n == (ssize_t)(len + 1) ? 0 : n < 0 ? -errno : -ENOSPC;
    free(line);
    if (n > 0)
        l->dirty = true;
    return r;
}

struct entry {
    uint64_t id;
    struct json_object *o;
};

void rt_record_log_replay(struct rt_record_log *l, rt_record_log_fn *fn, void *ctx)
{
    struct stat st;
    if (fstat(l->fd, &st) < 0 || st.st_size <= 0)
        return;
    char *buf = rt_xmalloc((size_t)st.st_size + 1);
    ssize_t n = pread(l->fd, buf, (size_t)st.st_size, 0);
    struct entry *v = NULL;
    size_t nv = 0, lines = 0;
    for (char *p = buf, *end = buf + (n > 0 ? n : 0); p < end; lines++) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), err[128];
        if (!nl)
            break; /* cut short */
        struct json_object *o = rt_vl_parse(p, (size_t)(nl - p), err, sizeof(err));
        uint64_t id;
        if (!o || !rt_json_get_u64(o, "id", &id) || !rt_json_get_object(o, "record")) {
            rt_warn("state: " LOG_NAME ": skipping line %zu, which is no record", lines + 1);
            json_object_put(o);
        } else {
            /* The last entry of a job replaces its earlier ones; the
             * metadata comes with the first. */
            size_t k = 0;
            while (k < nv && v[k].id != id)
                k++;
            if (k == nv) {
                v = rt_xrealloc(v, (nv + 1) * sizeof(*v));
                v[nv++] = (struct entry){id, NULL};
            }
            struct json_object *md = rt_json_get_object(v[k].o, "metadata");
            if (md && !rt_json_get_object(o, "metadata"))
                json_object_object_add(o, "metadata", json_object_get(md));
            json_object_put(v[k].o);
            v[k].o = o;
        }
        p = nl + 1;
    }
    free(buf);
    for (size_t i = 0; i < nv; i++) {
        fn(ctx, v[i].id, rt_json_get_object(v[i].o, "record"), rt_json_get_object(v[i].o, "metadata"));
        json_object_put(v[i].o);
    }
    free(v);
}

int rt_record_log_clear(struct rt_record_log *l)
{
    if (!l->dirty)
        return 0;
    if (ftruncate(l->fd, 0) < 0)
        return -errno;
    l->dirty = false;
    return 0;
}
