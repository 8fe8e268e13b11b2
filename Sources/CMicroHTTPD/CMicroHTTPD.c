#include "CMicroHTTPD.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void cmhd_log(void *context, const char *format, va_list arguments) {
    CMHD_logger *logger = context;
    if (logger == NULL || logger->function == NULL) return;
    char message[512];
    vsnprintf(message, sizeof message, format, arguments);
    size_t n = strlen(message);
    while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == '\r')) message[--n] = '\0';
    logger->function(logger->context, message);
}

/* The address CMHD_start's URI callback gives a request whose path holds an encoded NUL. */
static char cmhd_nul_in_path_marker;
void *const CMHD_nul_in_path = &cmhd_nul_in_path_marker;

/* Called with the request line's target before libmicrohttpd decodes it; what it returns is the request's first
   context (`*req_cls`): CMHD_nul_in_path when the path (before any `?`) holds `%00`, which the decoded path, a C
   string, would end at, or when the target holds a raw NUL byte (`/shl/ID<NUL>x`, `?recipient=a<NUL>b`: every
   later reading of the target, its query arguments included, would stop there). Else NULL, as without the
   callback.

   A raw NUL is seen by what follows the string: libmicrohttpd 0.9.75 (Debian 12) parses the request line in place
   and ends the target by writing NUL over the one space before the version (strict parsing allows one), so the
   bytes after the target's end are `HTTP/`. After a NUL inside the target they are the rest of the target. The
   bytes read are the request line's own, and the comparison stops at the first that differs. (A libmicrohttpd
   that laid the line out otherwise would see every request as holding a NUL: the tests would all fail, not
   pass silently.) */
static void *cmhd_uri(void *context, const char *uri, struct MHD_Connection *connection) {
    (void)context;
    (void)connection;
    if (uri == NULL) return NULL;
    int in_path = 1;
    const char *c = uri;
    for (; *c != '\0'; c++) {
        if (*c == '?' || *c == '#') in_path = 0;
        if (in_path && c[0] == '%' && c[1] == '0' && c[2] == '0') return CMHD_nul_in_path;
    }
    static const char version[] = "HTTP/";
    for (size_t i = 0; i < sizeof version - 1; i++) {
        if (c[1 + i] != version[i]) return CMHD_nul_in_path;
    }
    return NULL;
}

struct MHD_Daemon *CMHD_start(const CMHD_config *config, MHD_AccessHandlerCallback handler, void *handler_context,
                              MHD_RequestCompletedCallback completed, void *completed_context,
                              MHD_NotifyConnectionCallback notify, void *notify_context, CMHD_logger *logger,
                              char *error, size_t error_length) {
    struct sockaddr_storage storage;
    memset(&storage, 0, sizeof storage);
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                         MHD_ALLOW_SUSPEND_RESUME;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&storage;
    if (inet_pton(AF_INET, config->address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(config->port);
    } else if (inet_pton(AF_INET6, config->address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(config->port);
        /* `::` (every address): IPv4 clients too, as IPv4-mapped addresses (IPV6_V6ONLY off). */
        flags |= IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr) ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    } else {
        snprintf(error, error_length, "'%s' is not an IPv4 or IPv6 address", config->address);
        return NULL;
    }
    if (config->threads == 0 || config->connection_limit == 0 || config->per_client_limit == 0 ||
        config->timeout_seconds == 0 || config->memory_limit < 4096 || config->backlog == 0) {
        snprintf(error, error_length, "a limit of 0 (threads, connections, timeout, memory, backlog)");
        return NULL;
    }
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)cmhd_log, logger},
        {MHD_OPTION_SOCK_ADDR, 0, &storage},
        {MHD_OPTION_CONNECTION_LIMIT, config->connection_limit, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_client_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, config->timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)config->memory_limit, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, config->backlog, NULL},
        {MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_context},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, notify_context},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)cmhd_uri, NULL},
        /* Last: one thread is the daemon's own polling thread, and the option is left out (libmicrohttpd warns
           about a pool of 0 or 1 at every start). */
        {config->threads == 1 ? MHD_OPTION_END : MHD_OPTION_THREAD_POOL_SIZE, config->threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *daemon = MHD_start_daemon(flags, config->port, NULL, NULL, handler, handler_context,
                                                 MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (daemon == NULL) {
        snprintf(error, error_length, "libmicrohttpd could not start on %s port %u (in use, or not permitted)",
                 config->address, (unsigned)config->port);
    }
    return daemon;
}

uint16_t CMHD_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

unsigned int CMHD_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

int CMHD_client_address(struct MHD_Connection *connection, char *buffer, size_t length) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || length == 0) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, (socklen_t)length) ? 0 : -1;
    }
    if (address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        /* An IPv4 client of a `[::]` listener arrives IPv4-mapped (::ffff:a.b.c.d): shown as the IPv4 address, as
           on a `0.0.0.0` listener, so one client reads the same in the log and the request budget either way. */
        if (IN6_IS_ADDR_V4MAPPED(v6)) return inet_ntop(AF_INET, &v6->s6_addr[12], buffer, (socklen_t)length) ? 0 : -1;
        return inet_ntop(AF_INET6, v6, buffer, (socklen_t)length) ? 0 : -1;
    }
    return -1;
}

int CMHD_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

void *CMHD_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

const char *CMHD_version(void) { return MHD_get_version(); }
