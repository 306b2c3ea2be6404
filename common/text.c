/* Text from users shown to people; the rule of a job's name. */
#include "rt/text.h"

#include "rt/util.h"

#include <string.h>

/* C0, DEL, and C1 (U+0080..U+009F, two bytes in UTF-8): they move the
 * cursor, clear the screen or start escape sequences on a terminal. */
static bool is_control(const unsigned char *p, size_t n)
{
    return (n == 1 && (p[0] < 0x20 || p[0] == 0x7f)) || (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

size_t rt_escape_next(const char *s, size_t len, char *out, size_t *used)
{
    static const char letters[] = "\aa\bb\tt\nn\vv\ff\rr\\\\";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = rt_utf8_char(s, len);
    const char *l = n == 1 && *p ? strchr(letters, *p) : NULL;
    if (l && (l - letters) % 2 == 0) {
        out[0] = '\\';
        out[1] = l[1];
        *used = 1;
        return 2;
    }
    if (n && !is_control(p, n)) {
        memcpy(out, s, n);
        *used = n;
        return n;
    }
    static const char hex[] = "0123456789abcdef";
    *used = n ? n : 1;
    for (size_t i = 0; i < *used; i++) /* no NUL: out holds RT_ESCAPE_MAX bytes */
        memcpy(out + 4 * i, (char[4]){'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]}, 4);
    return 4 * *used;
}

size_t rt_escape_into(char *buf, size_t size, const char *s)
{
    size_t o = 0, len = s ? strlen(s) : 0, used;
    char piece[RT_ESCAPE_MAX];
    for (size_t k; len && (k = rt_escape_next(s, len, piece, &used)) < size - o; s += used, len -= used) {
        memcpy(buf + o, piece, k);
        o += k;
    }
    if (size)
        buf[o] = '\0';
    return o;
}

char *rt_escape_dup(const char *s)
{
    s = s ? s : "";
    size_t len = strlen(s), n = 0, used;
    char *out = rt_xmalloc(len * 4 + 1);
    for (; len; s += used, len -= used)
        n += rt_escape_next(s, len, out + n, &used);
    out[n] = '\0';
    return out;
}

bool rt_job_name_valid(const char *name)
{
    size_t len = strlen(name), chars = 0;
    if (len == 0 || rt_str_all_digits(name))
        return false; /* all digits would be taken for an id */
    for (size_t n; len; name += n, len -= n, chars++) {
        n = rt_utf8_char(name, len);
        if (!n || is_control((const unsigned char *)name, n) || chars == RT_NAME_MAX_CHARS)
            return false;
    }
    return true;
}
