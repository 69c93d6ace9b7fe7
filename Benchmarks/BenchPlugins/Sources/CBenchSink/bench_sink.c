/*
 * libbenchsink.so — a benchmark sink plugin written against the plain C ABI.
 *
 * Port `in` (sink, any type) acknowledges every delivery with SY_OUTCOME_OK from inside
 * deliver() and counts it. Everything but the entry point and the bench_* control functions
 * is static.
 */
#include "switchyard_plugin.h"
#include "bench_common.h"
#include "bench_sink.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

static const char manifest[] =
    "{"
    "\"name\":\"benchsink\","
    "\"version\":\"1.0.0\","
    "\"description\":\"Benchmark sink: acknowledges every delivery at once and counts it\","
    "\"ports\":[{\"name\":\"in\",\"direction\":\"sink\",\"types\":[\"*\"],"
    "\"description\":\"Envelopes to acknowledge and count\"}],"
    "\"config\":{\"type\":\"object\",\"additionalProperties\":false}"
    "}";

typedef struct sink_instance {
    sy_host_context *context;
    const sy_host_api_v2 *host;
} sink_instance;

/* The host table of the latest negotiation; an instance keeps the one current at create(). */
static const sy_host_api_v2 *_Atomic host_table;
static atomic_uint_fast64_t acknowledged;

static int32_t sink_create(sy_host_context *context, sy_bytes instance_name, sy_bytes config,
                           void **instance, sy_error_buffer error) {
    (void)instance_name;
    (void)config;
    const sy_host_api_v2 *host = atomic_load(&host_table);
    if (!host || !instance) {
        bench_write_error(error, "benchsink: no host table (entry point not called)");
        return SY_ERR_FAILED;
    }
    sink_instance *created = calloc(1, sizeof *created);
    if (!created) {
        bench_write_error(error, "benchsink: out of memory");
        return SY_ERR_FAILED;
    }
    created->context = context;
    created->host = host;
    *instance = created;
    return SY_OK;
}

static int32_t sink_start(void *instance, sy_error_buffer error) {
    (void)instance;
    (void)error;
    return SY_OK;
}

static int32_t sink_deliver(void *instance, sy_bytes port, const sy_envelope *envelope, uint64_t delivery_id) {
    (void)envelope;
    if (port.length != 2 || memcmp(port.data, "in", 2) != 0) return SY_ERR_UNKNOWN_PORT;
    sink_instance *sink = instance;
    sink->host->ack(sink->context, delivery_id, SY_OUTCOME_OK, (sy_bytes){NULL, 0});
    atomic_fetch_add_explicit(&acknowledged, 1, memory_order_release);
    return SY_OK;
}

static void sink_stop(void *instance) { (void)instance; }

static void sink_destroy(void *instance) { free(instance); }

EXPORT uint32_t switchyard_plugin_entry(const sy_offer *offer, void *plugin_table, size_t plugin_table_capacity) {
    const sy_host_api_v2 *host = bench_host_table_v2(offer, plugin_table, plugin_table_capacity);
    if (!host) return 0;
    atomic_store(&host_table, host);
    sy_plugin_api_v2 *table = plugin_table;
    table->struct_size = sizeof(sy_plugin_api_v2);
    table->manifest.data = (const uint8_t *)manifest;
    table->manifest.length = sizeof manifest - 1;
    table->create = sink_create;
    table->start = sink_start;
    table->deliver = sink_deliver;
    table->stop = sink_stop;
    table->destroy = sink_destroy;
    return SY_ABI_VERSION_2;
}

EXPORT uint64_t bench_sink_count(void) { return atomic_load_explicit(&acknowledged, memory_order_acquire); }

static uint64_t now_nanos(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

EXPORT uint64_t bench_sink_wait(uint64_t total, uint64_t timeout_nanos) {
    uint64_t seen = atomic_load_explicit(&acknowledged, memory_order_acquire);
    if (seen >= total) return seen;
    uint64_t deadline = now_nanos() + timeout_nanos;
    for (unsigned spins = 1;; spins++) {
        sched_yield();
        seen = atomic_load_explicit(&acknowledged, memory_order_acquire);
        if (seen >= total) return seen;
        if ((spins & 1023) == 0 && now_nanos() >= deadline) return seen;
    }
}
