// Two threads pinned to vCPU 0 and 1 hand a token back and forth through one cache line
// (1,000,000 round trips); prints nanoseconds per round trip: the cost of the two vCPUs
// talking, which a host that moves them apart (another core, another socket) raises.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static _Atomic long token __attribute__((aligned(64)));
enum { ROUNDS = 1000000 };
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *pong(void *arg) {
    (void)arg; pin(1);
    for (long i = 0; i < ROUNDS; i++) { while (atomic_load_explicit(&token, memory_order_acquire) != 2 * i + 1) {} atomic_store_explicit(&token, 2 * i + 2, memory_order_release); }
    return 0;
}
int main(void) {
    // Both threads spin: on one processor they would only take turns by time slice.
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) { puts("n/a (one processor)"); return 0; }
    pthread_t t; pthread_create(&t, 0, pong, 0); pin(0);
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < ROUNDS; i++) { atomic_store_explicit(&token, 2 * i + 1, memory_order_release); while (atomic_load_explicit(&token, memory_order_acquire) != 2 * i + 2) {} }
    clock_gettime(CLOCK_MONOTONIC, &b); pthread_join(t, 0);
    printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / ROUNDS);
    return 0;
}
