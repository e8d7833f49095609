#ifndef PAYPIPE_MHD_SHIM_H
#define PAYPIPE_MHD_SHIM_H
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <microhttpd.h>

/// MHD_start_daemon with an internal epoll thread pool, bound to `bind_address` (IPv4, host order port).
/// `connection_timeout` is in seconds; `thread_pool_size` >= 1.
struct MHD_Daemon *paypipe_mhd_start(uint16_t port, const char *bind_address,
                                     unsigned int thread_pool_size, unsigned int connection_timeout,
                                     MHD_AccessHandlerCallback handler, void *handler_context,
                                     MHD_RequestCompletedCallback completed, void *completed_context);
#endif
