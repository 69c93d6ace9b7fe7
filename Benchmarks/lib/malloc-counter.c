// malloc-counter.so: counts the allocations of a process it is preloaded into, for
// Benchmarks/lib/allocations.sh and scripts/allocations. Nothing is linked into the router:
//
//   cc -O2 -shared -fPIC -o malloc-counter.so malloc-counter.c
//   LD_PRELOAD=$PWD/malloc-counter.so MALLOC_COUNTER_FILE=/tmp/counts switchyard run …
//   kill -USR2 PID    # appends "<seq> <allocations> <frees> <bytes>\n" to MALLOC_COUNTER_FILE
//
// A reader takes two snapshots around a window of work and divides the difference by the
// envelopes of the window (SwiftNIO's allocation-counter tests count the same way, in-process).
// Every allocating entry point is counted (malloc, calloc, realloc, posix_memalign,
// aligned_alloc, memalign, valloc, pvalloc): a realloc is one allocation, as the Swift runtime's
// growth of an array or string is. The counters are relaxed atomics: a snapshot is taken while
// other threads allocate, so it is exact only once the traffic of the window has settled, which
// is why readers take it after the window's last envelope arrived.
//
// The real allocator is glibc's, reached through its exported __libc_* entry points, so no
// dlsym (which itself allocates) is needed. Linux/glibc only.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static uint64_t allocations, frees, bytes, snapshots;
static char counter_file[4096];

static inline void *counted(void *pointer, size_t size) {
    if (pointer != NULL) {
        __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&bytes, size, __ATOMIC_RELAXED);
    }
    return pointer;
}

void *malloc(size_t size) { return counted(__libc_malloc(size), size); }

void *calloc(size_t count, size_t size) {
    // The product may overflow; glibc refuses that case and returns NULL (not counted).
    return counted(__libc_calloc(count, size), count * size);
}

void *realloc(void *pointer, size_t size) {
    if (pointer != NULL && size == 0) {
        __atomic_fetch_add(&frees, 1, __ATOMIC_RELAXED);
        return __libc_realloc(pointer, size);
    }
    void *result = __libc_realloc(pointer, size);
    if (result != NULL && pointer != NULL) __atomic_fetch_add(&frees, 1, __ATOMIC_RELAXED);
    return counted(result, size);
}

void free(void *pointer) {
    if (pointer != NULL) __atomic_fetch_add(&frees, 1, __ATOMIC_RELAXED);
    __libc_free(pointer);
}

void *memalign(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size), size); }

void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void *valloc(size_t size) { return memalign((size_t)sysconf(_SC_PAGESIZE), size); }

void *pvalloc(size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return memalign(page, (size + page - 1) & ~(page - 1));
}

// Appends the decimal digits of value to line at *length (async-signal-safe: no stdio).
static void append_number(char *line, size_t *length, uint64_t value) {
    char digits[20];
    int count = 0;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    while (count > 0) line[(*length)++] = digits[--count];
}

// SIGUSR2: one line per snapshot, appended with a single write(2) so a reader never sees half.
static void write_snapshot(int signal_number) {
    (void)signal_number;
    int saved_errno = errno;
    uint64_t values[4] = {
        __atomic_add_fetch(&snapshots, 1, __ATOMIC_RELAXED),
        __atomic_load_n(&allocations, __ATOMIC_RELAXED),
        __atomic_load_n(&frees, __ATOMIC_RELAXED),
        __atomic_load_n(&bytes, __ATOMIC_RELAXED),
    };
    char line[4 * 21 + 1];
    size_t length = 0;
    for (int index = 0; index < 4; index++) {
        append_number(line, &length, values[index]);
        line[length++] = index == 3 ? '\n' : ' ';
    }
    int descriptor = open(counter_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (descriptor >= 0) {
        ssize_t written = write(descriptor, line, length);
        (void)written;
        close(descriptor);
    }
    errno = saved_errno;
}

// Without MALLOC_COUNTER_FILE the counters still run but nothing can read them; the preload is
// then pointless, so the variable is what arms the signal. SA_RESTART: a blocking call of the
// process resumes after the handler instead of failing with EINTR.
__attribute__((constructor)) static void install_snapshot_handler(void) {
    const char *path = getenv("MALLOC_COUNTER_FILE");
    if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(counter_file)) return;
    memcpy(counter_file, path, strlen(path) + 1);
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = write_snapshot;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, NULL);
}
