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
#include <openssl/x509v3.h>
#include <openssl/crypto.h>
#include <openssl/engine.h>

/* Macros Swift cannot import, wrapped as functions named COpenSSL_<name>. */
static inline int COpenSSL_BIO_get_mem_data(BIO *bio, char **out) { return (int)BIO_get_mem_data(bio, out); }

static inline int COpenSSL_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }
static inline int COpenSSL_EVP_PKEY_KEYPAIR(void) { return EVP_PKEY_KEYPAIR; }
/* OpenSSL's ENGINE API (deprecated in 3.0 but the only PKCS#11 route in Debian bookworm: the
   `pkcs11` engine of libengine-pkcs11-openssl/libp11). Wrapped so Swift sees no deprecation. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline ENGINE *COpenSSL_ENGINE_by_id(const char *id) { return ENGINE_by_id(id); }
static inline int COpenSSL_ENGINE_ctrl_cmd_string(ENGINE *e, const char *name, const char *arg, int optional) {
    return ENGINE_ctrl_cmd_string(e, name, arg, optional);
}
static inline int COpenSSL_ENGINE_init(ENGINE *e) { return ENGINE_init(e); }
static inline int COpenSSL_ENGINE_finish(ENGINE *e) { return ENGINE_finish(e); }
static inline int COpenSSL_ENGINE_free(ENGINE *e) { return ENGINE_free(e); }
static inline EVP_PKEY *COpenSSL_ENGINE_load_private_key(ENGINE *e, const char *key_id) {
    return ENGINE_load_private_key(e, key_id, NULL, NULL);
}
static inline EVP_PKEY *COpenSSL_ENGINE_load_public_key(ENGINE *e, const char *key_id) {
    return ENGINE_load_public_key(e, key_id, NULL, NULL);
}
#pragma GCC diagnostic pop
#endif
