// Lua values into JSON text, and the `json` table: output bodies, json.encode and the
// persistent state.
//
// Objects are tables with string keys, arrays are sequences carrying a shared metatable (the
// mark, so [] stays [] through a round trip), null is json.null (a NULL light userdata).
// Encoding uses raw access only: no metamethod, so no script code, runs while it works.
#include "script_internal.h"
#include "json_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/// Writes the decimal digits of `value` ending at `end`; returns where they start.
static char *digits_before(char *end, uint64_t value) {
    do {
        *--end = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    return end;
}

// MARK: - Encoding

int sy_json_is_array(lua_State *L, sy_script *s, int index) {
    if (!lua_getmetatable(L, index)) return 0;
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_array);
    int marked = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return marked;
}

static void enc_put(lua_State *L, sy_script *s, const void *bytes, size_t n) {
    if (n > s->limits.string_limit - s->buf_len)
        luaL_error(L, "JSON text longer than the string limit (%I bytes)", (lua_Integer)s->limits.string_limit);
    memcpy(sy_reserve(L, s, n), bytes, n);
    s->buf_len += n;
}

#define ENC_LITERAL(L, s, text) enc_put((L), (s), (text), sizeof(text) - 1)

/// Length of the valid UTF-8 sequence at p (1-4), or 0 with *skip = the bytes of the invalid
/// one (its maximal valid prefix, at least 1), each replaced by one U+FFFD.
static size_t enc_utf8(const unsigned char *p, size_t available, size_t *skip) {
    unsigned lead = p[0];
    size_t need;
    unsigned low = 0x80, high = 0xBF;
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) {
        need = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        need = 2;
        if (lead == 0xE0) low = 0xA0;   // no overlong forms
        if (lead == 0xED) high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        need = 3;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;  // nothing past U+10FFFF
    } else {
        *skip = 1;
        return 0;
    }
    size_t i = 1;
    for (; i <= need; i++) {
        if (i >= available || p[i] < low || p[i] > high) {
            *skip = i;
            return 0;
        }
        low = 0x80;
        high = 0xBF;
    }
    return need + 1;
}

static void enc_string(lua_State *L, sy_script *s, const char *text, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)text;
    ENC_LITERAL(L, s, "\"");
    size_t run = 0, i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t skip = 1, valid = enc_utf8(p + i, n - i, &skip);
            if (valid) {
                i += valid;
                continue;
            }
            enc_put(L, s, p + run, i - run);
            ENC_LITERAL(L, s, "\xEF\xBF\xBD");
            i += skip;
            run = i;
            continue;
        }
        enc_put(L, s, p + run, i - run);
        char escape[6] = {'\\', 0, 0, 0, 0, 0};
        size_t length = 2;
        switch (c) {
        case '"': escape[1] = '"'; break;
        case '\\': escape[1] = '\\'; break;
        case '\n': escape[1] = 'n'; break;
        case '\r': escape[1] = 'r'; break;
        case '\t': escape[1] = 't'; break;
        case '\b': escape[1] = 'b'; break;
        case '\f': escape[1] = 'f'; break;
        default:
            escape[1] = 'u';
            escape[2] = '0';
            escape[3] = '0';
            escape[4] = hex[c >> 4];
            escape[5] = hex[c & 15];
            length = 6;
        }
        enc_put(L, s, escape, length);
        i++;
        run = i;
    }
    enc_put(L, s, p + run, n - run);
    ENC_LITERAL(L, s, "\"");
}

/// A float as JSON: integral ones below 2^53 without a fraction, others the shortest of 15,
/// 16 or 17 digits that reads back the same.
static void enc_float(lua_State *L, sy_script *s, double v) {
    if (isnan(v) || isinf(v)) luaL_error(L, "NaN and infinity cannot be encoded as JSON");
    char text[40];
    int length;
    double magnitude = fabs(v);
    if (v == floor(v) && magnitude < 9007199254740992.0) {
        char *end = text + sizeof text, *start = digits_before(end, (uint64_t)magnitude);
        if (v < 0) *--start = '-';
        enc_put(L, s, start, (size_t)(end - start));
        return;
    }
    // Fewest decimals k that read back the same (m / 10^k is what strtod gives for them):
    // what %.15g prints for these magnitudes, without printf and strtod.
    if (magnitude >= 1e-4 && magnitude < 1e15) {
        for (int k = 1; k <= 9; k++) {
            double scaled = nearbyint(magnitude * exact_tens[k]);
            if (scaled >= (double)exact_integer) break;
            if (scaled / exact_tens[k] != magnitude) continue;
            uint64_t m = (uint64_t)scaled;
            char *end = text + sizeof text, *start = end;
            for (int i = 0; i < k; i++) {  // the k decimals, leading zeros included
                *--start = (char)('0' + m % 10);
                m /= 10;
            }
            *--start = '.';
            start = digits_before(start, m);
            if (v < 0) *--start = '-';
            enc_put(L, s, start, (size_t)(end - start));
            return;
        }
    }
    {
        length = snprintf(text, sizeof text, "%.15g", v);
        if (strtod(text, NULL) != v) length = snprintf(text, sizeof text, "%.16g", v);
        if (strtod(text, NULL) != v) length = snprintf(text, sizeof text, "%.17g", v);
        char point = decimal_point();
        if (point != '.')
            for (int i = 0; i < length; i++)
                if (text[i] == point) text[i] = '.';
    }
    enc_put(L, s, text, (size_t)length);
}

static void enc_value(lua_State *L, sy_script *s, int index, int depth);

static void enc_sequence(lua_State *L, sy_script *s, int index, lua_Integer n, int depth) {
    ENC_LITERAL(L, s, "[");
    for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1) ENC_LITERAL(L, s, ",");
        lua_rawgeti(L, index, i);
        enc_value(L, s, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    ENC_LITERAL(L, s, "]");
}

static void key_text(const sy_json_key *key, const char **text, size_t *length) {
    if (key->data) {
        *text = key->data;
        *length = key->length;
    } else {
        *text = key->digits;
        *length = key->length;
    }
}

static int key_compare(const void *a, const void *b) {
    const char *x, *y;
    size_t nx, ny;
    key_text(a, &x, &nx);
    key_text(b, &y, &ny);
    int order = memcmp(x, y, nx < ny ? nx : ny);
    if (order != 0) return order;
    return nx < ny ? -1 : nx > ny;
}

static void enc_object(lua_State *L, sy_script *s, int index, size_t count, int depth) {
    // The keys go to a segment of the struct's key array (deeper tables use the part after
    // it; it may move when it grows, so it is indexed, never held by pointer).
    size_t base = s->keys_used;
    sy_grow(L, (void **)&s->keys, &s->keys_cap, base + count, sizeof *s->keys);
    size_t k = base;
    lua_pushnil(L);
    while (lua_next(L, index)) {
        lua_pop(L, 1);
        sy_json_key *key = &s->keys[k++];
        if (lua_type(L, -1) == LUA_TSTRING) {
            key->data = lua_tolstring(L, -1, &key->length);  // anchored by the table
        } else if (lua_isinteger(L, -1)) {
            key->data = NULL;
            key->integer = lua_tointeger(L, -1);
            key->length = (size_t)snprintf(key->digits, sizeof key->digits, LUA_INTEGER_FMT, key->integer);
        } else {
            luaL_error(L, "a table key of type %s cannot be a JSON object key", luaL_typename(L, -1));
        }
    }
    s->keys_used = base + count;
    qsort(s->keys + base, count, sizeof *s->keys, key_compare);
    ENC_LITERAL(L, s, "{");
    for (size_t i = 0; i < count; i++) {
        if (i > 0) ENC_LITERAL(L, s, ",");
        sy_json_key key = s->keys[base + i];  // a copy: the array may move below
        const char *text;
        size_t length;
        key_text(&key, &text, &length);
        enc_string(L, s, text, length);
        ENC_LITERAL(L, s, ":");
        if (key.data) {
            lua_pushlstring(L, key.data, key.length);
            lua_rawget(L, index);
        } else {
            lua_rawgeti(L, index, key.integer);
        }
        enc_value(L, s, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    ENC_LITERAL(L, s, "}");
    s->keys_used = base;
}

static void enc_table(lua_State *L, sy_script *s, int index, int depth) {
    if (depth >= SY_JSON_DEPTH) luaL_error(L, "%s", json_deep_message);  // also what stops a cycle
    luaL_checkstack(L, 4, json_deep_message);
    if (sy_json_is_array(L, s, index)) {
        enc_sequence(L, s, index, (lua_Integer)lua_rawlen(L, index), depth);
        return;
    }
    // A sequence when the keys are exactly 1..n: integers, all positive, the largest = count.
    size_t count = 0;
    lua_Integer largest = 0;
    int sequence = 1;
    lua_pushnil(L);
    while (lua_next(L, index)) {
        lua_pop(L, 1);
        count++;
        if (sequence && lua_isinteger(L, -1)) {
            lua_Integer key = lua_tointeger(L, -1);
            if (key < 1) sequence = 0;
            else if (key > largest) largest = key;
        } else {
            sequence = 0;
        }
    }
    if (count == 0) {
        ENC_LITERAL(L, s, "{}");
    } else if (sequence && (lua_Unsigned)largest == count) {
        enc_sequence(L, s, index, largest, depth);
    } else {
        enc_object(L, s, index, count, depth);
    }
}

static void enc_value(lua_State *L, sy_script *s, int index, int depth) {
    switch (lua_type(L, index)) {
    case LUA_TNIL: ENC_LITERAL(L, s, "null"); break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, index)) ENC_LITERAL(L, s, "true");
        else ENC_LITERAL(L, s, "false");
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, index)) {
            lua_Integer integer = lua_tointeger(L, index);
            char text[32], *end = text + sizeof text;
            char *start = digits_before(end, integer < 0 ? 0 - (uint64_t)integer : (uint64_t)integer);
            if (integer < 0) *--start = '-';
            enc_put(L, s, start, (size_t)(end - start));
        } else {
            enc_float(L, s, (double)lua_tonumber(L, index));
        }
        break;
    case LUA_TSTRING: {
        size_t length;
        const char *text = lua_tolstring(L, index, &length);
        enc_string(L, s, text, length);
        break;
    }
    case LUA_TTABLE: enc_table(L, s, index, depth); break;
    default:
        if (lua_type(L, index) == LUA_TLIGHTUSERDATA && lua_touserdata(L, index) == NULL) {
            ENC_LITERAL(L, s, "null");  // json.null
            break;
        }
        luaL_error(L, "a %s cannot be encoded as JSON", luaL_typename(L, index));
    }
}

void sy_json_encode(lua_State *L, sy_script *s, int index) {
    index = lua_absindex(L, index);
    s->buf_len = 0;
    s->keys_used = 0;  // an error may have left an encoding half done
    enc_value(L, s, index, 0);
}

// MARK: - The json table

static int json_encode(lua_State *L) {
    sy_script *s = sy_from(L);
    luaL_checkany(L, 1);
    sy_json_encode(L, s, 1);
    lua_pushlstring(L, s->buf, s->buf_len);
    return 1;
}

static int json_decode(lua_State *L) {
    sy_script *s = sy_from(L);
    size_t length;
    const char *text = luaL_checklstring(L, 1, &length);
    if (sy_json_decode(L, s, text, length)) return 1;
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
}

static int json_array(lua_State *L) {
    sy_script *s = sy_from(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_array);
    lua_setmetatable(L, 1);
    return 1;
}

void sy_json_open(lua_State *L, sy_script *s) {
    (void)s;
    static const luaL_Reg functions[] = {
        {"encode", json_encode},
        {"decode", json_decode},
        {"array", json_array},
        {NULL, NULL},
    };
    luaL_newlib(L, functions);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
}
