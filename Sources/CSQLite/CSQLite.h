#ifndef CSQLITE_H
#define CSQLITE_H

#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import: binding with it makes SQLite copy
   the bytes before the call returns, so Swift buffers need not outlive the call. */
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
