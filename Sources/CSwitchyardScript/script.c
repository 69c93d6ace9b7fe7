// The public functions: a state's life, loading and calls (the budgets that bound a call are
// in budget.c).
//
// Each public function pushes a C function (and its context as a light userdata) and runs it
// with lua_pcall: a Lua error, which longjmps, never crosses into the caller.
#define _POSIX_C_SOURCE 200809L

#include "script_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Lua shortens chunk names to LUA_IDSIZE - 1 bytes in messages; a longer name is given to Lua
// as this and put back into every message.
#define SY_LONG_CHUNK_ID "@chunk@"

// MARK: - Messages

/// Copies `text` into the struct's message buffer, putting back a long chunk name.
static void sy_set_message(sy_script *s, const char *text, size_t length, int prefix_chunk) {
    size_t out = 0;
    const size_t cap = SY_MESSAGE_BYTES;
    if (prefix_chunk && s->chunk_name) {
        // A malformed return value has no line: name the chunk at least.
        size_t n = strlen(s->chunk_name);
        int positioned = length > n && memcmp(text, s->chunk_name, n) == 0 && text[n] == ':';
        if (!positioned) {
            for (size_t i = 0; i < n && out < cap; i++) s->message[out++] = s->chunk_name[i];
            if (out < cap) s->message[out++] = ':';
            if (out < cap) s->message[out++] = ' ';
        }
    }
    const size_t id_length = sizeof SY_LONG_CHUNK_ID - 1;
    for (size_t i = 0; i < length && out < cap;) {
        if (s->long_chunk_name && length - i >= id_length && memcmp(text + i, SY_LONG_CHUNK_ID, id_length) == 0) {
            for (const char *c = s->chunk_name; *c && out < cap; c++) s->message[out++] = *c;
            i += id_length;
        } else {
            s->message[out++] = text[i++];
        }
    }
    s->message[out] = '\0';
}

static int sy_tostring_protected(lua_State *L) {
    luaL_tolstring(L, 1, NULL);
    return 1;
}

/// The error value on top of the stack as the struct's message.
static void sy_take_error(sy_script *s, int prefix_chunk) {
    lua_State *L = s->L;
    size_t length = 0;
    if (lua_type(L, -1) == LUA_TSTRING) {
        const char *text = lua_tolstring(L, -1, &length);
        sy_set_message(s, text, length, prefix_chunk);
        return;
    }
    // __tostring is script code: protected, and under the same budget.
    static const char fallback[] = "error object is not a string";
    if (!lua_checkstack(L, 3)) {
        sy_set_message(s, fallback, sizeof fallback - 1, 0);
        return;
    }
    lua_pushcfunction(L, sy_tostring_protected);
    lua_pushvalue(L, -2);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
        const char *text = lua_tolstring(L, -1, &length);
        sy_set_message(s, text, length, prefix_chunk);
    } else {
        sy_set_message(s, fallback, sizeof fallback - 1, 0);
    }
    lua_pop(L, 1);
}

static int sy_is_memory_error(lua_State *L, int index) {
    size_t length;
    if (lua_type(L, index) != LUA_TSTRING) return 0;
    const char *text = lua_tolstring(L, index, &length);
    return length == 17 && memcmp(text, "not enough memory", 17) == 0;
}

// MARK: - Open and close

static int sy_open_protected(lua_State *L) {
    sy_script *s = sy_from(L);
    lua_pushboolean(L, 0);
    s->ref_chunk = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);
    s->ref_keep = luaL_ref(L, LUA_REGISTRYINDEX);
    // The array mark: protected (__metatable) so a script can neither reach nor change it.
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "json.array");
    lua_setfield(L, -2, "__metatable");
    s->ref_array = luaL_ref(L, LUA_REGISTRYINDEX);
    sy_sandbox_open(L, s);
    return 0;
}

sy_script *sy_script_open(sy_script_limits limits) {
    if (limits.memory_limit == 0) limits.memory_limit = 16u * 1024 * 1024;
    if (limits.instruction_limit == 0) limits.instruction_limit = 1000000;
    if (limits.string_limit == 0) limits.string_limit = 1024 * 1024;
    if (limits.pattern_limit == 0) limits.pattern_limit = 100000000;
    if (limits.output_limit == 0) limits.output_limit = 1000;
    sy_script *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->limits = limits;
    s->clock = NAN;
    s->ref_chunk = s->ref_keep = s->ref_array = LUA_NOREF;
    s->L = lua_newstate(sy_alloc, s);
    if (s->L == NULL) {
        free(s);
        return NULL;
    }
    lua_pushcfunction(s->L, sy_open_protected);
    if (lua_pcall(s->L, 0, 0, 0) != LUA_OK) {
        sy_script_close(s);
        return NULL;
    }
    lua_settop(s->L, 0);
    lua_sethook(s->L, sy_hook, LUA_MASKCOUNT, SY_HOOK_EVERY);
    return s;
}

void sy_script_close(sy_script *s) {
    if (s == NULL) return;
    if (s->L) lua_close(s->L);
    free(s->chunk_name);
    free(s->buf);
    free(s->keys);
    free(s->outputs);
    free(s->headers);
    free(s->header_names);
    free(s->header_values);
    free(s);
}

void sy_script_set_clock(sy_script *s, double unix_seconds) { s->clock = unix_seconds; }

size_t sy_script_memory(const sy_script *s) { return s->memory_used; }

// MARK: - Load

static int sy_load_protected(lua_State *L) {
    sy_script *s = sy_from(L);
    const sy_script_text *source = lua_touserdata(L, 1);
    lua_pushboolean(L, 0);  // a source that does not compile leaves no function behind
    lua_rawseti(L, LUA_REGISTRYINDEX, s->ref_chunk);
    const char *name = s->long_chunk_name ? SY_LONG_CHUNK_ID : s->chunk_name;
    lua_pushfstring(L, "=%s", name);  // "=": messages read NAME:LINE, no [string "..."]
    int status = luaL_loadbufferx(L, source->data ? source->data : "", source->length, lua_tostring(L, -1), "t");
    if (status != LUA_OK) return lua_error(L);
    lua_rawseti(L, LUA_REGISTRYINDEX, s->ref_chunk);
    return 0;
}

static char *sy_strdup(const char *text) {
    size_t n = strlen(text) + 1;
    char *copy = malloc(n);
    if (copy) memcpy(copy, text, n);
    return copy;
}

static void sy_copy_out(char *error, size_t error_size, const char *text) {
    if (error == NULL || error_size == 0) return;
    size_t n = strlen(text);
    if (n >= error_size) n = error_size - 1;
    memcpy(error, text, n);
    error[n] = '\0';
}

int sy_script_load(sy_script *s, sy_script_text source, const char *chunk_name, char *error, size_t error_size) {
    if (chunk_name == NULL || chunk_name[0] == '\0') chunk_name = "script";
    char *name = sy_strdup(chunk_name);
    if (name == NULL) {
        sy_copy_out(error, error_size, "not enough memory");
        return -1;
    }
    free(s->chunk_name);
    s->chunk_name = name;
    s->long_chunk_name = strlen(chunk_name) >= LUA_IDSIZE - 1;

    lua_State *L = s->L;
    lua_settop(L, 0);
    lua_pushcfunction(L, sy_load_protected);
    lua_pushlightuserdata(L, &source);
    int status = lua_pcall(L, 1, 0, 0);
    if (status != LUA_OK) {
        sy_take_error(s, 0);
        sy_copy_out(error, error_size, s->message);
    }
    lua_settop(L, 0);
    return status == LUA_OK ? 0 : -1;
}

// MARK: - Call

static void sy_keep_clear(lua_State *L, sy_script *s) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_keep);
    for (lua_Integer i = 1; i <= s->kept; i++) {
        lua_pushnil(L);
        lua_rawseti(L, -2, i);
    }
    lua_pop(L, 1);
    s->kept = 0;
}

static int sy_call_protected(lua_State *L) {
    sy_script *s = sy_from(L);
    const sy_script_input *input = lua_touserdata(L, 1);
    lua_settop(L, 0);
    sy_keep_clear(L, s);

    lua_pushglobaltable(L);  // 1
    lua_pushliteral(L, "envelope");
    sy_envelope_push(L, s, input);
    lua_rawset(L, 1);  // raw: a metatable the script put on _G does not run here

    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_chunk);
    if (!lua_isfunction(L, -1)) return luaL_error(L, "no script is loaded");
    s->allocated = 0;  // the envelope's own cost is not the script's
    s->phase = SY_PHASE_SCRIPT;
    lua_call(L, 0, 1);
    s->phase = SY_PHASE_RETURN;

    int type = lua_type(L, -1);
    int keeps = type == LUA_TBOOLEAN && lua_toboolean(L, -1);
    if (type == LUA_TTABLE || keeps) {
        if (s->emitted)
            return luaL_error(L, "the script called emit() and also returned %s; a script that emits returns nothing",
                              keeps ? "true" : "a table");
        // true: the envelope goes on as it came, an output that sets nothing.
        if (keeps) lua_newtable(L);
        sy_output_add(L, s, lua_gettop(L));
    } else if (type != LUA_TNIL && type != LUA_TBOOLEAN) {
        return luaL_error(L, "a script returns a table, true, nil or false; it returned a %s", luaL_typename(L, -1));
    }
    sy_outputs_finish(L, s);
    return 0;
}

sy_script_result sy_script_call(sy_script *s, const sy_script_input *input) {
    sy_script_result result;
    memset(&result, 0, sizeof result);
    lua_State *L = s->L;
    s->output_count = 0;
    s->header_count = 0;
    s->printed_count = 0;
    s->emitted = 0;
    s->firings = s->charged = s->allocated = 0;
    s->exhausted = 0;
    s->memory_refused = 0;
    s->message[0] = '\0';
    s->phase = SY_PHASE_IDLE;

    lua_settop(L, 0);
    lua_sethook(L, sy_hook, LUA_MASKCOUNT, SY_HOOK_EVERY);  // also resets the count
    lua_pushcfunction(L, sy_call_protected);
    lua_pushlightuserdata(L, (void *)input);
    int status = lua_pcall(L, 1, 0, 0);

    if (status == LUA_OK) {
        result.status = SY_SCRIPT_OK;
        result.output_count = s->output_count;
        result.outputs = s->outputs;
    } else {
        if (s->exhausted)
            result.status = SY_SCRIPT_INSTRUCTION_BUDGET;
        else if (status == LUA_ERRMEM || (s->memory_refused && sy_is_memory_error(L, -1)))
            result.status = SY_SCRIPT_MEMORY_BUDGET;
        else
            result.status = SY_SCRIPT_ERROR;
        sy_take_error(s, s->phase == SY_PHASE_RETURN);
        s->output_count = 0;
    }
    s->phase = SY_PHASE_IDLE;
    result.message = s->message;
    result.printed_count = s->printed_count;
    result.printed = s->printed;
    // A refused charge (table.move over 1e15 elements) did not run: report the budget at most.
    uint64_t used = sy_used(s), most = sy_add_sat(s->limits.instruction_limit, SY_HOOK_EVERY);
    result.kilo_instructions = (used < most ? used : most) / 1000;
    lua_settop(L, 0);
    return result;
}

// MARK: - State and JSON

static int sy_state_protected(lua_State *L) {
    sy_script *s = sy_from(L);
    lua_pushglobaltable(L);
    lua_pushliteral(L, "state");
    lua_rawget(L, -2);
    if (lua_isnil(L, -1)) {
        s->buf_len = 0;
        memcpy(sy_reserve(L, s, 2), "{}", 2);
        s->buf_len = 2;
        return 0;
    }
    sy_json_encode(L, s, -1);
    return 0;
}

/// Runs `f` (with `context`) protected; 0 with the text in s->buf, or -1 with the message.
static int sy_run_json(sy_script *s, lua_CFunction f, const void *context, sy_script_text *out) {
    lua_State *L = s->L;
    lua_settop(L, 0);
    lua_pushcfunction(L, f);
    lua_pushlightuserdata(L, (void *)context);
    int status = lua_pcall(L, 1, 0, 0);
    if (status != LUA_OK) {
        sy_take_error(s, 0);
        lua_settop(L, 0);
        if (out) {
            out->data = s->message;
            out->length = strlen(s->message);
        }
        return -1;
    }
    lua_settop(L, 0);
    if (out) {
        out->data = s->buf ? s->buf : "";
        out->length = s->buf_len;
    }
    return 0;
}

int sy_script_state_json(sy_script *s, sy_script_text *json) {
    return sy_run_json(s, sy_state_protected, NULL, json);
}

static int sy_set_state_protected(lua_State *L) {
    sy_script *s = sy_from(L);
    const sy_script_text *json = lua_touserdata(L, 1);
    lua_settop(L, 0);
    lua_pushglobaltable(L);
    lua_pushliteral(L, "state");
    if (json == NULL || !sy_json_decode(L, s, json->data, json->length)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_rawset(L, 1);
        return luaL_error(L, "the state is not JSON");
    }
    if (!lua_istable(L, -1) || sy_json_is_array(L, s, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_rawset(L, 1);
        return luaL_error(L, "the state is not a JSON object");
    }
    lua_rawset(L, 1);
    return 0;
}

static int sy_empty_state_protected(lua_State *L) {
    lua_pushglobaltable(L);
    lua_pushliteral(L, "state");
    lua_newtable(L);
    lua_rawset(L, -3);
    return 0;
}

int sy_script_set_state_json(sy_script *s, sy_script_text json) {
    if (sy_run_json(s, sy_set_state_protected, &json, NULL) == 0) return 0;
    // Out of memory half-way: still leave an empty state if at all possible.
    lua_pushcfunction(s->L, sy_empty_state_protected);
    lua_pcall(s->L, 0, 0, 0);
    lua_settop(s->L, 0);
    return -1;
}

static int sy_roundtrip_protected(lua_State *L) {
    sy_script *s = sy_from(L);
    const sy_script_text *json = lua_touserdata(L, 1);
    lua_settop(L, 0);
    if (!sy_json_decode(L, s, json->data, json->length)) return lua_error(L);
    sy_json_encode(L, s, -1);
    return 0;
}

int sy_script_json_roundtrip(sy_script *s, sy_script_text json, sy_script_text *out) {
    return sy_run_json(s, sy_roundtrip_protected, &json, out);
}
