#include "cgroup/hier.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const hier_names[RT_CG_NHIER] = {
    [RT_CG_V2] = "v2", [RT_CG_MEMORY] = "memory", [RT_CG_CPUACCT] = "cpuacct",
    [RT_CG_CPU] = "cpu", [RT_CG_BLKIO] = "blkio", [RT_CG_PIDS] = "pids",
};

const char *rt_cg_hier_name(enum rt_cg_hier hier)
{
    return (unsigned)hier < RT_CG_NHIER ? hier_names[hier] : "?";
}

/* Whether the comma-separated list has the item. */
static bool has_option(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p; p = strchr(p, ',')) {
        if (*p == ',')
            p++;
        if (strncmp(p, item, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

static int open_point(const struct rt_roots *roots, const char *point)
{
    if (strncmp(point, "/sys/", 5) == 0)
        return openat(roots->sys_fd, point + 5, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (strcmp(roots->sys, "/sys") != 0)
        return -1; /* a fixture tree: nothing outside its /sys */
    return open(point, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void take(struct rt_cg_host *h, const struct rt_roots *roots, enum rt_cg_hier hier, const char *root,
                 const char *point)
{
    struct rt_cg_mount *m = &h->m[hier];
    /* The first mount of the whole tree wins over a bind mount of a subtree. */
    if (m->fd >= 0 && (strcmp(m->root, "/") == 0 || strcmp(root, "/") != 0))
        return;
    int fd = open_point(roots, point);
    if (fd < 0)
        return;
    if (m->fd >= 0) {
        close(m->fd);
        free(m->point);
        free(m->root);
    }
    m->fd = fd;
    m->point = rt_xstrdup(point);
    m->root = rt_xstrdup(root);
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS…] - TYPE SOURCE SUPER". */
static void mount_line(struct rt_cg_host *h, const struct rt_roots *roots, char *line)
{
    char *f[5], *save = NULL, *tok = strtok_r(line, " \n", &save);
    for (int i = 0; i < 5; i++) {
        if (!tok)
            return;
        f[i] = tok;
        tok = strtok_r(NULL, " \n", &save);
    }
    while (tok && strcmp(tok, "-") != 0)
        tok = strtok_r(NULL, " \n", &save);
    char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
    char *source = type ? strtok_r(NULL, " \n", &save) : NULL;
    char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
    if (!super)
        return;
    char *root = f[3], *point = f[4];
    rt_unescape_octal(root);
    rt_unescape_octal(point);
    if ((strcmp(type, "cgroup2") == 0 || strcmp(type, "cgroup") == 0) && has_option(super, "favordynmods"))
        h->favor_dynmods = true;
    if (strcmp(type, "cgroup2") == 0) {
        take(h, roots, RT_CG_V2, root, point);
        return;
    }
    if (strcmp(type, "cgroup") != 0)
        return;
    static const struct {
        const char *option;
        enum rt_cg_hier hier;
    } v1[] = {
        {"memory", RT_CG_MEMORY}, {"cpuacct", RT_CG_CPUACCT}, {"cpu", RT_CG_CPU},
        {"blkio", RT_CG_BLKIO},   {"pids", RT_CG_PIDS},
    };
    for (size_t i = 0; i < RT_ARRAY_SIZE(v1); i++)
        if (has_option(super, v1[i].option))
            take(h, roots, v1[i].hier, root, point);
}

int rt_cg_host_open(struct rt_cg_host *h, const struct rt_roots *roots)
{
    memset(h, 0, sizeof(*h));
    for (int i = 0; i < RT_CG_NHIER; i++)
        h->m[i].fd = -1;
    int fd = openat(roots->proc_fd, "self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        int e = errno;
        close(fd);
        return -e;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        mount_line(h, roots, line);
    free(line);
    fclose(f);
    bool v1 = false;
    for (int i = RT_CG_V2 + 1; i < RT_CG_NHIER; i++)
        v1 |= h->m[i].fd >= 0;
    bool v2 = h->m[RT_CG_V2].fd >= 0;
    h->mode = v2 ? (v1 ? RT_CG_MODE_HYBRID : RT_CG_MODE_UNIFIED) : (v1 ? RT_CG_MODE_LEGACY : RT_CG_MODE_NONE);
    return 0;
}

void rt_cg_host_close(struct rt_cg_host *h)
{
    for (int i = 0; i < RT_CG_NHIER; i++) {
        if (h->m[i].fd >= 0)
            close(h->m[i].fd);
        free(h->m[i].point);
        free(h->m[i].root);
        h->m[i] = (struct rt_cg_mount){.fd = -1};
    }
    h->mode = RT_CG_MODE_NONE;
    h->favor_dynmods = false;
}

/* The rest of `path` after `prefix` when it is a directory prefix ("" for
 * the prefix itself, "/x" below it), else NULL. prefix "/" matches all. */
static const char *below(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    while (n > 0 && prefix[n - 1] == '/')
        n--;
    if (strncmp(path, prefix, n) != 0 || (path[n] != '/' && path[n] != '\0'))
        return NULL;
    return path + n;
}

int rt_cg_path_next(const char **p, char name[256])
{
    const char *s = *p + strspn(*p, "/"), *e = strchrnul(s, '/');
    if (s == e)
        return 0;
    if ((size_t)(e - s) > 255)
        return -ENAMETOOLONG;
    memcpy(name, s, (size_t)(e - s));
    name[e - s] = '\0';
    *p = e;
    return 1;
}

/* Append the components of s to out ("/a/b"), refusing "." and "..". */
static int append_components(const char *s, char *out, size_t size, size_t *len)
{
    char name[256];
    int r;
    while ((r = rt_cg_path_next(&s, name)) > 0) {
        size_t n = strlen(name);
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            return -EINVAL;
        if (*len + 1 + n + 1 > size)
            return -ENAMETOOLONG;
        out[(*len)++] = '/';
        memcpy(out + *len, name, n);
        *len += n;
    }
    return r;
}

int rt_cg_path_normalize(const struct rt_cg_host *h, const char *in, char *out, size_t size)
{
    if (!in || in[0] != '/')
        return -EINVAL;
    if (size < 2)
        return -ENAMETOOLONG;
    /* The longest mount point holding it makes it a path in that tree. */
    const char *rest = in, *root = "";
    size_t best = 0;
    for (int i = 0; h && i < RT_CG_NHIER; i++) {
        const struct rt_cg_mount *m = &h->m[i];
        const char *r = m->fd >= 0 ? below(in, m->point) : NULL;
        if (r && (size_t)(r - in) > best) {
            best = (size_t)(r - in);
            rest = r;
            root = m->root;
        }
    }
    size_t len = 0;
    int rc = append_components(root, out, size, &len);
    if (rc == 0)
        rc = append_components(rest, out, size, &len);
    if (rc < 0)
        return rc;
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return 0;
}

const char *rt_cg_path_in(const struct rt_cg_host *h, enum rt_cg_hier hier, const char *path)
{
    const struct rt_cg_mount *m = &h->m[hier];
    return m->fd >= 0 ? below(path, m->root) : NULL;
}

int rt_cg_open_dir(const struct rt_cg_host *h, enum rt_cg_hier hier, const char *path)
{
    const char *rel = rt_cg_path_in(h, hier, path);
    if (!rel)
        return -ENOENT;
    int fd = openat(h->m[hier].fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char name[256];
    int r;
    while ((r = rt_cg_path_next(&rel, name)) > 0) {
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(fd);
        if (next < 0)
            return -e;
        fd = next;
    }
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}
