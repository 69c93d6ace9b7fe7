// JSON text into Lua values: envelope bodies, json.decode and the persistent state.
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

/// Consumes `c` when it comes next; 0 (nothing consumed) otherwise.
static int dec_take(sy_decoder *d, char c) {
    if (d->p >= d->end || *d->p != c) return 0;
    d->p++;
    return 1;
}

static int dec_array(sy_decoder *d, int depth) {
    lua_createtable(d->L, 0, 0);
    dec_mark_array(d);
    d->p++;
    dec_space(d);
    if (dec_take(d, ']')) return 1;
    for (lua_Integer i = 1;; i++) {
        if (!dec_value(d, depth + 1)) return 0;
        lua_rawseti(d->L, -2, i);
        dec_space(d);
        if (dec_take(d, ',')) continue;
        if (dec_take(d, ']')) return 1;
        return dec_fail(d, "expected ',' or ']'");
    }
}

static int dec_object(sy_decoder *d, int depth) {
    lua_createtable(d->L, 0, 0);
    d->p++;
    dec_space(d);
    if (dec_take(d, '}')) return 1;
    for (;;) {
        dec_space(d);
        if (d->p >= d->end || *d->p != '"') return dec_fail(d, "expected a string key");
        if (!dec_string(d)) return 0;
        dec_space(d);
        if (!dec_take(d, ':')) return dec_fail(d, "expected ':'");
        if (!dec_value(d, depth + 1)) return 0;
        lua_rawset(d->L, -3);
        dec_space(d);
        if (dec_take(d, ',')) continue;
        if (dec_take(d, '}')) return 1;
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
        if (depth >= SY_JSON_DEPTH) return dec_fail(d, json_deep_message);
        luaL_checkstack(d->L, 4, json_deep_message);
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
    if (d.error == json_deep_message)
        lua_pushfstring(L, "%s (at byte offset %I)", json_deep_message, (lua_Integer)d.error_at);
    else
        lua_pushfstring(L, "invalid JSON at byte offset %I: %s", (lua_Integer)d.error_at, d.error);
    return 0;
}
