#ifndef PAYPIPE_AMQP_SHIM_H
#define PAYPIPE_AMQP_SHIM_H
#include <amqp.h>

/// amqp_login with PLAIN credentials (amqp_login is variadic over the SASL method).
amqp_rpc_reply_t paypipe_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                          int channel_max, int frame_max, int heartbeat,
                                          const char *user, const char *password);

/// amqp_login_with_properties with PLAIN credentials (variadic over the SASL method). The client
/// properties (connection_name, capabilities) are merged by rabbitmq-c into its defaults.
amqp_rpc_reply_t paypipe_amqp_login_plain_with_properties(amqp_connection_state_t state, const char *vhost,
                                                          int channel_max, int frame_max, int heartbeat,
                                                          const amqp_table_t *properties,
                                                          const char *user, const char *password);
#endif
