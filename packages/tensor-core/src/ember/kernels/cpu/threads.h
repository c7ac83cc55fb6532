/* ember's CPU thread pool: a few sleeping pthreads for large work only.
 *
 * - Work smaller than two grains, or a pool of one thread, runs on the calling
 *   thread: no wake-up, no lock. A call made from inside a parallel region (or
 *   while another thread's region is in flight) also runs inline.
 * - Workers sleep on a condition variable; nothing spins. Work is handed out
 *   dynamically, and the caller starts at once, so a worker that wakes late (a
 *   busy shared machine) just gets less of it; a worker that wakes after the caller
 *   finished does nothing and is not waited for.
 * - Fork-safe: a pthread_atfork child handler resets the pool, so a forked child
 *   (a DataLoader worker) never waits on threads that do not exist in it; it
 *   creates its own workers lazily on its first parallel call.
 * - The thread count defaults to EMBER_NUM_THREADS, else OMP_NUM_THREADS, else the
 *   number of CPUs this process may run on.
 */
#ifndef EMBER_THREADS_H
#define EMBER_THREADS_H
#include <stdint.h>

#define EM_MAX_THREADS 256

/* fn(ctx, begin, end) over [0, n) in chunks of `grain` items, handed out
 * dynamically to up to em_get_num_threads() threads (the caller included). */
void em_parallel_for(int64_t n, int64_t grain,
                     void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

/* fn(ctx, tid, nthreads) once on each of up to `nthreads` threads; the caller is
 * tid 0 and tids are distinct within one call. Some tids may never run (a worker
 * that wakes after the caller finished is skipped), so fn must share its work
 * dynamically (an atomic counter in ctx), never by tid. Returns the number of
 * threads asked for (1 when run inline). */
int em_parallel_run(int nthreads, void (*fn)(void *ctx, int tid, int nthreads), void *ctx);

int em_get_num_threads(void);
void em_set_num_threads(int n);   /* n >= 1; clamped to EM_MAX_THREADS */
/* Flush denormals (x86 MXCSR FTZ + DAZ) on the calling thread and on every pool
 * worker (each applies the setting before its next job). Returns 1 where supported
 * (x86 with SSE), else 0 and changes nothing. */
int em_set_flush_denormal(int on);
int em_get_flush_denormal(void);
/* Nonzero on a pool worker or inside a parallel region (nested calls run inline). */
int em_in_parallel(void);
#endif
