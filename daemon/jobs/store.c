#include "jobs/store.h"

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
    /* Never world-accessible, whatever the directory was created with; but
     * a directory all may write to (/tmp) is not ours to change or to use. */
    struct stat st;
    if (fstat(s->dir_fd, &st) == 0 && (st.st_mode & S_ISVTX) && (st.st_mode & 0002)) {
        snprintf(err, errlen, "state directory %s is shared by every user (sticky and world-writable): "
                 "name a directory of its own", dir);
        rt_store_close(s);
        return -EPERM;
    }
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
    s->jobs_fd = rt_open_beneath(s->dir_fd, "jobs", O_RDONLY | O_DIRECTORY, 0);
    if (s->jobs_fd < 0) {
        r = s->jobs_fd;
        snprintf(err, errlen, "cannot open %s/jobs: %s", dir, rt_beneath_strerror(r));
        rt_store_close(s);
        return r;
    }
    if ((r = probe_writable(s->dir_fd, s->file_mode)) < 0 || (r = probe_writable(s->jobs_fd, s->file_mode)) < 0) {
        snprintf(err, errlen, "cannot write to the state directory %s: %s", dir, strerror(-r));
        rt_store_close(s);
        return r;
    }
    char last[64];
    if (rt_read_file_beneath(s->dir_fd, "last-id", last, sizeof(last)) >= 0)
        rt_parse_u64(rt_trim(last), &s->last_id);
    return 0;
}

void rt_store_close(struct rt_store *s)
{
    if (s->samples_open)
        rt_samples_close(&s->samples);
    s->samples_open = false;
    if (s->jobs_fd >= 0)
        close(s->jobs_fd);
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    s->jobs_fd = s->dir_fd = -1;
}

int rt_store_alloc_id(struct rt_store *s, uint64_t *id)
{
    if (s->last_id >= RT_JOB_ID_MAX)
        return -EOVERFLOW;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", s->last_id + 1);
    /* On the main loop: no fsync (job directories also record the ids). */
    int r = rt_write_file_at(s->dir_fd, "last-id", buf, (size_t)n, s->file_mode, RT_SYNC_NONE);
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
    return rt_open_beneath(s->jobs_fd, name, O_RDONLY | O_DIRECTORY, 0);
}

/* A job's JSON file, replaced atomically: its length, or -errno. */
static int save_json(struct rt_store *s, uint64_t id, const char *file, struct json_object *o, bool sync)
{
    int dfd = job_dir(s, id);
    if (dfd < 0)
        return dfd;
    size_t len;
    const char *txt = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                        &len);
    int r = rt_write_file_at(dfd, file, txt, len, s->file_mode, sync ? RT_SYNC_FULL : RT_SYNC_NONE);
    close(dfd);
    return r < 0 ? r : (int)len;
}

int rt_store_save_record(struct rt_store *s, uint64_t id, struct json_object *record, bool sync)
{
    return save_json(s, id, "job.json", record, sync);
}

static int save_metadata(struct rt_store *s, uint64_t id, struct json_object *md)
{
    int r = save_json(s, id, "metadata.json", md, true);
    return r < 0 ? r : 0;
}

int rt_store_create_job(struct rt_store *s, uint64_t id, struct json_object *record, struct json_object *md)
{
    char name[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    if (mkdirat(s->jobs_fd, name, s->dir_mode) < 0 && errno != EEXIST)
        return -errno;
    int r = save_metadata(s, id, md);
    return r < 0 ? r : rt_store_save_record(s, id, record, true);
}

/* A small JSON file of a job (its record or metadata), parsed; NULL when
 * missing, unreadable or malformed. */
static struct json_object *read_json(struct rt_store *s, uint64_t id, const char *file, size_t max, uint64_t *size)
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

struct json_object *rt_store_read_metadata(struct rt_store *s, uint64_t id)
{
    struct json_object *md = read_json(s, id, "metadata.json", 2 * RT_JOB_METADATA_MAX, NULL);
    if (!json_object_is_type(md, json_type_object) || rt_job_metadata_check(md)) {
        json_object_put(md);
        return NULL;
    }
    return md;
}

int rt_store_remove_job(struct rt_store *s, uint64_t id, struct rt_figlog *fig)
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

double rt_store_samples_mtime(struct rt_store *s, uint64_t id)
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

uint64_t rt_store_job_bytes(const struct rt_job *j)
{
    return j->record_bytes + j->metadata_bytes + (j->fig ? rt_seglog_bytes(&j->fig->log) : 0);
}

/* Metadata lives in its own file, written once: a running job keeps it in
 * memory as well, an ended one only on disk. Records from before that file
 * carry it; it is copied to the file here (the record drops its copy when
 * it is next saved; an ended job's record is left as it was). */
static void load_metadata(struct rt_store *s, struct rt_job *j)
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
        j->metadata = rt_store_read_metadata(s, j->id);
        if (!j->metadata) {
            rt_warn("state: job %" PRIu64 ": its metadata is unreadable; it has none now", j->id);
            j->metadata = json_object_new_object();
        }
    }
}

/* The job's samples: moved from an older daemon's samples file, or the
 * figures log indexed; totals after its record added by the one rule. */
static void load_samples(struct rt_store *s, struct rt_job *j, struct rt_migration **mig)
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
                                    .replay_from = recorded, .sum = &j->summary};
        j->fig = rt_migrate_job(sm, *mig, &mj);
        if (!j->fig)
            j->samples_blocked = true; /* the file stays for the next start */
        else
            j->summary.samples = rt_samples_job_load(sm, j->fig, UINT64_MAX, &j->summary, j->interval_secs);
        return;
    }
    j->fig = rt_samples_job_log(sm, j->id);
    if (j->fig)
        j->summary.samples = rt_samples_job_load(sm, j->fig, recorded, &j->summary, j->interval_secs);
}

int rt_store_load(struct rt_store *s, struct rt_jobs *jobs)
{
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
