// The envelope a call sees (`envelope`) and the envelope tables it sends (returned or given
// to emit()) converted to sy_script_output. Outputs point into Lua strings anchored in the
// registry's keep table until the next call; their arrays belong to the sy_script.
#include "script_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// MARK: - Input

static void env_text(lua_State *L, sy_script_text text) {
    lua_pushlstring(L, text.length ? text.data : "", text.length);
}

/// t[name] = text (t on top), or nothing when `text` is empty and `nil_when_empty`.
static void env_field(lua_State *L, const char *name, sy_script_text text, int nil_when_empty) {
    if (text.length == 0 && nil_when_empty) return;
    env_text(L, text);
    lua_setfield(L, -2, name);
}

void sy_envelope_push(lua_State *L, sy_script *s, const sy_script_input *in) {
    luaL_checkstack(L, 6, NULL);
    lua_createtable(L, 0, 9);
    if (!(in->body_is_json && sy_json_decode(L, s, in->body.data, in->body.length))) {
        if (in->body_is_json) lua_pop(L, 1);  // the decoder's message: not JSON after all
        env_text(L, in->body);
    }
    lua_setfield(L, -2, "body");
    env_field(L, "subject", in->subject, 0);
    // Empty type and content type are nil, so `return envelope` does not set them to "".
    env_field(L, "type", in->type, 1);
    env_field(L, "content_type", in->content_type, 1);
    env_field(L, "id", in->id, 0);
    env_field(L, "source", in->source, 0);
    lua_pushnumber(L, (lua_Number)in->time / 1e9);
    lua_setfield(L, -2, "time");

    lua_createtable(L, 0, in->header_count < 64 ? (int)in->header_count : 64);
    for (size_t i = 0; i < in->header_count; i++) {
        env_text(L, in->header_names[i]);
        env_text(L, in->header_values[i]);
        lua_rawset(L, -3);
    }
    lua_setfield(L, -2, "headers");

    if (in->session.length > 0) {
        if (sy_json_decode(L, s, in->session.data, in->session.length) && lua_istable(L, -1) &&
            !sy_json_is_array(L, s, -1))
            lua_setfield(L, -2, "session");
        else
            lua_pop(L, 1);
    }
}

// MARK: - Output

/// Raises `format`: at the line of the emit() call, or (a returned table) with no position,
/// sy_script_call then puts the chunk name in front.
static int out_error(lua_State *L, sy_script *s, const char *format, ...) {
    va_list arguments;
    if (s->phase == SY_PHASE_SCRIPT)
        luaL_where(L, 1);
    else
        lua_pushliteral(L, "");
    va_start(arguments, format);
    lua_pushvfstring(L, format, arguments);
    va_end(arguments);
    lua_concat(L, 2);
    return lua_error(L);
}

/// Anchors the value at `index` until the next call (what an output points into).
static void out_keep(lua_State *L, sy_script *s, int index) {
    index = lua_absindex(L, index);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_keep);
    lua_pushvalue(L, index);
    lua_rawseti(L, -2, ++s->kept);
    lua_pop(L, 1);
}

static sy_script_text out_string(lua_State *L, sy_script *s, int index) {
    sy_script_text text;
    text.data = lua_tolstring(L, index, &text.length);
    out_keep(L, s, index);
    return text;
}

static int has_control(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7F) return 1;
    }
    return 0;
}

static int key_is(const char *key, size_t length, const char *name) {
    return strlen(name) == length && memcmp(key, name, length) == 0;
}

/// A string field (subject, type, content_type) of the table; `strict`: non-empty, no
/// control characters.
static sy_script_text out_string_field(lua_State *L, sy_script *s, const char *name, int strict) {
    if (lua_type(L, -1) != LUA_TSTRING)
        out_error(L, s, "field '%s' must be a string, not a %s", name, luaL_typename(L, -1));
    sy_script_text text = out_string(L, s, -1);
    if (strict && (text.length == 0 || has_control(text.data, text.length)))
        out_error(L, s, "field '%s' must be a non-empty string without control characters", name);
    return text;
}

static int header_compare(const void *a, const void *b) {
    const sy_header *x = a, *y = b;
    size_t n = x->name.length < y->name.length ? x->name.length : y->name.length;
    int order = memcmp(x->name.data, y->name.data, n);
    if (order != 0) return order;
    return x->name.length < y->name.length ? -1 : x->name.length > y->name.length;
}

/// The headers table on top of the stack, appended to s->headers; returns how many.
static size_t out_headers(lua_State *L, sy_script *s) {
    int table = lua_gettop(L);
    size_t first = s->header_count;
    lua_pushnil(L);
    while (lua_next(L, table)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            out_error(L, s, "a header name must be a string, not a %s", luaL_typename(L, -2));
        size_t name_length;
        const char *name = lua_tolstring(L, -2, &name_length);
        if (name_length == 0 || has_control(name, name_length) || memchr(name, ':', name_length))
            out_error(L, s, "header name '%s' is not valid (empty, or a control character or ':' in it)", name);
        if (lua_type(L, -1) == LUA_TNUMBER) {
            lua_pushvalue(L, -1);
            lua_tolstring(L, -1, NULL);  // converts the copy, never the key
            lua_replace(L, -2);
        } else if (lua_type(L, -1) != LUA_TSTRING) {
            out_error(L, s, "header '%s' must be a string, not a %s", name, luaL_typename(L, -1));
        }
        sy_header header;
        header.value = out_string(L, s, -1);
        if (memchr(header.value.data, '\r', header.value.length) || memchr(header.value.data, '\n', header.value.length) ||
            memchr(header.value.data, '\0', header.value.length))
            out_error(L, s, "header '%s' has a CR, LF or NUL in its value", name);
        header.name = out_string(L, s, -2);
        sy_grow(L, (void **)&s->headers, &s->header_cap, s->header_count + 1, sizeof *s->headers);
        s->headers[s->header_count++] = header;
        lua_pop(L, 1);
    }
    size_t count = s->header_count - first;
    qsort(s->headers + first, count, sizeof *s->headers, header_compare);  // the same order each time
    return count;
}

void sy_output_add(lua_State *L, sy_script *s, int index) {
    index = lua_absindex(L, index);
    if (s->output_count >= s->limits.output_limit)
        out_error(L, s, "more than %d outputs in one call (output_limit)", (int)s->limits.output_limit);
    luaL_checkstack(L, 8, NULL);
    sy_script_output output;
    memset(&output, 0, sizeof output);
    lua_pushnil(L);
    while (lua_next(L, index)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pushvalue(L, -2);
            const char *key = lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1);
            out_error(L, s, "unknown field '%s' in an envelope table (body, subject, type, headers, content_type)", key);
        }
        size_t length;
        const char *key = lua_tolstring(L, -2, &length);
        if (key_is(key, length, "body")) {
            int type = lua_type(L, -1);
            if (type == LUA_TSTRING) {
                output.body = out_string(L, s, -1);
                output.body_is_json = 0;
            } else if (type == LUA_TTABLE || type == LUA_TNUMBER || type == LUA_TBOOLEAN ||
                       (type == LUA_TLIGHTUSERDATA && lua_touserdata(L, -1) == NULL)) {
                sy_json_encode(L, s, -1);
                lua_pushlstring(L, s->buf, s->buf_len);
                output.body = out_string(L, s, -1);
                output.body_is_json = 1;
                lua_pop(L, 1);
            } else {
                out_error(L, s, "field 'body' must be a string, table, number, boolean or json.null, not a %s",
                          luaL_typename(L, -1));
            }
            output.sets |= SY_SCRIPT_SETS_BODY;
        } else if (key_is(key, length, "subject")) {
            output.subject = out_string_field(L, s, "subject", 0);
            output.sets |= SY_SCRIPT_SETS_SUBJECT;
        } else if (key_is(key, length, "type")) {
            output.type = out_string_field(L, s, "type", 1);
            output.sets |= SY_SCRIPT_SETS_TYPE;
        } else if (key_is(key, length, "content_type")) {
            output.content_type = out_string_field(L, s, "content_type", 1);
            output.sets |= SY_SCRIPT_SETS_CONTENT_TYPE;
        } else if (key_is(key, length, "headers")) {
            if (!lua_istable(L, -1)) out_error(L, s, "field 'headers' must be a table, not a %s", luaL_typename(L, -1));
            output.header_count = out_headers(L, s);
            output.sets |= SY_SCRIPT_SETS_HEADERS;
        } else if (!key_is(key, length, "id") && !key_is(key, length, "time") && !key_is(key, length, "source") &&
                   !key_is(key, length, "session")) {  // read-only: `return envelope` works
            out_error(L, s, "unknown field '%s' in an envelope table (body, subject, type, headers, content_type)", key);
        }
        lua_pop(L, 1);
    }
    sy_grow(L, (void **)&s->outputs, &s->output_cap, s->output_count + 1, sizeof *s->outputs);
    s->outputs[s->output_count++] = output;
}

void sy_outputs_finish(lua_State *L, sy_script *s) {
    // The public arrays are separate names and values; headers were added output by output.
    sy_grow(L, (void **)&s->header_names, &s->header_names_cap, s->header_count, sizeof *s->header_names);
    sy_grow(L, (void **)&s->header_values, &s->header_values_cap, s->header_count, sizeof *s->header_values);
    for (size_t i = 0; i < s->header_count; i++) {
        s->header_names[i] = s->headers[i].name;
        s->header_values[i] = s->headers[i].value;
    }
    size_t next = 0;
    for (size_t i = 0; i < s->output_count; i++) {
        sy_script_output *output = &s->outputs[i];
        output->header_names = output->header_count ? s->header_names + next : NULL;
        output->header_values = output->header_count ? s->header_values + next : NULL;
        next += output->header_count;
    }
}

int sy_emit(lua_State *L) {
    sy_script *s = sy_from(L);
    if (s->phase != SY_PHASE_SCRIPT) return luaL_error(L, "emit() is only available while the script runs");
    if (!lua_istable(L, 1)) return luaL_error(L, "emit() takes an envelope table, not a %s", luaL_typename(L, 1));
    sy_output_add(L, s, 1);
    s->emitted = 1;
    return 0;
}
