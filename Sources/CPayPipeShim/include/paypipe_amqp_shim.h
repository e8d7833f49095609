#ifndef PAYPIPE_AMQP_SHIM_H
#define PAYPIPE_AMQP_SHIM_H
#include <amqp.h>

/// amqp_login with PLAIN credentials (amqp_login is variadic over the SASL method).
amqp_rpc_reply_t paypipe_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                          int channel_max, int frame_max, int heartbeat,
                                          const char *user, const char *password);
#endif
