/* The configuration file: any bytes as resource-trackerd.conf are refused
 * with a message or loaded; a loaded one, written back as --check-config
 * prints it, loads to the same configuration. @include directives are left
 * out: they read other files (an endless one like /dev/zero is an
 * administrator's own doing), which the fuzzer cannot keep inside its tree. */
#include "config/config.h"
#include "fuzz_tree.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char path[PATH_MAX], back[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = rt_fuzz_workdir("rt-fuzz-config");
    snprintf(path, sizeof(path), "%s/r.conf", dir);
    snprintf(back, sizeof(back), "%s/back.conf", dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memmem(data, size, "@include", 8))
        return 0;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
    struct rt_config c, again;
    char err[1024];
    err[0] = '\0';
    if (rt_config_reload(path, NULL, &c, err, sizeof(err)) < 0) {
        if (!err[0])
            abort(); /* a refusal always says why */
        return 0;
    }
    f = fopen(back, "w");
    if (!f)
        abort();
    rt_config_write(f, &c);
    fclose(f);
    if (rt_config_reload(back, NULL, &again, err, sizeof(err)) < 0 || rt_config_diff(&c, &again) != 0) {
        fprintf(stderr, "written back, the configuration differs: %s\n", err);
        abort();
    }
    return 0;
}
