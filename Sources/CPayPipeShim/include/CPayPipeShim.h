/*
 * CPayPipeShim — the only C written for PayPipe.
 *
 * Swift cannot call C variadic functions (amqp_login, curl_easy_setopt, curl_easy_getinfo,
 * MHD_start_daemon, prctl) nor import function-like macros (EVP_PKEY_PUBLIC_KEY, sk_X509_*). Each
 * function here is a fixed-signature forwarder for exactly one such call; nothing else belongs here.
 */
#ifndef PAYPIPE_C_SHIM_H
#define PAYPIPE_C_SHIM_H

#include "paypipe_amqp_shim.h"
#include "paypipe_curl_shim.h"
#include "paypipe_mhd_shim.h"
#include "paypipe_openssl_shim.h"
#include "paypipe_process_shim.h"

#endif
