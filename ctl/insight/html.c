#include "insight/html.h"

#include "rt/text.h"
#include "rt/util.h"

#include <stdarg.h>
#include <string.h>
#include <stdlib.h>

void html_text(FILE *f, const char *text)
{
    /* No control character of a user's (a command line) even in a file
     * that may be printed: escaped, as in every other output (rt/text.h);
     * but a backslash stays one (the report's $'...' are escaped already)
     * and the lines of a text (a YAML snippet) stay lines. */
    size_t len = text ? strlen(text) : 0, used;
    for (const char *s = text; len; s += used, len -= used) {
        char piece[RT_ESCAPE_MAX] = {*s};
        size_t k = *s == '\\' || *s == '\n' ? (used = 1) : rt_escape_next(s, len, piece, &used);
        for (size_t i = 0; i < k; i++) {
            switch (piece[i]) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&#39;", f); break;
            default: fputc(piece[i], f);
            }
        }
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
