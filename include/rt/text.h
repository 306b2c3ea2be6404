/* Text from users shown to people: control characters escaped (one rule for
 * tables, summaries and views), and the rule of a job's name. */
#ifndef RT_TEXT_H
#define RT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The most bytes one character takes escaped ("\xc2\x9b"). */
#define RT_ESCAPE_MAX 8

/* The next character of s (len > 0 bytes) as shown: itself when it is a
 * printable UTF-8 character, else escaped as systemd escapes them: \a \b \t
 * \n \v \f \r, \\ for a backslash, \xNN for each byte of another control
 * character (C0, DEL, C1) or of a byte that starts no well-formed UTF-8
 * sequence. Writes at most RT_ESCAPE_MAX bytes to out (no NUL) and returns
 * their number; *used: the bytes of s it stands for. */
size_t rt_escape_next(const char *s, size_t len, char *out, size_t *used);
/* s escaped whole, in a new string (NULL is ""): what may go to a terminal
 * or a log, so that no user's text moves a cursor, sets a title or writes a
 * clipboard (OSC 52). */
char *rt_escape_dup(const char *s);
/* The same into buf, cut to fit (never inside an escape or a character);
 * NULL is "". Returns the length written. */
size_t rt_escape_into(char *buf, size_t size, const char *s);

/* A job's name: a label, with one rule in the daemon and the client. */
#define RT_NAME_MAX_CHARS 128
#define RT_NAME_RULE "a name is 1-128 characters of UTF-8, no control characters, and not all digits"
bool rt_job_name_valid(const char *name);

#endif
