#include "jobs/state_dir.h"

#include "store/migrate.h"

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
#include <sys/vfs.h>
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

int rt_state_dir_open(struct rt_state_dir *s, const char *dir, bool private_mode, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->dir_fd = s->jobs_fd = s->last_id_fd = s->log.fd = -1;
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
    /* Never world-accessible, whatever the directory was created with; but
     * a directory all may write to (/tmp) is not ours to change or to use. */
    struct stat st;
    if (fstat(s->dir_fd, &st) == 0 && (st.st_mode & S_ISVTX) && (st.st_mode & 0002)) {
        snprintf(err, errlen, "state directory %s is shared by every user (sticky and world-writable): "
                 "name a directory of its own", dir);
        rt_state_dir_close(s);
        return -EPERM;
    }
    if (fstat(s->dir_fd, &st) < 0 || ((st.st_mode & 0007) && fchmod(s->dir_fd, st.st_mode & ~(mode_t)0007) < 0)) {
        r = -errno;
        snprintf(err, errlen, "cannot make state directory %s private: %s", dir, strerror(errno));
        rt_state_dir_close(s);
        return r;
    }
    if (mkdirat(s->dir_fd, "jobs", s->dir_mode) < 0 && errno != EEXIST) {
        r = -errno;
        snprintf(err, errlen, "cannot create %s/jobs: %s", dir, strerror(errno));
        rt_state_dir_close(s);
        return r;
    }
    s->jobs_fd = rt_open_beneath(s->dir_fd, "jobs", O_RDONLY | O_DIRECTORY, 0);
    if (s->jobs_fd < 0) {
        r = s->jobs_fd;
        snprintf(err, errlen, "cannot open %s/jobs: %s", dir, rt_beneath_strerror(r));
        rt_state_dir_close(s);
        return r;
    }
    if ((r = probe_writable(s->dir_fd, s->file_mode)) < 0 || (r = probe_writable(s->jobs_fd, s->file_mode)) < 0) {
        snprintf(err, errlen, "cannot write to the state directory %s: %s", dir, strerror(-r));
        rt_state_dir_close(s);
        return r;
    }
    char last[64];
    if (rt_read_file_beneath(s->dir_fd, "last-id", last, sizeof(last)) >= 0)
        rt_parse_u64(rt_trim(last), &s->last_id);
    /* Rewritten in place: replacing a file (write a copy, rename it over)
     * costs ext4 ≈ 0.3 ms, on StartJob's path. */
    s->last_id_fd = rt_open_own_file(s->dir_fd, "last-id", O_RDWR, s->file_mode);
    if (s->last_id_fd < 0 || fstat(s->last_id_fd, &st) < 0) {
        r = s->last_id_fd < 0 ? s->last_id_fd : -errno;
        snprintf(err, errlen, "cannot open %s/last-id: %s", dir, rt_beneath_strerror(r));
        rt_state_dir_close(s);
        return r;
    }
    s->last_id_len = (size_t)st.st_size;
    if ((r = rt_record_log_open(&s->log, s->dir_fd, s->file_mode)) < 0) {
        snprintf(err, errlen, "cannot open %s/records.log: %s", dir, rt_beneath_strerror(r));
        rt_state_dir_close(s);
        return r;
    }
    s->syncer = rt_syncer_new();
    return 0;
}

void rt_state_dir_close(struct rt_state_dir *s)
{
    if (s->samples_open)
        rt_samples_close(&s->samples);
    s->samples_open = false;
    rt_syncer_free(s->syncer); /* what waits is synced first */
    s->syncer = NULL;
    rt_record_log_close(&s->log);
    if (s->last_id_fd >= 0)
        close(s->last_id_fd);
    if (s->jobs_fd >= 0)
        close(s->jobs_fd);
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    s->jobs_fd = s->dir_fd = s->last_id_fd = -1;
}

int rt_state_dir_alloc_id(struct rt_state_dir *s, uint64_t *id)
{
    if (s->last_id >= RT_JOB_ID_MAX)
        return -EOVERFLOW;
    char buf[32];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "%" PRIu64 "\n", s->last_id + 1);
    /* On the main loop: no fsync (job directories also record the ids). One
     * write of a few bytes at the start of the file: a crash leaves the old
     * number or the new one; numbers only grow, so does the text. */
    ssize_t w = pwrite(s->last_id_fd, buf, n, 0);
    int r = w == (ssize_t)n ? 0 : w < 0 ? -errno : -ENOSPC;
    if (r == 0 && n < s->last_id_len && ftruncate(s->last_id_fd, (off_t)n) < 0)
        r = -errno;
    if (r < 0) {
        rt_err("cannot persist the job id counter in %s: %s", s->path, strerror(-r));
        return r;
    }
    s->last_id_len = n;
    *id = ++s->last_id;
    return 0;
}

int rt_state_dir_log_record(struct rt_state_dir *s, uint64_t id, struct json_object *record, struct json_object *md)
{
    /* An append may fit in a block the log has; a new job's files would not. */
    struct statfs fs;
    if (md && fstatfs(s->jobs_fd, &fs) == 0 && fs.f_bfree == 0)
        return -ENOSPC;
    int r = rt_record_log_append(&s->log, id, record, md);
    if (r == 0)
        rt_syncer_add(s->syncer, s->dir_fd, "records.log");
    return r;
}

void rt_state_dir_settle(struct rt_state_dir *s, bool wait)
{
    if (!s->log.dirty)
        return;
    if (wait)
        rt_syncer_wait(s->syncer);
    else if (!rt_syncer_idle(s->syncer))
        return;
    int r = rt_record_log_clear(&s->log);
    if (r < 0)
        rt_warn("state: cannot empty %s/records.log: %s", s->path, strerror(-r));
}

static int job_dir(struct rt_state_dir *s, uint64_t id)
{
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    return rt_open_beneath(s->jobs_fd, name, O_RDONLY | O_DIRECTORY, 0);
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        }
    }
    return 0;
}

/* A job's JSON file, replaced atomically (fresh: created, in a directory
 * just made: nothing to replace, so no copy to rename); synced soon when
 * sync. Its length, or -errno. */
static int put_json(struct rt_state_dir *s, int dfd, const char *file, struct json_object *o, bool fresh, bool sync)
{
    size_t len;
    const char *txt = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                        &len);
    int r = -EEXIST, fd = fresh ? openat(dfd, file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, s->file_mode)
                                : -1;
    if (fd >= 0) {
        /* A crash before the write leaves an empty file: the job was never
         * answered for, and the loader skips it. */
        r = write_all(fd, txt, len);
        if (close(fd) < 0 && r == 0)
            r = -errno;
    } else if (!fresh || errno == EEXIST) {
        r = rt_write_file_at(dfd, file, txt, len, s->file_mode, RT_SYNC_NONE);
    } else {
        r = -errno;
    }
    if (r == 0 && sync)
        rt_syncer_add(s->syncer, dfd, file);
    return r < 0 ? r : (int)len;
}

static int save_json(struct rt_state_dir *s, uint64_t id, const char *file, struct json_object *o, bool sync)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return dfd;
    int r = put_json(s, dfd, file, o, false, sync);
    close(dfd);
    return r;
}

int rt_state_dir_save_record(struct rt_state_dir *s, uint64_t id, struct json_object *record, bool sync)
{
    return save_json(s, id, "job.json", record, sync);
}

static int save_metadata(struct rt_state_dir *s, uint64_t id, struct json_object *md)
{
    int r = save_json(s, id, "metadata.json", md, true);
    return r < 0 ? r : 0;
}

int rt_state_dir_create_job(struct rt_state_dir *s, uint64_t id, struct json_object *record, struct json_object *md)
{
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    if (mkdirat(s->jobs_fd, name, s->dir_mode) < 0 && errno != EEXIST)
        return -errno;
    rt_syncer_add(s->syncer, s->jobs_fd, NULL);
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return dfd;
    int r = put_json(s, dfd, "metadata.json", md, true, true);
    if (r >= 0)
        r = put_json(s, dfd, "job.json", record, true, true);
    close(dfd);
    return r;
}

/* A small JSON file of a job (its record or metadata), parsed; NULL when
 * missing, unreadable or malformed. */
static struct json_object *read_json(struct rt_state_dir *s, uint64_t id, const char *file, size_t max, uint64_t *size)
{
    char path[64], err[128];
    snprintf(path, sizeof(path), "%" PRIu64 "/%s", id, file);
    int fd = rt_open_beneath(s->jobs_fd, path, O_RDONLY, 0);
    if (fd < 0)
        return NULL;
    struct json_object *o = NULL;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (size_t)st.st_size <= max) {
        char *txt = rt_xmalloc((size_t)st.st_size + 1);
        ssize_t n = read(fd, txt, (size_t)st.st_size);
        if (n == st.st_size)
            o = rt_vl_parse(txt, (size_t)n, err, sizeof(err));
        if (size)
            *size = (uint64_t)st.st_size;
        free(txt);
    }
    close(fd);
    return o;
}

struct json_object *rt_state_dir_read_metadata(struct rt_state_dir *s, uint64_t id)
{
    struct json_object *md = read_json(s, id, "metadata.json", 2 * RT_JOB_METADATA_MAX, NULL);
    if (!json_object_is_type(md, json_type_object) || rt_job_metadata_check(md)) {
        json_object_put(md);
        return NULL;
    }
    return md;
}

int rt_state_dir_remove_job(struct rt_state_dir *s, uint64_t id, struct rt_figlog *fig)
{
    if (fig)
        rt_figlog_remove(fig);
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    /* What an older daemon, or an interrupted write, may have left too. */
    DIR *d = rt_opendir_sub(s->jobs_fd, name);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            unlinkat(dirfd(d), de->d_name, 0);
    if (d)
        closedir(d);
    return unlinkat(s->jobs_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

double rt_state_dir_samples_mtime(struct rt_state_dir *s, uint64_t id)
{
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    DIR *d = rt_opendir_sub(s->jobs_fd, name);
    double t = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        struct stat st;
        if (strncmp(de->d_name, "fig-", 4) != 0 || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        double m = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
        t = m > t ? m : t;
    }
    if (d)
        closedir(d);
    return t;
}

uint64_t rt_state_dir_job_bytes(const struct rt_job *j)
{
    return j->record_bytes + j->metadata_bytes + (j->fig ? rt_seglog_bytes(&j->fig->log) : 0);
}

/* Metadata lives in its own file, written once: a running job keeps it in
 * memory as well, an ended one only on disk. Records from before that file
 * carry it; it is copied to the file here (the record drops its copy when
 * it is next saved; an ended job's record is left as it was). */
static void load_metadata(struct rt_state_dir *s, struct rt_job *j)
{
    char path[64];
    snprintf(path, sizeof(path), "%" PRIu64 "/metadata.json", j->id);
    if (j->metadata && faccessat(s->jobs_fd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
        /* The record keeps its copy until it is next saved. */
        int r = save_metadata(s, j->id, j->metadata);
        if (r < 0)
            rt_warn("state: job %" PRIu64 ": cannot write its metadata file: %s", j->id, strerror(-r));
    }
    if (j->state != RT_JOB_RUNNING) {
        json_object_put(j->metadata);
        j->metadata = NULL;
    } else if (!j->metadata) {
        j->metadata = rt_state_dir_read_metadata(s, j->id);
        if (!j->metadata) {
            rt_warn("state: job %" PRIu64 ": its metadata is unreadable; it has none now", j->id);
            j->metadata = json_object_new_object();
        }
    }
}

static void add_figures(void *summary, const struct rt_job_figures *f)
{
    rt_job_summary_add(summary, f);
}

/* The job's samples: moved from an older daemon's samples file, or the
 * figures log indexed; totals after its record added by the one rule. */
static void load_samples(struct rt_state_dir *s, struct rt_job *j, struct rt_migration **mig)
{
    struct rt_samples *sm = &s->samples;
    uint64_t recorded = j->summary.samples;
    char legacy[64];
    snprintf(legacy, sizeof(legacy), "%" PRIu64 "/samples.jsonl", j->id);
    if (faccessat(s->jobs_fd, legacy, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!*mig)
            *mig = rt_migration_new();
        struct rt_migrate_job mj = {.id = j->id, .name_json = j->name_json, .pid = j->pid,
                                    .interval_secs = j->interval_secs, .ended = j->state != RT_JOB_RUNNING,
                                    .replay_from = recorded, .fn = add_figures, .ctx = &j->summary};
        j->fig = rt_migrate_job(sm, *mig, &mj);
        if (!j->fig)
            j->samples_blocked = true; /* the file stays for the next start */
        else
            j->summary.samples = rt_samples_job_load(sm, j->fig, UINT64_MAX, add_figures, &j->summary,
                                                       j->interval_secs);
        return;
    }
    j->fig = rt_samples_job_log(sm, j->id);
    if (j->fig)
        j->summary.samples = rt_samples_job_load(sm, j->fig, recorded, add_figures, &j->summary, j->interval_secs);
}

/* A record the log holds: into its file. A job whose directory is gone
 * (retention removed it) stays gone; one that was starting is created. */
static void replay_record(void *ctx, uint64_t id, struct json_object *record, struct json_object *md)
{
    struct rt_state_dir *s = ctx;
    int dfd = job_dir(s, id);
    const char *state = rt_json_get_string(record, "state");
    int r = 0;
    if (dfd >= 0) {
        if (md && faccessat(dfd, "metadata.json", F_OK, 0) < 0)
            r = put_json(s, dfd, "metadata.json", md, false, true);
        if (r >= 0)
            r = put_json(s, dfd, "job.json", record, false, true);
        close(dfd);
    } else if (dfd == -ENOENT && state && strcmp(state, "running") == 0) {
        struct json_object *none = md ? NULL : json_object_new_object();
        r = rt_state_dir_create_job(s, id, record, md ? md : none);
        json_object_put(none);
    }
    if (r < 0)
        rt_warn("state: job %" PRIu64 ": cannot write its record from records.log: %s", id, strerror(-r));
}

int rt_state_dir_load(struct rt_state_dir *s, struct rt_jobs *jobs)
{
    /* State changes a crash kept in the log go into their files first. */
    rt_record_log_replay(&s->log, replay_record, s);
    rt_state_dir_settle(s, true);
    char err[256];
    int r = rt_samples_open(&s->samples, s->dir_fd, s->jobs_fd, s->dir_mode, s->file_mode,
                            s->backlog_max ? s->backlog_max : 16u << 20, err, sizeof(err));
    if (r < 0) {
        rt_err("state: %s", err);
        return r;
    }
    s->samples_open = true;
    DIR *d = rt_opendir_sub(s->jobs_fd, ".");
    if (!d)
        return -errno;
    struct rt_migration *mig = NULL;
    struct dirent *de;
    int loaded = 0;
    while ((de = readdir(d))) {
        uint64_t id;
        if (!rt_parse_u64(de->d_name, &id))
            continue;
        /* Its id is taken, whatever its record: never handed out again. */
        if (id > s->last_id && id <= RT_JOB_ID_MAX)
            s->last_id = id;
        uint64_t rec_bytes = 0;
        struct json_object *rec = read_json(s, id, "job.json", 16 * 1024 * 1024, &rec_bytes);
        const char *repaired = NULL;
        struct rt_job *j = rec ? rt_job_from_record(rec, &repaired) : NULL;
        json_object_put(rec);
        if (!j || j->id != id) {
            rt_warn("state: skipping job %s: unreadable or malformed %s/jobs/%s/job.json", de->d_name, s->path,
                    de->d_name);
            rt_job_free(j);
            continue;
        }
        if (repaired)
            rt_warn("state: job %" PRIu64 ": %s out of range in its record; using the default", id, repaired);
        j->record_bytes = rec_bytes;
        load_metadata(s, j);
        load_samples(s, j, &mig);
        rt_jobs_add(jobs, j);
        loaded++;
    }
    closedir(d);
    rt_migration_free(mig);
    return loaded;
}
