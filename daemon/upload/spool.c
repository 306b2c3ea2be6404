#include "upload/spool.h"

#include "rt/sample_csv.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int rt_spool_open_dir(int dirfd, const char *name)
{
    if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
        return -errno;
    int fd = rt_open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0 || ((st.st_mode & 077) && fchmod(fd, 0700) < 0)) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int rt_spool_read_file(int dirfd, const char *name, char **data, size_t *len)
{
    int fd = rt_open_beneath(dirfd, name, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = rt_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap)
            buf = rt_xrealloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

void rt_spool_rows_name(uint64_t seq, char out[32])
{
    snprintf(out, 32, "rows.%06llu", (unsigned long long)seq);
}

void rt_spool_batch_name(uint64_t seq, char out[32])
{
    snprintf(out, 32, "%06llu.csv.gz", (unsigned long long)seq);
}

int rt_spool_open_rows(int dirfd, uint64_t seq)
{
    char name[32];
    rt_spool_rows_name(seq, name);
    return rt_open_beneath(dirfd, name, O_WRONLY | O_CREAT | O_APPEND, 0600);
}

static int deflate_all(z_stream *z, const void *in, size_t len, char **out, size_t *cap, int flush)
{
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)len;
    for (;;) {
        if (*cap - z->total_out < 4096) {
            *cap = *cap * 2 + 8192;
            *out = rt_xrealloc(*out, *cap);
        }
        z->next_out = (Bytef *)*out + z->total_out;
        z->avail_out = (uInt)(*cap - z->total_out);
        int rc = deflate(z, flush);
        if (rc == Z_STREAM_ERROR)
            return -EIO;
        if (flush == Z_FINISH ? rc == Z_STREAM_END : (z->avail_in == 0 && z->avail_out != 0))
            return 0;
    }
}

/* One gzip member of header line + rows. */
static int gzip_batch(const char *rows, size_t len, char **out, size_t *outlen)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -EIO;
    size_t cap = len / 4 + 8192;
    *out = rt_xmalloc(cap);
    int rc = deflate_all(&z, RT_CSV_HEADER, strlen(RT_CSV_HEADER), out, &cap, Z_NO_FLUSH);
    if (rc == 0)
        rc = deflate_all(&z, "\n", 1, out, &cap, Z_NO_FLUSH);
    if (rc == 0)
        rc = deflate_all(&z, rows, len, out, &cap, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    if (rc != 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

int rt_gzip(const void *in, size_t len, char **out, size_t *outlen)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -EIO;
    size_t cap = len / 4 + 8192;
    *out = rt_xmalloc(cap);
    int rc = deflate_all(&z, in, len, out, &cap, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    return rc;
}

int rt_gunzip(const void *in, size_t len, char **out, size_t *outlen)
{
    z_stream z = {0};
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return -EIO;
    size_t cap = len * 4 + 4096;
    char *buf = rt_xmalloc(cap);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    int rc;
    do {
        if (z.total_out + 1 >= cap)
            buf = rt_xrealloc(buf, cap *= 2);
        z.next_out = (Bytef *)buf + z.total_out;
        z.avail_out = (uInt)(cap - 1 - z.total_out);
        rc = inflate(&z, Z_NO_FLUSH);
    } while (rc == Z_OK);
    size_t n = z.total_out;
    bool rest = z.avail_in != 0; /* bytes after the member: not what we wrote */
    inflateEnd(&z);
    if (rc != Z_STREAM_END || rest) {
        free(buf);
        return -EIO;
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
}

int rt_spool_check_batch(const char *gz, size_t len, char **csv, size_t *csvlen)
{
    char *plain;
    size_t n;
    if (rt_gunzip(gz, len, &plain, &n) < 0)
        return -EBADMSG;
    size_t hl = strlen(RT_CSV_HEADER);
    bool ok = n > hl + 1 && memcmp(plain, RT_CSV_HEADER, hl) == 0 && plain[hl] == '\n' && plain[n - 1] == '\n' &&
              strlen(plain) == n;
    for (const char *p = plain + hl + 1, *end = plain + n; ok && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t commas = 0;
        for (const char *c = p; c < nl; c++)
            commas += *c == ',';
        ok = commas == RT_CSV_COLUMNS - 1;
        p = nl + 1;
    }
    if (!ok || !csv) {
        free(plain);
        return ok ? 0 : -EBADMSG;
    }
    *csv = plain;
    *csvlen = n;
    return 0;
}

int rt_spool_quarantine(int spool_fd, int dirfd, const char *name, const char *as)
{
    int qfd = rt_spool_open_dir(spool_fd, RT_SPOOL_QUARANTINE);
    if (qfd < 0)
        return qfd;
    int rc = -EEXIST;
    for (unsigned i = 0; i < 100 && rc == -EEXIST; i++) {
        char target[96];
        if (i)
            snprintf(target, sizeof(target), "%s.%u", as, i);
        else
            rt_strlcpy(target, as, sizeof(target));
        if (faccessat(qfd, target, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            continue; /* only the worker thread moves files here */
        rc = renameat(dirfd, name, qfd, target) == 0 ? 0 : -errno;
    }
    if (rc == 0) {
        fsync(qfd);
        fsync(dirfd);
    }
    close(qfd);
    return rc;
}

DIR *rt_opendir_at(int dirfd)
{
    int fd = dup(dirfd);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return NULL;
    }
    rewinddir(d);
    return d;
}

int rt_spool_unlink(int dirfd, const char *name)
{
    if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
        return -errno;
    return fsync(dirfd) < 0 ? -errno : 0;
}

int rt_spool_seal(int dirfd, uint64_t seq, uint64_t *rows, uint64_t *bytes)
{
    char rname[32], bname[32];
    rt_spool_rows_name(seq, rname);
    rt_spool_batch_name(seq, bname);
    char *data;
    size_t len;
    int rc = rt_spool_read_file(dirfd, rname, &data, &len);
    if (rc < 0)
        return rc;
    while (len && data[len - 1] != '\n')
        len--; /* a torn last row (disk full mid-write) is not sent */
    if (len == 0) {
        free(data);
        return rt_spool_unlink(dirfd, rname) < 0 ? -EIO : 0;
    }
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    char *gz;
    size_t gzlen;
    if (gzip_batch(data, len, &gz, &gzlen) != 0) {
        free(data);
        return -EIO;
    }
    free(data);
    rc = rt_write_file_at(dirfd, bname, gz, gzlen, 0600, RT_SYNC_FULL);
    free(gz);
    if (rc < 0)
        return rc;
    /* The batch is durable: the rows file goes. A crash before this unlink
     * leaves both; the loader keeps the batch and drops the rows file. */
    rt_spool_unlink(dirfd, rname);
    *rows = n;
    *bytes = gzlen;
    return 1;
}
