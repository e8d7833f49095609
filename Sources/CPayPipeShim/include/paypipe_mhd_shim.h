#ifndef PAYPIPE_MHD_SHIM_H
#define PAYPIPE_MHD_SHIM_H
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <microhttpd.h>

/// MHD_start_daemon with an internal epoll thread pool, bound to `bind_address` (IPv4 dotted quad; host-order port,
/// 0 = ephemeral). `connection_timeout` is in seconds; `thread_pool_size` >= 1; `connection_memory_limit` in bytes
/// (bounds the request line + headers + one upload chunk per connection).
/// Returns NULL when `bind_address` is not a valid IPv4 address or the daemon cannot start.
struct MHD_Daemon *paypipe_mhd_start(uint16_t port, const char *bind_address,
                                     unsigned int thread_pool_size, unsigned int connection_timeout,
                                     size_t connection_memory_limit,
                                     MHD_AccessHandlerCallback handler, void *handler_context,
                                     MHD_RequestCompletedCallback completed, void *completed_context);

/// MHD_get_daemon_info(MHD_DAEMON_INFO_BIND_PORT): the port actually bound (host order), 0 if unknown.
uint16_t paypipe_mhd_bound_port(struct MHD_Daemon *daemon);

/// MHD_get_connection_info(MHD_CONNECTION_INFO_CLIENT_ADDRESS): the peer address, or NULL.
const struct sockaddr *paypipe_mhd_client_address(struct MHD_Connection *connection);
#endif
