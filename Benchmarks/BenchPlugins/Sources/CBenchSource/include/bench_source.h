/*
 * bench_source.h — control functions of the benchmark source plugin (libbenchsource.so).
 *
 * Besides the plugin entry point, the library exports these functions so a benchmark can
 * drive the plugin from its own thread. They act on the instance created last.
 */
#ifndef BENCH_SOURCE_H
#define BENCH_SOURCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * On the calling thread, emits `count` envelopes of type bench.Reading on port `out` of the
 * instance created last, with JSON bodies {"sensor":"s1","value":21.5,"seq":N}. An emit
 * refused with SY_ERR_FULL is retried once the host calls resume() (nothing is dropped).
 * Returns how many were emitted: `count`, or fewer when the host answered SY_ERR_STOPPED or
 * another error, or when there is no instance.
 */
uint64_t bench_source_emit(uint64_t count);

/** How many emits the host refused with SY_ERR_FULL since the library was loaded. */
uint64_t bench_source_full_count(void);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_SOURCE_H */
