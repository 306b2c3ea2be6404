#include "insight/html.h"

#include "rt/util.h"

#include <stdarg.h>
#include <string.h>
#include <stdlib.h>

void html_text(FILE *f, const char *text)
{
    /* No control character of a user's (a command line) even in a file
     * that may be printed: \xHH, as in every other output; but the lines
     * of a text (a YAML snippet) stay lines. */
    for (const char *line = text; line && *line;) {
        size_t n = strcspn(line, "\n");
        char *part = rt_xasprintf("%.*s", (int)n, line), *safe = rt_text_safe_dup(part);
        for (const char *s = safe; *s; s++) {
            switch (*s) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&#39;", f); break;
            default: fputc(*s, f);
            }
        }
        free(safe);
        free(part);
        line += n;
        if (*line == '\n')
            fputc(*line++, f);
    }
}

void html_textf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) >= 0) {
        html_text(f, s);
        free(s);
    }
    va_end(ap);
}
