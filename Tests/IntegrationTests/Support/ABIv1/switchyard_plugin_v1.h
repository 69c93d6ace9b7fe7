/*
 * switchyard_plugin.h — the Switchyard plugin ABI, version 1.
 *
 * This header is the whole contract between the Switchyard router (the host) and a plugin
 * (a shared object loaded with dlopen(RTLD_NOW | RTLD_LOCAL) and never unloaded). Only plain
 * C data crosses it: byte views with lengths, integers and opaque pointers. No Swift (or C++,
 * or Rust) value ever crosses, so a plugin may be written in any language that can export a
 * C function.
 *
 * ----------------------------------------------------------------------------------------
 * 1. Negotiation
 * ----------------------------------------------------------------------------------------
 * A plugin exports exactly one symbol, SY_ENTRY_SYMBOL ("switchyard_plugin_entry"), of type
 * sy_entry_fn. The host calls it once, right after loading, with an sy_offer that lists every
 * ABI version the host supports and, for each, the host table of that version. The plugin
 * picks one version it also supports (normally the highest), fills the plugin table of that
 * version into `plugin_table` (which the host has zero-initialised; `plugin_table_capacity`
 * bytes are writable) and returns the chosen version. It returns 0 to refuse — when it
 * supports none of the offered versions or the capacity is too small for its table.
 *
 * The host then checks that the returned version is one it offered, that the table's
 * `struct_size` is large enough for that version, and that every entry marked MANDATORY below
 * is present; a plugin failing any check is refused with a message that names the file.
 *
 * ----------------------------------------------------------------------------------------
 * 2. Ownership
 * ----------------------------------------------------------------------------------------
 * - Every sy_bytes / sy_envelope passed *into* a function is borrowed: it is valid only until
 *   that function returns. The callee copies what it keeps. This holds both ways: for the
 *   envelope the host passes to deliver() and for the envelope a plugin passes to emit().
 * - The manifest bytes in the plugin table are owned by the plugin and must stay valid and
 *   unchanged for the life of the process (static storage is the usual choice).
 * - sy_offer, the host tables and everything they point to are owned by the host and stay
 *   valid for the life of the process; a plugin may keep pointers to them.
 * - sy_error_buffer memory is owned by the host; the plugin writes at most `capacity` bytes
 *   of UTF-8 into `data` and stores the number written in `*length`.
 * - A plugin instance handle (void *) is owned by the plugin from create() until the host
 *   calls destroy() on it.
 * - The sy_host_context pointer given to create() identifies the instance to the host; it
 *   stays valid until destroy() returns.
 *
 * ----------------------------------------------------------------------------------------
 * 3. Threads
 * ----------------------------------------------------------------------------------------
 * Every entry point, on both tables, may be called from any thread, concurrently, and none
 * may block for long (no network round trips, no sleeping). Host functions may be called
 * from inside plugin entry points (emit() or ack() from inside deliver(), for example).
 *
 * ----------------------------------------------------------------------------------------
 * 4. Life cycle of an instance
 * ----------------------------------------------------------------------------------------
 *   create -> start -> (deliver / emit / ack)* -> [quiesce] -> stop -> destroy
 * - create(): parse and check the instance configuration (JSON), allocate; no I/O yet.
 * - start(): open connections, start timers and threads; emit() may be called from now on.
 * - quiesce() (optional): stop producing new envelopes at sources; deliveries continue. The
 *   host calls it on shutdown before it drains its queues.
 * - stop(): stop everything; after stop() returns the plugin calls no host function for
 *   this instance any more. Deliveries not yet acknowledged are treated as failed.
 * - destroy(): free the instance.
 */
#ifndef SWITCHYARD_PLUGIN_H
#define SWITCHYARD_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version 1: the tables sy_host_api_v1 and sy_plugin_api_v1. */
#define SY_ABI_VERSION_1 1u

/** The name of the one symbol a plugin exports; its type is sy_entry_fn. */
#define SY_ENTRY_SYMBOL "switchyard_plugin_entry"

/* Status codes returned by functions that can fail (int32_t). */
#define SY_OK 0                /**< Success. */
#define SY_ERR_INVALID 1       /**< An argument or envelope is malformed. */
#define SY_ERR_UNKNOWN_PORT 2  /**< The port name is not one of the instance's ports. */
#define SY_ERR_FULL 3          /**< Not taken: a queue with `on_full: block` is full. Retry after resume(). */
#define SY_ERR_STOPPED 4       /**< The instance or router is stopping. */
#define SY_ERR_FAILED 5        /**< Anything else; details go to the error buffer or log. */

/* Delivery outcomes passed to ack() and settled() (int32_t). */
#define SY_OUTCOME_OK 0        /**< Delivered; the far side confirmed where the protocol can. */
#define SY_OUTCOME_RETRY 1     /**< Failed for now (broker down, timeout); worth retrying. */
#define SY_OUTCOME_REJECT 2    /**< Failed for good (far side refused, envelope unusable). */

/* Log levels for log() (int32_t), the levels of swift-log. */
#define SY_LOG_TRACE 0
#define SY_LOG_DEBUG 1
#define SY_LOG_INFO 2
#define SY_LOG_NOTICE 3
#define SY_LOG_WARNING 4
#define SY_LOG_ERROR 5
#define SY_LOG_CRITICAL 6

/* Metric kinds for metric() (int32_t). Names are prefixed by the host with the instance. */
#define SY_METRIC_COUNTER 0    /**< Add `value` (>= 0) to a counter. */
#define SY_METRIC_GAUGE 1      /**< Set a gauge to `value`. */
#define SY_METRIC_HISTOGRAM 2  /**< Record `value` (seconds for durations) in a histogram. */

/** A borrowed view of bytes. `data` may be NULL when `length` is 0. Not NUL-terminated. */
typedef struct sy_bytes {
    const uint8_t *data;
    size_t length;
} sy_bytes;

/** One protocol header (for example `mqtt.qos` = `1`). Names are case-sensitive. */
typedef struct sy_header {
    sy_bytes name;
    sy_bytes value;
} sy_header;

/**
 * The envelope: the one message shape that flows between ports. All views are borrowed.
 *
 * On emit(): an empty `id` makes the host assign a ULID; `time_unix_nanos` 0 makes the host
 * stamp the current time; `source` is ignored (the host sets "instance.port"); the host
 * appends the emitting instance to `trace`. A plugin that forwards an envelope it was
 * delivered passes the delivered `trace` on, which is what stops loops.
 */
typedef struct sy_envelope {
    sy_bytes id;               /**< Unique id (ULID text). */
    sy_bytes type;             /**< Schema name, e.g. "mqtt.Message". */
    sy_bytes source;           /**< "instance.port" that emitted it. */
    sy_bytes subject;          /**< Topic, SIP URI, characteristic, ... */
    int64_t time_unix_nanos;   /**< Creation time, nanoseconds since the Unix epoch. */
    const sy_header *headers;  /**< `header_count` headers; NULL when 0. */
    size_t header_count;
    sy_bytes content_type;     /**< MIME type of `body`, e.g. "application/json". */
    sy_bytes body;             /**< The payload. */
    const sy_bytes *trace;     /**< Instance names it passed through, oldest first. */
    size_t trace_count;
    sy_bytes session;          /**< Optional JSON object (MQTT Connect SessionObject) or empty. */
} sy_envelope;

/** A host-owned buffer a plugin writes an error message (UTF-8) into. */
typedef struct sy_error_buffer {
    uint8_t *data;
    size_t capacity;
    size_t *length;
} sy_error_buffer;

/** Opaque: identifies one plugin instance to the host. */
typedef struct sy_host_context sy_host_context;

/** The functions the host gives a plugin, version 1. All entries are always present. */
typedef struct sy_host_api_v1 {
    /** sizeof(sy_host_api_v1) as the host was compiled. */
    uint32_t struct_size;
    uint32_t reserved;

    /**
     * Emit an envelope on one of the instance's source ports. The host copies it before it
     * returns. Never blocks. Returns SY_OK when every route from the port took it,
     * SY_ERR_FULL when a route with `on_full: block` is full (nothing was taken; wait for
     * resume()), SY_ERR_UNKNOWN_PORT, SY_ERR_INVALID or SY_ERR_STOPPED.
     * `settle_token`: 0, or a plugin-chosen number; when non-zero and the plugin table has
     * settled(), the host calls settled(token, outcome) once every sink the envelope was
     * routed to has acknowledged it (or it was dropped), so a source can confirm upstream
     * (MQTT PUBACK) only when delivery is done.
     */
    int32_t (*emit)(sy_host_context *context, sy_bytes port, const sy_envelope *envelope,
                    uint64_t settle_token);

    /**
     * Acknowledge a delivery received through deliver(). Exactly once per delivery id, from
     * any thread, possibly before deliver() has returned. `reason` may be empty.
     */
    void (*ack)(sy_host_context *context, uint64_t delivery_id, int32_t outcome, sy_bytes reason);

    /** Write a log line (UTF-8) at an SY_LOG_* level, attributed to the instance. */
    void (*log)(sy_host_context *context, int32_t level, sy_bytes message);

    /** Record a metric of an SY_METRIC_* kind; `name` is a Prometheus-style metric name.
     * The gauge named "ready" (0 or 1) is the instance's readiness for the admin port's
     * /readyz: report 0 while the far side is unreachable. An instance that never reports it
     * counts as ready once started. */
    void (*metric)(sy_host_context *context, int32_t kind, sy_bytes name, double value);

    /**
     * Added to version 1 later (check struct_size before calling): a service piece finished
     * the run `run_token` given to piece_execute(). `status` SY_OK: `output` is the output
     * JSON. Otherwise the run failed at the service and `output` is the error text.
     */
    void (*piece_done)(sy_host_context *context, uint64_t run_token, int32_t status, sy_bytes output);
} sy_host_api_v1;

/** The table a plugin fills in during negotiation, version 1. */
typedef struct sy_plugin_api_v1 {
    /** MANDATORY: sizeof(sy_plugin_api_v1) as the plugin was compiled. */
    uint32_t struct_size;
    uint32_t reserved;

    /**
     * MANDATORY: the manifest, UTF-8 JSON, owned by the plugin for the life of the process:
     * {
     *   "name": "core", "version": "1.0.0", "description": "...",
     *   "ports": [ { "name": "tick", "direction": "source" | "sink",
     *                "types": ["core.Tick"] (or ["*"]), "requires": "timer" (optional:
     *                the config key that enables the port), "feeds": ["out"] (optional, sinks
     *                only: source ports that what is delivered here may come out of again,
     *                for loop checks), "description": "..." } ],
     *   "types": { "core.Tick": <JSON Schema of the body> },
     *   "config": <JSON Schema of the instance configuration>
     * }
     */
    sy_bytes manifest;

    /**
     * MANDATORY: create an instance. `instance_name` is the YAML name, `config` the instance
     * configuration as a JSON object (secrets already resolved). On success store the handle
     * in `*instance` and return SY_OK; otherwise write a message into `error` and return an
     * SY_ERR_* code.
     */
    int32_t (*create)(sy_host_context *context, sy_bytes instance_name, sy_bytes config,
                      void **instance, sy_error_buffer error);

    /** MANDATORY: start the instance (see life cycle). Errors as for create(). */
    int32_t (*start)(void *instance, sy_error_buffer error);

    /**
     * MANDATORY: deliver an envelope to a sink port. SY_OK means the plugin took it and
     * will call ack(delivery_id, ...) exactly once. Any other code means it did not take it
     * and will not ack it. SY_ERR_FULL is backpressure: the host holds the envelope and calls
     * deliver() again with the same delivery id a little later (its route queue fills
     * meanwhile and the route's sources are told to wait).
     */
    int32_t (*deliver)(void *instance, sy_bytes port, const sy_envelope *envelope,
                       uint64_t delivery_id);

    /** MANDATORY: stop the instance; no host calls for it after this returns. */
    void (*stop)(void *instance);

    /** MANDATORY: free the instance. */
    void (*destroy)(void *instance);

    /** Optional: stop producing at sources, keep taking deliveries (graceful shutdown). */
    void (*quiesce)(void *instance);

    /** Optional: a port that got SY_ERR_FULL from emit() may emit again. */
    void (*resume)(void *instance, sy_bytes port);

    /**
     * Optional: an envelope emitted with a non-zero settle token is settled (outcome: the
     * worst of its deliveries). Called exactly once per token, from any thread — possibly
     * from inside the emit() call itself when no route reads the port, so do not hold a lock
     * across emit() that settled() also takes.
     */
    void (*settled)(void *instance, uint64_t settle_token, int32_t outcome);

    /* ---- Added to version 1 later: iiidea pieces. A plugin built against a header without
     * these entries reports a smaller struct_size; the host then treats them as absent, so the
     * table stays compatible both ways. The host never requires more than
     * SY_PLUGIN_API_V1_BASE_SIZE bytes. ---- */

    /**
     * Optional: `port` of this instance is the trigger or the action of iiidea `iiidea_id`,
     * which is being enabled (at start, or by the user) with `preferences` (a JSON object: the
     * action's preferences as written, `{}` for a trigger). Return SY_OK to accept. Otherwise
     * write why into `error` (a permission is missing, the device is not paired) and return
     * an SY_ERR_* code: the iiidea stays inactive and shows that reason.
     */
    int32_t (*piece_enable)(void *instance, sy_bytes port, sy_bytes iiidea_id, sy_bytes preferences,
                            sy_error_buffer error);

    /** Optional: the iiidea that `port` serves was disabled. */
    void (*piece_disable)(void *instance, sy_bytes port, sy_bytes iiidea_id);

    /**
     * Optional: run the service piece `port` (a port with direction "service") for one run of
     * iiidea `iiidea_id`: `input` is the trigger's output and `preferences` the service's
     * preferences, both JSON. Return SY_OK when the work is taken; then call the host's
     * piece_done(context, run_token, ...) exactly once, from any thread. Any other code means
     * it was not taken and piece_done will not be called.
     */
    int32_t (*piece_execute)(void *instance, sy_bytes port, sy_bytes iiidea_id, sy_bytes input,
                             sy_bytes preferences, uint64_t run_token);
} sy_plugin_api_v1;

/** The smallest plugin table the host accepts for version 1: up to and including settled(). */
#define SY_PLUGIN_API_V1_BASE_SIZE offsetof(sy_plugin_api_v1, piece_enable)

/** What the host offers in negotiation. */
typedef struct sy_offer {
    /** sizeof(sy_offer) as the host was compiled. */
    uint32_t struct_size;
    /** Number of entries in `versions` and `host_tables`. */
    uint32_t version_count;
    /** The ABI versions the host supports, in no particular order. */
    const uint32_t *versions;
    /** host_tables[i] is the host table for versions[i] (sy_host_api_v1 * for version 1). */
    const void *const *host_tables;
} sy_offer;

/**
 * The entry point. Returns the chosen version, or 0 to refuse. See "Negotiation" above.
 */
typedef uint32_t (*sy_entry_fn)(const sy_offer *offer, void *plugin_table,
                                size_t plugin_table_capacity);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_PLUGIN_H */
