/* The varlink server as the main loop sees it: connections on the control
 * socket served on the main thread's epoll loop (daemon/api/). */
#ifndef RT_API_H
#define RT_API_H

#include "sampler/sampler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_daemon;
struct rt_server;

/* NULL (errno set) when the socket cannot be watched. */
struct rt_server *rt_server_new(struct rt_daemon *d, int listen_fd, int epfd);
void rt_server_free(struct rt_server *srv);
/* An epoll event whose tag is not one of the main loop's own. */
void rt_server_event(struct rt_server *srv, void *tag, uint32_t events);
/* After each epoll_wait() batch: calls waiting for their turn get one (for a
 * few milliseconds in all), users holding more than the limits lose their
 * largest connections, and the connections closed are freed (later events
 * of a batch may still name them). True when calls still wait: poll again
 * without blocking. */
bool rt_server_settle(struct rt_server *srv);
/* Close connections that stalled (limits.*_timeout), re-count what they
 * hold; returns rt_server_due(). */
uint64_t rt_server_tick(struct rt_server *srv);
/* When rt_server_tick() next has work (CLOCK_MONOTONIC ns; UINT64_MAX:
 * none): found again only after the connections changed. */
uint64_t rt_server_due(struct rt_server *srv);
/* Deliver the sampler's outbox (answers to requests, samples for streams). */
void rt_server_sampler_events(struct rt_server *srv, struct rt_sevt *list);
/* Whether a connection streams (it wants the sampler's events at once). */
bool rt_server_streaming(const struct rt_server *srv);
size_t rt_server_connections(struct rt_server *srv);
/* Jobs may have changed outside a sampler event (a reload changes their
 * efficiency): StreamJobs' first replies are made anew (methods_live.c). */
void rt_api_jobs_changed(void);

#endif
