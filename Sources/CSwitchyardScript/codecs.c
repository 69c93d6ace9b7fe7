// The script library's codecs: base64, hex and RFC 3339 time (its calendar arithmetic written
// here: no timegm, no locale, no time zone database).
#include "script_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// MARK: - base64 and hex

static const char base64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int base64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static int lib_base64_encode(lua_State *L) {
    sy_script *s = sy_from(L);
    size_t n;
    const unsigned char *in = (const unsigned char *)luaL_checklstring(L, 1, &n);
    uint64_t length = ((uint64_t)n + 2) / 3 * 4;
    if (length > s->limits.string_limit) sy_too_long(L, s, "base64.encode: a result", length);
    s->buf_len = 0;
    char *out = sy_reserve(L, s, (size_t)length);
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = base64_alphabet[v >> 18];
        out[o++] = base64_alphabet[(v >> 12) & 63];
        out[o++] = base64_alphabet[(v >> 6) & 63];
        out[o++] = base64_alphabet[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = base64_alphabet[v >> 18];
        out[o++] = base64_alphabet[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = base64_alphabet[v >> 18];
        out[o++] = base64_alphabet[(v >> 12) & 63];
        out[o++] = base64_alphabet[(v >> 6) & 63];
        out[o++] = '=';
    }
    lua_pushlstring(L, out, o);
    return 1;
}

static int lib_fail(lua_State *L, const char *message) {
    lua_pushnil(L);
    lua_pushstring(L, message);
    return 2;
}

static int lib_base64_decode(lua_State *L) {
    sy_script *s = sy_from(L);
    size_t n;
    const unsigned char *in = (const unsigned char *)luaL_checklstring(L, 1, &n);
    size_t m = n, padding = 0;
    while (m > 0 && in[m - 1] == '=' && padding < 2) {
        m--;
        padding++;
    }
    if (padding > 0 && n % 4 != 0) return lib_fail(L, "invalid base64: misplaced padding");
    if (m % 4 == 1) return lib_fail(L, "invalid base64: wrong length");
    s->buf_len = 0;
    char *out = sy_reserve(L, s, m / 4 * 3 + 2);
    size_t o = 0;
    uint32_t bits = 0;
    int count = 0;
    for (size_t i = 0; i < m; i++) {
        int v = base64_value(in[i]);
        if (v < 0) {
            char message[80];
            snprintf(message, sizeof message, "invalid base64: unexpected character at byte %zu", i + 1);
            return lib_fail(L, message);
        }
        bits = bits << 6 | (uint32_t)v;
        if (++count == 4) {
            out[o++] = (char)(bits >> 16);
            out[o++] = (char)(bits >> 8);
            out[o++] = (char)bits;
            bits = 0;
            count = 0;
        }
    }
    if (count == 2) {
        out[o++] = (char)(bits >> 4);
    } else if (count == 3) {
        out[o++] = (char)(bits >> 10);
        out[o++] = (char)(bits >> 2);
    }
    lua_pushlstring(L, out, o);
    return 1;
}

static int lib_hex_encode(lua_State *L) {
    static const char digits[] = "0123456789abcdef";
    sy_script *s = sy_from(L);
    size_t n;
    const unsigned char *in = (const unsigned char *)luaL_checklstring(L, 1, &n);
    uint64_t length = (uint64_t)n * 2;
    if (length > s->limits.string_limit) sy_too_long(L, s, "hex.encode: a result", length);
    s->buf_len = 0;
    char *out = sy_reserve(L, s, (size_t)length);
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    lua_pushlstring(L, out, (size_t)length);
    return 1;
}

static int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int lib_hex_decode(lua_State *L) {
    sy_script *s = sy_from(L);
    size_t n;
    const unsigned char *in = (const unsigned char *)luaL_checklstring(L, 1, &n);
    if (n % 2 != 0) return lib_fail(L, "invalid hex: odd length");
    s->buf_len = 0;
    char *out = sy_reserve(L, s, n / 2 + 1);
    for (size_t i = 0; i < n; i += 2) {
        int high = hex_value(in[i]), low = hex_value(in[i + 1]);
        if (high < 0 || low < 0) {
            char message[80];
            snprintf(message, sizeof message, "invalid hex: unexpected character at byte %zu", (high < 0 ? i : i + 1) + 1);
            return lib_fail(L, message);
        }
        out[i / 2] = (char)(high << 4 | low);
    }
    lua_pushlstring(L, out, n / 2);
    return 1;
}

// MARK: - Time

// Civil dates in the proleptic Gregorian calendar, counted in days from 1970-01-01. Years are
// taken to start on 1 March so that the leap day is the last day of a year; 400 years are
// 146,097 days, and 0000-03-01 is 719,468 days before the epoch.

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

static int64_t days_from_civil(int64_t year, int month, int day) {
    int64_t y = month <= 2 ? year - 1 : year;  // the March-based year
    int64_t era = floor_div(y, 400);
    int64_t year_of_era = y - era * 400;                                    // [0, 399]
    int month_from_march = month > 2 ? month - 3 : month + 9;               // [0, 11]
    int64_t day_of_year = (153 * month_from_march + 2) / 5 + day - 1;       // [0, 365]
    int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + day_of_era - 719468;
}

static void civil_from_days(int64_t days, int64_t *year, int *month, int *day) {
    int64_t z = days + 719468;
    int64_t era = floor_div(z, 146097);
    int64_t day_of_era = z - era * 146097;  // [0, 146096]
    // Centuries of 36,524 days, the era's last one a day longer; then 4-year cycles of 1,461
    // days (a century's last one a day shorter), then years of 365 (the cycle's last longer).
    int64_t century = day_of_era / 36524;
    if (century == 4) century = 3;
    int64_t day_of_century = day_of_era - century * 36524;
    int64_t cycle = day_of_century / 1461;
    int64_t day_of_cycle = day_of_century - cycle * 1461;
    int64_t year_of_cycle = day_of_cycle / 365;
    if (year_of_cycle == 4) year_of_cycle = 3;
    int64_t day_of_year = day_of_cycle - year_of_cycle * 365;  // [0, 365], from 1 March
    int64_t month_from_march = (5 * day_of_year + 2) / 153;   // [0, 11]
    *day = (int)(day_of_year - (153 * month_from_march + 2) / 5 + 1);
    *month = (int)(month_from_march < 10 ? month_from_march + 3 : month_from_march - 9);
    *year = era * 400 + century * 100 + cycle * 4 + year_of_cycle + (*month <= 2);
}

static int is_leap(int64_t year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

static int days_in_month(int64_t year, int month) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

static const int64_t first_second = -62167219200;  // 0000-01-01T00:00:00Z
static const int64_t last_second = 253402300799;   // 9999-12-31T23:59:59Z

/// An offset "+HH:MM" / "-HH:MM" in minutes; "utc" (any case) or "Z": 0 and *utc = 1.
static int parse_zone(const char *z, size_t n, int *minutes, int *utc) {
    *utc = 0;
    if ((n == 3 && (z[0] | 32) == 'u' && (z[1] | 32) == 't' && (z[2] | 32) == 'c') || (n == 1 && (z[0] | 32) == 'z')) {
        *minutes = 0;
        *utc = 1;
        return 1;
    }
    if (n != 6 || (z[0] != '+' && z[0] != '-') || z[3] != ':') return 0;
    for (int i = 1; i < 6; i++)
        if (i != 3 && (z[i] < '0' || z[i] > '9')) return 0;
    int hours = (z[1] - '0') * 10 + (z[2] - '0'), mins = (z[4] - '0') * 10 + (z[5] - '0');
    if (hours > 23 || mins > 59) return 0;
    *minutes = (z[0] == '-' ? -1 : 1) * (hours * 60 + mins);
    return 1;
}

/// time.format(seconds[, zone]) → RFC 3339.
static int lib_time_format(lua_State *L) {
    int64_t seconds;
    int millis = -1;  // -1: no fraction
    if (lua_isinteger(L, 1)) {
        seconds = (int64_t)lua_tointeger(L, 1);
    } else {
        double x = (double)luaL_checknumber(L, 1);
        if (!(x >= -1e13 && x <= 1e13)) return luaL_error(L, "time.format: %f is outside the years 0000-9999", (lua_Number)x);
        double whole = floor(x);
        seconds = (int64_t)whole;
        if (x != whole) {
            millis = (int)llround((x - whole) * 1000.0);
            if (millis >= 1000) {
                seconds++;
                millis -= 1000;
            }
        }
    }
    size_t zone_length = 3;
    const char *zone = luaL_optlstring(L, 2, "utc", &zone_length);
    int offset, utc;
    if (!parse_zone(zone, zone_length, &offset, &utc))
        return luaL_error(L, "time.format: the zone is \"utc\" or an offset such as \"+02:00\", not \"%s\"", zone);
    if (seconds < first_second - 86400 || seconds > last_second + 86400 ||
        seconds + offset * 60 < first_second || seconds + offset * 60 > last_second)
        return luaL_error(L, "time.format: %s is outside the years 0000-9999", luaL_tolstring(L, 1, NULL));
    int64_t local = seconds + offset * 60;
    int64_t days = floor_div(local, 86400), second_of_day = local - days * 86400;
    int64_t year;
    int month, day;
    civil_from_days(days, &year, &month, &day);
    char text[48];
    int length = snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", (int)year, month, day,
                          (int)(second_of_day / 3600), (int)(second_of_day / 60 % 60), (int)(second_of_day % 60));
    if (millis >= 0) length += snprintf(text + length, sizeof text - (size_t)length, ".%03d", millis);
    if (utc) {
        text[length++] = 'Z';
    } else {
        int magnitude = offset < 0 ? -offset : offset;
        length += snprintf(text + length, sizeof text - (size_t)length, "%c%02d:%02d", offset < 0 ? '-' : '+',
                           magnitude / 60, magnitude % 60);
    }
    lua_pushlstring(L, text, (size_t)length);
    return 1;
}

static int digits_at(const char *t, size_t n, size_t at, int count, int *value) {
    if (at + (size_t)count > n) return 0;
    int v = 0;
    for (int i = 0; i < count; i++) {
        char c = t[at + (size_t)i];
        if (c < '0' || c > '9') return 0;
        v = v * 10 + (c - '0');
    }
    *value = v;
    return 1;
}

/// time.parse(text) → seconds since the epoch, or nil and a message.
static int lib_time_parse(lua_State *L) {
    size_t n;
    const char *t = luaL_checklstring(L, 1, &n);
    int year, month, day, hour, minute, second;
    if (!digits_at(t, n, 0, 4, &year) || n < 5 || t[4] != '-' || !digits_at(t, n, 5, 2, &month) || n < 8 ||
        t[7] != '-' || !digits_at(t, n, 8, 2, &day))
        return lib_fail(L, "time.parse: expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)");
    if (n < 11 || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !digits_at(t, n, 11, 2, &hour) || n < 14 ||
        t[13] != ':' || !digits_at(t, n, 14, 2, &minute) || n < 17 || t[16] != ':' || !digits_at(t, n, 17, 2, &second))
        return lib_fail(L, "time.parse: expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)");
    size_t at = 19;
    int has_fraction = 0;
    double fraction = 0, scale = 0.1;
    if (at < n && t[at] == '.') {
        at++;
        size_t first = at;
        while (at < n && t[at] >= '0' && t[at] <= '9') {
            if (at - first < 17) {
                fraction += (t[at] - '0') * scale;
                scale /= 10;
            }
            at++;
        }
        if (at == first) return lib_fail(L, "time.parse: expected digits after '.'");
        has_fraction = 1;
    }
    int offset = 0;
    if (at < n && (t[at] == 'Z' || t[at] == 'z')) {
        at++;
    } else {
        int utc;
        if (n - at != 6 || !parse_zone(t + at, 6, &offset, &utc) || utc)
            return lib_fail(L, "time.parse: expected Z or an offset such as +02:00 after the time");
        at += 6;
    }
    if (at != n) return lib_fail(L, "time.parse: unexpected text after the time");
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month))
        return lib_fail(L, "time.parse: no such date");
    if (hour > 23 || minute > 59 || second > 60) return lib_fail(L, "time.parse: no such time of day");
    int64_t seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - (int64_t)offset * 60;
    if (has_fraction)
        lua_pushnumber(L, (lua_Number)seconds + fraction);
    else
        lua_pushinteger(L, (lua_Integer)seconds);
    return 1;
}

static int lib_time_now(lua_State *L) {
    lua_pushnumber(L, sy_clock(sy_from(L)));
    return 1;
}

// MARK: - Opening

void sy_codecs_open(lua_State *L) {
    static const luaL_Reg base64[] = {{"encode", lib_base64_encode}, {"decode", lib_base64_decode}, {NULL, NULL}};
    static const luaL_Reg hex[] = {{"encode", lib_hex_encode}, {"decode", lib_hex_decode}, {NULL, NULL}};
    static const luaL_Reg time_functions[] = {{"format", lib_time_format}, {"parse", lib_time_parse}, {"now", lib_time_now}, {NULL, NULL}};
    luaL_newlib(L, base64);
    lua_setglobal(L, "base64");
    luaL_newlib(L, hex);
    lua_setglobal(L, "hex");
    luaL_newlib(L, time_functions);
    lua_setglobal(L, "time");
}
