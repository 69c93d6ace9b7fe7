// Eclipse Cyclone DDS 0.10 (Debian's cyclonedds-dev) for Swift: the public C API.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // pthread_setname_np
#endif
#include <pthread.h>
#include <dds/dds.h>

/// Names `thread` (shown by ps, top and perf; at most 15 bytes).
static inline void qeo_name_thread(pthread_t thread, const char *name) { (void)pthread_setname_np(thread, name); }
