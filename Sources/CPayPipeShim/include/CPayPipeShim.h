/*
 * CPayPipeShim — with COpenSSLShim, the only C written for PayPipe.
 *
 * Swift cannot call C variadic functions (amqp_login, curl_easy_setopt, curl_easy_getinfo,
 * MHD_start_daemon, prctl). Each function here is a fixed-signature forwarder for exactly one such call; nothing else
 * belongs here. OpenSSL's function-like macros have their own shim (COpenSSLShim), so that Crypto — and the pure
 * modules on it — link no librabbitmq, libcurl or libmicrohttpd.
 */
#ifndef PAYPIPE_C_SHIM_H
#define PAYPIPE_C_SHIM_H

#include "paypipe_amqp_shim.h"
#include "paypipe_curl_shim.h"
#include "paypipe_mhd_shim.h"
#include "paypipe_process_shim.h"

#endif
