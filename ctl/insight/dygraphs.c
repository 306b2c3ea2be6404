#include "insight/dygraphs.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE (8 * 1024 * 1024)

static char *read_all(const char *path, int *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return NULL;
    }
    struct stat st;
    *err = fstat(fd, &st) < 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : st.st_size > MAX_FILE ? EFBIG : 0;
    char *buf = *err ? NULL : rt_xmalloc((size_t)st.st_size + 1);
    size_t len = 0;
    while (buf && len < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
        if (n <= 0) {
            *err = n < 0 ? errno : EIO; /* shrank while we read it */
            free(buf);
            buf = NULL;
        } else {
            len += (size_t)n;
        }
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* Drop the source map lines ("//# sourceMappingURL=…" in scripts, the
 * same after "/" "*" in styles). */
static void drop_source_maps(char *s)
{
    char *out = s;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (strncmp(line, "//# sourceMappingURL=", 21) != 0 && strncmp(line, "/*# sourceMappingURL=", 21) != 0) {
            memmove(out, line, len);
            out += len;
        }
        line += len;
    }
    *out = '\0';
}

/* Text that would end the <script> or <style> element it is inlined in. */
static bool ends_element(const char *s)
{
    for (const char *p = strstr(s, "</"); p; p = strstr(p + 2, "</"))
        if (strncasecmp(p + 2, "script", 6) == 0 || strncasecmp(p + 2, "style", 5) == 0)
            return true;
    return false;
}

static char *load_one(const char *dir, const char *name, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int e = 0;
    char *s = read_all(path, &e);
    if (!s) {
        snprintf(err, errlen, "cannot read %s: %s (the report needs Debian's libjs-dygraphs)", path, strerror(e));
        return NULL;
    }
    drop_source_maps(s);
    if (ends_element(s)) {
        snprintf(err, errlen, "cannot inline %s: it contains \"</script\" or \"</style\"", path);
        free(s);
        return NULL;
    }
    return s;
}

int insight_dygraphs_load(struct insight_dygraphs *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    const char *dir = getenv("RESOURCE_TRACKER_DYGRAPHS_DIR");
    if (!dir || !*dir)
        dir = INSIGHT_DYGRAPHS_DIR;
    if (!(d->js = load_one(dir, "dygraph.min.js", err, errlen)) ||
        !(d->sync_js = load_one(dir, "extras/synchronizer.js", err, errlen)) ||
        !(d->css = load_one(dir, "dygraph.min.css", err, errlen))) {
        insight_dygraphs_free(d);
        return -1;
    }
    return 0;
}

void insight_dygraphs_free(struct insight_dygraphs *d)
{
    free(d->js);
    free(d->sync_js);
    free(d->css);
    memset(d, 0, sizeof(*d));
}
