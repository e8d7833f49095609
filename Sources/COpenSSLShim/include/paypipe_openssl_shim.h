#ifndef PAYPIPE_OPENSSL_SHIM_H
#define PAYPIPE_OPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/safestack.h>

/* Function-like macros and composed constants that Swift cannot import. */
int paypipe_evp_pkey_public_key_selection(void);   /* EVP_PKEY_PUBLIC_KEY */
int paypipe_evp_pkey_keypair_selection(void);      /* EVP_PKEY_KEYPAIR */
int paypipe_sk_x509_num(const STACK_OF(X509) *stack);
X509 *paypipe_sk_x509_value(const STACK_OF(X509) *stack, int index);
STACK_OF(X509) *paypipe_sk_x509_new_null(void);
int paypipe_sk_x509_push(STACK_OF(X509) *stack, X509 *certificate);
void paypipe_sk_x509_free(STACK_OF(X509) *stack);
#endif
