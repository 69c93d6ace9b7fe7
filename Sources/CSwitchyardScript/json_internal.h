// What the JSON decoder and encoder share: the nesting limit's message and exact number paths.
#ifndef SWITCHYARD_SCRIPT_JSON_INTERNAL_H
#define SWITCHYARD_SCRIPT_JSON_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

static const char json_deep_message[] = "JSON nested deeper than 200 levels";

// Powers of ten a double holds exactly: m * 10^k and m / 10^k with m < 2^53 are then one
// correctly rounded operation, the same value strtod gives (and the common case, cheaply).
static const double exact_tens[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const uint64_t exact_integer = (uint64_t)1 << 53;

/// The decimal point strtod and snprintf use in this thread's locale (snprintf, unlike
/// localeconv, is thread-safe). Only the rare numbers off the exact paths need it.
static inline char decimal_point(void) {
    char text[8];
    snprintf(text, sizeof text, "%.1f", 0.5);
    return text[1];
}

#endif
