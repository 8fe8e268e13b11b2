#ifndef HEALTHCARDS_COPENSSL_SHIM_H
#define HEALTHCARDS_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <openssl/crypto.h>

/* Macros Swift cannot import, wrapped as functions named COpenSSL_<name>. */
static inline int COpenSSL_BIO_get_mem_data(BIO *bio, char **out) { return (int)BIO_get_mem_data(bio, out); }

static inline int COpenSSL_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }
static inline int COpenSSL_EVP_PKEY_KEYPAIR(void) { return EVP_PKEY_KEYPAIR; }
#endif
