/* resource-trackerctl metrics: the exposition text for what the caller may
 * see, printed, answered over HTTP on stdin/stdout (socket activation), or
 * kept in a node_exporter textfile. */
#ifndef CTL_METRICS_METRICS_H
#define CTL_METRICS_METRICS_H

#include "ctl.h"

/* Which jobs an exporter publishes: none (the host only), those the caller
 * may see, or all of them (the caller must be an administrator, else the
 * scrape fails rather than silently publishing fewer). */
enum ctl_publish { CTL_PUBLISH_NONE, CTL_PUBLISH_VISIBLE, CTL_PUBLISH_ALL };

struct ctl_metrics {
    struct ctl *ctl;
    enum ctl_publish publish;
    double keep_ended_secs;  /* ended jobs stay this long, then leave */
    const char *token_file;  /* --bearer-token-file: what a scrape over HTTP must present */
};

/* The exposition text in *text (malloc'd, *len bytes). Returns 0, or an
 * RT_EXIT_* code after printing why. */
int ctl_metrics_collect(const struct ctl_metrics *m, char **text, size_t *len);

/* Answer one HTTP request on stdin/stdout. Jobs are published only to a
 * scraper that presents the bearer token of token_file (everyone local can
 * connect to the port). Returns an RT_EXIT_* code. */
int ctl_metrics_http(const struct ctl_metrics *m);
/* Write path atomically (temporary file and rename), once or every
 * interval_secs until SIGTERM/SIGINT, which remove it. */
int ctl_metrics_textfile(const struct ctl_metrics *m, const char *path, double interval_secs);

#endif
