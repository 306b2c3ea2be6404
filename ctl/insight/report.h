/* The HTML report: one self-contained file (styles, scripts, data and
 * dygraphs inlined; no URL fetched), written by report_html.c (the tables)
 * and report_charts.c (the time series). */
#ifndef RT_INSIGHT_REPORT_H
#define RT_INSIGHT_REPORT_H

#include "insight/analysis.h"
#include "insight/dygraphs.h"
#include "insight/host.h"
#include "insight/keeper.h"

#include <stdio.h>

struct insight_report {
    const struct insight_analysis *a;
    const struct insight_host *host;
    const struct insight_prices *prices;
    const char *prices_off;        /* why prices were not asked for, or NULL */
    const char *keeper_url;
    const struct insight_dygraphs *dy;
    double generated_at;           /* Unix seconds */
};

/* The whole document; false when f reports a write error. */
bool insight_report_write(FILE *f, const struct insight_report *r);

/* report_charts.c: the chart sections and the data and scripts that draw
 * them (after the tables, before </body>). */
void insight_report_charts(FILE *f, const struct insight_report *r);
void insight_report_chart_scripts(FILE *f, const struct insight_report *r);

#endif
