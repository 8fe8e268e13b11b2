#ifndef HEALTHCARDS_CZBAR_SHIM_H
#define HEALTHCARDS_CZBAR_SHIM_H
#include <zbar.h>
#endif
