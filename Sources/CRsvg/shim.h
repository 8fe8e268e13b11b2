#ifndef HEALTHCARDS_CRSVG_SHIM_H
#define HEALTHCARDS_CRSVG_SHIM_H
#include <librsvg/rsvg.h>
#endif
