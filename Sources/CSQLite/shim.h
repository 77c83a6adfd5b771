// The system's SQLite 3 (Debian libsqlite3-dev). SQLITE_TRANSIENT is a
// macro casting -1 to a function pointer, which Swift cannot import: a
// function here (two names, one for each of its users: EdgeHistory and DiveLog).
#include <sqlite3.h>

static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline void (*edge_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }
