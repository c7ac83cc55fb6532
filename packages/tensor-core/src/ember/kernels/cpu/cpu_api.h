/* The CPU runtime that every ember extension shares: one thread pool and one GEMM
 * per process.
 *
 * They are compiled into ember._C.core only, which publishes this table as the
 * capsule "ember._C.core._cpu_api". Any other extension (ember's own _C modules,
 * or a user's, see ember.utils.extension) compiles cpu_api_client.c instead of
 * threads.c and gemm.c: it defines the functions of threads.h and gemm.h as calls
 * through the table, filled in once by em_cpu_api_import() when the extension
 * module is imported. Two copies of the pool would mean twice the sleeping threads
 * and a set_num_threads that reaches only one of them. */
#ifndef EMBER_CPU_API_H
#define EMBER_CPU_API_H
#include <stdint.h>

#define EM_CPU_API_CAPSULE "ember._C.core._cpu_api"
/* 2: gemm_complex appended; 3: gemm_bf16_f32. A core of a later version only
 * appends, so a client takes any table of its version or later. */
#define EM_CPU_API_VERSION 3

typedef struct em_cpu_api {
    int version;
    void (*parallel_for)(int64_t n, int64_t grain,
                         void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);
    int (*parallel_run)(int nthreads, void (*fn)(void *ctx, int tid, int nthreads), void *ctx);
    int (*get_num_threads)(void);
    void (*set_num_threads)(int n);
    int (*in_parallel)(void);
    int (*gemm)(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
                const void *a, int64_t rsa, int64_t csa,
                const void *b, int64_t rsb, int64_t csb, double beta,
                void *c, int64_t rsc, int64_t csc);
    int (*gemm_batched)(int dtype, int bdims, const int64_t *bshape, const int64_t *bsa,
                        const int64_t *bsb, const int64_t *bsc,
                        int64_t m, int64_t n, int64_t k, double alpha,
                        const void *a, int64_t rsa, int64_t csa,
                        const void *b, int64_t rsb, int64_t csb, double beta,
                        void *c, int64_t rsc, int64_t csc);
    void (*gemm_set_kernel)(int which);
    const char *(*gemm_kernel_name)(void);
    int (*gemm_complex)(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
                        const void *a, int64_t rsa, int64_t csa, int ca,
                        const void *b, int64_t rsb, int64_t csb, int cb, double beta,
                        void *c, int64_t rsc, int64_t csc);
    int (*gemm_bf16_f32)(int64_t m, int64_t n, int64_t k, const void *a, int64_t rsa,
                         int64_t csa, const void *b, int64_t rsb, int64_t csb, float beta,
                         float *c, int64_t rsc, int64_t csc);
} em_cpu_api;

/* In ember._C.core (cpu_api.c): the table. */
const em_cpu_api *em_cpu_api_table(void);

/* In client extensions (cpu_api_client.c): fetch the table from the capsule.
 * 0 on success; -1 with a Python exception set. Call before any kernel runs. */
int em_cpu_api_import(void);
#endif
