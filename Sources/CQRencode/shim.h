#ifndef HEALTHCARDS_CQRENCODE_SHIM_H
#define HEALTHCARDS_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
