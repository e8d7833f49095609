#include "paypipe_openssl_shim.h"

int paypipe_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }
int paypipe_evp_pkey_keypair_selection(void) { return EVP_PKEY_KEYPAIR; }
int paypipe_sk_x509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
X509 *paypipe_sk_x509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
STACK_OF(X509) *paypipe_sk_x509_new_null(void) { return sk_X509_new_null(); }
int paypipe_sk_x509_push(STACK_OF(X509) *stack, X509 *certificate) { return sk_X509_push(stack, certificate); }
void paypipe_sk_x509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }
