/*
 * upper.c — a Switchyard plugin written in plain C11 against switchyard_plugin.h.
 *
 * It proves the plugin ABI is language-neutral: no Swift, no SDK, just the header.
 *
 *   ports:  in  (sink, any type, feeds "out")  ->  out (source, any type)
 *   config: { prefix: "text", type: "upper.Shout" }   (both optional; no other keys)
 *   command: switchyard upper shout WORDS...   (prints the words uppercased)
 *
 * Every envelope delivered on `in` comes out of `out` with its body ASCII-uppercased and the
 * prefix put in front. Type, subject, headers, content type, session and trace are passed on
 * (the host appends this instance to the trace); id and time are left for the host to assign.
 *
 * With `type`, `out` emits every envelope as that type instead: a type this instance adds,
 * declared to the host with its schema (a text body) through describe() before anything
 * starts, so `switchyard validate` checks routes against it (section 6 of the header).
 *
 * Build (from the repository root):
 *   cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -O2 -I Sources/SwitchyardABI/include \
 *      -o Plugins/libupper.so examples/c-plugin/upper.c
 *
 * Threads: the host may call every entry point from any thread at once. An instance is
 * immutable after create() except for its `stopped` flag, which is atomic; the one global (the
 * host table chosen in negotiation) is an atomic pointer. Nothing here blocks.
 */
/* write() from <unistd.h>, which strict C11 (-std=c11) does not declare by itself. */
#define _POSIX_C_SOURCE 200809L

#include "switchyard_plugin.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* Manifest: static storage, valid for the life of the process as the ABI requires.           */
/* ---------------------------------------------------------------------------------------- */

static const char manifest_json[] =
    "{"
    "\"name\":\"upper\","
    "\"version\":\"1.0.0\","
    "\"description\":\"Uppercases ASCII letters of each body and prepends an optional prefix (written in C)\","
    "\"ports\":["
    "{\"name\":\"in\",\"direction\":\"sink\",\"types\":[\"*\"],\"feeds\":[\"out\"],"
    "\"description\":\"Envelopes to uppercase\"},"
    "{\"name\":\"out\",\"direction\":\"source\",\"types\":[\"*\"],"
    "\"description\":\"The uppercased envelopes, trace kept\"}"
    "],"
    "\"types\":{},"
    "\"config\":{\"type\":\"object\",\"additionalProperties\":false,"
    "\"properties\":{\"prefix\":{\"type\":\"string\",\"description\":\"Text put in front of every body\"},"
    "\"type\":{\"type\":\"string\",\"description\":\"The type out emits, upper.NAME (default: the type delivered)\"}}},"
    "\"commands\":[{\"name\":\"shout\",\"summary\":\"Print the words given uppercased: switchyard upper shout hello\"}]"
    "}";

/* The host table chosen in negotiation; set before any instance exists. */
static _Atomic(const sy_host_api_v2 *) host_api = NULL;

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                              */
/* ---------------------------------------------------------------------------------------- */

static sy_bytes bytes_of(const char *text) {
    sy_bytes view = {(const uint8_t *)text, strlen(text)};
    return view;
}

static bool bytes_equal(sy_bytes view, const char *text) {
    size_t length = strlen(text);
    return view.length == length && (length == 0 || memcmp(view.data, text, length) == 0);
}

/* Writes `message` into the host's error buffer, cut at a UTF-8 character boundary. */
static void set_error(sy_error_buffer error, const char *message) {
    if (error.length == NULL) return;
    size_t length = strlen(message);
    if (error.data == NULL) length = 0;
    if (length > error.capacity) {
        length = error.capacity;
        while (length > 0 && ((uint8_t)message[length] & 0xC0u) == 0x80u) length--;
    }
    if (length > 0) memcpy(error.data, message, length);
    *error.length = length;
}

/* ---------------------------------------------------------------------------------------- */
/* A minimal JSON reader for the configuration: an object whose only allowed key is         */
/* "prefix" with a string value. Anything else is refused with a message.                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct json_cursor {
    const uint8_t *at;
    const uint8_t *end;
} json_cursor;

/* A growable byte buffer for decoded strings. */
typedef struct text_buffer {
    char *data;
    size_t length;
    size_t capacity;
} text_buffer;

static bool text_append(text_buffer *text, const char *bytes, size_t count) {
    if (text->length + count + 1 > text->capacity) {
        size_t capacity = text->capacity ? text->capacity : 32;
        while (text->length + count + 1 > capacity) capacity *= 2;
        char *grown = realloc(text->data, capacity);
        if (grown == NULL) return false;
        text->data = grown;
        text->capacity = capacity;
    }
    memcpy(text->data + text->length, bytes, count);
    text->length += count;
    text->data[text->length] = '\0';
    return true;
}

static void skip_space(json_cursor *cursor) {
    while (cursor->at < cursor->end &&
           (*cursor->at == ' ' || *cursor->at == '\t' || *cursor->at == '\n' || *cursor->at == '\r')) {
        cursor->at++;
    }
}

static int hex_value(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(json_cursor *cursor, uint32_t *value) {
    if (cursor->end - cursor->at < 4) return false;
    uint32_t result = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_value(cursor->at[i]);
        if (digit < 0) return false;
        result = (result << 4) | (uint32_t)digit;
    }
    cursor->at += 4;
    *value = result;
    return true;
}

static bool append_utf8(text_buffer *text, uint32_t code) {
    char out[4];
    size_t count;
    if (code < 0x80) {
        out[0] = (char)code;
        count = 1;
    } else if (code < 0x800) {
        out[0] = (char)(0xC0 | (code >> 6));
        out[1] = (char)(0x80 | (code & 0x3F));
        count = 2;
    } else if (code < 0x10000) {
        out[0] = (char)(0xE0 | (code >> 12));
        out[1] = (char)(0x80 | ((code >> 6) & 0x3F));
        out[2] = (char)(0x80 | (code & 0x3F));
        count = 3;
    } else {
        out[0] = (char)(0xF0 | (code >> 18));
        out[1] = (char)(0x80 | ((code >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((code >> 6) & 0x3F));
        out[3] = (char)(0x80 | (code & 0x3F));
        count = 4;
    }
    return text_append(text, out, count);
}

/* Reads a JSON string at the cursor (which must be at '"') into `text`. */
static bool read_string(json_cursor *cursor, text_buffer *text, const char **problem) {
    if (cursor->at >= cursor->end || *cursor->at != '"') {
        *problem = "expected a string";
        return false;
    }
    cursor->at++;
    if (!text_append(text, "", 0)) {
        *problem = "out of memory";
        return false;
    }
    while (cursor->at < cursor->end) {
        uint8_t c = *cursor->at++;
        if (c == '"') return true;
        if (c < 0x20) {
            *problem = "control character in a string";
            return false;
        }
        if (c != '\\') {
            if (!text_append(text, (const char *)&c, 1)) {
                *problem = "out of memory";
                return false;
            }
            continue;
        }
        if (cursor->at >= cursor->end) break;
        uint8_t escape = *cursor->at++;
        char plain = 0;
        switch (escape) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
            uint32_t code;
            if (!read_hex4(cursor, &code)) {
                *problem = "bad \\u escape in a string";
                return false;
            }
            if (code >= 0xD800 && code <= 0xDBFF) {
                uint32_t low;
                if (cursor->end - cursor->at < 6 || cursor->at[0] != '\\' || cursor->at[1] != 'u') {
                    *problem = "unpaired surrogate in a string";
                    return false;
                }
                cursor->at += 2;
                if (!read_hex4(cursor, &low) || low < 0xDC00 || low > 0xDFFF) {
                    *problem = "unpaired surrogate in a string";
                    return false;
                }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            } else if (code >= 0xDC00 && code <= 0xDFFF) {
                *problem = "unpaired surrogate in a string";
                return false;
            }
            if (!append_utf8(text, code)) {
                *problem = "out of memory";
                return false;
            }
            continue;
        }
        default:
            *problem = "bad escape in a string";
            return false;
        }
        if (!text_append(text, &plain, 1)) {
            *problem = "out of memory";
            return false;
        }
    }
    *problem = "unterminated string";
    return false;
}

/* The longest `type`: a type name is a name, not a payload. */
enum { MAX_TYPE_LENGTH = 128 };

/* Whether `name` is "upper." followed by letters, digits, '.', '-' and '_': a type this
 * plugin may add (the host refuses others), and one that needs no escaping in JSON. */
static bool is_own_type_name(const char *name, size_t length) {
    static const char own[] = "upper.";
    if (length <= sizeof own - 1 || length > MAX_TYPE_LENGTH || strncmp(name, own, sizeof own - 1) != 0) return false;
    for (size_t i = sizeof own - 1; i < length; i++) {
        char c = name[i];
        bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                       c == '_';
        if (!allowed) return false;
    }
    return true;
}

/* An instance's configuration: malloc'd NUL-terminated strings; `type` is NULL when unset. */
typedef struct upper_config {
    char *prefix;
    size_t prefix_length;
    char *type;
    size_t type_length;
} upper_config;

static void free_config(upper_config *config) {
    free(config->prefix);
    free(config->type);
    config->prefix = NULL;
    config->type = NULL;
}

/*
 * Parses the configuration object into `out` (prefix empty when absent). Messages about one
 * value start with its JSON Pointer ("/type: ..."), so the host can point at the route file.
 */
static bool parse_config(sy_bytes config, upper_config *out, char *message, size_t message_size) {
    json_cursor cursor = {config.data, config.data + config.length};
    text_buffer value = {NULL, 0, 0};
    text_buffer type = {NULL, 0, 0};
    bool have_prefix = false;
    const char *problem = NULL;

    if (config.length == 0 || config.data == NULL) {
        /* No configuration at all: same as {}. */
        goto done;
    }
    skip_space(&cursor);
    if (cursor.at >= cursor.end || *cursor.at != '{') {
        snprintf(message, message_size, "upper: configuration must be a JSON object");
        goto fail;
    }
    cursor.at++;
    skip_space(&cursor);
    if (cursor.at < cursor.end && *cursor.at == '}') {
        cursor.at++;
    } else {
        for (;;) {
            text_buffer key = {NULL, 0, 0};
            skip_space(&cursor);
            if (!read_string(&cursor, &key, &problem)) {
                free(key.data);
                snprintf(message, message_size, "upper: invalid configuration: %s", problem);
                goto fail;
            }
            bool is_prefix = strlen(key.data) == key.length && strcmp(key.data, "prefix") == 0;
            bool is_type = strlen(key.data) == key.length && strcmp(key.data, "type") == 0;
            if (!is_prefix && !is_type) {
                snprintf(message, message_size, "upper: unknown configuration key '%.64s' (expected: prefix, type)", key.data);
                free(key.data);
                goto fail;
            }
            free(key.data);
            if ((is_prefix && have_prefix) || (is_type && type.data != NULL)) {
                snprintf(message, message_size, "/%s: upper: given twice", is_prefix ? "prefix" : "type");
                goto fail;
            }
            skip_space(&cursor);
            if (cursor.at >= cursor.end || *cursor.at != ':') {
                snprintf(message, message_size, "upper: invalid configuration: expected ':' after a key");
                goto fail;
            }
            cursor.at++;
            skip_space(&cursor);
            if (cursor.at >= cursor.end || *cursor.at != '"') {
                snprintf(message, message_size, "/%s: upper: must be a string", is_prefix ? "prefix" : "type");
                goto fail;
            }
            if (!read_string(&cursor, is_prefix ? &value : &type, &problem)) {
                snprintf(message, message_size, "upper: invalid configuration: %s", problem);
                goto fail;
            }
            if (is_type && (strlen(type.data) != type.length || !is_own_type_name(type.data, type.length))) {
                snprintf(message, message_size,
                         "/type: upper: '%.64s' is not a type name this plugin may add: write upper.NAME (letters, digits, "
                         "'.', '-', '_'; at most %d characters)",
                         type.data, MAX_TYPE_LENGTH);
                goto fail;
            }
            have_prefix = have_prefix || is_prefix;
            skip_space(&cursor);
            if (cursor.at < cursor.end && *cursor.at == ',') {
                cursor.at++;
                continue;
            }
            if (cursor.at < cursor.end && *cursor.at == '}') {
                cursor.at++;
                break;
            }
            snprintf(message, message_size, "upper: invalid configuration: expected ',' or '}'");
            goto fail;
        }
    }
    skip_space(&cursor);
    if (cursor.at != cursor.end) {
        snprintf(message, message_size, "upper: invalid configuration: text after the object");
        goto fail;
    }

done:
    if (value.data == NULL && !text_append(&value, "", 0)) {
        snprintf(message, message_size, "upper: out of memory");
        goto fail;
    }
    out->prefix = value.data;
    out->prefix_length = value.length;
    out->type = type.data;
    out->type_length = type.length;
    return true;

fail:
    free(value.data);
    free(type.data);
    return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Instances                                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct upper_instance {
    sy_host_context *context;
    const sy_host_api_v2 *host;
    upper_config config;   /* immutable after create() */
    atomic_bool stopped;
} upper_instance;

static int32_t upper_create(sy_host_context *context, sy_bytes instance_name, sy_bytes config, void **instance,
                            sy_error_buffer error) {
    (void)instance_name;
    const sy_host_api_v2 *host = atomic_load(&host_api);
    if (host == NULL || instance == NULL) {
        set_error(error, "upper: create() called before negotiation");
        return SY_ERR_FAILED;
    }
    char message[256];
    upper_config parsed = {NULL, 0, NULL, 0};
    if (!parse_config(config, &parsed, message, sizeof message)) {
        set_error(error, message);
        return SY_ERR_INVALID;
    }
    upper_instance *self = calloc(1, sizeof *self);
    if (self == NULL) {
        free_config(&parsed);
        set_error(error, "upper: out of memory");
        return SY_ERR_FAILED;
    }
    self->context = context;
    self->host = host;
    self->config = parsed;
    atomic_init(&self->stopped, false);
    *instance = self;
    return SY_OK;
}

static int32_t upper_start(void *instance, sy_error_buffer error) {
    (void)error;
    upper_instance *self = instance;
    self->host->log(self->context, SY_LOG_DEBUG, bytes_of("upper started"));
    return SY_OK;
}

static void ack(upper_instance *self, uint64_t delivery_id, int32_t outcome, const char *reason) {
    self->host->ack(self->context, delivery_id, outcome, bytes_of(reason));
}

static int32_t upper_deliver(void *instance, sy_bytes port, const sy_envelope *envelope, uint64_t delivery_id) {
    upper_instance *self = instance;
    if (atomic_load(&self->stopped)) return SY_ERR_STOPPED;
    if (!bytes_equal(port, "in")) return SY_ERR_UNKNOWN_PORT;
    if (envelope == NULL) return SY_ERR_INVALID;

    size_t body_length = envelope->body.length;
    size_t prefix_length = self->config.prefix_length;
    if (body_length > SIZE_MAX - prefix_length) return SY_ERR_INVALID;
    size_t total = prefix_length + body_length;
    uint8_t *body = malloc(total > 0 ? total : 1);
    if (body == NULL) return SY_ERR_FAILED; /* not taken, so no ack */
    if (prefix_length > 0) memcpy(body, self->config.prefix, prefix_length);
    for (size_t i = 0; i < body_length; i++) {
        uint8_t c = envelope->body.data[i];
        body[prefix_length + i] = (c >= 'a' && c <= 'z') ? (uint8_t)(c - ('a' - 'A')) : c;
    }

    /* A new envelope: everything borrowed from the delivered one (valid until we return;
     * emit() copies), id and time left for the host. */
    sy_envelope out;
    memset(&out, 0, sizeof out);
    out.struct_size = (uint32_t)sizeof out;
    out.type = envelope->type;
    if (self->config.type != NULL) {
        out.type.data = (const uint8_t *)self->config.type;
        out.type.length = self->config.type_length;
    }
    out.subject = envelope->subject;
    out.headers = envelope->headers;
    out.header_count = envelope->header_count;
    out.content_type = envelope->content_type;
    out.body.data = body;
    out.body.length = total;
    out.trace = envelope->trace;
    out.trace_count = envelope->trace_count;
    out.session = envelope->session;

    int32_t status = self->host->emit(self->context, bytes_of("out"), &out, 0);
    free(body);
    switch (status) {
    case SY_OK: ack(self, delivery_id, SY_OUTCOME_OK, ""); break;
    case SY_ERR_FULL: ack(self, delivery_id, SY_OUTCOME_RETRY, "upper: output route is full"); break;
    case SY_ERR_STOPPED: ack(self, delivery_id, SY_OUTCOME_REJECT, "upper: router is stopping"); break;
    case SY_ERR_INVALID: ack(self, delivery_id, SY_OUTCOME_REJECT, "upper: host refused the envelope as invalid"); break;
    case SY_ERR_UNKNOWN_PORT: ack(self, delivery_id, SY_OUTCOME_REJECT, "upper: host does not know port 'out'"); break;
    default: ack(self, delivery_id, SY_OUTCOME_REJECT, "upper: emit failed"); break;
    }
    return SY_OK;
}

static void upper_stop(void *instance) {
    upper_instance *self = instance;
    atomic_store(&self->stopped, true);
}

static void upper_destroy(void *instance) {
    upper_instance *self = instance;
    if (self == NULL) return;
    free_config(&self->config);
    free(self);
}

/* ---------------------------------------------------------------------------------------- */
/* Describe: the instance's `out` port and its type, from `type` (section 6 of the header)    */
/* ---------------------------------------------------------------------------------------- */

static int32_t write_bytes(sy_writer writer, const char *text) { return writer.write(writer.target, bytes_of(text)); }

static int32_t upper_describe(sy_bytes instance_name, sy_bytes config, sy_writer description, sy_error_buffer error) {
    (void)instance_name;
    char message[256];
    upper_config parsed = {NULL, 0, NULL, 0};
    if (!parse_config(config, &parsed, message, sizeof message)) {
        set_error(error, message);
        return SY_ERR_INVALID;
    }
    /* deliver() only uppercases and emits, and emit() never blocks: the router may deliver on
     * the thread that emitted into the route (`delivers_inline`). */
    if (parsed.type == NULL) {
        /* No type of its own: the manifest's ports and types. */
        free_config(&parsed);
        return write_bytes(description, "{\"delivers_inline\":[\"in\"]}");
    }
    /* The type name was checked to hold only name characters: it needs no JSON escaping. */
    int32_t status = SY_OK;
    const char *parts[] = {
        "{\"ports\":[{\"name\":\"in\",\"direction\":\"sink\",\"types\":[\"*\"],\"feeds\":[\"out\"]},"
        "{\"name\":\"out\",\"direction\":\"source\",\"types\":[\"",
        parsed.type,
        "\"]}],\"types\":{\"",
        parsed.type,
        "\":{\"type\":\"string\",\"description\":\"An uppercased text body\"}},\"delivers_inline\":[\"in\"]}",
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && status == SY_OK; i++) status = write_bytes(description, parts[i]);
    free_config(&parsed);
    if (status != SY_OK) set_error(error, "upper: the host refused the description");
    return status;
}

/* ---------------------------------------------------------------------------------------- */
/* The command: `switchyard upper shout WORDS...` (section 8 of the header)                   */
/* ---------------------------------------------------------------------------------------- */

/* Exit statuses, as sysexits.h has them. */
enum { EXIT_USAGE = 64, EXIT_IO = 74, EXIT_SOFTWARE = 70 };

/* Writes all of `length` bytes to `fd`, through partial writes and interrupted ones. */
static bool write_all(int32_t fd, const uint8_t *data, size_t length) {
    while (length > 0) {
        ssize_t written = write(fd, data, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        data += written;
        length -= (size_t)written;
    }
    return true;
}

static bool write_text(int32_t fd, const char *text) { return write_all(fd, (const uint8_t *)text, strlen(text)); }

/* "USAGE: <program> WORDS..." and a line on what it does. */
static bool write_usage(int32_t fd, sy_bytes program) {
    return write_text(fd, "USAGE: ") && write_all(fd, program.data, program.length) &&
           write_text(fd, " <word> ...\n\nPrints the words, uppercased, on one line.\n");
}

static int32_t upper_command(const sy_command_call *call) {
    /* Every field up to stderr_fd must be there (a later host may pass a longer struct). */
    if (call == NULL || call->struct_size < offsetof(sy_command_call, stderr_fd) + sizeof call->stderr_fd) return EXIT_SOFTWARE;
    if (!bytes_equal(call->name, "shout")) {
        write_text(call->stderr_fd, "upper: no such command\n");
        return EXIT_USAGE;
    }
    size_t count = call->argument_count;
    if (count == 1 && (bytes_equal(call->arguments[0], "--help") || bytes_equal(call->arguments[0], "-h"))) {
        return write_usage(call->stdout_fd, call->program) ? 0 : EXIT_IO;
    }
    if (count == 0) {
        write_text(call->stderr_fd, "error: give at least one word\n");
        write_usage(call->stderr_fd, call->program);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < count; i++) {
        sy_bytes word = call->arguments[i];
        if (word.length > 0 && word.data[0] == '-') {
            write_text(call->stderr_fd, "error: unknown option '");
            write_all(call->stderr_fd, word.data, word.length);
            write_text(call->stderr_fd, "'\n");
            write_usage(call->stderr_fd, call->program);
            return EXIT_USAGE;
        }
    }
    /* One word at a time through a fixed buffer: the arguments may be long, memory stays small. */
    uint8_t buffer[256];
    for (size_t i = 0; i < count; i++) {
        sy_bytes word = call->arguments[i];
        if (i > 0 && !write_text(call->stdout_fd, " ")) return EXIT_IO;
        for (size_t done = 0; done < word.length;) {
            size_t chunk = word.length - done < sizeof buffer ? word.length - done : sizeof buffer;
            for (size_t b = 0; b < chunk; b++) {
                uint8_t c = word.data[done + b];
                buffer[b] = (c >= 'a' && c <= 'z') ? (uint8_t)(c - ('a' - 'A')) : c;
            }
            if (!write_all(call->stdout_fd, buffer, chunk)) return EXIT_IO;
            done += chunk;
        }
    }
    return write_text(call->stdout_fd, "\n") ? 0 : EXIT_IO;
}

/* ---------------------------------------------------------------------------------------- */
/* Negotiation: the table, and the one exported symbol the header macro writes.             */
/* ---------------------------------------------------------------------------------------- */

static void upper_fill(sy_plugin_api_v2 *table) {
    table->manifest.data = (const uint8_t *)manifest_json;
    table->manifest.length = sizeof manifest_json - 1;
    table->create = upper_create;
    table->start = upper_start;
    table->deliver = upper_deliver;
    table->stop = upper_stop;
    table->destroy = upper_destroy;
    table->command = upper_command;
    table->describe = upper_describe;
    /* quiesce, resume, settled: not needed — `out` only ever emits inside deliver(). */
}

/* The one exported symbol: accepts ABI version 2 and calls upper_fill. */
SY_DEFINE_PLUGIN_ENTRY_V2(upper_fill, host_api)
