#include "fuzz_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 8

static bool valid_path(const char *p)
{
    int depth = 1;
    if (!*p || *p == '/')
        return false;
    for (const char *c = p; *c; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '.' || *c == '_' || *c == '-' || *c == '/';
        if (!ok)
            return false;
        if (*c == '/' && (c[1] == '/' || c[1] == '\0' || ++depth > MAX_DEPTH))
            return false;
    }
    /* No "." or ".." component. */
    for (const char *c = p; c; c = strchr(c, '/')) {
        if (*c == '/')
            c++;
        if ((c[0] == '.' && (c[1] == '/' || !c[1])) || (c[0] == '.' && c[1] == '.' && (c[2] == '/' || !c[2])))
            return false;
    }
    return true;
}

static void make_parents(char *path)
{
    for (char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(path, 0755) < 0 && errno == EEXIST) {
            struct stat st;
            if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode) && unlink(path) == 0)
                mkdir(path, 0755); /* a file where a directory is wanted */
        }
        *s = '/';
    }
}

static void write_file(const char *path, const uint8_t *content, size_t len)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
        rt_fuzz_tree_remove(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return;
    while (len) {
        ssize_t n = write(fd, content, len);
        if (n <= 0)
            break;
        content += n;
        len -= (size_t)n;
    }
    close(fd);
}

static char workdir[PATH_MAX], outside[PATH_MAX + 16];

const char *rt_fuzz_outside(void)
{
    if (!outside[0]) {
        /* Valid job metadata and a job record alike: shown if followed. */
        if (!workdir[0])
            abort(); /* rt_fuzz_workdir first: the trees are made under it */
        snprintf(outside, sizeof(outside), "%s/outside.json", workdir);
        FILE *f = fopen(outside, "w");
        if (!f)
            abort();
        fputs("{\"project_name\":\"" RT_FUZZ_OUTSIDE_MARK "\",\"id\":1,\"pid\":1,\"state\":\"running\"}", f);
        fclose(f);
    }
    return outside;
}

/* A FIFO or a symbolic link for content that begins with a NUL byte. */
static bool make_special(const char *path, const uint8_t *content, size_t len)
{
    if (len < 2 || content[0] != 0 || (content[1] != 'F' && content[1] != 'L'))
        return false;
    rt_fuzz_tree_remove(path);
    if (content[1] == 'F') {
        mkfifo(path, 0644);
        return true;
    }
    const char *targets[] = {rt_fuzz_outside(), workdir, "/nonexistent/rt-fuzz", "."};
    if (symlink(targets[(len > 2 ? content[2] : 0) % 4], path) < 0)
        return false;
    return true;
}

size_t rt_fuzz_tree_apply(const char *dir, const uint8_t *data, size_t size, bool specials)
{
    size_t files = 0;
    while (size >= 1) {
        size_t n = data[0];
        if (size < 1 + n + 2)
            break;
        char name[256];
        memcpy(name, data + 1, n);
        name[n] = '\0';
        size_t len = (size_t)data[1 + n] | (size_t)data[2 + n] << 8;
        data += 3 + n;
        size -= 3 + n;
        if (len > size)
            len = size;
        if (strlen(name) == n && valid_path(name)) {
            char path[PATH_MAX];
            snprintf(path, sizeof(path), "%s/%s", dir, name);
            make_parents(path);
            if (!specials || !make_special(path, data, len))
                write_file(path, data, len);
            files++;
        }
        data += len;
        size -= len;
    }
    return files;
}

int rt_fuzz_tree_copy(const char *src, const char *dst)
{
    if (mkdir(dst, 0755) < 0)
        return -1;
    DIR *d = opendir(src);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char s[PATH_MAX], t[PATH_MAX];
        snprintf(s, sizeof(s), "%s/%s", src, de->d_name);
        snprintf(t, sizeof(t), "%s/%s", dst, de->d_name);
        struct stat st;
        if (lstat(s, &st) < 0)
            rc = -1;
        else if (S_ISDIR(st.st_mode))
            rc = rt_fuzz_tree_copy(s, t);
        else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlink(s, target, sizeof(target) - 1);
            if (n >= 0) {
                target[n] = '\0';
                rc = symlink(target, t);
            }
        } else {
            FILE *in = fopen(s, "rb"), *out = fopen(t, "wb");
            char buf[8192];
            size_t k;
            while (in && out && (k = fread(buf, 1, sizeof(buf), in)) > 0)
                fwrite(buf, 1, k, out);
            rc = in && out ? 0 : -1;
            if (in)
                fclose(in);
            if (out)
                fclose(out);
        }
    }
    closedir(d);
    return rc;
}

void rt_fuzz_tree_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        unlink(dir);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rt_fuzz_tree_remove(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void remove_workdir(void)
{
    rt_fuzz_tree_remove(workdir);
}

const char *rt_fuzz_workdir(const char *prefix)
{
    /* Memory (/dev/shm) when there is one: a disk makes every run of a tree
     * cost milliseconds. */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(workdir, sizeof(workdir), "%s/%s-XXXXXX", tmp, prefix);
    if (!mkdtemp(workdir))
        abort();
    atexit(remove_workdir);
    return workdir;
}
