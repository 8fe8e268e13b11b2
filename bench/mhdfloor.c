/* The link server's HTTP floor: libmicrohttpd started as `healthcards serve` starts it (an internal epoll thread
   pool), answering a POST with one file's bytes and any other request with another's, and nothing else: no
   routing, no database, no log line. `healthcards-bench server` runs it beside nginx and the server, so the
   ratios show what the HTTP library itself costs and what the server adds (docs/performance.md).

   usage: mhdfloor PORT THREADS POST_FILE GET_FILE   (prints "ready", stops on SIGTERM or SIGINT) */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct body {
    char *bytes;
    size_t length;
};

static struct body post_body, get_body;

static int load(const char *path, struct body *body) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return -1;
    body->bytes = malloc(1 << 20);
    body->length = body->bytes == NULL ? 0 : fread(body->bytes, 1, 1 << 20, file);
    fclose(file);
    return body->bytes == NULL ? -1 : 0;
}

static enum MHD_Result answer(void *context, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state) {
    (void)context; (void)url; (void)version; (void)upload;
    if (*state == NULL) {
        *state = connection;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    const struct body *body = strcmp(method, "POST") == 0 ? &post_body : &get_body;
    struct MHD_Response *response =
        MHD_create_response_from_buffer(body->length, body->bytes, MHD_RESPMEM_PERSISTENT);
    if (response == NULL) return MHD_NO;
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result queued = MHD_queue_response(connection, 200, response);
    MHD_destroy_response(response);
    return queued;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: mhdfloor PORT THREADS POST_FILE GET_FILE\n");
        return 2;
    }
    if (load(argv[3], &post_body) != 0 || load(argv[4], &get_body) != 0) {
        fprintf(stderr, "mhdfloor: cannot read %s or %s\n", argv[3], argv[4]);
        return 1;
    }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC, (uint16_t)atoi(argv[1]), NULL, NULL, answer,
        NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)atoi(argv[2]), MHD_OPTION_CONNECTION_LIMIT, 1024u,
        MHD_OPTION_CONNECTION_TIMEOUT, 15u, MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "mhdfloor: cannot listen on port %s\n", argv[1]);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    int received = 0;
    sigwait(&signals, &received);
    MHD_stop_daemon(daemon);
    return 0;
}
