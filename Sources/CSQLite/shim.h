// The system's SQLite 3 (Debian libsqlite3-dev).
#include <sqlite3.h>
// SQLITE_TRANSIENT is a cast macro Swift cannot import.
static inline void (*edge_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }
