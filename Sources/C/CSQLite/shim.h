#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro over a function-pointer cast that Swift cannot import.
static inline void (*_Nullable ferry_sqlite_transient(void))(void *_Nullable) {
    return (void (*)(void *))-1;
}
