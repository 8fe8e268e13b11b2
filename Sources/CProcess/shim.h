#ifndef HEALTHCARDS_CPROCESS_SHIM_H
#define HEALTHCARDS_CPROCESS_SHIM_H
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stdio.h>

/* Keeps secrets out of core dumps and away from other processes of the same user: no core file
   (RLIMIT_CORE 0), and the process is not dumpable (PR_SET_DUMPABLE 0: no core, no ptrace attach, its
   /proc/PID/mem and environ owned by root). prctl is variadic, which Swift cannot call.
   Returns 0 when both took effect, otherwise -1 (errno from the call that failed). */
static inline int CProcess_protect_secrets(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : -1;
}

/* 1 when the process may dump core or be traced (PR_GET_DUMPABLE), 0 when not. */
static inline int CProcess_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }
/* 1 when what was printed to standard output could not all be written (flushed now), else 0; errno says why. */
static inline int CProcess_stdout_failed(void) { return fflush(stdout) != 0 || ferror(stdout) != 0; }
#endif
