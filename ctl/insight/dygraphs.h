/* dygraphs 2.2.1 from Debian's libjs-dygraphs, read at report time and
 * inlined into the report (Debian discourages embedded library copies). */
#ifndef RT_INSIGHT_DYGRAPHS_H
#define RT_INSIGHT_DYGRAPHS_H

#include <stddef.h>

#define INSIGHT_DYGRAPHS_DIR "/usr/share/javascript/dygraphs"

struct insight_dygraphs {
    char *js;       /* dygraph.min.js */
    char *sync_js;  /* extras/synchronizer.js */
    char *css;      /* dygraph.min.css */
};

/* From $RESOURCE_TRACKER_DYGRAPHS_DIR, else INSIGHT_DYGRAPHS_DIR; source
 * map references are dropped (nothing outside the report is referenced).
 * -1 with a message naming the file and the package when one is missing
 * or cannot be inlined. */
int insight_dygraphs_load(struct insight_dygraphs *d, char *err, size_t errlen);
void insight_dygraphs_free(struct insight_dygraphs *d);

#endif
