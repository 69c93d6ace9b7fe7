// Lua's string/table/utf8 functions bounded (base64, hex and time are in codecs.c), so that the instruction budget holds in wall-clock terms. The count hook sees VM
// instructions only: C work that grows with its arguments (a pattern that backtracks, a
// table.move over a huge range, a long string.rep) is refused past a limit or charged to the
// budget before it runs.
#include "script_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void sy_too_long(lua_State *L, sy_script *s, const char *what, uint64_t length) {
    char text[160];
    snprintf(text, sizeof text, "%s of %llu bytes would be longer than the string limit (%llu bytes)", what,
             (unsigned long long)length, (unsigned long long)s->limits.string_limit);
    lua_pushstring(L, text);
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
    lua_error(L);
}

/// Calls the original function (upvalue 1) with all arguments; returns its result count.
static int lib_call_original(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

// MARK: - Patterns

enum { PATTERN_FIND, PATTERN_MATCH, PATTERN_GMATCH, PATTERN_GSUB };

/// The index after the set that opens at p[i] ('['), as Lua reads it: a ']' right after '[' or
/// "[^" is a member, '%' escapes the next character.
static size_t set_end(const char *p, size_t m, size_t i) {
    size_t j = i + 1;
    if (j < m && p[j] == '^') j++;
    do {
        if (j >= m) return m;
        j += p[j] == '%' ? 2 : 1;
    } while (j < m && p[j] != ']');
    return j < m ? j + 1 : m;
}

/// Whether `p` holds nothing but `)` from `from` to its end.
static int only_closes_after(const char *p, size_t m, size_t from) {
    for (size_t j = from; j < m; j++)
        if (p[j] != ')') return 0;
    return 1;
}

/// The estimated steps of matching `pattern` (m bytes) on a subject of n bytes (see
/// docs/scripting.md): (n + 1) start positions unless anchored, times (n + 1) per item that
/// repeats (*, +, -) unless nothing but closing captures follows it, per %b and per
/// back-reference, times 2 per '?'. At least the start positions times the items, which is
/// what a long literal pattern costs.
static uint64_t pattern_cost(const char *p, size_t m, size_t n, int anchors) {
    const uint64_t positions = (uint64_t)n + 1;
    size_t i = 0;
    uint64_t base = positions;
    if (anchors && m > 0 && p[0] == '^') {
        base = 1;
        i = 1;
    }
    uint64_t cost = base, items = 0;
    while (i < m) {
        char c = p[i];
        size_t next;
        items++;
        if (c == '(' || c == ')') {
            i++;
            continue;
        }
        if (c == '$' && i + 1 == m) break;
        if (c == '%') {
            if (i + 1 >= m) break;  // malformed: Lua raises
            char e = p[i + 1];
            if (e == 'b') {
                cost = sy_mul_sat(cost, positions);
                i += 4;
                continue;
            }
            if (e == 'f') {
                i += 2;
                if (i < m && p[i] == '[') i = set_end(p, m, i);
                continue;
            }
            if (e >= '0' && e <= '9') {
                cost = sy_mul_sat(cost, positions);
                i += 2;
                continue;
            }
            next = i + 2;
        } else if (c == '[') {
            next = set_end(p, m, i);
        } else {
            next = i + 1;
        }
        if (next < m) {
            char q = p[next];
            if (q == '*' || q == '+' || q == '-') {
                // A repetition with nothing but closing captures after it never backtracks:
                // the rest of the pattern cannot fail, so its first try matches (the scan is
                // the linear term). `s:gsub("%s+", " ")` is linear, not quadratic.
                if (!only_closes_after(p, m, next + 1)) cost = sy_mul_sat(cost, positions);
                next++;
            } else if (q == '?') {
                cost = sy_mul_sat(cost, 2);
                next++;
            }
        }
        i = next;
    }
    uint64_t linear = sy_mul_sat(base, items ? items : 1);
    return cost > linear ? cost : linear;
}

/// string.find/match/gmatch/gsub: the original (upvalue 1) once the subject and the
/// pattern's estimated cost are within the limits (upvalue 2: which function).
static int lib_pattern(lua_State *L) {
    sy_script *s = sy_from(L);
    int kind = (int)lua_tointeger(L, lua_upvalueindex(2));
    size_t n, m;
    luaL_checklstring(L, 1, &n);
    const char *pattern = luaL_checklstring(L, 2, &m);
    if (n > s->limits.string_limit)
        return luaL_error(L, "a subject of %I bytes is longer than the string limit (%I bytes)", (lua_Integer)n,
                          (lua_Integer)s->limits.string_limit);
    uint64_t cost;
    if (kind == PATTERN_FIND && lua_toboolean(L, 4))
        cost = sy_mul_sat(n, m ? m : 1);  // a plain search compares up to m bytes per position
    else
        cost = pattern_cost(pattern, m, n, kind != PATTERN_GMATCH);  // gmatch has no anchor
    if (cost > s->limits.pattern_limit)
        return luaL_error(L, "pattern too costly for a subject of %I bytes (pattern_limit)", (lua_Integer)n);
    // The estimate is an upper bound; a thousandth of it (at least the scan) goes to the budget,
    // so a loop of costly matches still ends.
    sy_charge(L, s, cost / 1000 + n / SY_BYTES_PER_INSTRUCTION);
    return lib_call_original(L);
}

// MARK: - Strings

/// string.rep, built here: the original loops n times even when the result is empty.
static int lib_rep(lua_State *L) {
    sy_script *s = sy_from(L);
    size_t length, separator_length;
    const char *text = luaL_checklstring(L, 1, &length);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *separator = luaL_optlstring(L, 3, "", &separator_length);
    if (n <= 0 || (length == 0 && separator_length == 0)) {
        lua_pushliteral(L, "");
        return 1;
    }
    uint64_t total = sy_add_sat(sy_mul_sat((uint64_t)n, length), sy_mul_sat((uint64_t)n - 1, separator_length));
    if (total > s->limits.string_limit) sy_too_long(L, s, "string.rep: a result", total);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, (size_t)total);
    for (lua_Integer i = 0; i < n; i++) {
        memcpy(out, text, length);
        out += length;
        if (i + 1 < n && separator_length > 0) {
            memcpy(out, separator, separator_length);
            out += separator_length;
        }
    }
    luaL_pushresultsize(&b, (size_t)total);
    return 1;
}

/// string.format: the original, its result held to the string limit.
static int lib_format(lua_State *L) {
    sy_script *s = sy_from(L);
    lib_call_original(L);
    size_t length;
    lua_tolstring(L, -1, &length);
    if (length > s->limits.string_limit) sy_too_long(L, s, "string.format: a result", length);
    return 1;
}

// MARK: - Tables

/// table.concat, built here: the result is refused as soon as it would pass the string limit.
static int lib_concat(lua_State *L) {
    sy_script *s = sy_from(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    size_t separator_length;
    const char *separator = luaL_optlstring(L, 2, "", &separator_length);
    lua_Integer first = luaL_optinteger(L, 3, 1);
    lua_Integer last = lua_isnoneornil(L, 4) ? luaL_len(L, 1) : luaL_checkinteger(L, 4);
    lua_settop(L, 2);
    if (first > last) {
        lua_pushliteral(L, "");
        return 1;
    }
    sy_charge(L, s, sy_add_sat((uint64_t)((lua_Unsigned)last - (lua_Unsigned)first), 1));
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    uint64_t total = 0;
    for (lua_Integer i = first;; i++) {
        lua_geti(L, 1, i);
        if (!lua_isstring(L, -1))
            return luaL_error(L, "invalid value (at index %I) in table for 'concat'", i);
        size_t length;
        lua_tolstring(L, -1, &length);
        total += length;
        if (total > s->limits.string_limit) sy_too_long(L, s, "table.concat: a result", total);
        luaL_addvalue(&b);
        if (i == last) break;
        if (separator_length > 0) {
            total += separator_length;
            if (total > s->limits.string_limit) sy_too_long(L, s, "table.concat: a result", total);
            luaL_addlstring(&b, separator, separator_length);
        }
    }
    luaL_pushresult(&b);
    return 1;
}

enum { CHARGE_INSERT, CHARGE_REMOVE, CHARGE_MOVE, CHARGE_SORT, CHARGE_RESULTS, CHARGE_SCAN };

/// The original (upvalue 1) with its work charged to the budget (upvalue 2: how it is
/// counted): the elements it moves, compares or returns, or the bytes it scans.
static int lib_charged(lua_State *L) {
    sy_script *s = sy_from(L);
    int kind = (int)lua_tointeger(L, lua_upvalueindex(2));
    int n = lua_gettop(L);
    uint64_t units = 0;
    int table = lua_type(L, 1) == LUA_TTABLE;
    lua_Integer length = table ? (lua_Integer)lua_rawlen(L, 1) : 0;
    switch (kind) {
    case CHARGE_INSERT:  // table.insert(t, pos, v) shifts t[pos..#t] up
        if (table && n >= 3) {
            lua_Integer position = lua_tointeger(L, 2);
            if (position >= 1 && position <= length) units = (uint64_t)(length - position) + 1;
        }
        break;
    case CHARGE_REMOVE:  // table.remove(t, pos) shifts t[pos+1..#t] down
        if (table && n >= 2) {
            lua_Integer position = lua_tointeger(L, 2);
            if (position >= 1 && position < length) units = (uint64_t)(length - position);
        }
        break;
    case CHARGE_MOVE: {  // table.move(a, f, e, t): e - f + 1 elements
        lua_Integer from = lua_tointeger(L, 2), to = lua_tointeger(L, 3);
        if (to >= from) units = sy_add_sat((uint64_t)((lua_Unsigned)to - (lua_Unsigned)from), 1);
        break;
    }
    case CHARGE_SORT: {  // n log n comparisons
        uint64_t count = (uint64_t)length, log = 1;
        while (log < 64 && ((uint64_t)1 << log) < count) log++;
        units = sy_mul_sat(count, log);
        break;
    }
    case CHARGE_SCAN:
        // Decoding UTF-8 costs more per byte than copying it.
        if (lua_type(L, 1) == LUA_TSTRING) units = lua_rawlen(L, 1) / (SY_BYTES_PER_INSTRUCTION / 4);
        break;
    default: break;
    }
    sy_charge(L, s, units);
    int results = lib_call_original(L);
    if (kind == CHARGE_RESULTS) sy_charge(L, s, (uint64_t)results);
    return results;
}

// MARK: - Opening

static void lib_wrap(lua_State *L, const char *name, lua_CFunction f, int kind) {
    lua_getfield(L, -1, name);
    lua_pushinteger(L, kind);
    lua_pushcclosure(L, f, 2);
    lua_setfield(L, -2, name);
}

static void lib_replace(lua_State *L, const char *name, lua_CFunction f) {
    lua_pushcfunction(L, f);
    lua_setfield(L, -2, name);
}

void sy_library_open(lua_State *L, sy_script *s) {
    (void)s;
    // string: also the strings' methods, the string metatable's __index is this table.
    lua_getglobal(L, LUA_STRLIBNAME);
    lib_wrap(L, "find", lib_pattern, PATTERN_FIND);
    lib_wrap(L, "match", lib_pattern, PATTERN_MATCH);
    lib_wrap(L, "gmatch", lib_pattern, PATTERN_GMATCH);
    lib_wrap(L, "gsub", lib_pattern, PATTERN_GSUB);
    lib_wrap(L, "format", lib_format, 0);
    lib_wrap(L, "byte", lib_charged, CHARGE_RESULTS);
    lib_replace(L, "rep", lib_rep);
    lua_pop(L, 1);

    lua_getglobal(L, LUA_TABLIBNAME);
    lib_replace(L, "concat", lib_concat);
    lib_wrap(L, "insert", lib_charged, CHARGE_INSERT);
    lib_wrap(L, "remove", lib_charged, CHARGE_REMOVE);
    lib_wrap(L, "move", lib_charged, CHARGE_MOVE);
    lib_wrap(L, "sort", lib_charged, CHARGE_SORT);
    lib_wrap(L, "unpack", lib_charged, CHARGE_RESULTS);
    lua_pop(L, 1);

    lua_getglobal(L, LUA_UTF8LIBNAME);
    lib_wrap(L, "len", lib_charged, CHARGE_SCAN);
    lib_wrap(L, "offset", lib_charged, CHARGE_SCAN);
    lib_wrap(L, "codepoint", lib_charged, CHARGE_RESULTS);
    lua_pop(L, 1);

    sy_codecs_open(L);
}
