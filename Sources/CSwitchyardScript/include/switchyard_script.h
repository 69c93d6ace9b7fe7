// A sandboxed Lua 5.4 state that runs one route's (or one iiidea service piece's) script.
//
// Every call into Lua happens inside lua_pcall made by this library, and every function a
// script can reach is C: no Swift frame ever lies between a lua_pcall and the longjmp of a Lua
// error (Swift's ARC releases and defers would be skipped). Swift sees plain C data only.
//
// Not thread-safe: one sy_script at a time per thread; the caller serializes (a lock per route).
#ifndef SWITCHYARD_SCRIPT_H
#define SWITCHYARD_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sy_script sy_script;

/// Bytes that are not necessarily NUL-terminated (and may contain NUL).
typedef struct {
    const char *data;
    size_t length;
} sy_script_text;

/// The budgets of one state. Zero in a field means its default.
typedef struct {
    /// Bytes the whole state may hold (custom allocator; state, globals and garbage included).
    /// Default 16 MiB.
    size_t memory_limit;
    /// VM instructions one call may run (count hook, checked every 1,000). Default 1,000,000.
    uint64_t instruction_limit;
    /// The longest string a library function may build (string.rep, json.encode, base64/hex,
    /// table.concat, string.format) and the longest subject the pattern functions take.
    /// Default 1 MiB.
    size_t string_limit;
    /// The estimated steps a pattern match may take (see docs/scripting.md); past it the
    /// pattern function raises. Default 100,000,000.
    uint64_t pattern_limit;
    /// Envelopes one call may emit (emit() calls plus the returned table). Default 1,000.
    uint32_t output_limit;
} sy_script_limits;

/// The envelope a call sees as the global `envelope`.
typedef struct {
    /// The body: JSON text when `body_is_json` (decoded into Lua values; if it does not parse,
    /// the script sees the bytes as a string), otherwise bytes the script sees as a string.
    sy_script_text body;
    int body_is_json;
    sy_script_text subject, type, id, source, content_type;
    /// The session JSON object; length 0: none (the script sees nil).
    sy_script_text session;
    /// Nanoseconds since the Unix epoch (the script sees seconds as a float).
    int64_t time;
    size_t header_count;
    const sy_script_text *header_names;
    const sy_script_text *header_values;
} sy_script_input;

/// Which fields an output envelope sets; the others keep the input's values.
enum {
    SY_SCRIPT_SETS_BODY = 1 << 0,
    SY_SCRIPT_SETS_SUBJECT = 1 << 1,
    SY_SCRIPT_SETS_TYPE = 1 << 2,
    SY_SCRIPT_SETS_HEADERS = 1 << 3,
    SY_SCRIPT_SETS_CONTENT_TYPE = 1 << 4,
};

/// One envelope a call produced. Every pointer stays valid until the next sy_script_call,
/// sy_script_state_json, sy_script_set_state_json or sy_script_close on the same state.
typedef struct {
    uint32_t sets;
    /// 1: `body` is JSON text (the script gave a table, number, boolean or json.null);
    /// 0: `body` is the bytes of a Lua string, as given.
    int body_is_json;
    sy_script_text body, subject, type, content_type;
    size_t header_count;
    const sy_script_text *header_names;
    const sy_script_text *header_values;
} sy_script_output;

/// How a call ended.
typedef enum {
    /// The outputs are in `outputs` (none: the script dropped the envelope).
    SY_SCRIPT_OK = 0,
    /// The script raised an error, or returned or emitted a malformed table; `message` says
    /// what, with the chunk name and line.
    SY_SCRIPT_ERROR = 1,
    /// The call ran past its instruction budget.
    SY_SCRIPT_INSTRUCTION_BUDGET = 2,
    /// The state reached its memory limit.
    SY_SCRIPT_MEMORY_BUDGET = 3,
} sy_script_status;

/// What one call produced.
typedef struct {
    sy_script_status status;
    size_t output_count;
    const sy_script_output *outputs;
    /// The error (status != OK), NUL-terminated; valid like the outputs.
    const char *message;
    /// Lines the script printed (print(), at most 16 per call, each cut at 1,000 bytes).
    size_t printed_count;
    const sy_script_text *printed;
    /// VM instructions the call ran (in thousands, as counted by the hook).
    uint64_t kilo_instructions;
} sy_script_result;

/// Opens a sandboxed state. Returns NULL only when the state cannot be allocated.
sy_script *sy_script_open(sy_script_limits limits);

/// Compiles `source` (text only; binary chunks are refused) as the function each call runs.
/// `chunk_name` names it in messages (e.g. "routes/a.yaml:12"; messages then read
/// "routes/a.yaml:12:3: ..." where 3 is the script's own line). Returns 0, or -1 with a
/// NUL-terminated message in `error` (at most `error_size` bytes) of the form
/// "CHUNK:LINE: message" for a syntax error.
int sy_script_load(sy_script *script, sy_script_text source, const char *chunk_name, char *error, size_t error_size);

/// Runs the loaded function once on `input`. The global `state` table persists from one call
/// to the next. Never raises, never aborts, never runs past the budgets.
sy_script_result sy_script_call(sy_script *script, const sy_script_input *input);

/// Fixes the clock the script reads (os.time, os.date, time.now) at `unix_seconds`; NaN
/// restores the real clock. For deterministic graph tests.
void sy_script_set_clock(sy_script *script, double unix_seconds);

/// The global `state` table as JSON text (for `state: persistent`); 0 on success with the
/// text in `*json` (valid like a call's outputs), -1 with the reason in `*json` when the
/// state cannot be encoded (a function in it, too deep, too big).
int sy_script_state_json(sy_script *script, sy_script_text *json);

/// Replaces the global `state` table with the decoded JSON object `json`. 0, or -1 (the
/// state is left empty) when it does not decode to an object.
int sy_script_set_state_json(sy_script *script, sy_script_text json);

/// Bytes the state holds now.
size_t sy_script_memory(const sy_script *script);

/// Closes the state and frees everything it holds.
void sy_script_close(sy_script *script);

/// JSON ↔ Lua round trip for the fuzz target: decodes `json` into Lua values inside the
/// sandbox and encodes them again into `*out` (valid until the next call on this state).
/// Returns 0, or -1 with the message in `*out` (invalid JSON, too deep, over a budget).
int sy_script_json_roundtrip(sy_script *script, sy_script_text json, sy_script_text *out);

#ifdef __cplusplus
}
#endif

#endif
