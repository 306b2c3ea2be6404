/* Command line of resource-trackerd. */
#ifndef RT_OPTIONS_H
#define RT_OPTIONS_H

#include "daemon.h"

#include <stdbool.h>
#include <stdio.h>

struct rt_options {
    bool check_config, quiet;
    bool help, version;
    enum rt_log_target_opt { RT_LOGT_AUTO, RT_LOGT_STDERR, RT_LOGT_JOURNAL } log_target;
};

/* Parse argv into d->cfg (defaults first, flags on top). Returns 0, or the
 * exit code to use (2 for usage errors) after printing a message. */
int rt_options_parse(int argc, char **argv, struct rt_daemon *d, struct rt_options *o);
void rt_options_usage(FILE *f);
/* Defaults, the configuration file, then the command line, into d->cfg.
 * 0, or -1 with the reason (file, line, key) in err. */
int rt_options_config(struct rt_daemon *d, char *err, size_t errlen);

#endif
