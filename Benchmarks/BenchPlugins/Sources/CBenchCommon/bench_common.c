/* bench_common is header-only (include/bench_common.h); this file makes it a C target. */
