/* resource-trackerd: parse the command line and run the daemon. */
#include "daemon.h"
#include "system/http_global.h"
#include "system/log.h"
#include "config/options.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    static struct rt_daemon d;
    rt_config_defaults(&d.cfg);
    d.listen_fd = -1;
    struct rt_options o;
    int rc = rt_options_parse(argc, argv, &d, &o);
    if (rc)
        return rc;
    if (o.help) {
        rt_options_usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("resource-trackerd %s\n", RT_VERSION);
        return 0;
    }
    char err[1024];
    if (rt_options_config(&d, err, sizeof(err)) < 0) {
        fprintf(stderr, "resource-trackerd: %s\n", err);
        return RT_EXIT_CONFIG;
    }
    if (o.check_config) {
        if (!o.quiet)
            rt_config_write(stdout, &d.cfg);
        return 0;
    }
    rt_log_init(o.log_target == RT_LOGT_STDERR    ? RT_LOG_STDERR
                : o.log_target == RT_LOGT_JOURNAL ? RT_LOG_JOURNAL
                                                  : RT_LOG_AUTO,
                d.cfg.log_level);
    /* libcurl's global state must exist before any thread starts. Without
     * it the daemon tracks as before; what needs HTTP says so itself. */
    if (!rt_http_global_init())
        rt_warn("without libcurl: no uploads, no cloud discovery");
    rc = rt_daemon_run(&d);
    rt_http_global_cleanup();
    return rc;
}
