#ifndef HEALTHCARDS_CPANGO_SHIM_H
#define HEALTHCARDS_CPANGO_SHIM_H
#include <pango/pangocairo.h>
#endif
