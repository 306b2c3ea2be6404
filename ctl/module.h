/* Parts of the client that need a large library most verbs do not (ncurses
 * for top's screen, libcurl for report's Keeper prices) are modules, loaded
 * by the verb that needs them: every other verb starts without mapping
 * those libraries (docs/performance.md, "Client start-up"). */
#ifndef CTL_MODULE_H
#define CTL_MODULE_H

#include <stddef.h>

#define CTL_MODULE_TOP "ctl-top.so"   /* live/top_screen.c */
#define CTL_MODULE_HTTP "ctl-http.so" /* insight/http.c */

/* symbol of module, loaded on first use from the directory of the running
 * program (a build tree), else the installed module directory. NULL with
 * why in err. Modules stay loaded until the process ends. */
void *ctl_module_sym(const char *module, const char *symbol, char *err, size_t errlen);

#endif
