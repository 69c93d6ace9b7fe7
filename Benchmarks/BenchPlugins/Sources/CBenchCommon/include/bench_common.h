/*
 * What the two benchmark plugins share: writing an error message into the host's buffer and
 * finding the version-2 host table in the host's offer. Header-only (static inline), so each
 * plugin keeps its own private copy and exports nothing extra.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include "switchyard_plugin.h"

#include <string.h>

/* Writes `message` (truncated to the buffer's capacity) into the host-owned error buffer. */
static inline void bench_write_error(sy_error_buffer error, const char *message) {
    if (!error.data || !error.length) return;
    size_t length = strlen(message);
    if (length > error.capacity) length = error.capacity;
    memcpy(error.data, message, length);
    *error.length = length;
}

/*
 * The host table of ABI version 2 in `offer`, or NULL when the offer lacks version 2, its
 * table is too small, or `plugin_table_capacity` cannot hold a version-2 plugin table.
 */
static inline const sy_host_api_v2 *bench_host_table_v2(const sy_offer *offer, const void *plugin_table,
                                                        size_t plugin_table_capacity) {
    if (!offer || !plugin_table || plugin_table_capacity < sizeof(sy_plugin_api_v2)) return NULL;
    const sy_host_api_v2 *host = NULL;
    for (uint32_t index = 0; index < offer->version_count; index++) {
        if (offer->versions[index] == SY_ABI_VERSION_2) host = offer->host_tables[index];
    }
    if (!host || host->struct_size < sizeof(sy_host_api_v2)) return NULL;
    return host;
}

#endif /* BENCH_COMMON_H */
