#include "config/dropins.h"

#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_dropin(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 5 && strcmp(e->d_name + n - 5, ".conf") == 0;
}

/* Bytes, not the locale's collation: the order must not depend on LANG. */
static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int rt_config_files_list(const char *main, struct rt_config_files *out, char *err, size_t errlen)
{
    out->n = 0;
    out->paths = NULL;
    char dir[PATH_MAX];
    if ((size_t)snprintf(dir, sizeof(dir), "%s.d", main) >= sizeof(dir)) {
        snprintf(err, errlen, "%s: file name too long", main);
        return -ENAMETOOLONG;
    }
    struct dirent **names = NULL;
    int n = scandir(dir, &names, is_dropin, by_name);
    if (n < 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            int e = errno;
            snprintf(err, errlen, "%s: %s", dir, strerror(e));
            return -e;
        }
        n = 0;
    }
    out->paths = rt_xcalloc((size_t)n + 1, sizeof(*out->paths));
    out->paths[out->n++] = rt_xstrdup(main);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        if (rc == 0 && (size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) >= sizeof(path)) {
            snprintf(err, errlen, "%s/%s: file name too long", dir, names[i]->d_name);
            rc = -1;
        } else if (rc == 0) {
            out->paths[out->n++] = rt_xstrdup(path);
        }
        free(names[i]);
    }
    free(names);
    if (rc < 0)
        rt_config_files_free(out);
    return rc;
}

void rt_config_files_free(struct rt_config_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->paths[i]);
    free(f->paths);
    f->paths = NULL;
    f->n = 0;
}
