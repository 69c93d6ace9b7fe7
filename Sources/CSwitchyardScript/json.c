// JSON ↔ Lua values: the `json` table, envelope bodies and the persistent state.
//
// Objects are tables with string keys, arrays are sequences carrying a shared metatable (the
// mark, so [] stays [] through a round trip), null is json.null (a NULL light userdata).
// Encoding uses raw access only: no metamethod, so no script code, runs while it works.
#include "script_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char deep_message[] = "JSON nested deeper than 200 levels";

// Powers of ten a double holds exactly: m * 10^k and m / 10^k with m < 2^53 are then one
// correctly rounded operation, the same value strtod gives (and the common case, cheaply).
static const double exact_tens[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const uint64_t exact_integer = (uint64_t)1 << 53;

/// The decimal point strtod and snprintf use in this thread's locale (snprintf, unlike
/// localeconv, is thread-safe). Only the rare numbers off the exact paths need it.
static char decimal_point(void) {
    char text[8];
    snprintf(text, sizeof text, "%.1f", 0.5);
    return text[1];
}

/// Writes the decimal digits of `value` ending at `end`; returns where they start.
static char *digits_before(char *end, uint64_t value) {
    do {
        *--end = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    return end;
}

// MARK: - Decoding

typedef struct {
    lua_State *L;
    sy_script *s;
    const unsigned char *start, *p, *end;
    const char *error;  // why it is not JSON (NULL while fine)
    size_t error_at;
} sy_decoder;

static int dec_fail(sy_decoder *d, const char *why) {
    d->error = why;
    d->error_at = (size_t)(d->p - d->start);
    return 0;
}

static void dec_space(sy_decoder *d) {
    while (d->p < d->end && (*d->p == ' ' || *d->p == '\n' || *d->p == '\r' || *d->p == '\t')) d->p++;
}

static int dec_value(sy_decoder *d, int depth);

static int dec_hex4(const unsigned char *p, const unsigned char *end, unsigned *out) {
    if (end - p < 4) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], digit;
        if (c >= '0' && c <= '9') digit = c - '0';
        else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        else return 0;
        v = v * 16 + digit;
    }
    *out = v;
    return 1;
}

static void dec_put(sy_decoder *d, const void *bytes, size_t n) {
    memcpy(sy_reserve(d->L, d->s, n), bytes, n);
    d->s->buf_len += n;
}

static void dec_put_utf8(sy_decoder *d, unsigned cp) {
    unsigned char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (unsigned char)(0xF0 | (cp >> 18));
        out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    dec_put(d, out, n);
}

/// A string (d->p at its opening quote): pushed.
static int dec_string(sy_decoder *d) {
    const unsigned char *p = d->p + 1;
    const unsigned char *run = p;
    while (p < d->end && *p != '"' && *p != '\\' && *p >= 0x20) p++;
    if (p < d->end && *p == '"') {  // no escapes: straight from the text
        lua_pushlstring(d->L, (const char *)run, (size_t)(p - run));
        d->p = p + 1;
        return 1;
    }
    d->s->buf_len = 0;
    for (;;) {
        if (p > run) dec_put(d, run, (size_t)(p - run));
        if (p >= d->end) {
            d->p = p;
            return dec_fail(d, "unterminated string");
        }
        if (*p == '"') break;
        if (*p < 0x20) {
            d->p = p;
            return dec_fail(d, "control character in a string");
        }
        // A backslash.
        const unsigned char *escape = p;
        p++;
        if (p >= d->end) {
            d->p = escape;
            return dec_fail(d, "unterminated string");
        }
        char c = 0;
        int single = 1;  // a one-character escape (\u moves p past its digits itself)
        switch (*p) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            unsigned cp, low;
            if (!dec_hex4(p + 1, d->end, &cp)) {
                d->p = escape;
                return dec_fail(d, "invalid \\u escape");
            }
            p += 5;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                // A high surrogate counts only with a low one right after it.
                if (d->end - p >= 6 && p[0] == '\\' && p[1] == 'u' && dec_hex4(p + 2, d->end, &low) && low >= 0xDC00 &&
                    low <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    p += 6;
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD;
            }
            dec_put_utf8(d, cp);
            single = 0;
            break;
        }
        default:
            d->p = escape;
            return dec_fail(d, "invalid escape in a string");
        }
        if (single) {
            dec_put(d, &c, 1);
            p++;
        }
        run = p;
        while (p < d->end && *p != '"' && *p != '\\' && *p >= 0x20) p++;
    }
    lua_pushlstring(d->L, d->s->buf, d->s->buf_len);
    d->p = p + 1;
    return 1;
}

static int dec_digit(const sy_decoder *d, const unsigned char *p) { return p < d->end && *p >= '0' && *p <= '9'; }

static int dec_number(sy_decoder *d) {
    const unsigned char *p = d->p, *begin = p;
    int negative = 0, fraction = 0;
    if (*p == '-') {
        negative = 1;
        p++;
    }
    if (!dec_digit(d, p)) return dec_fail(d, "invalid number");
    if (*p == '0') p++;
    else
        while (dec_digit(d, p)) p++;
    if (p < d->end && *p == '.') {
        fraction = 1;
        p++;
        if (!dec_digit(d, p)) {
            d->p = p;
            return dec_fail(d, "invalid number");
        }
        while (dec_digit(d, p)) p++;
    }
    if (p < d->end && (*p == 'e' || *p == 'E')) {
        fraction = 1;
        p++;
        if (p < d->end && (*p == '+' || *p == '-')) p++;
        if (!dec_digit(d, p)) {
            d->p = p;
            return dec_fail(d, "invalid number");
        }
        while (dec_digit(d, p)) p++;
    }
    if (!fraction) {
        // An integer when it fits: accumulate unsigned, allow 2^63 only when negative.
        uint64_t value = 0, limit = negative ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
        int fits = 1;
        for (const unsigned char *q = begin + negative; q < p; q++) {
            unsigned digit = (unsigned)(*q - '0');
            if (value > (limit - digit) / 10) {
                fits = 0;
                break;
            }
            value = value * 10 + digit;
        }
        if (fits) {
            lua_Integer integer = negative ? (lua_Integer)(0 - value) : (lua_Integer)value;
            lua_pushinteger(d->L, integer);
            d->p = p;
            return 1;
        }
    }
    // Few digits and a small exponent: exact (see exact_tens). Else strtod.
    {
        uint64_t mantissa = 0;
        int digits = 0, exponent = 0, exact = 1;
        const unsigned char *q = begin + negative;
        for (; q < p && *q != 'e' && *q != 'E'; q++) {
            if (*q == '.') {
                for (const unsigned char *f = q + 1; f < p && *f >= '0' && *f <= '9'; f++) exponent--;
                continue;
            }
            if (mantissa != 0 || *q != '0') digits++;
            if (digits > 15) {
                exact = 0;
                break;
            }
            mantissa = mantissa * 10 + (uint64_t)(*q - '0');
        }
        if (exact && q < p) {  // the exponent part
            int sign = 1, value = 0;
            q++;
            if (*q == '+' || *q == '-') sign = *q++ == '-' ? -1 : 1;
            for (; q < p && value < 1000; q++) value = value * 10 + (*q - '0');
            exponent += sign * value;
        }
        if (exact && mantissa < exact_integer && exponent >= -22 && exponent <= 22) {
            double value = exponent < 0 ? (double)mantissa / exact_tens[-exponent] : (double)mantissa * exact_tens[exponent];
            lua_pushnumber(d->L, negative ? -value : value);
            d->p = p;
            return 1;
        }
    }
    // strtod wants a terminated text with the locale's decimal point: copy, and replace the dot.
    size_t length = (size_t)(p - begin);
    char local[64];
    char *text = local;
    if (length >= sizeof local) {
        d->s->buf_len = 0;
        text = sy_reserve(d->L, d->s, length + 1);
    }
    memcpy(text, begin, length);
    text[length] = '\0';
    char point = decimal_point();
    if (point != '.') {
        char *dot = memchr(text, '.', length);
        if (dot) *dot = point;
    }
    lua_pushnumber(d->L, strtod(text, NULL));
    d->p = p;
    return 1;
}

static int dec_literal(sy_decoder *d, const char *word, size_t n) {
    if ((size_t)(d->end - d->p) < n || memcmp(d->p, word, n) != 0) return dec_fail(d, "expected a value");
    d->p += n;
    return 1;
}

static void dec_mark_array(sy_decoder *d) {
    lua_rawgeti(d->L, LUA_REGISTRYINDEX, d->s->ref_array);
    lua_setmetatable(d->L, -2);
}

static int dec_array(sy_decoder *d, int depth) {
    lua_createtable(d->L, 0, 0);
    dec_mark_array(d);
    d->p++;
    dec_space(d);
    if (d->p < d->end && *d->p == ']') {
        d->p++;
        return 1;
    }
    for (lua_Integer i = 1;; i++) {
        if (!dec_value(d, depth + 1)) return 0;
        lua_rawseti(d->L, -2, i);
        dec_space(d);
        if (d->p < d->end && *d->p == ',') {
            d->p++;
            continue;
        }
        if (d->p < d->end && *d->p == ']') {
            d->p++;
            return 1;
        }
        return dec_fail(d, "expected ',' or ']'");
    }
}

static int dec_object(sy_decoder *d, int depth) {
    lua_createtable(d->L, 0, 0);
    d->p++;
    dec_space(d);
    if (d->p < d->end && *d->p == '}') {
        d->p++;
        return 1;
    }
    for (;;) {
        dec_space(d);
        if (d->p >= d->end || *d->p != '"') return dec_fail(d, "expected a string key");
        if (!dec_string(d)) return 0;
        dec_space(d);
        if (d->p >= d->end || *d->p != ':') return dec_fail(d, "expected ':'");
        d->p++;
        if (!dec_value(d, depth + 1)) return 0;
        lua_rawset(d->L, -3);
        dec_space(d);
        if (d->p < d->end && *d->p == ',') {
            d->p++;
            continue;
        }
        if (d->p < d->end && *d->p == '}') {
            d->p++;
            return 1;
        }
        return dec_fail(d, "expected ',' or '}'");
    }
}

/// One value; `depth` is the number of arrays and objects around it.
static int dec_value(sy_decoder *d, int depth) {
    dec_space(d);
    if (d->p >= d->end) return dec_fail(d, "expected a value");
    switch (*d->p) {
    case '{':
    case '[':
        if (depth >= SY_JSON_DEPTH) return dec_fail(d, deep_message);
        luaL_checkstack(d->L, 4, deep_message);
        return *d->p == '{' ? dec_object(d, depth) : dec_array(d, depth);
    case '"': return dec_string(d);
    case 't':
        if (!dec_literal(d, "true", 4)) return 0;
        lua_pushboolean(d->L, 1);
        return 1;
    case 'f':
        if (!dec_literal(d, "false", 5)) return 0;
        lua_pushboolean(d->L, 0);
        return 1;
    case 'n':
        if (!dec_literal(d, "null", 4)) return 0;
        lua_pushlightuserdata(d->L, NULL);
        return 1;
    default:
        if (*d->p == '-' || (*d->p >= '0' && *d->p <= '9')) return dec_number(d);
        return dec_fail(d, "expected a value");
    }
}

int sy_json_decode(lua_State *L, sy_script *s, const char *text, size_t length) {
    int top = lua_gettop(L);
    luaL_checkstack(L, 4, NULL);
    const unsigned char *start = (const unsigned char *)(text ? text : "");
    sy_decoder d = {L, s, start, start, start + (text ? length : 0), NULL, 0};
    if (dec_value(&d, 0)) {
        dec_space(&d);
        if (d.p == d.end) return 1;
        dec_fail(&d, "unexpected text after the value");
    }
    lua_settop(L, top);
    if (d.error == deep_message)
        lua_pushfstring(L, "%s (at byte offset %I)", deep_message, (lua_Integer)d.error_at);
    else
        lua_pushfstring(L, "invalid JSON at byte offset %I: %s", (lua_Integer)d.error_at, d.error);
    return 0;
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
    if (depth >= SY_JSON_DEPTH) luaL_error(L, "%s", deep_message);  // also what stops a cycle
    luaL_checkstack(L, 4, deep_message);
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
