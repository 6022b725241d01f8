#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro over a function-pointer cast that Swift cannot import.
static inline void (*_Nullable ferry_sqlite_transient(void))(void *_Nullable) {
    return (void (*)(void *))-1;
}

// sqlite3_config is variadic, which Swift cannot call. Turns off SQLite's memory statistics,
// which otherwise take a process-wide mutex around every allocation and free. Only takes
// effect before the library initializes (the first open); returns SQLITE_MISUSE after.
static inline int ferry_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
