#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "paypipe_mhd_shim.h"

struct MHD_Daemon *paypipe_mhd_start(uint16_t port, const char *bind_address,
                                     unsigned int thread_pool_size, unsigned int connection_timeout,
                                     size_t connection_memory_limit,
                                     MHD_AccessHandlerCallback handler, void *handler_context,
                                     MHD_RequestCompletedCallback completed, void *completed_context) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (bind_address == NULL || inet_pton(AF_INET, bind_address, &address.sin_addr) != 1) {
        return NULL;
    }
    /* MHD warns about a pool size of 0 or 1, so the option is only passed for a real pool. */
    if (thread_pool_size > 1) {
        return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG,
                                port, NULL, NULL, handler, handler_context,
                                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
                                MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                                MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG,
                            port, NULL, NULL, handler, handler_context,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                            MHD_OPTION_END);
}

uint16_t paypipe_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

const struct sockaddr *paypipe_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
