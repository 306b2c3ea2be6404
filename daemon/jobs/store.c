#include "jobs/store.h"

#include "system/log.h"
#include "rt/json.h"
#include "rt/util.h"
#include "rt/sample.h"
#include "rt/varlink.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    rt_strlcpy(tmp, path, sizeof(tmp));
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Can we create files in dirfd? An existing directory opens fine on a
 * read-only file system or without write permission; find out at start, not
 * at the first job. A full disk is transient and not an error here. */
static int probe_writable(int dirfd, mode_t mode)
{
    int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    if (errno == ENOSPC || errno == EDQUOT)
        return 0;
    if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) /* no O_TMPFILE here */
        return faccessat(dirfd, ".", W_OK, AT_EACCESS) == 0 ? 0 : -errno;
    return -errno;
}

int rt_store_open(struct rt_store *s, const char *dir, bool private_mode, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->dir_fd = s->jobs_fd = -1;
    s->dir_mode = private_mode ? 0700 : 0750;
    s->file_mode = private_mode ? 0600 : 0640;
    rt_strlcpy(s->path, dir, sizeof(s->path));
    int r = mkdir_p(dir, s->dir_mode);
    if (r < 0) {
        snprintf(err, errlen, "cannot create state directory %s: %s", dir, strerror(-r));
        return r;
    }
    s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dir_fd < 0) {
        r = -errno;
        snprintf(err, errlen, "cannot open state directory %s: %s", dir, strerror(errno));
        return r;
    }
    /* Never world-accessible, whatever the directory was created with. */
    struct stat st;
    if (fstat(s->dir_fd, &st) < 0 || ((st.st_mode & 0007) && fchmod(s->dir_fd, st.st_mode & ~(mode_t)0007) < 0)) {
        r = -errno;
        snprintf(err, errlen, "cannot make state directory %s private: %s", dir, strerror(errno));
        rt_store_close(s);
        return r;
    }
    if (mkdirat(s->dir_fd, "jobs", s->dir_mode) < 0 && errno != EEXIST) {
        r = -errno;
        snprintf(err, errlen, "cannot create %s/jobs: %s", dir, strerror(errno));
        rt_store_close(s);
        return r;
    }
    s->jobs_fd = openat(s->dir_fd, "jobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->jobs_fd < 0) {
        r = -errno;
        snprintf(err, errlen, "cannot open %s/jobs: %s", dir, strerror(errno));
        rt_store_close(s);
        return r;
    }
    if ((r = probe_writable(s->dir_fd, s->file_mode)) < 0 || (r = probe_writable(s->jobs_fd, s->file_mode)) < 0) {
        snprintf(err, errlen, "cannot write to the state directory %s: %s", dir, strerror(-r));
        rt_store_close(s);
        return r;
    }
    rt_read_u64_at(s->dir_fd, "last-id", &s->last_id);
    return 0;
}

void rt_store_close(struct rt_store *s)
{
    if (s->jobs_fd >= 0)
        close(s->jobs_fd);
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    s->jobs_fd = s->dir_fd = -1;
}

/* Write name atomically inside dirfd: temp file, fsync, rename, fsync dir. */
/* Write name atomically inside dirfd (temp file + rename). sync: also
 * fsync file and directory, for records that must survive a power loss;
 * without it the rename still makes the update all-or-nothing for crashes
 * of the daemon itself, at no disk latency. */
static int write_atomic(int dirfd, const char *name, const char *data, size_t len, mode_t mode, bool sync)
{
    char tmp[64];
    snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlinkat(dirfd, tmp, 0);
            return -e;
        }
        off += (size_t)n;
    }
    if (sync && fsync(fd) < 0) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, tmp, 0);
        return -e;
    }
    close(fd);
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        return -e;
    }
    if (sync)
        fsync(dirfd);
    return 0;
}

int rt_store_alloc_id(struct rt_store *s, uint64_t *id)
{
    if (s->last_id >= RT_JOB_ID_MAX)
        return -EOVERFLOW;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", s->last_id + 1);
    /* On the main loop: no fsync (job directories also record the ids). */
    int r = write_atomic(s->dir_fd, "last-id", buf, (size_t)n, s->file_mode, false);
    if (r < 0) {
        rt_err("cannot persist the job id counter in %s: %s", s->path, strerror(-r));
        return r;
    }
    *id = ++s->last_id;
    return 0;
}

static int job_dir(struct rt_store *s, uint64_t id)
{
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    int fd = openat(s->jobs_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int rt_store_save_record(struct rt_store *s, uint64_t id, struct json_object *record, bool sync)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return dfd;
    size_t len;
    const char *txt = json_object_to_json_string_length(
        record, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    int r = write_atomic(dfd, "job.json", txt, len, s->file_mode, sync);
    close(dfd);
    return r;
}

int rt_store_create_job(struct rt_store *s, uint64_t id, struct json_object *record)
{
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    if (mkdirat(s->jobs_fd, name, s->dir_mode) < 0 && errno != EEXIST)
        return -errno;
    return rt_store_save_record(s, id, record, true);
}

int rt_store_open_samples(struct rt_store *s, uint64_t id)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return dfd;
    int fd = openat(dfd, "samples.jsonl", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, s->file_mode);
    int r = fd < 0 ? -errno : fd;
    close(dfd);
    return r;
}

int rt_store_read_samples(struct rt_store *s, uint64_t id)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return dfd;
    int fd = openat(dfd, "samples.jsonl", O_RDONLY | O_CLOEXEC);
    int r = fd < 0 ? -errno : fd;
    close(dfd);
    return r;
}

int rt_store_remove_job(struct rt_store *s, uint64_t id)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return dfd;
    unlinkat(dfd, "samples.jsonl", 0);
    unlinkat(dfd, "job.json", 0);
    unlinkat(dfd, ".job.json.tmp", 0);
    close(dfd);
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    return unlinkat(s->jobs_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

double rt_store_samples_mtime(struct rt_store *s, uint64_t id)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return 0;
    struct stat st;
    double t = fstatat(dfd, "samples.jsonl", &st, 0) == 0
                   ? (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9
                   : 0;
    close(dfd);
    return t;
}

uint64_t rt_store_job_bytes(struct rt_store *s, uint64_t id)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return 0;
    uint64_t total = 0;
    struct stat st;
    if (fstatat(dfd, "samples.jsonl", &st, 0) == 0)
        total += (uint64_t)st.st_size;
    if (fstatat(dfd, "job.json", &st, 0) == 0)
        total += (uint64_t)st.st_size;
    close(dfd);
    return total;
}

void rt_job_summary_add_line(struct rt_job_summary *sum, const char *line, size_t len)
{
    char err[128];
    struct json_object *o = rt_vl_parse(line, len, err, sizeof(err));
    struct json_object *cpu = rt_json_get_object(o, "cpu");
    if (!cpu) {
        json_object_put(o);
        return;
    }
    double u = 0, s = 0, cores = 0, gpu = 0, vram = 0;
    uint64_t kids = 0, rss = 0, pss = 0, rb = 0, wb = 0;
    rt_json_get_double(cpu, "process_utime_secs", &u);
    rt_json_get_double(cpu, "process_stime_secs", &s);
    rt_json_get_double(cpu, "process_cores_used", &cores);
    rt_json_get_u64(cpu, "process_child_count", &kids);
    rt_json_get_u64(cpu, "process_rss_mib", &rss);
    rt_json_get_u64(cpu, "process_pss_mib", &pss);
    rt_json_get_u64(cpu, "process_disk_read_bytes", &rb);
    rt_json_get_u64(cpu, "process_disk_write_bytes", &wb);
    sum->samples++;
    sum->cpu_secs += u + s;
    rt_job_summary_note_cores(sum, cores);
    if (kids > sum->peak_children)
        sum->peak_children = (uint32_t)kids;
    if (rss * RT_MIB > sum->peak_rss_bytes)
        sum->peak_rss_bytes = rss * RT_MIB;
    if (pss * RT_MIB > sum->peak_pss_bytes)
        sum->peak_pss_bytes = pss * RT_MIB;
    sum->pss_sum_bytes += (double)(pss * RT_MIB);
    sum->disk_read_bytes += rb;
    sum->disk_write_bytes += wb;
    if (rt_json_get_double(cpu, "process_gpu_usage", &gpu)) {
        sum->has_gpu = true;
        /* Running mean over samples: the time weights are not in the line. */
        sum->gpu_avg_usage += (gpu - sum->gpu_avg_usage) / (double)sum->samples;
        rt_json_get_double(cpu, "process_gpu_vram_mib", &vram);
        if ((uint64_t)(vram * (double)RT_MIB) > sum->gpu_peak_vram_bytes)
            sum->gpu_peak_vram_bytes = (uint64_t)(vram * (double)RT_MIB);
        if (gpu > sum->gpu_peak_usage)
            sum->gpu_peak_usage = gpu;
        sum->gpu_vram_sum_bytes += vram * (double)RT_MIB;
    }
    json_object_put(o);
}

/* Index the samples file: line count, checkpoints, torn tail. */
static void index_samples(struct rt_store *s, struct rt_job *j)
{
    int dfd = job_dir(s, j->id);
    if (dfd < 0)
        return;
    int fd = openat(dfd, "samples.jsonl", O_RDWR | O_CLOEXEC);
    close(dfd);
    if (fd < 0)
        return;
    uint64_t recorded = j->summary.samples;
    uint64_t index = 0, line_start = 0, pos = 0;
    char *line = NULL;
    size_t line_len = 0, line_cap = 0;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < n; i++, pos++) {
            if (index >= recorded) {
                if (line_len + 1 >= line_cap) {
                    line_cap = line_cap ? line_cap * 2 : 4096;
                    line = rt_xrealloc(line, line_cap);
                }
                line[line_len++] = buf[i];
            }
            if (buf[i] != '\n')
                continue;
            rt_job_note_sample(j, index, line_start);
            if (index >= recorded)
                rt_job_summary_add_line(&j->summary, line, line_len - 1);
            line_len = 0;
            index++;
            line_start = pos + 1;
        }
    }
    if (line_start < pos) {
        rt_warn("job %" PRIu64 ": dropping a torn last sample line (%" PRIu64 " bytes)", j->id,
                pos - line_start);
        /* Keep the modification time: it tells when the job was last seen. */
        struct stat st;
        bool have_times = fstat(fd, &st) == 0;
        if (ftruncate(fd, (off_t)line_start) < 0)
            rt_warn("job %" PRIu64 ": cannot truncate samples: %s", j->id, strerror(errno));
        else if (have_times)
            futimens(fd, (struct timespec[2]){st.st_atim, st.st_mtim});
    }
    j->samples_bytes = line_start;
    j->summary.samples = index;
    free(line);
    close(fd);
}

int rt_store_load(struct rt_store *s, struct rt_jobs *jobs)
{
    int fd = dup(s->jobs_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    struct dirent *de;
    int loaded = 0;
    while ((de = readdir(d))) {
        uint64_t id;
        if (!rt_parse_u64(de->d_name, &id))
            continue;
        char path[64], err[128];
        snprintf(path, sizeof(path), "%" PRIu64 "/job.json", id);
        int rfd = openat(s->jobs_fd, path, O_RDONLY | O_CLOEXEC);
        struct json_object *rec = NULL;
        if (rfd >= 0) {
            struct stat st;
            if (fstat(rfd, &st) == 0 && st.st_size > 0 && st.st_size < 16 * 1024 * 1024) {
                char *txt = rt_xmalloc((size_t)st.st_size + 1);
                ssize_t n = read(rfd, txt, (size_t)st.st_size);
                if (n == st.st_size)
                    rec = rt_vl_parse(txt, (size_t)n, err, sizeof(err));
                free(txt);
            }
            close(rfd);
        }
        struct rt_job *j = rec ? rt_job_from_record(rec) : NULL;
        json_object_put(rec);
        if (!j || j->id != id) {
            rt_warn("state: skipping job %s: unreadable or malformed %s/jobs/%s", de->d_name, s->path, path);
            rt_job_free(j);
            continue;
        }
        index_samples(s, j);
        if (id > s->last_id)
            s->last_id = id;
        rt_jobs_add(jobs, j);
        loaded++;
    }
    closedir(d);
    return loaded;
}
