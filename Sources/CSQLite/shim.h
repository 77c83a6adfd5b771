// The system's SQLite (Debian libsqlite3-dev). SQLITE_TRANSIENT is a macro
// casting -1 to a function pointer, which Swift cannot import: a constant here.
#include <sqlite3.h>

static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
