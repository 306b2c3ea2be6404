#include "module.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Next to the program when it is there: a build tree uses its own modules,
 * never those of an installed package. Installed, that is the bin
 * directory, where no module is. */
static void module_path(const char *module, char *path, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
    const char *slash = n > 0 && n < (ssize_t)sizeof(exe) ? memrchr(exe, '/', (size_t)n) : NULL;
    if (slash && snprintf(path, size, "%.*s/%s", (int)(slash - exe), exe, module) < (int)size &&
        access(path, F_OK) == 0)
        return;
    snprintf(path, size, "%s/%s", RT_CTL_MODULEDIR, module);
}

void *ctl_module_sym(const char *module, const char *symbol, char *err, size_t errlen)
{
    char path[PATH_MAX];
    module_path(module, path, sizeof(path));
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror(); /* names the path */
        snprintf(err, errlen, "%s", why ? why : path);
        return NULL;
    }
    void *sym = dlsym(h, symbol);
    if (!sym)
        snprintf(err, errlen, "%s has no %s", path, symbol);
    return sym;
}
