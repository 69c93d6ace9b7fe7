// Private to CSwitchyardScript: what a sy_script holds and the helpers its files share.
//
// Every function here that takes a lua_State may raise a Lua error: it is only called inside
// a lua_pcall made by script.c. Scratch memory that must survive such an error belongs to the
// sy_script, so an unwinding error leaks nothing.
#ifndef SWITCHYARD_SCRIPT_INTERNAL_H
#define SWITCHYARD_SCRIPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <lua5.4/lauxlib.h>
#include <lua5.4/lua.h>
#include <lua5.4/lualib.h>

#include "switchyard_script.h"

enum {
    /// The count hook fires every this many VM instructions.
    SY_HOOK_EVERY = 1000,
    SY_PRINT_LINES = 16,
    SY_PRINT_BYTES = 1000,
    SY_MESSAGE_BYTES = 2000,
    SY_JSON_DEPTH = 200,
    /// Bytes allocated (or scanned by a C function) that cost one instruction of the budget:
    /// work the count hook cannot see (a long concatenation, a big table.concat) still counts.
    SY_BYTES_PER_INSTRUCTION = 64,
};

/// Where a call is: error messages and emit() depend on it.
typedef enum {
    SY_PHASE_IDLE,
    SY_PHASE_SCRIPT,  // the loaded function runs
    SY_PHASE_RETURN,  // its return value is converted (errors get the chunk name as prefix)
} sy_phase;

/// One object key of a table being encoded, sorted bytewise before it is written.
typedef struct {
    const char *data;  // a string key (anchored by the table); NULL: `digits` holds an integer key
    size_t length;
    lua_Integer integer;
    char digits[24];
} sy_json_key;

typedef struct {
    sy_script_text name, value;
} sy_header;

struct sy_script {
    lua_State *L;
    sy_script_limits limits;

    // The allocator's accounts.
    size_t memory_used;
    uint64_t allocated;  // bytes allocated since the script started (charged to the budget)
    int memory_refused;  // the allocator refused a growth during this call

    // The instruction budget of the current call.
    uint64_t firings;  // count hook firings (SY_HOOK_EVERY instructions each)
    uint64_t charged;  // instructions charged by C functions for work the hook cannot see
    int exhausted;

    sy_phase phase;
    int emitted;
    double clock;  // NaN: the real clock

    // Registry references, taken once at open.
    int ref_chunk;  // the loaded function (false until one is loaded)
    int ref_keep;   // a sequence anchoring the strings the outputs point into
    int ref_array;  // the metatable that marks a table as a JSON array
    lua_Integer kept;

    char *chunk_name;     // the name messages use (what sy_script_load was given)
    int long_chunk_name;  // too long for Lua's messages: Lua knows the chunk as SY_LONG_CHUNK_ID

    // Scratch: JSON text, decoded strings, base64/hex output.
    char *buf;
    size_t buf_len, buf_cap;
    sy_json_key *keys;
    size_t keys_used, keys_cap;

    // Outputs of the current call.
    sy_script_output *outputs;
    size_t output_count, output_cap;
    sy_header *headers;
    size_t header_count, header_cap;
    sy_script_text *header_names, *header_values;
    size_t header_names_cap, header_values_cap;

    sy_script_text printed[SY_PRINT_LINES];
    size_t printed_count;
    char printed_lines[SY_PRINT_LINES][SY_PRINT_BYTES];
    char message[SY_MESSAGE_BYTES + 1];
};

/// The sy_script of a Lua state (it is the allocator's userdata: no registry lookup).
static inline sy_script *sy_from(lua_State *L) {
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return (sy_script *)ud;
}

static inline uint64_t sy_mul_sat(uint64_t a, uint64_t b) {
    return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

static inline uint64_t sy_add_sat(uint64_t a, uint64_t b) {
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

// script.c
/// The allocator of every state: refuses growth past the memory limit (budget.c).
void *sy_alloc(void *ud, void *block, size_t osize, size_t nsize);
/// Instructions the current call has used: the hook's count and the charges.
uint64_t sy_used(const sy_script *s);
void sy_hook(lua_State *L, lua_Debug *ar);
/// Charges `instructions` of C work to the call's budget; raises when it is exhausted.
void sy_charge(lua_State *L, sy_script *s, uint64_t instructions);
/// Raises the budget error with the position of the function at `level`.
int sy_budget_error(lua_State *L, sy_script *s, int level);
/// Grows the scratch buffer to hold `extra` more bytes; returns where they go.
char *sy_reserve(lua_State *L, sy_script *s, size_t extra);
/// Grows a struct-owned array (`*array` of `*cap` elements of `size` bytes) to `need`.
void sy_grow(lua_State *L, void **array, size_t *cap, size_t need, size_t size);
/// The script's clock in seconds since the epoch.
double sy_clock(const sy_script *s);

// sandbox.c: the libraries a script sees, with the dangerous parts removed.
void sy_sandbox_open(lua_State *L, sy_script *s);

// library.c: bounded string/table functions, base64, hex, time.
void sy_library_open(lua_State *L, sy_script *s);
/// The base64, hex and time tables (codecs.c).
void sy_codecs_open(lua_State *L);
/// Raises "WHAT of N bytes would be longer than the string limit", at the caller's line.
void sy_too_long(lua_State *L, sy_script *s, const char *what, uint64_t length);

// json.c
/// Pushes the `json` table.
void sy_json_open(lua_State *L, sy_script *s);
/// Pushes the value of the JSON text and returns 1, or pushes a message and returns 0.
int sy_json_decode(lua_State *L, sy_script *s, const char *text, size_t length);
/// Encodes the value at `index` into the scratch buffer (s->buf, s->buf_len); raises.
void sy_json_encode(lua_State *L, sy_script *s, int index);
/// Whether the table at `index` carries the JSON array mark.
int sy_json_is_array(lua_State *L, sy_script *s, int index);

// envelope.c
/// Pushes the `envelope` table of a call's input.
void sy_envelope_push(lua_State *L, sy_script *s, const sy_script_input *input);
/// Converts the envelope table at `index` into one more output; raises on a malformed one.
void sy_output_add(lua_State *L, sy_script *s, int index);
/// Points each output at its headers once the call has produced them all.
void sy_outputs_finish(lua_State *L, sy_script *s);
/// emit(table)
int sy_emit(lua_State *L);

#endif
