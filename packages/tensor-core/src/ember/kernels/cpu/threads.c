/* ember's CPU thread pool (see threads.h for the contract).
 *
 * One job at a time: the caller publishes (fn, ctx), flags the workers it wants
 * and signals each one's condition variable, runs fn itself as tid 0, then closes
 * the job and waits only for the workers that actually started it. Workers that
 * had not started by then find the job closed and go back to sleep. Everything
 * shared is guarded by one mutex, held only for bookkeeping.
 *
 * Fork: pthread_atfork takes the mutex before fork (so the child's copy of the
 * pool state is consistent), releases it in the parent, and in the child
 * re-initialises the mutex and condition variables and forgets the workers (they
 * do not exist there). The child's next parallel call creates fresh workers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include "threads.h"
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define EM_HAVE_MXCSR 1
#endif

typedef struct {
    pthread_cond_t cv;
    int has_job;           /* set by the caller, cleared by the worker or at close */
} worker_slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static worker_slot slots[EM_MAX_THREADS];  /* slot i serves worker tid i (1..) */
static int nworkers;                       /* workers alive in this process */
static int num_threads;                    /* the setting; 0 until first read */
static int busy;                           /* a job is in flight */
static struct {
    void (*fn)(void *, int, int);
    void *ctx;
    int nt;
    int open;              /* workers may still join */
    int running;           /* workers inside fn */
} job;
static __thread int tls_in_pool;           /* a worker, or inside a region */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static int parse_positive(const char *s) {
    if (!s || !*s) return 0;
    char *end;
    long v = strtol(s, &end, 10);     /* OMP_NUM_THREADS may be a list: "4,2" */
    if (end == s || v < 1) return 0;
    return v > EM_MAX_THREADS ? EM_MAX_THREADS : (int)v;
}

static int cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n > EM_MAX_THREADS ? EM_MAX_THREADS : n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > EM_MAX_THREADS ? EM_MAX_THREADS : (int)n;
}

static void atfork_prepare(void) { pthread_mutex_lock(&mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&mu); }

static void atfork_child(void) {
    /* Only the forking thread exists here. Its copy of the mutex is held (by it,
     * from prepare); the condition variables may record waiters that are gone. */
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&done_cv, NULL);
    for (int i = 0; i < EM_MAX_THREADS; i++) {
        pthread_cond_init(&slots[i].cv, NULL);
        slots[i].has_job = 0;
    }
    nworkers = 0;
    busy = 0;
    job.open = 0;
    job.running = 0;
    tls_in_pool = 0;
}

static void init(void) {
    for (int i = 0; i < EM_MAX_THREADS; i++) {
        pthread_cond_init(&slots[i].cv, NULL);
        slots[i].has_job = 0;
    }
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int em_get_num_threads(void) {
    int n = __atomic_load_n(&num_threads, __ATOMIC_RELAXED);
    if (n > 0) return n;
    n = parse_positive(getenv("EMBER_NUM_THREADS"));
    if (!n) n = parse_positive(getenv("OMP_NUM_THREADS"));
    if (!n) n = cpu_count();
    int expected = 0;
    __atomic_compare_exchange_n(&num_threads, &expected, n, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    return __atomic_load_n(&num_threads, __ATOMIC_RELAXED);
}

void em_set_num_threads(int n) {
    if (n < 1) n = 1;
    if (n > EM_MAX_THREADS) n = EM_MAX_THREADS;
    __atomic_store_n(&num_threads, n, __ATOMIC_RELAXED);
}

int em_in_parallel(void) { return tls_in_pool; }

static int flush_denormal;                 /* the setting (0/1), read by each worker */

#ifdef EM_HAVE_MXCSR
#define EM_FTZ_DAZ 0x8040u                 /* MXCSR bits 15 (FTZ) and 6 (DAZ) */
static void apply_flush_denormal(int on) {
    unsigned int csr = _mm_getcsr();
    unsigned int want = on ? (csr | EM_FTZ_DAZ) : (csr & ~EM_FTZ_DAZ);
    if (want != csr) _mm_setcsr(want);
}
#else
static void apply_flush_denormal(int on) { (void)on; }
#endif

int em_set_flush_denormal(int on) {
#ifdef EM_HAVE_MXCSR
    __atomic_store_n(&flush_denormal, on ? 1 : 0, __ATOMIC_RELAXED);
    apply_flush_denormal(on);
    return 1;
#else
    (void)on;
    return 0;
#endif
}

int em_get_flush_denormal(void) { return __atomic_load_n(&flush_denormal, __ATOMIC_RELAXED); }

static void *worker_main(void *arg) {
    int id = (int)(intptr_t)arg;
    tls_in_pool = 1;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!slots[id].has_job)
            pthread_cond_wait(&slots[id].cv, &mu);
        slots[id].has_job = 0;
        if (!job.open)
            continue;
        job.running++;
        void (*fn)(void *, int, int) = job.fn;
        void *ctx = job.ctx;
        int nt = job.nt;
        pthread_mutex_unlock(&mu);
        apply_flush_denormal(__atomic_load_n(&flush_denormal, __ATOMIC_RELAXED));
        fn(ctx, id, nt);
        pthread_mutex_lock(&mu);
        if (--job.running == 0 && !job.open)
            pthread_cond_signal(&done_cv);
    }
    return NULL;
}

/* Under mu: make sure workers 1..want-1 exist; returns how many threads (caller
 * included) are available. Workers block every signal: Python handles signals on
 * its main thread. */
static int ensure_workers(int want) {
    if (want > EM_MAX_THREADS) want = EM_MAX_THREADS;
    if (nworkers + 1 >= want) return want;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (nworkers + 1 < want) {
        pthread_t th;
        int id = nworkers + 1;
        slots[id].has_job = 0;
        if (pthread_create(&th, &attr, worker_main, (void *)(intptr_t)id) != 0)
            break;
        nworkers++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return nworkers + 1 < want ? nworkers + 1 : want;
}

int em_parallel_run(int nt, void (*fn)(void *ctx, int tid, int nthreads), void *ctx) {
    if (nt > EM_MAX_THREADS) nt = EM_MAX_THREADS;
    if (nt <= 1 || tls_in_pool) {
        int saved = tls_in_pool;
        tls_in_pool = 1;
        fn(ctx, 0, 1);
        tls_in_pool = saved;
        return 1;
    }
    pthread_once(&init_once, init);
    pthread_mutex_lock(&mu);
    if (busy) {                       /* another thread's job is in flight */
        pthread_mutex_unlock(&mu);
        tls_in_pool = 1;
        fn(ctx, 0, 1);
        tls_in_pool = 0;
        return 1;
    }
    nt = ensure_workers(nt);
    if (nt <= 1) {
        pthread_mutex_unlock(&mu);
        tls_in_pool = 1;
        fn(ctx, 0, 1);
        tls_in_pool = 0;
        return 1;
    }
    busy = 1;
    job.fn = fn;
    job.ctx = ctx;
    job.nt = nt;
    job.open = 1;
    job.running = 0;
    for (int i = 1; i < nt; i++) {
        slots[i].has_job = 1;
        pthread_cond_signal(&slots[i].cv);
    }
    pthread_mutex_unlock(&mu);

    tls_in_pool = 1;
    fn(ctx, 0, nt);
    tls_in_pool = 0;

    pthread_mutex_lock(&mu);
    job.open = 0;
    for (int i = 1; i < nt; i++)
        slots[i].has_job = 0;         /* not started yet: skip this job */
    while (job.running > 0)
        pthread_cond_wait(&done_cv, &mu);
    busy = 0;
    pthread_mutex_unlock(&mu);
    return nt;
}

typedef struct {
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t n, grain;
    _Atomic int64_t next;
} pfor_ctx;

static void pfor_body(void *p, int tid, int nt) {
    (void)tid; (void)nt;
    pfor_ctx *c = p;
    for (;;) {
        int64_t b = atomic_fetch_add_explicit(&c->next, c->grain, memory_order_relaxed);
        if (b >= c->n) break;
        int64_t e = c->n - b < c->grain ? c->n : b + c->grain;
        c->fn(c->ctx, b, e);
    }
}

void em_parallel_for(int64_t n, int64_t grain,
                     void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int nt = em_get_num_threads();
    if (nt <= 1 || n < 2 * grain || tls_in_pool) {
        fn(ctx, 0, n);
        return;
    }
    int64_t chunks = (n + grain - 1) / grain;
    if (chunks < nt) nt = (int)chunks;
    pfor_ctx c = {fn, ctx, n, grain, 0};
    em_parallel_run(nt, pfor_body, &c);
}
