#ifndef HEALTHCARDS_CPOSTGRES_SHIM_H
#define HEALTHCARDS_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#endif
