/*
 * bench_sink.h — control functions of the benchmark sink plugin (libbenchsink.so).
 */
#ifndef BENCH_SINK_H
#define BENCH_SINK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Deliveries acknowledged (SY_OUTCOME_OK) by all instances since the library was loaded. */
uint64_t bench_sink_count(void);

/**
 * Spins (with sched_yield) until bench_sink_count() reaches `total` or `timeout_nanos` have
 * passed. Returns the count it saw last: `total` or more on success, less on timeout.
 */
uint64_t bench_sink_wait(uint64_t total, uint64_t timeout_nanos);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_SINK_H */
