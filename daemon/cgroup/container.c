#include "cgroup/container.h"

#include "cgroup/classify.h"
#include "rt/json.h"
#include "rt/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where runtimes put a container's cgroup; {ID} is the 64-digit id. */
static const char *const layouts[] = {
    "system.slice/docker-{ID}.scope",
    "docker/{ID}",
    "machine.slice/libpod-{ID}.scope",
    "machine.slice/*.slice/libpod-{ID}.scope",
    "libpod_parent/libpod-{ID}",
    "user.slice/user-*.slice/user@*.service/user.slice/libpod-{ID}.scope",
    "user.slice/user-*.slice/user@*.service/user.slice/*.slice/libpod-{ID}.scope",
    "kubepods.slice/kubepods-pod*.slice/*-{ID}.scope",
    "kubepods.slice/kubepods-*.slice/kubepods-*-pod*.slice/*-{ID}.scope",
    "kubepods/pod*/{ID}",
    "kubepods/*/pod*/{ID}",
};

#define MAX_HITS 8
#define STATE_FILE_MAX (64u << 20)

struct hit {
    char id[65];
    char *path;
};

struct search {
    const char *prefix; /* lowercase hex */
    struct hit hits[MAX_HITS];
    size_t n;
};

static void add_hit(struct search *s, const char *id, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->hits[i].id, id) == 0)
            return;
    if (s->n == MAX_HITS)
        return;
    rt_strlcpy(s->hits[s->n].id, id, sizeof(s->hits[s->n].id));
    s->hits[s->n++].path = rt_xstrdup(path);
}

/* name against the last pattern component "GLOB{ID}SUFFIX": the id in it. */
static bool match_last(const char *pat, size_t patlen, const char *name, char id[65])
{
    const char *brace = strstr(pat, "{ID}");
    size_t plen = (size_t)(brace - pat), slen = patlen - plen - 4, n = strlen(name);
    if (n < 64 + slen || memcmp(name + n - slen, brace + 4, slen) != 0)
        return false;
    const char *idp = name + n - slen - 64;
    char glob[64], pre[256];
    if (!rt_cg_is_container_id(idp, 64) || plen >= sizeof(glob) || (size_t)(idp - name) >= sizeof(pre))
        return false;
    memcpy(glob, pat, plen);
    glob[plen] = '\0';
    memcpy(pre, name, (size_t)(idp - name));
    pre[idp - name] = '\0';
    if (fnmatch(glob, pre, 0) != 0)
        return false;
    memcpy(id, idp, 64);
    id[64] = '\0';
    return true;
}

/* One level of a layout: pat is what is left of it, path the cgroup so far. */
static void search_level(struct search *s, int dir, const char *pat, char *path, size_t plen)
{
    const char *slash = strchr(pat, '/');
    size_t clen = slash ? (size_t)(slash - pat) : strlen(pat);
    char comp[128];
    if (clen >= sizeof(comp))
        return;
    memcpy(comp, pat, clen);
    comp[clen] = '\0';
    if (slash && !strchr(comp, '*')) {
        int fd = openat(dir, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && plen + 1 + clen < 4096) {
            snprintf(path + plen, 4096 - plen, "/%s", comp);
            search_level(s, fd, slash + 1, path, plen + 1 + clen);
        }
        if (fd >= 0)
            close(fd);
        return;
    }
    DIR *d = rt_opendir_sub(dir, ".");
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) && s->n < MAX_HITS) {
        size_t n = strlen(de->d_name);
        if (de->d_type != DT_DIR || de->d_name[0] == '.' || plen + 1 + n >= 4096)
            continue;
        char id[65];
        if (!slash) {
            if (match_last(comp, clen, de->d_name, id) && strncmp(id, s->prefix, strlen(s->prefix)) == 0) {
                snprintf(path + plen, 4096 - plen, "/%s", de->d_name);
                add_hit(s, id, path);
            }
        } else if (fnmatch(comp, de->d_name, 0) == 0) {
            int child = openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (child >= 0) {
                snprintf(path + plen, 4096 - plen, "/%s", de->d_name);
                search_level(s, child, slash + 1, path, plen + 1 + n);
                close(child);
            }
        }
    }
    closedir(d);
}

/* Every running container whose id starts with prefix, in the v2 tree and
 * the v1 memory hierarchy (the cgroupfs drivers make none in v2 on a
 * hybrid host). */
static void search_ids(const struct rt_cg_host *h, struct search *s)
{
    static const enum rt_cg_hier where[] = {RT_CG_V2, RT_CG_MEMORY};
    for (size_t w = 0; w < RT_ARRAY_SIZE(where); w++) {
        int root = rt_cg_open_dir(h, where[w], "/");
        if (root < 0)
            continue;
        for (size_t i = 0; i < RT_ARRAY_SIZE(layouts); i++) {
            char path[4096] = "";
            search_level(s, root, layouts[i], path, 0);
        }
        close(root);
    }
}

/* ---- the runtimes' state files ---- */

/* A JSON file owned by `owner`, read without following a link. */
static struct json_object *read_json(const char *path, uid_t owner)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return NULL;
    struct stat st;
    struct json_object *o = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == owner && st.st_size > 0 &&
        (uint64_t)st.st_size <= STATE_FILE_MAX) {
        char *buf = rt_xmalloc((size_t)st.st_size + 1);
        size_t len = 0;
        ssize_t r;
        while (len < (size_t)st.st_size && (r = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
            len += (size_t)r;
        buf[len] = '\0';
        o = json_tokener_parse(buf);
        free(buf);
    }
    close(fd);
    return o;
}

static char *join(const char *root, const char *path)
{
    return rt_xasprintf("%s%s", root, path);
}

/* docker: containers/ID/config.v2.json: "Name": "/NAME", "Config": {"Image": …} */
static struct json_object *docker_config(const char *root, const char *id)
{
    char *p = rt_xasprintf("%s/var/lib/docker/containers/%s/config.v2.json", root, id);
    struct json_object *o = read_json(p, 0);
    free(p);
    return o;
}

static const char *docker_name(struct json_object *cfg)
{
    const char *n = rt_json_get_string(cfg, "Name");
    return n && n[0] == '/' ? n + 1 : n;
}

/* podman's storage files of root (uid 0) or of a rootless user. */
static int podman_files(const char *root, uid_t uid, char *files[2])
{
    if (uid == 0) {
        files[0] = join(root, "/var/lib/containers/storage/overlay-containers/containers.json");
        files[1] = join(root, "/run/containers/storage/overlay-containers/volatile-containers.json");
        return 2;
    }
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res || !pw.pw_dir)
        return 0;
    files[0] = rt_xasprintf("%s%s/.local/share/containers/storage/overlay-containers/containers.json", root,
                            pw.pw_dir);
    files[1] = rt_xasprintf("%s/run/user/%u/containers/overlay-containers/volatile-containers.json", root,
                            (unsigned)uid);
    return 2;
}

/* The entry of containers.json with this id, or whose names hold name. */
static struct json_object *podman_entry(struct json_object *list, const char *id, const char *name)
{
    size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(list, i);
        const char *eid = rt_json_get_string(e, "id");
        if (id && eid && strcmp(eid, id) == 0)
            return e;
        struct json_object *names = rt_json_get_array(e, "names");
        size_t k = names ? json_object_array_length(names) : 0;
        for (size_t j = 0; name && j < k; j++) {
            const char *nm = json_object_get_string(json_object_array_get_idx(names, j));
            if (nm && strcmp(nm, name) == 0)
                return e;
        }
    }
    return NULL;
}

/* The users with a systemd user manager (rootless podman lives there). */
static size_t manager_uids(const struct rt_cg_host *h, uid_t *uids, size_t max)
{
    size_t n = 0;
    for (enum rt_cg_hier w = RT_CG_V2; w <= RT_CG_MEMORY && n == 0; w++) {
        int fd = rt_cg_open_dir(h, w, "/user.slice");
        DIR *d = fd >= 0 ? rt_opendir_sub(fd, ".") : NULL;
        if (fd >= 0)
            close(fd);
        if (!d)
            continue;
        struct dirent *de;
        unsigned u;
        char tail[16];
        while ((de = readdir(d)) && n < max)
            if (sscanf(de->d_name, "user-%u%15s", &u, tail) == 2 && strcmp(tail, ".slice") == 0 && u != 0)
                uids[n++] = (uid_t)u;
        closedir(d);
    }
    return n;
}

/* Ids of containers named `name`, from docker's and podman's state. */
static size_t ids_by_name(const struct rt_cg_host *h, const char *root, const char *name, char ids[][65], size_t max)
{
    size_t n = 0;
    char *dir = join(root, "/var/lib/docker/containers");
    DIR *d = opendir(dir);
    free(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) && n < max) {
        if (!rt_cg_is_container_id(de->d_name, strlen(de->d_name)))
            continue;
        struct json_object *cfg = docker_config(root, de->d_name);
        const char *nm = cfg ? docker_name(cfg) : NULL;
        if (nm && strcmp(nm, name) == 0)
            rt_strlcpy(ids[n++], de->d_name, 65);
        json_object_put(cfg);
    }
    if (d)
        closedir(d);
    uid_t uids[256];
    size_t nu = manager_uids(h, uids + 1, RT_ARRAY_SIZE(uids) - 1) + 1;
    uids[0] = 0;
    for (size_t u = 0; u < nu && n < max; u++) {
        char *files[2];
        int nf = podman_files(root, uids[u], files);
        for (int f = 0; f < nf; f++) {
            struct json_object *list = read_json(files[f], uids[u]);
            struct json_object *e = list ? podman_entry(list, NULL, name) : NULL;
            const char *id = e ? rt_json_get_string(e, "id") : NULL;
            if (id && rt_cg_is_container_id(id, strlen(id)) && n < max)
                rt_strlcpy(ids[n++], id, 65);
            json_object_put(list);
            free(files[f]);
        }
    }
    return n;
}

/* Name and image from the state files of c's runtime. */
static void describe(const char *root, struct rt_container *c, int64_t uid)
{
    if (strcmp(c->runtime, "docker") == 0) {
        struct json_object *cfg = docker_config(root, c->id);
        const char *nm = cfg ? docker_name(cfg) : NULL;
        const char *img = rt_json_get_string(rt_json_get_object(cfg, "Config"), "Image");
        c->name = nm ? rt_xstrdup(nm) : NULL;
        c->image = img ? rt_xstrdup(img) : NULL;
        json_object_put(cfg);
        return;
    }
    if (strcmp(c->runtime, "podman") != 0)
        return;
    char *files[2];
    uid_t owner = uid > 0 ? (uid_t)uid : 0;
    int nf = podman_files(root, owner, files);
    bool found = false;
    for (int f = 0; f < nf; f++) {
        struct json_object *list = found ? NULL : read_json(files[f], owner);
        struct json_object *e = list ? podman_entry(list, c->id, NULL) : NULL;
        if (e) {
            struct json_object *names = rt_json_get_array(e, "names");
            const char *nm = names ? json_object_get_string(json_object_array_get_idx(names, 0)) : NULL;
            const char *meta = rt_json_get_string(e, "metadata"); /* JSON in a string */
            struct json_object *m = meta ? json_tokener_parse(meta) : NULL;
            const char *img = rt_json_get_string(m, "image-name");
            c->name = nm ? rt_xstrdup(nm) : NULL;
            c->image = img ? rt_xstrdup(img) : NULL;
            json_object_put(m);
            found = true;
        }
        json_object_put(list);
        free(files[f]);
    }
}

static void free_hits(struct search *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->hits[i].path);
    s->n = 0;
}

int rt_container_find(const struct rt_cg_host *h, const char *state_root, const char *key, struct rt_container *out)
{
    memset(out, 0, sizeof(*out));
    if (!key || !*key)
        return -EINVAL;
    const char *root = state_root && strcmp(state_root, "/") != 0 ? state_root : "";
    char prefix[65];
    size_t len = strlen(key);
    bool hex = len >= 12 && len <= 64;
    for (size_t i = 0; hex && i < len; i++) {
        hex = isxdigit((unsigned char)key[i]);
        prefix[i] = (char)tolower((unsigned char)key[i]);
    }
    struct search s = {.prefix = prefix, .n = 0};
    if (hex) {
        prefix[len] = '\0';
        search_ids(h, &s);
    }
    if (s.n == 0) { /* a name */
        char ids[MAX_HITS][65];
        size_t n = ids_by_name(h, root, key, ids, MAX_HITS);
        for (size_t i = 0; i < n; i++) {
            struct search one = {.prefix = ids[i], .n = 0};
            search_ids(h, &one);
            for (size_t k = 0; k < one.n; k++)
                add_hit(&s, one.hits[k].id, one.hits[k].path);
            free_hits(&one);
        }
    }
    if (s.n != 1) {
        int rc = s.n ? -ENOTUNIQ : -ENOENT;
        free_hits(&s);
        return rc;
    }
    struct rt_cg_class cls;
    rt_cg_classify(s.hits[0].path, &cls);
    rt_strlcpy(out->id, s.hits[0].id, sizeof(out->id));
    rt_strlcpy(out->runtime, cls.kind == RT_CG_KIND_CONTAINER ? cls.name : "", sizeof(out->runtime));
    out->cgroup = s.hits[0].path;
    describe(root, out, cls.uid);
    return 0;
}

void rt_container_free(struct rt_container *c)
{
    free(c->cgroup);
    free(c->name);
    free(c->image);
    c->cgroup = c->name = c->image = NULL;
}
