/* The varlink server as the main loop sees it: connections on the control
 * socket served on the main thread's epoll loop (daemon/api/). */
#ifndef RT_API_H
#define RT_API_H

#include "sampler/sampler.h"

#include <stddef.h>
#include <stdint.h>

struct rt_daemon;
struct rt_server;

/* NULL (errno set) when the socket cannot be watched. */
struct rt_server *rt_server_new(struct rt_daemon *d, int listen_fd, int epfd);
void rt_server_free(struct rt_server *srv);
/* An epoll event whose tag is not one of the main loop's own. */
void rt_server_event(struct rt_server *srv, void *tag, uint32_t events);
/* Free the connections closed since the last call. Call it after each
 * epoll_wait() batch: later events of the same batch may still name them. */
void rt_server_reap(struct rt_server *srv);
/* Deliver the sampler's outbox (answers to requests, samples for streams). */
void rt_server_sampler_events(struct rt_server *srv, struct rt_sevt *list);
size_t rt_server_connections(struct rt_server *srv);

#endif
