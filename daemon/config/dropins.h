/* The files that make up the configuration: the main file, then its drop-ins
 * FILE.d/NAME.conf in lexical (byte) order, each overriding the keys it sets. */
#ifndef RT_CONFIG_DROPINS_H
#define RT_CONFIG_DROPINS_H

#include <stddef.h>

struct rt_config_files {
    char **paths; /* paths[0] is the main file */
    size_t n;
};

/* List main and the drop-ins of main ".d". A missing or non-directory .d is
 * no drop-ins; names that start with '.' or do not end in ".conf" are not
 * read. 0, or -1 with "DIR: why" in err. */
int rt_config_files_list(const char *main, struct rt_config_files *out, char *err, size_t errlen);
void rt_config_files_free(struct rt_config_files *f);

#endif
