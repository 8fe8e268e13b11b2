#ifndef HEALTHCARDS_CMICROHTTPD_H
#define HEALTHCARDS_CMICROHTTPD_H
/* What Swift cannot call in libmicrohttpd: the variadic MHD_start_daemon, MHD_get_daemon_info and
   MHD_get_connection_info, and the va_list logger. Everything else is called from Swift directly
   (HealthCardsServer/HTTP/HTTPServer.swift owns the daemon). */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* How the daemon is started. Every limit is required (0 is refused where it would mean "none"). */
typedef struct {
    /* An IPv4 or IPv6 literal to listen on, e.g. "127.0.0.1" or "::1". */
    const char *address;
    /* 0 for an ephemeral port (read it back with CMHD_bound_port). */
    uint16_t port;
    /* Polling threads, each with its own epoll set; requests run on them. */
    unsigned int threads;
    /* Connections at once in all, and from one client address. */
    unsigned int connection_limit;
    unsigned int per_client_limit;
    /* Seconds a connection may stay idle (reading headers, a body, or between requests). */
    unsigned int timeout_seconds;
    /* Bytes of memory per connection: the request line and headers must fit in it (else 431/414). */
    size_t memory_limit;
    /* The listen(2) backlog. */
    unsigned int backlog;
} CMHD_config;

/* Receives libmicrohttpd's own messages, formatted (one line, no newline). */
typedef void (*CMHD_log_function)(void *context, const char *message);

typedef struct {
    CMHD_log_function function;
    void *context;
} CMHD_logger;

/* Starts a daemon with an internal polling thread pool (epoll), inter-thread communication (so
   MHD_quiesce_daemon and MHD_resume_connection from other threads work), suspend/resume allowed, strict HTTP parsing, and the limits of `config`.
   `logger` must stay valid until MHD_stop_daemon returns. Returns NULL and a reason in `error`. */
struct MHD_Daemon *CMHD_start(const CMHD_config *config, MHD_AccessHandlerCallback handler, void *handler_context,
                              MHD_RequestCompletedCallback completed, void *completed_context,
                              MHD_NotifyConnectionCallback notify, void *notify_context, CMHD_logger *logger,
                              char *error, size_t error_length);

/* A request's first context (`*req_cls` at the access handler's first call, and at the completion callback when
   the handler was never called) when its path holds an encoded NUL (`%00`): never a pointer to free. */
extern void *const CMHD_nul_in_path;

/* The port the daemon listens on (after an ephemeral bind), or 0. */
uint16_t CMHD_bound_port(struct MHD_Daemon *daemon);

/* Connections open now. */
unsigned int CMHD_current_connections(struct MHD_Daemon *daemon);

/* The client's address as text (no port) into `buffer`; returns 0, or -1 when unknown. */
int CMHD_client_address(struct MHD_Connection *connection, char *buffer, size_t length);

/* The connection's socket, or -1 (for shutdown(2) by the request-deadline watcher; never closed there). */
int CMHD_connection_fd(struct MHD_Connection *connection);

/* The pointer the connection-notify callback stored for this connection (MHD_CONNECTION_INFO_SOCKET_CONTEXT). */
void *CMHD_socket_context(struct MHD_Connection *connection);

/* libmicrohttpd's version string. */
const char *CMHD_version(void);

#endif
