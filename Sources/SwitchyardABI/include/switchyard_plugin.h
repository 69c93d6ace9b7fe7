/*
 * switchyard_plugin.h — the Switchyard plugin ABI, versions 2 and 1.
 *
 * This header is the whole contract between the Switchyard router (the host) and a plugin
 * (a shared object loaded with dlopen(RTLD_NOW | RTLD_LOCAL) and never unloaded). Only plain
 * C data crosses it: byte views with lengths, integers and opaque pointers. No Swift (or C++,
 * or Rust) value ever crosses, so a plugin may be written in any language that can export a
 * C function. New plugins use version 2; a host that speaks version 2 still loads plugins
 * built for version 1 (section 9).
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
 * SY_DEFINE_PLUGIN_ENTRY_V2 (section 11) writes this function for a C plugin.
 *
 * The host then checks that the returned version is one it offered, that the table's
 * `struct_size` is large enough for that version, and that every entry marked MANDATORY below
 * is present; a plugin failing any check is refused with a message that names the file.
 *
 * Tables and sy_envelope grow only at their end, and each starts with its `struct_size`: a
 * reader treats every entry that lies beyond the writer's `struct_size` as absent (NULL/0).
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
 * - sy_writer: the host owns what is written; the plugin calls write() any number of times
 *   during the call it was given to, never after it returns.
 * - A plugin instance handle (void *) is owned by the plugin from create() until the host
 *   calls destroy() on it.
 * - The sy_host_context given to create() names the instance to the host. In version 2 it is
 *   a generation-checked handle, not an address: it is never dereferenced, stays safe to pass
 *   for the life of the process, and every host call made with it after the instance's
 *   stop() has returned is refused with SY_ERR_STOPPED (or ignored, for the calls that
 *   return nothing) and counted in the router's `plugin_calls_after_stop_total`.
 *
 * ----------------------------------------------------------------------------------------
 * 3. Threads and blocking
 * ----------------------------------------------------------------------------------------
 * "Any thread" means any thread, concurrently with every other entry, including from inside
 * another entry (emit() or ack() from inside deliver(), for example). "Short" means no
 * network round trip and no sleep: it returns in well under a millisecond. Each entry below
 * says which applies to it. The host never holds a lock of its own while it calls a plugin
 * entry, except where an entry says so.
 *
 *   Plugin entry      Called from                                   May block
 *   describe()        the loading thread, before any instance       short file reads (QDM files)
 *   command()         the main thread of `switchyard PLUGIN ...`    yes: it is the whole command
 *   create()          the control thread (start, reload)            short file reads; no network
 *   start()           the control thread                            up to a few seconds (bind, connect);
 *                                                                   the reload waits for it
 *   reconfigure()     the control thread, between start and stop    short
 *   deliver()         a route worker thread, any of them; for a     short
 *                     "delivers_inline" port (section 6) any thread,
 *                     also inside emit() of any instance, this one
 *   settled()/resume() any thread, possibly inside emit()           short; take no lock emit() holds
 *   quiesce()         the control thread                            short
 *   stop()            the control thread                            until its threads have finished
 *                                                                   calling the host (a few seconds)
 *   destroy()         the control thread, after stop()              short
 *   piece_*()         the control thread (enable/disable), a        short
 *                     route worker (execute)
 *
 *   Host function     May be called from                            Blocks
 *   emit(), ack(), log(), log_enabled(), metric(), piece_done(), source_done(), sink_ready()
 *                     any thread, between create() and the end of   never
 *                     stop() (emit: between start() and stop())
 *   state_*()         any thread, between create() and the end of   up to a disk write
 *                     stop()                                        (milliseconds); not from deliver()
 *                                                                   on a hot path
 *   hold_acquire(), hold_release()
 *                     any thread, between create() and the end of   never (the grant comes later,
 *                     stop()                                        through the callback)
 *
 * ----------------------------------------------------------------------------------------
 * 4. Life cycle of an instance
 * ----------------------------------------------------------------------------------------
 *   [describe] -> create -> start -> (deliver / emit / ack / reconfigure)* -> [quiesce]
 *              -> stop -> destroy
 * - describe() (optional): derive the ports and types an instance has from its configuration
 *   (section 6). The host calls it when it validates a route file, before anything starts.
 * - create(): parse and check the instance configuration (JSON), allocate; no I/O yet.
 * - start(): open connections, start timers and threads; emit() may be called from now on.
 * - reconfigure() (optional): adopt a changed configuration in place, keeping sockets
 *   (section 7).
 * - quiesce() (optional): stop producing new envelopes at sources; deliveries continue. The
 *   host calls it on shutdown and before a reload stops the instance.
 * - stop(): stop everything and wait for the plugin's own threads; after stop() returns the
 *   plugin calls no host function for this instance any more (a late call is refused, see
 *   section 2). Deliveries not yet acknowledged are treated as failed and retried.
 * - destroy(): free the instance.
 * An instance may be stopped and destroyed without ever having been started: when another
 * instance failed to start, or when it stood by (`exclusive: true`, another router held it)
 * until the router stopped. stop() must then return at once; quiesce() is not called.
 * A reload stops an instance before it starts its replacement (so the port is free); if the
 * replacement fails to start, the host creates and starts the old configuration again.
 *
 * ----------------------------------------------------------------------------------------
 * 5. Delivery, settlement and service ports
 * ----------------------------------------------------------------------------------------
 * deliver() returns one of:
 *   SY_OK            taken: the plugin calls ack(delivery_id, ...) exactly once, from any
 *                    thread, possibly before deliver() returns.
 *   SY_ERR_FULL      not taken, backpressure: the host keeps the envelope and calls deliver()
 *                    again with the same delivery id later; the route queue fills meanwhile
 *                    and the route's sources are told to wait. When it calls again: see
 *                    sink_ready() below.
 *   SY_ERR_STOPPED   not taken, the instance is stopping: handled like SY_ERR_FULL, and on
 *                    at-least-once routes the spool keeps the envelope for the next instance.
 *   SY_ERR_INVALID   not taken, this envelope can never be delivered here (malformed for the
 *                    port): it is rejected (dead letter on at-least-once routes), not retried.
 *   SY_ERR_UNKNOWN_PORT  not taken, a host bug or a wrong manifest: rejected like INVALID.
 *   SY_ERR_FAILED    not taken, for now: retried with the route's backoff.
 * ack() outcomes: SY_OUTCOME_OK (delivered; the far side confirmed where the protocol can),
 * SY_OUTCOME_RETRY (retried with backoff, up to the route's attempts), SY_OUTCOME_REJECT
 * (never retried: dead letter on at-least-once routes, dropped and counted otherwise).
 *
 * settled(token, outcome) tells a source that an envelope it emitted with a non-zero settle
 * token is done with. On an at-least-once route "done" means *durable in the router's spool*
 * (written with the configured spool.sync), not delivered: from then on the router owns it and
 * a crash cannot lose it, so a source may confirm upstream (MQTT PUBACK, SIP 200). On
 * best-effort routes it means every sink acknowledged (or the envelope was dropped). The
 * outcome is the worst of the routes'. A source whose upstream confirmation waits for
 * settled() lists its port under "settles" in its description (section 6); a sink that acks
 * SY_OUTCOME_OK only once the far side confirmed lists its port under "confirms".
 *
 * sink_ready(port) tells the host that a sink port which answered SY_ERR_FULL has room again
 * (an empty port: any of the instance's sink ports): the host then calls deliver() again at
 * once, for that port and possibly for the instance's other full ports. A plugin that never
 * calls it is retried after a pause, 1 ms doubling to 50 ms while it stays full. Once an
 * instance has called it (even when nothing was refused), the host takes its word for good: a
 * port of that instance that answers SY_ERR_FULL is retried when it calls, and otherwise
 * only after 1 s, as a safety net. So a plugin that calls it at all calls it whenever room
 * returns after every SY_ERR_FULL (a confirmation frees a place, the socket drains, a
 * reconfigure raises a limit), from any thread; an extra call costs a wake-up. SY_ERR_STOPPED
 * is always retried on the timer. Added to version 2 after source_done: absent when
 * struct_size is at most SY_HOST_API_V2_DONE_SIZE.
 *
 * A "service" port (manifest direction "service") is neither a source nor a sink: it is an
 * iiidea service piece, a function from the trigger's JSON output to a JSON result, run by
 * piece_execute() and finished by the host's piece_done(). Routes never read or write it.
 *
 * ----------------------------------------------------------------------------------------
 * 6. Descriptions and configuration errors
 * ----------------------------------------------------------------------------------------
 * describe() writes one JSON object into its sy_writer:
 *   { "ports":   [ <port objects, as in the manifest> ],
 *     "types":   { "qeo.org.qeo.sample.simplechat.ChatMessage": <JSON Schema of the body> },
 *     "settles": [ "in" ],
 *     "confirms": [ "out" ],
 *     "at_most_once": { "in": "subscriptions/0 is QoS 0; subscribe with `qos: 1`" },
 *     "delivers_inline": [ "out" ] }
 * Every key is optional: absent "ports" or "types" mean the manifest's, absent "settles",
 * "confirms" or "at_most_once" mean none. Types an instance adds must start with the plugin's
 * name and a dot. The last three say what the ports promise under this configuration:
 * "settles" names source ports whose upstream confirmation waits for settled(); "confirms"
 * names sink ports whose SY_OUTCOME_OK means the far side confirmed (a PUBACK, a 2xx, a synced
 * write); "at_most_once" maps ports this configuration cannot make at-least-once to why and
 * what to change. The host refuses an at-least-once route that starts or ends at an
 * "at_most_once" port (reporting the reason at the route's from:/to: entry), and notes one
 * whose source does not settle or whose sink does not confirm. "cautions" maps ports that
 * hold at-least-once only in part under this configuration to the case they miss and what to
 * change (a shared subscription whose session ends with a router that is killed): the host
 * warns at the route's from:/to: entry and runs it. "keeps_state": true says the
 * instance keeps durable state with the host table's state_* calls: the host then opens its
 * store even when no route or iiidea needs one (absent means false). "redelivers" lists
 * ports among "settles" whose peer hands what this router has not settled to another router
 * when this one is gone (a shared subscription whose sessions the routers take over): an
 * at-least-once route settles what they emit once the first delivery to every sink has ended,
 * not once it is spooled, so a router that never comes back takes nothing undelivered with it.
 * "delivers_inline" lists sink ports whose deliver() is short and non-blocking from any
 * thread, including from inside an emit() of any instance (this one too) on the emitting
 * plugin's own thread: it takes no lock that any emit() caller may hold, never waits for a
 * thread that may be the caller, and never waits for the disk or the network. The host may
 * then deliver on the emitting thread, inside emit(), while the route is idle, instead of
 * handing each envelope to a route worker; absent means route workers only. The host reads it
 * when the instance is created (a reconfigure() does not change it).
 *
 * An error message (create(), describe(), reconfigure()) that is about one configuration
 * value starts with that value's JSON Pointer in the instance configuration, a colon and a
 * space: "/listen/port: 70000 is not in 0-65535". The host turns the pointer into the route
 * file's file:line:column.
 *
 * ----------------------------------------------------------------------------------------
 * 7. Reconfiguration
 * ----------------------------------------------------------------------------------------
 * reconfigure(instance, config) is offered a running instance's new configuration on reload.
 * SY_OK: the instance now runs with `config`, keeping what it could (a listening socket on an
 * unchanged address). SY_ERR_UNSUPPORTED: this change cannot be made in place; nothing
 * changed, the host stops the instance and starts a new one. Any other code: the new
 * configuration is wrong (error says why); nothing changed and the reload rolls back.
 *
 * ----------------------------------------------------------------------------------------
 * 8. Plugin commands
 * ----------------------------------------------------------------------------------------
 * The manifest may declare commands: "commands": [ { "name": "realm", "summary": "..." } ].
 * `switchyard PLUGIN NAME ARGS...` loads the plugin and calls command() with NAME and ARGS
 * (no router runs). The plugin reads and writes the given descriptors, prints its own help
 * for --help, and returns the process exit status (0 success, 64 usage error, as sysexits;
 * the host ends with 70 for a status outside 0-255). `switchyard PLUGIN --help` and unknown
 * command names are answered by the host from the manifest, without calling command().
 *
 * ----------------------------------------------------------------------------------------
 * 9. Version 1
 * ----------------------------------------------------------------------------------------
 * Version 1 has the same entries up to piece_execute, the envelope without its struct_size
 * (sy_envelope_v1) and a host table without log_enabled and state. A host that offers version
 * 2 still offers version 1, with a version 1 host table, and checks late calls of version 1
 * plugins the same way.
 *
 * ----------------------------------------------------------------------------------------
 * 10. Holds
 * ----------------------------------------------------------------------------------------
 * hold_acquire(name) asks for a named lock that every router sharing the store (`store.url`)
 * takes turns on; without a shared store the router's own process is the only contender.
 * Names belong to the instance name, as state keys do. The host answers at once and grants
 * later: `changed(user, 1)` when this instance has the hold, then `changed(user, 0)` if it
 * loses it without having released it (its connection to the store broke: another router may
 * take the hold from then on). After a 0, nothing more is called for that hold. A router that
 * dies loses its holds with its store connection (at once when killed, within about 11 s when
 * cut off). The callback runs on a host thread while the host holds that hold's own lock:
 * keep it short and do not call hold_release() for the same hold from inside it.
 * hold_release() gives the hold up (or stops waiting for it); when it returns, `changed` is
 * running no more for it and is never called again. The host releases an instance's holds
 * when its stop() has returned. Added to version 2 later: a plugin checks the host table's
 * struct_size (SY_HOST_API_V2_BASE_SIZE is the table without them).
 *
 * ----------------------------------------------------------------------------------------
 * 11. Finite sources
 * ----------------------------------------------------------------------------------------
 * source_done(port) says that the source port `port` will emit nothing more: a timer that
 * reached its count, input read to its end. It is a promise, not a state: a plugin calls it
 * once it has emitted its last envelope (calling it again changes nothing), and emits nothing
 * on that port afterwards. A router started with `run --exit-when-done` stops gracefully —
 * as on SIGTERM — once every source port its routes and iiideas read is done and everything
 * they accepted has been delivered. Added to version 2 after holds: absent when struct_size
 * is at most SY_HOST_API_V2_HOLDS_SIZE.
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
/** ABI version 2: the tables sy_host_api_v2 and sy_plugin_api_v2. */
#define SY_ABI_VERSION_2 2u

/** The name of the one symbol a plugin exports; its type is sy_entry_fn. */
#define SY_ENTRY_SYMBOL "switchyard_plugin_entry"

/* Status codes returned by functions that can fail (int32_t). */
#define SY_OK 0                /**< Success. */
#define SY_ERR_INVALID 1       /**< An argument or envelope is malformed. */
#define SY_ERR_UNKNOWN_PORT 2  /**< The port name is not one of the instance's ports. */
#define SY_ERR_FULL 3          /**< Not taken: a queue with `on_full: block` is full. Retry after resume(). */
#define SY_ERR_STOPPED 4       /**< The instance or router is stopping, or has stopped. */
#define SY_ERR_FAILED 5        /**< Anything else; details go to the error buffer or log. */
#define SY_ERR_NOT_FOUND 6     /**< v2: state_get() found no value under the key. */
#define SY_ERR_UNSUPPORTED 7   /**< v2: reconfigure() cannot adopt this change in place. */
#define SY_ERR_TOO_LARGE 8     /**< v2: a state key or value, or a writer's output, is over its limit. */

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

/* Limits of the host's state service (v2). */
#define SY_STATE_MAX_KEY 1024u             /**< Bytes in a state key. */
#define SY_STATE_MAX_VALUE (1024u * 1024u) /**< Bytes in one state value. */

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
 *
 * `struct_size` is sizeof(sy_envelope) as the writer was compiled: fields added later lie
 * beyond a smaller struct_size and are then absent. The fields after `reserved` are laid out
 * exactly as sy_envelope_v1.
 */
typedef struct sy_envelope {
    uint32_t struct_size;      /**< sizeof(sy_envelope) as the writer was compiled. */
    uint32_t reserved;         /**< 0. */
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

/** The version 1 envelope: sy_envelope without struct_size and reserved. */
typedef struct sy_envelope_v1 {
    sy_bytes id;
    sy_bytes type;
    sy_bytes source;
    sy_bytes subject;
    int64_t time_unix_nanos;
    const sy_header *headers;
    size_t header_count;
    sy_bytes content_type;
    sy_bytes body;
    const sy_bytes *trace;
    size_t trace_count;
    sy_bytes session;
} sy_envelope_v1;

/** A host-owned buffer a plugin writes an error message (UTF-8) into. */
typedef struct sy_error_buffer {
    uint8_t *data;
    size_t capacity;
    size_t *length;
} sy_error_buffer;

/**
 * A host-owned growing output (v2). write() appends `bytes` and returns SY_OK, or
 * SY_ERR_TOO_LARGE once the host's bound for this output is passed (the output is then
 * discarded). Only during the call the writer was given to.
 */
typedef struct sy_writer {
    void *target;
    int32_t (*write)(void *target, sy_bytes bytes);
} sy_writer;

/** Opaque: identifies one plugin instance to the host (a handle, see section 2). */
typedef struct sy_host_context sy_host_context;

/**
 * Called by state_scan() once per key (in key order) with its value; return 0 to go on,
 * anything else to stop the scan.
 */
typedef int32_t (*sy_state_visitor)(void *user, sy_bytes key, sy_bytes value);

/**
 * Called by the host when a hold of hold_acquire() is granted (`held` 1) or lost (`held` 0;
 * the last call for it). See section 10.
 */
typedef void (*sy_hold_callback)(void *user, int32_t held);

/** The functions the host gives a plugin, version 1. All entries are always present. */
typedef struct sy_host_api_v1 {
    /** sizeof(sy_host_api_v1) as the host was compiled. */
    uint32_t struct_size;
    uint32_t reserved;

    /** As sy_host_api_v2.emit, with a version 1 envelope. */
    int32_t (*emit)(sy_host_context *context, sy_bytes port, const sy_envelope_v1 *envelope,
                    uint64_t settle_token);
    /** As sy_host_api_v2.ack. */
    void (*ack)(sy_host_context *context, uint64_t delivery_id, int32_t outcome, sy_bytes reason);
    /** As sy_host_api_v2.log. */
    void (*log)(sy_host_context *context, int32_t level, sy_bytes message);
    /** As sy_host_api_v2.metric. */
    void (*metric)(sy_host_context *context, int32_t kind, sy_bytes name, double value);
    /** As sy_host_api_v2.piece_done (added to version 1 later: check struct_size). */
    void (*piece_done)(sy_host_context *context, uint64_t run_token, int32_t status, sy_bytes output);
} sy_host_api_v1;

/**
 * The functions the host gives a plugin, version 2. Entries up to state_scan are always
 * present; hold_acquire and hold_release were added later (check struct_size).
 */
typedef struct sy_host_api_v2 {
    /** sizeof(sy_host_api_v2) as the host was compiled. */
    uint32_t struct_size;
    uint32_t reserved;

    /**
     * Emit an envelope on one of the instance's source ports. The host copies it before it
     * returns. Never blocks. Returns SY_OK when every route from the port took it,
     * SY_ERR_FULL when a route with `on_full: block` is full (nothing was taken; wait for
     * resume()), SY_ERR_UNKNOWN_PORT, SY_ERR_INVALID or SY_ERR_STOPPED (before start(), after
     * stop(), or while the router drains).
     * `settle_token`: 0, or a plugin-chosen number; when non-zero and the plugin table has
     * settled(), the host calls settled(token, outcome) exactly once (section 5).
     */
    int32_t (*emit)(sy_host_context *context, sy_bytes port, const sy_envelope *envelope,
                    uint64_t settle_token);

    /**
     * Acknowledge a delivery received through deliver(). Exactly once per delivery id, from
     * any thread, possibly before deliver() has returned. `reason` may be empty. A late ack
     * (after stop()) is ignored and counted: the delivery was already treated as failed.
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
     * A service piece finished the run `run_token` given to piece_execute(). `status` SY_OK:
     * `output` is the output JSON. Otherwise the run failed at the service and `output` is
     * the error text.
     */
    void (*piece_done)(sy_host_context *context, uint64_t run_token, int32_t status, sy_bytes output);

    /** 1 when a log() line at `level` would be written, else 0: skip formatting when 0. */
    int32_t (*log_enabled)(sy_host_context *context, int32_t level);

    /**
     * Durable per-instance state in the router's store (one file, one backup, owner-only).
     * The key space belongs to the instance *name*: it survives restarts and reloads.
     * Keys are at most SY_STATE_MAX_KEY bytes, values at most SY_STATE_MAX_VALUE.
     * state_get writes the value into `value` and returns SY_OK, or SY_ERR_NOT_FOUND.
     * state_put stores (replaces) a value; it is durable when SY_OK returns.
     * state_delete removes a key (SY_OK also when there was none).
     * state_scan calls `visit` for every key that starts with `prefix`, in key order; the
     * visitor may not call state functions of the same instance.
     * Each returns SY_ERR_TOO_LARGE past the limits, SY_ERR_STOPPED after stop(),
     * SY_ERR_FAILED when the store fails (disk full: logged by the host).
     */
    int32_t (*state_get)(sy_host_context *context, sy_bytes key, sy_writer value);
    int32_t (*state_put)(sy_host_context *context, sy_bytes key, sy_bytes value);
    int32_t (*state_delete)(sy_host_context *context, sy_bytes key);
    int32_t (*state_scan)(sy_host_context *context, sy_bytes prefix, sy_state_visitor visit, void *user);

    /* Added to version 2 later: absent when struct_size is SY_HOST_API_V2_BASE_SIZE. */

    /**
     * Ask for the hold `name` (at most SY_STATE_MAX_KEY bytes; section 10). Returns SY_OK and
     * the hold's id in `*hold_id`; `changed(user, ...)` tells when it is granted or lost.
     * SY_ERR_FAILED when the router has no store to hold it in.
     */
    int32_t (*hold_acquire)(sy_host_context *context, sy_bytes name, sy_hold_callback changed, void *user,
                            uint64_t *hold_id);
    /** Give up the hold `hold_id` (or stop waiting for it); see section 10. */
    void (*hold_release)(sy_host_context *context, uint64_t hold_id);

    /* Added to version 2 after holds: absent when struct_size is SY_HOST_API_V2_HOLDS_SIZE. */

    /** The source port `port` will emit nothing more (section 11). */
    void (*source_done)(sy_host_context *context, sy_bytes port);

    /* Added to version 2 after source_done: absent when struct_size is at most
     * SY_HOST_API_V2_DONE_SIZE. */

    /** The sink port `port` (empty: any sink port of the instance) has room again after a
     * deliver() answered SY_ERR_FULL (section 5). */
    void (*sink_ready)(sy_host_context *context, sy_bytes port);
} sy_host_api_v2;

/** The version 2 host table before holds were added to it. */
#define SY_HOST_API_V2_BASE_SIZE offsetof(sy_host_api_v2, hold_acquire)
/** The version 2 host table with holds, before source_done was added to it. */
#define SY_HOST_API_V2_HOLDS_SIZE offsetof(sy_host_api_v2, source_done)
/** The version 2 host table with source_done, before sink_ready was added to it. */
#define SY_HOST_API_V2_DONE_SIZE offsetof(sy_host_api_v2, sink_ready)

/**
 * The table a plugin fills in during negotiation, version 1. Its layout is the first part of
 * sy_plugin_api_v2 (with sy_envelope_v1 in deliver()).
 */
typedef struct sy_plugin_api_v1 {
    uint32_t struct_size;
    uint32_t reserved;
    sy_bytes manifest;
    int32_t (*create)(sy_host_context *context, sy_bytes instance_name, sy_bytes config,
                      void **instance, sy_error_buffer error);
    int32_t (*start)(void *instance, sy_error_buffer error);
    int32_t (*deliver)(void *instance, sy_bytes port, const sy_envelope_v1 *envelope,
                       uint64_t delivery_id);
    void (*stop)(void *instance);
    void (*destroy)(void *instance);
    void (*quiesce)(void *instance);
    void (*resume)(void *instance, sy_bytes port);
    void (*settled)(void *instance, uint64_t settle_token, int32_t outcome);
    /* Added to version 1 later: absent when struct_size ends before them. */
    int32_t (*piece_enable)(void *instance, sy_bytes port, sy_bytes iiidea_id, sy_bytes preferences,
                            sy_error_buffer error);
    void (*piece_disable)(void *instance, sy_bytes port, sy_bytes iiidea_id);
    int32_t (*piece_execute)(void *instance, sy_bytes port, sy_bytes iiidea_id, sy_bytes input,
                             sy_bytes preferences, uint64_t run_token);
} sy_plugin_api_v1;

/** The smallest plugin table the host accepts for version 1: up to and including settled(). */
#define SY_PLUGIN_API_V1_BASE_SIZE offsetof(sy_plugin_api_v1, piece_enable)

/** What `switchyard PLUGIN COMMAND ARGS...` hands to command() (v2). */
typedef struct sy_command_call {
    /** sizeof(sy_command_call) as the host was compiled. */
    uint32_t struct_size;
    uint32_t reserved;
    /** The command name as declared in the manifest ("realm"). */
    sy_bytes name;
    /** The arguments after it, `argument_count` of them. */
    const sy_bytes *arguments;
    size_t argument_count;
    /** What to call itself in usage text: "switchyard qeo realm". */
    sy_bytes program;
    /** Where to read input and write output and errors. */
    int32_t stdin_fd;
    int32_t stdout_fd;
    int32_t stderr_fd;
    int32_t reserved2;
} sy_command_call;

/** The table a plugin fills in during negotiation, version 2. */
typedef struct sy_plugin_api_v2 {
    /** MANDATORY: sizeof(sy_plugin_api_v2) as the plugin was compiled. */
    uint32_t struct_size;
    uint32_t reserved;

    /**
     * MANDATORY: the manifest, UTF-8 JSON, owned by the plugin for the life of the process:
     * {
     *   "name": "core", "version": "1.0.0", "description": "...",
     *   "ports": [ { "name": "tick", "direction": "source" | "sink" | "service",
     *                "types": ["core.Tick"] (or ["*"]), "requires": "timer" (optional:
     *                the config key that enables the port), "feeds": ["out"] (optional, sinks
     *                only: source ports that what is delivered here may come out of again,
     *                for loop checks), "description": "..." } ],
     *   "types": { "core.Tick": <JSON Schema of the body> },
     *   "config": <JSON Schema of the instance configuration>,
     *   "commands": [ { "name": "realm", "summary": "one line for `switchyard --help`" } ]
     * }
     */
    sy_bytes manifest;

    /**
     * MANDATORY: create an instance. `instance_name` is the YAML name, `config` the instance
     * configuration as a JSON object (secrets already resolved). On success store the handle
     * in `*instance` and return SY_OK; otherwise write a message into `error` (section 6) and
     * return an SY_ERR_* code. `context` is the instance's handle for host calls.
     */
    int32_t (*create)(sy_host_context *context, sy_bytes instance_name, sy_bytes config,
                      void **instance, sy_error_buffer error);

    /** MANDATORY: start the instance (section 4). Errors as for create(). */
    int32_t (*start)(void *instance, sy_error_buffer error);

    /** MANDATORY: deliver an envelope to a sink port; return codes in section 5. */
    int32_t (*deliver)(void *instance, sy_bytes port, const sy_envelope *envelope,
                       uint64_t delivery_id);

    /** MANDATORY: stop the instance and join its threads; no host calls for it afterwards. */
    void (*stop)(void *instance);

    /** MANDATORY: free the instance. */
    void (*destroy)(void *instance);

    /** Optional: stop producing at sources, keep taking deliveries (graceful shutdown). */
    void (*quiesce)(void *instance);

    /** Optional: a port that got SY_ERR_FULL from emit() may emit again. */
    void (*resume)(void *instance, sy_bytes port);

    /**
     * Optional: an envelope emitted with a non-zero settle token is settled (section 5).
     * Called exactly once per token, from any thread — possibly from inside the emit() call
     * itself, so do not hold a lock across emit() that settled() also takes.
     */
    void (*settled)(void *instance, uint64_t settle_token, int32_t outcome);

    /**
     * Optional: `port` of this instance is the trigger or the action of iiidea `iiidea_id`,
     * which is being enabled with `preferences` (JSON object; `{}` for a trigger). Return
     * SY_OK to accept, or write why into `error` and return an SY_ERR_* code: the iiidea
     * stays inactive and shows that reason.
     */
    int32_t (*piece_enable)(void *instance, sy_bytes port, sy_bytes iiidea_id, sy_bytes preferences,
                            sy_error_buffer error);

    /** Optional: the iiidea that `port` serves was disabled. */
    void (*piece_disable)(void *instance, sy_bytes port, sy_bytes iiidea_id);

    /**
     * Optional: run the service port `port` for one run of iiidea `iiidea_id` (section 5):
     * `input` is the trigger's output and `preferences` the service's preferences, both JSON.
     * Return SY_OK when the work is taken; then call piece_done(context, run_token, ...)
     * exactly once, from any thread. Any other code: not taken, no piece_done.
     */
    int32_t (*piece_execute)(void *instance, sy_bytes port, sy_bytes iiidea_id, sy_bytes input,
                             sy_bytes preferences, uint64_t run_token);

    /* ---- New in version 2. ---- */

    /**
     * Optional: describe the instance `instance_name` would be with `config` (section 6):
     * write its description JSON into `description` and return SY_OK, or write an error and
     * return an SY_ERR_* code. No instance exists yet; do no network I/O.
     */
    int32_t (*describe)(sy_bytes instance_name, sy_bytes config, sy_writer description,
                        sy_error_buffer error);

    /** Optional: adopt `config` in place (section 7). */
    int32_t (*reconfigure)(void *instance, sy_bytes config, sy_error_buffer error);

    /** Optional (needed when the manifest declares commands): run a command (section 8);
     * returns the exit status. */
    int32_t (*command)(const sy_command_call *call);
} sy_plugin_api_v2;

/** What the host offers in negotiation. */
typedef struct sy_offer {
    /** sizeof(sy_offer) as the host was compiled. */
    uint32_t struct_size;
    /** Number of entries in `versions` and `host_tables`. */
    uint32_t version_count;
    /** The ABI versions the host supports, in no particular order. */
    const uint32_t *versions;
    /** host_tables[i] is the host table for versions[i] (sy_host_api_v2 * for version 2). */
    const void *const *host_tables;
} sy_offer;

/**
 * The entry point. Returns the chosen version, or 0 to refuse. See "Negotiation" above.
 */
typedef uint32_t (*sy_entry_fn)(const sy_offer *offer, void *plugin_table,
                                size_t plugin_table_capacity);

/*
 * ----------------------------------------------------------------------------------------
 * 11. For C plugins: the negotiation, written once
 * ----------------------------------------------------------------------------------------
 * SY_DEFINE_PLUGIN_ENTRY_V2(fill, host_out) defines switchyard_plugin_entry: it accepts
 * version 2 when offered, zeroes the table, sets struct_size, stores the host table in
 * `host_out` (a `const sy_host_api_v2 *` variable of the plugin, written once before any
 * other entry runs) and calls `void fill(sy_plugin_api_v2 *table)`, which sets the manifest
 * and the entries. It refuses (returns 0) any other offer.
 */
#if defined(__GNUC__) || defined(__clang__)
#define SY_EXPORT __attribute__((visibility("default")))
#else
#define SY_EXPORT
#endif

#define SY_DEFINE_PLUGIN_ENTRY_V2(fill, host_out)                                               \
    SY_EXPORT uint32_t switchyard_plugin_entry(const sy_offer *offer, void *plugin_table,      \
                                               size_t plugin_table_capacity);                  \
    SY_EXPORT uint32_t switchyard_plugin_entry(const sy_offer *offer, void *plugin_table,      \
                                               size_t plugin_table_capacity) {                 \
        if (offer == NULL || plugin_table == NULL || offer->versions == NULL ||                \
            offer->host_tables == NULL || plugin_table_capacity < sizeof(sy_plugin_api_v2))    \
            return 0;                                                                           \
        for (uint32_t i = 0; i < offer->version_count; i++) {                                   \
            if (offer->versions[i] != SY_ABI_VERSION_2) continue;                               \
            const sy_host_api_v2 *host = (const sy_host_api_v2 *)offer->host_tables[i];         \
            if (host == NULL || host->struct_size < SY_HOST_API_V2_BASE_SIZE) return 0;         \
            (host_out) = host;                                                                  \
            sy_plugin_api_v2 *table = (sy_plugin_api_v2 *)plugin_table;                         \
            for (size_t b = 0; b < sizeof *table; b++) ((unsigned char *)table)[b] = 0;         \
            table->struct_size = (uint32_t)sizeof *table;                                       \
            fill(table);                                                                        \
            return SY_ABI_VERSION_2;                                                            \
        }                                                                                       \
        return 0;                                                                               \
    }

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_PLUGIN_H */
