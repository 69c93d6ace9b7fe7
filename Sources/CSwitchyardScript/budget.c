// The budgets of a script's state: the allocator that holds its memory limit, the count hook
// and the charges that hold its instruction limit; the scratch buffers and the script's clock.
#define _POSIX_C_SOURCE 200809L

#include "script_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// MARK: - Allocator and budgets

/// The allocator: counts every byte against memory_limit and refuses growth past it (Lua then
/// runs an emergency collection, tries again and raises "not enough memory").
void *sy_alloc(void *ud, void *block, size_t osize, size_t nsize) {
    sy_script *s = ud;
    size_t old = block ? osize : 0;  // without a block, osize is the kind of object
    if (nsize == 0) {
        free(block);
        s->memory_used -= old;
        return NULL;
    }
    if (nsize > old) {
        size_t grow = nsize - old;
        if (s->memory_used > s->limits.memory_limit || grow > s->limits.memory_limit - s->memory_used) {
            s->memory_refused = 1;
            return NULL;
        }
    }
    void *moved = realloc(block, nsize);
    if (moved == NULL) {
        if (nsize <= old) return block;  // Lua assumes shrinking cannot fail; the block still fits
        s->memory_refused = 1;
        return NULL;
    }
    s->memory_used = s->memory_used - old + nsize;
    if (nsize > old) s->allocated += nsize - old;
    return moved;
}

/// Instructions the call has used: the hook's count plus the work charged for C functions.
uint64_t sy_used(const sy_script *s) {
    uint64_t used = sy_mul_sat(s->firings, SY_HOOK_EVERY);
    used = sy_add_sat(used, s->charged);
    return sy_add_sat(used, s->allocated / SY_BYTES_PER_INSTRUCTION);
}

int sy_budget_error(lua_State *L, sy_script *s, int level) {
    lua_Debug ar;
    if (lua_getstack(L, level, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
        lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
    else
        lua_pushliteral(L, "");
    char text[80];
    snprintf(text, sizeof text, "instruction budget of %" PRIu64 " exceeded", s->limits.instruction_limit);
    lua_pushstring(L, text);
    lua_concat(L, 2);
    return lua_error(L);
}

/// Marks the budget exhausted and makes the hook fire on every instruction of this thread, so
/// that whatever catches the error cannot run on: each next instruction raises again.
static void sy_exhaust(lua_State *L, sy_script *s) {
    s->exhausted = 1;
    lua_sethook(L, sy_hook, LUA_MASKCOUNT, 1);
}

void sy_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    sy_script *s = sy_from(L);
    if (!s->exhausted) {
        // A coroutine kept from a call that ran out still fires every instruction: re-arm it.
        if (lua_gethookcount(L) != SY_HOOK_EVERY) {
            lua_sethook(L, sy_hook, LUA_MASKCOUNT, SY_HOOK_EVERY);
            return;
        }
        s->firings++;
        if (sy_used(s) <= s->limits.instruction_limit) return;
    }
    sy_exhaust(L, s);
    // Level 0: a hook has no frame of its own, the interrupted function is the running one.
    sy_budget_error(L, s, 0);
}

void sy_charge(lua_State *L, sy_script *s, uint64_t instructions) {
    s->charged = sy_add_sat(s->charged, instructions);
    if (s->phase == SY_PHASE_SCRIPT && (s->exhausted || sy_used(s) > s->limits.instruction_limit)) {
        sy_exhaust(L, s);
        sy_budget_error(L, s, 1);
    }
}

// MARK: - Scratch

void sy_grow(lua_State *L, void **array, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return;
    size_t count = *cap ? *cap : 8;
    while (count < need) count = count > SIZE_MAX / 2 ? need : count * 2;
    if (count > SIZE_MAX / size) luaL_error(L, "not enough memory");
    void *grown = realloc(*array, count * size);
    if (grown == NULL) luaL_error(L, "not enough memory");
    *array = grown;
    *cap = count;
}

char *sy_reserve(lua_State *L, sy_script *s, size_t extra) {
    if (extra > SIZE_MAX - s->buf_len) luaL_error(L, "not enough memory");
    sy_grow(L, (void **)&s->buf, &s->buf_cap, s->buf_len + extra, 1);
    return s->buf + s->buf_len;
}

double sy_clock(const sy_script *s) {
    if (!isnan(s->clock)) return s->clock;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}
