#include <libpq-fe.h>
#include <poll.h>
