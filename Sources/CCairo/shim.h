#ifndef HEALTHCARDS_CCAIRO_SHIM_H
#define HEALTHCARDS_CCAIRO_SHIM_H
#include <cairo.h>
#include <cairo-pdf.h>
#endif
