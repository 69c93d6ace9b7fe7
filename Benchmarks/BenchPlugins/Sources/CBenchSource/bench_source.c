/*
 * libbenchsource.so — a benchmark source plugin written against the plain C ABI.
 *
 * Port `out` (source) emits bench.Reading envelopes, but only when a benchmark calls
 * bench_source_emit(): the plugin has no thread or timer of its own. Everything but the
 * entry point and the bench_* control functions is static, so a second copy of the library
 * (or another plugin in the process) can never bind to these symbols.
 */
#include "switchyard_plugin.h"
#include "bench_common.h"
#include "bench_source.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static const char manifest[] =
    "{"
    "\"name\":\"benchsource\","
    "\"version\":\"1.0.0\","
    "\"description\":\"Benchmark source: emits bench.Reading envelopes when bench_source_emit() is called\","
    "\"ports\":[{\"name\":\"out\",\"direction\":\"source\",\"types\":[\"bench.Reading\"],"
    "\"description\":\"Readings emitted by bench_source_emit()\"}],"
    "\"types\":{\"bench.Reading\":{\"type\":\"object\","
    "\"properties\":{\"sensor\":{\"type\":\"string\"},\"value\":{\"type\":\"number\"},\"seq\":{\"type\":\"integer\"}},"
    "\"required\":[\"sensor\",\"value\",\"seq\"]}},"
    "\"config\":{\"type\":\"object\",\"additionalProperties\":false}"
    "}";

typedef struct source_instance {
    sy_host_context *context;
    const sy_host_api_v2 *host;
    atomic_int resumed;  /* set by resume(), cleared before every emit attempt */
    atomic_int running;  /* between start() and stop() */
} source_instance;

/* The host table of the latest negotiation; an instance keeps the one current at create(). */
static const sy_host_api_v2 *_Atomic host_table;
static source_instance *_Atomic last_instance;
static atomic_uint_fast64_t full_count;

static int32_t source_create(sy_host_context *context, sy_bytes instance_name, sy_bytes config,
                             void **instance, sy_error_buffer error) {
    (void)instance_name;
    (void)config;
    const sy_host_api_v2 *host = atomic_load(&host_table);
    if (!host || !instance) {
        bench_write_error(error, "benchsource: no host table (entry point not called)");
        return SY_ERR_FAILED;
    }
    source_instance *created = calloc(1, sizeof *created);
    if (!created) {
        bench_write_error(error, "benchsource: out of memory");
        return SY_ERR_FAILED;
    }
    created->context = context;
    created->host = host;
    *instance = created;
    atomic_store(&last_instance, created);
    return SY_OK;
}

static int32_t source_start(void *instance, sy_error_buffer error) {
    (void)error;
    atomic_store(&((source_instance *)instance)->running, 1);
    return SY_OK;
}

static int32_t source_deliver(void *instance, sy_bytes port, const sy_envelope *envelope, uint64_t delivery_id) {
    (void)instance;
    (void)port;
    (void)envelope;
    (void)delivery_id;
    return SY_ERR_UNKNOWN_PORT; /* no sink ports */
}

static void source_stop(void *instance) { atomic_store(&((source_instance *)instance)->running, 0); }

static void source_destroy(void *instance) {
    source_instance *expected = instance;
    atomic_compare_exchange_strong(&last_instance, &expected, NULL);
    free(instance);
}

static void source_resume(void *instance, sy_bytes port) {
    (void)port;
    atomic_store_explicit(&((source_instance *)instance)->resumed, 1, memory_order_release);
}

EXPORT uint32_t switchyard_plugin_entry(const sy_offer *offer, void *plugin_table, size_t plugin_table_capacity) {
    const sy_host_api_v2 *host = bench_host_table_v2(offer, plugin_table, plugin_table_capacity);
    if (!host) return 0;
    atomic_store(&host_table, host);
    sy_plugin_api_v2 *table = plugin_table;
    table->struct_size = sizeof(sy_plugin_api_v2);
    table->manifest.data = (const uint8_t *)manifest;
    table->manifest.length = sizeof manifest - 1;
    table->create = source_create;
    table->start = source_start;
    table->deliver = source_deliver;
    table->stop = source_stop;
    table->destroy = source_destroy;
    table->resume = source_resume;
    return SY_ABI_VERSION_2;
}

/* Writes the decimal digits of `value` at `out`; returns how many. */
static size_t put_decimal(uint8_t *out, uint64_t value) {
    uint8_t digits[20];
    size_t count = 0;
    do {
        digits[count++] = (uint8_t)('0' + value % 10);
        value /= 10;
    } while (value);
    for (size_t index = 0; index < count; index++) out[index] = digits[count - 1 - index];
    return count;
}

#define LITERAL(text) ((sy_bytes){(const uint8_t *)(text), sizeof(text) - 1})

EXPORT uint64_t bench_source_emit(uint64_t count) {
    source_instance *instance = atomic_load(&last_instance);
    if (!instance) return 0;
    static const char prefix[] = "{\"sensor\":\"s1\",\"value\":21.5,\"seq\":";
    uint8_t body[sizeof prefix + 24];
    memcpy(body, prefix, sizeof prefix - 1);
    const sy_bytes port = LITERAL("out");
    sy_envelope envelope;
    memset(&envelope, 0, sizeof envelope);
    envelope.struct_size = (uint32_t)sizeof envelope;
    envelope.type = LITERAL("bench.Reading");
    envelope.content_type = LITERAL("application/json");
    envelope.body.data = body;

    uint64_t emitted = 0;
    for (uint64_t seq = 0; seq < count; seq++) {
        size_t length = sizeof prefix - 1;
        length += put_decimal(body + length, seq);
        body[length++] = '}';
        envelope.body.length = length;
        for (;;) {
            atomic_store_explicit(&instance->resumed, 0, memory_order_relaxed);
            int32_t status = instance->host->emit(instance->context, port, &envelope, 0);
            if (status == SY_OK) break;
            if (status != SY_ERR_FULL) return emitted;
            atomic_fetch_add_explicit(&full_count, 1, memory_order_relaxed);
            /* Wait for resume(); retry anyway now and then so a lost wake-up cannot hang. */
            for (unsigned spins = 0; spins < 100000; spins++) {
                if (atomic_load_explicit(&instance->resumed, memory_order_acquire)) break;
                sched_yield();
            }
        }
        emitted++;
    }
    return emitted;
}

EXPORT uint64_t bench_source_full_count(void) { return atomic_load_explicit(&full_count, memory_order_relaxed); }
