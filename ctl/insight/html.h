/* Writing HTML text safely: everything that comes from a job (names,
 * commands, metadata) goes through html_text. */
#ifndef RT_INSIGHT_HTML_H
#define RT_INSIGHT_HTML_H

#include <stdio.h>

/* s with &, <, >, " and ' escaped; NULL writes nothing. */
void html_text(FILE *f, const char *s);
/* printf, then escaped. */
void html_textf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
