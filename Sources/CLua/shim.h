// Lua 5.4's C API, from Debian's liblua5.4-dev (headers in /usr/include/lua5.4).
#include <lua5.4/lua.h>
#include <lua5.4/lualib.h>
#include <lua5.4/lauxlib.h>
