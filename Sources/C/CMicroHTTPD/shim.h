#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <stdio.h>
#include <microhttpd.h>

// MHD_start_daemon and MHD_get_connection_info are variadic, which Swift cannot call; these
// wrappers pass a fixed set of options. Only FerryRelay's MicroHTTPDServer calls them.

typedef void *_Nullable (*ferry_mhd_uri_logger)(void *_Nullable cls, const char *_Nonnull uri,
                                                 struct MHD_Connection *_Nonnull connection);

/// Where libmicrohttpd's own messages go: `sink(cls, message)`, the message formatted (at most
/// 511 bytes). It must outlive the daemon.
struct ferry_mhd_log_target {
    void (*_Nonnull sink)(void *_Nullable cls, const char *_Nonnull message);
    void *_Nullable cls;
};

static inline void ferry_mhd_log_forward(void *cls, const char *format, va_list arguments) {
    char message[512];
    vsnprintf(message, sizeof message, format, arguments);
    const struct ferry_mhd_log_target *target = (const struct ferry_mhd_log_target *)cls;
    target->sink(target->cls, message);
}

/// Starts a daemon on an already listening socket `listen_fd`, with epoll in `threads` internal
/// threads, suspend/resume allowed, its messages sent to `log_target` (not stderr), and HTTPS
/// when `cert_pem` and `key_pem` are both set.
static inline struct MHD_Daemon *_Nullable ferry_mhd_start(
    int listen_fd, unsigned int threads, unsigned int connection_limit, unsigned int timeout_seconds,
    size_t memory_limit, MHD_AccessHandlerCallback _Nonnull handler, void *_Nullable cls,
    MHD_RequestCompletedCallback _Nonnull completed, ferry_mhd_uri_logger _Nonnull uri_logger,
    MHD_NotifyConnectionCallback _Nonnull notify_connection,
    const struct ferry_mhd_log_target *_Nonnull log_target,
    const char *_Nullable cert_pem, const char *_Nullable key_pem) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME
        | MHD_USE_ERROR_LOG;
    if (cert_pem != NULL && key_pem != NULL) {
        return MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handler, cls,
            MHD_OPTION_EXTERNAL_LOGGER, ferry_mhd_log_forward, (void *)log_target,
            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
            MHD_OPTION_THREAD_POOL_SIZE, threads,
            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
            MHD_OPTION_URI_LOG_CALLBACK, uri_logger, cls,
            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, cls,
            MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
            MHD_OPTION_HTTPS_MEM_KEY, key_pem,
            MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, cls,
        MHD_OPTION_EXTERNAL_LOGGER, ferry_mhd_log_forward, (void *)log_target,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
        MHD_OPTION_URI_LOG_CALLBACK, uri_logger, cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify_connection, cls,
        MHD_OPTION_END);
}

/// The connection's socket, or -1.
static inline int ferry_mhd_connection_fd(struct MHD_Connection *_Nonnull connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/// The peer's address as text ("127.0.0.1", "::1"), or "unknown".
static inline void ferry_mhd_client_address(struct MHD_Connection *_Nonnull connection, char *_Nonnull out, size_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, size, "unknown");
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)size);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)size);
    }
}

/// True when libmicrohttpd was built with TLS (GnuTLS) support.
static inline int ferry_mhd_has_tls(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}
