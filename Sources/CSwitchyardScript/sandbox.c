// The globals a script sees: Lua's safe libraries, with what reaches outside the state (files,
// processes, bytecode, finalizers, the collector) removed or wrapped, and the functions that
// catch errors wrapped so a budget stop cannot be swallowed.
#include "script_internal.h"

#include <math.h>
#include <string.h>

// MARK: - Protected calls

/// After a protected call returns: an exhausted budget or a memory failure goes on up.
static void sb_recheck(lua_State *L, sy_script *s) {
    if (s->exhausted) sy_budget_error(L, s, 1);
    if (s->memory_refused && lua_gettop(L) >= 2 && !lua_toboolean(L, 1) && lua_type(L, 2) == LUA_TSTRING) {
        size_t n;
        const char *text = lua_tolstring(L, 2, &n);
        if (n == 17 && memcmp(text, "not enough memory", 17) == 0) {
            lua_pushvalue(L, 2);
            lua_error(L);
        }
    }
}

static int sb_protected_done(lua_State *L, int status, lua_KContext context) {
    (void)status;
    (void)context;
    sb_recheck(L, sy_from(L));
    return lua_gettop(L);
}

/// pcall, xpcall, coroutine.resume, coroutine.close: the original (upvalue 1), then the check.
/// lua_callk: a pcall inside a coroutine may still yield.
static int sb_protected(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_callk(L, lua_gettop(L) - 1, LUA_MULTRET, 0, sb_protected_done);
    return sb_protected_done(L, LUA_OK, 0);
}

// An error the count hook raises leaves the hook disabled (lua_State.allowhook) on its thread
// until a protected call on that thread catches it. Script code that Lua runs before that
// would run unbounded: an xpcall message handler (called before the unwinding), and the
// __close handlers of a coroutine the hook killed, run when the coroutine is closed. Hence the
// three wrappers below; a killed coroutine is the one whose hook fires every instruction.

static int sb_killed_by_budget(lua_State *co) {
    int status = lua_status(co);
    return status != LUA_OK && status != LUA_YIELD && lua_gethookcount(co) == 1;
}

/// An xpcall message handler: the script's (upvalue 1), unless the budget is exhausted.
static int sb_handler(lua_State *L) {
    if (sy_from(L)->exhausted) return 1;  // the error as it is; the call is over anyway
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int sb_xpcall(lua_State *L) {
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, sb_handler, 1);
    lua_replace(L, 2);
    return sb_protected(L);
}

/// coroutine.close: a coroutine the budget killed is not closed (its __close handlers would
/// run without the hook); it stays dead as it is.
static int sb_coroutine_close(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    if (co && sb_killed_by_budget(co)) {
        lua_pushboolean(L, 0);
        lua_pushliteral(L, "the coroutine was stopped by the instruction budget");
        return 2;
    }
    return sb_protected(L);
}

/// The function coroutine.wrap returns (upvalue 1: the coroutine): resumes it, and on an
/// error closes it (unless the budget killed it) and raises the error in the caller.
static int sb_wrapped(lua_State *L) {
    sy_script *s = sy_from(L);
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    int n = lua_gettop(L);
    if (co == L) return luaL_error(L, "cannot resume non-suspended coroutine");
    if (!lua_checkstack(co, n)) return luaL_error(L, "too many arguments to resume");
    lua_xmove(L, co, n);
    int results = 0;
    int status = lua_resume(co, L, n, &results);
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, results + 1)) {
            lua_pop(co, results);
            return luaL_error(L, "too many results to resume");
        }
        lua_xmove(co, L, results);
        return results;
    }
    lua_xmove(co, L, 1);  // the error
    if (s->exhausted) return sy_budget_error(L, s, 1);
    if (!sb_killed_by_budget(co)) {
        if (lua_resetthread(co) != LUA_OK) {  // a __close handler raised: that error instead
            lua_pop(L, 1);
            lua_xmove(co, L, 1);
        }
    }
    if (status != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

static int sb_coroutine_wrap(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *co = lua_newthread(L);  // inherits this thread's hook
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    lua_pushcclosure(L, sb_wrapped, 1);
    return 1;
}

// MARK: - Base functions

/// load: text only; the original (upvalue 1) also catches errors of a reader function.
static int sb_load(lua_State *L) {
    sy_script *s = sy_from(L);
    int n = lua_gettop(L);
    if (lua_type(L, 1) == LUA_TSTRING) {
        size_t length;
        const char *chunk = lua_tolstring(L, 1, &length);
        if (length > 0 && chunk[0] == LUA_SIGNATURE[0]) {
            lua_pushnil(L);
            lua_pushliteral(L, "binary chunks cannot be loaded in a script");
            return 2;
        }
        sy_charge(L, s, length / 8);  // compiling costs more per byte than copying
    }
    lua_settop(L, n < 4 ? 3 : 4);
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n < 4 ? 3 : 4, LUA_MULTRET);
    sb_recheck(L, s);
    return lua_gettop(L);
}

/// setmetatable: a metatable with __gc is refused (a finalizer runs without the count hook).
static int sb_setmetatable(lua_State *L) {
    lua_settop(L, 2);
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL) return luaL_error(L, "finalizers (__gc) are not available in a script");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

/// Shortens `length` so it does not end inside a UTF-8 sequence.
static size_t sb_utf8_cut(const char *text, size_t length) {
    size_t end = length;
    size_t back = 0;
    while (end > 0 && back < 3 && ((unsigned char)text[end - 1] & 0xC0) == 0x80) {
        end--;
        back++;
    }
    if (end == 0) return length;
    unsigned char lead = (unsigned char)text[end - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need == 1) return length;  // not a sequence we cut: leave the bytes as they are
    return need == back + 1 ? length : end - 1;
}

/// print: one line of the call's result (at most SY_PRINT_LINES, each cut at SY_PRINT_BYTES).
static int sb_print(lua_State *L) {
    sy_script *s = sy_from(L);
    if (s->printed_count >= SY_PRINT_LINES) return 0;
    char *line = s->printed_lines[s->printed_count];
    size_t length = 0;
    int n = lua_gettop(L);
    for (int i = 1; i <= n && length < SY_PRINT_BYTES; i++) {
        size_t part;
        const char *text = luaL_tolstring(L, i, &part);
        if (i > 1) line[length++] = '\t';
        if (part > SY_PRINT_BYTES - length) part = SY_PRINT_BYTES - length;
        memcpy(line + length, text, part);
        length += part;
        lua_pop(L, 1);
    }
    if (length == SY_PRINT_BYTES) length = sb_utf8_cut(line, length);
    s->printed[s->printed_count].data = line;
    s->printed[s->printed_count].length = length;
    s->printed_count++;
    return 0;
}

/// collectgarbage: "count" (or nothing) only; a script cannot stop or drive the collector.
static int sb_collectgarbage(lua_State *L) {
    const char *option = luaL_optstring(L, 1, "count");
    if (strcmp(option, "count") != 0)
        return luaL_error(L, "collectgarbage('%s') is not available in a script", option);
    int kilobytes = lua_gc(L, LUA_GCCOUNT);
    int bytes = lua_gc(L, LUA_GCCOUNTB);
    lua_pushnumber(L, (lua_Number)kilobytes + (lua_Number)bytes / 1024);
    return 1;
}

// MARK: - os

static lua_Integer sb_clock_seconds(lua_State *L) {
    double now = floor(sy_clock(sy_from(L)));
    if (!(now > -9.2e18 && now < 9.2e18)) luaL_error(L, "the clock is out of range");
    return (lua_Integer)now;
}

/// os.time(): the script's clock; os.time(table): Lua's (upvalue 1).
static int sb_os_time(lua_State *L) {
    if (lua_isnoneornil(L, 1)) {
        lua_pushinteger(L, sb_clock_seconds(L));
        return 1;
    }
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/// os.date(format[, time]): Lua's (upvalue 1), the time defaulting to the script's clock.
static int sb_os_date(lua_State *L) {
    lua_settop(L, 2);
    if (lua_isnil(L, 1)) {
        lua_pushliteral(L, "%c");
        lua_replace(L, 1);
    }
    if (lua_isnil(L, 2)) {
        lua_pushinteger(L, sb_clock_seconds(L));
        lua_replace(L, 2);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

// MARK: - Opening

/// Replaces t[name] (t at `table`) by `f` with the original as upvalue 1.
static void sb_wrap(lua_State *L, int table, const char *name, lua_CFunction f) {
    lua_getfield(L, table, name);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, table, name);
}

static void sb_set(lua_State *L, int table, const char *name, lua_CFunction f) {
    lua_pushcfunction(L, f);
    lua_setfield(L, table, name);
}

void sy_sandbox_open(lua_State *L, sy_script *s) {
    static const luaL_Reg libraries[] = {
        {LUA_GNAME, luaopen_base},         {LUA_STRLIBNAME, luaopen_string}, {LUA_TABLIBNAME, luaopen_table},
        {LUA_MATHLIBNAME, luaopen_math},   {LUA_UTF8LIBNAME, luaopen_utf8},  {LUA_COLIBNAME, luaopen_coroutine},
    };
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
        luaL_requiref(L, libraries[i].name, libraries[i].func, 1);
        lua_pop(L, 1);
    }
    lua_pushglobaltable(L);
    int globals = lua_gettop(L);

    static const char *const removed[] = {"dofile", "loadfile", "require", "package", "io", "debug", "warn"};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        lua_pushnil(L);
        lua_setfield(L, globals, removed[i]);
    }
    sb_wrap(L, globals, "pcall", sb_protected);
    sb_wrap(L, globals, "xpcall", sb_xpcall);
    sb_wrap(L, globals, "load", sb_load);
    sb_wrap(L, globals, "setmetatable", sb_setmetatable);
    sb_set(L, globals, "print", sb_print);
    sb_set(L, globals, "collectgarbage", sb_collectgarbage);

    lua_getfield(L, globals, LUA_COLIBNAME);
    sb_wrap(L, lua_gettop(L), "resume", sb_protected);
    sb_wrap(L, lua_gettop(L), "close", sb_coroutine_close);
    sb_set(L, lua_gettop(L), "wrap", sb_coroutine_wrap);
    lua_pop(L, 1);

    lua_getfield(L, globals, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);

    // os: a fresh table with time, date and clock only; the full library is never registered.
    lua_pushcfunction(L, luaopen_os);
    lua_call(L, 0, 1);
    int full = lua_gettop(L);
    lua_createtable(L, 0, 3);
    lua_getfield(L, full, "time");
    lua_pushcclosure(L, sb_os_time, 1);
    lua_setfield(L, -2, "time");
    lua_getfield(L, full, "date");
    lua_pushcclosure(L, sb_os_date, 1);
    lua_setfield(L, -2, "date");
    lua_getfield(L, full, "clock");
    lua_setfield(L, -2, "clock");
    lua_setfield(L, globals, "os");
    lua_pop(L, 1);

    sy_library_open(L, s);  // bounded string/table functions, base64, hex, time

    sy_json_open(L, s);
    lua_setfield(L, globals, "json");
    sb_set(L, globals, "emit", sy_emit);
    lua_newtable(L);
    lua_setfield(L, globals, "state");
    lua_pop(L, 1);
}
