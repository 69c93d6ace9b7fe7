/*
 * counter.c — a Switchyard plugin in C that keeps durable state through the host's state
 * service (ABI version 2, state_get/state_put/state_scan).
 *
 *   ports:  in  (sink, any type)  ->  counts (source, counter.Count)
 *   config: none ({})
 *
 * For every envelope delivered on `in` it adds one to the count of the envelope's subject,
 * stored under the key "count/<subject>" in the router's store, and emits
 * {"subject": "...", "count": N} on `counts`. The counts survive restarts and reloads: they
 * belong to the instance name. At start it logs every stored count (state_scan).
 *
 * Build (from the repository root):
 *   cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -O2 -I Sources/SwitchyardABI/include \
 *      -o Plugins/libcounter.so examples/plugin-state/counter.c
 *
 * Threads: deliver() may run on several route workers at once; a mutex makes each
 * read-add-write of a count one step. The state calls may block for a disk write, which the
 * header allows off hot paths: this plugin exists to show them.
 */
#define _POSIX_C_SOURCE 200809L

#include "switchyard_plugin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char manifest_json[] =
    "{\"name\":\"counter\",\"version\":\"1.0.0\","
    "\"description\":\"Counts envelopes per subject in the router's durable state (written in C)\","
    "\"ports\":["
    "{\"name\":\"in\",\"direction\":\"sink\",\"types\":[\"*\"],\"description\":\"Envelopes to count\"},"
    "{\"name\":\"counts\",\"direction\":\"source\",\"types\":[\"counter.Count\"],"
    "\"description\":\"The subject's new count after each envelope\"}],"
    "\"types\":{\"counter.Count\":{\"type\":\"object\",\"required\":[\"subject\",\"count\"],"
    "\"properties\":{\"subject\":{\"type\":\"string\"},\"count\":{\"type\":\"integer\"}}}},"
    "\"config\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}}";

static const sy_host_api_v2 *host;

typedef struct counter {
    sy_host_context *context;
    pthread_mutex_t lock;
} counter;

static sy_bytes text(const char *string) { return (sy_bytes){(const uint8_t *)string, strlen(string)}; }

/* A writer target: the value read by state_get, at most 31 bytes (a decimal count). */
typedef struct small_value {
    char bytes[32];
    size_t length;
    int too_long;
} small_value;

static int32_t collect(void *target, sy_bytes bytes) {
    small_value *value = target;
    if (value->length + bytes.length >= sizeof value->bytes) {
        value->too_long = 1;
        return SY_ERR_TOO_LARGE;
    }
    memcpy(value->bytes + value->length, bytes.data, bytes.length);
    value->length += bytes.length;
    return SY_OK;
}

static int32_t log_count(void *user, sy_bytes key, sy_bytes value) {
    counter *self = user;
    char line[256];
    snprintf(line, sizeof line, "stored: %.*s = %.*s", (int)(key.length > 200 ? 200 : key.length), (const char *)key.data,
             (int)(value.length > 30 ? 30 : value.length), (const char *)value.data);
    host->log(self->context, SY_LOG_INFO, text(line));
    return 0;
}

static int32_t counter_create(sy_host_context *context, sy_bytes name, sy_bytes config, void **instance,
                              sy_error_buffer error) {
    (void)name, (void)config, (void)error;
    counter *self = calloc(1, sizeof *self);
    if (self == NULL) return SY_ERR_FAILED;
    self->context = context;
    pthread_mutex_init(&self->lock, NULL);
    *instance = self;
    return SY_OK;
}

static int32_t counter_start(void *instance, sy_error_buffer error) {
    (void)error;
    counter *self = instance;
    /* SY_ERR_FAILED here means the router has no store (no spool: section in the route file). */
    if (host->state_scan(self->context, text("count/"), log_count, self) != SY_OK)
        host->log(self->context, SY_LOG_WARNING, text("no durable state: counts start at 0 and are not kept"));
    return SY_OK;
}

static int32_t counter_deliver(void *instance, sy_bytes port, const sy_envelope *envelope, uint64_t delivery_id) {
    (void)port;
    counter *self = instance;
    if (envelope->subject.length > 1000) {
        host->ack(self->context, delivery_id, SY_OUTCOME_REJECT, text("subject over 1000 bytes"));
        return SY_OK;
    }
    char key[1024];
    int key_length = snprintf(key, sizeof key, "count/%.*s", (int)envelope->subject.length,
                              envelope->subject.length ? (const char *)envelope->subject.data : "");
    sy_bytes key_bytes = {(const uint8_t *)key, (size_t)key_length};

    pthread_mutex_lock(&self->lock);
    small_value stored = {{0}, 0, 0};
    long long count = 0;
    int32_t status = host->state_get(self->context, key_bytes, (sy_writer){&stored, collect});
    if (status == SY_OK && !stored.too_long) count = strtoll(stored.bytes, NULL, 10);
    count += 1;
    char value[32];
    int value_length = snprintf(value, sizeof value, "%lld", count);
    status = host->state_put(self->context, key_bytes, (sy_bytes){(const uint8_t *)value, (size_t)value_length});
    pthread_mutex_unlock(&self->lock);

    char body[1100];
    int body_length = snprintf(body, sizeof body, "{\"subject\":\"%.*s\",\"count\":%lld}", (int)envelope->subject.length,
                               envelope->subject.length ? (const char *)envelope->subject.data : "", count);
    sy_envelope out = {0};
    out.struct_size = sizeof out;
    out.type = text("counter.Count");
    out.subject = envelope->subject;
    out.content_type = text("application/json");
    out.body = (sy_bytes){(const uint8_t *)body, (size_t)body_length};
    out.trace = envelope->trace;
    out.trace_count = envelope->trace_count;
    int32_t emitted = host->emit(self->context, text("counts"), &out, 0);
    host->ack(self->context, delivery_id, status == SY_OK && emitted == SY_OK ? SY_OUTCOME_OK : SY_OUTCOME_RETRY,
              text(status == SY_OK ? "" : "the count could not be stored"));
    return SY_OK;
}

static void counter_stop(void *instance) { (void)instance; }

static void counter_destroy(void *instance) {
    counter *self = instance;
    pthread_mutex_destroy(&self->lock);
    free(self);
}

static void fill(sy_plugin_api_v2 *table) {
    table->manifest = (sy_bytes){(const uint8_t *)manifest_json, sizeof manifest_json - 1};
    table->create = counter_create;
    table->start = counter_start;
    table->deliver = counter_deliver;
    table->stop = counter_stop;
    table->destroy = counter_destroy;
}

SY_DEFINE_PLUGIN_ENTRY_V2(fill, host)
