/* threads.h and gemm.h for extensions other than ember._C.core: every call goes
 * through core's table (see cpu_api.h), so the process has one pool and one GEMM. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "cpu_api.h"
#include "gemm.h"
#include "threads.h"

static const em_cpu_api *api;

int em_cpu_api_import(void) {
    if (api) return 0;
    const em_cpu_api *t = PyCapsule_Import(EM_CPU_API_CAPSULE, 0);
    if (!t) return -1;
    if (t->version < EM_CPU_API_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "ember: this extension was built for CPU runtime API version %d, but "
                     "ember._C.core provides version %d; rebuild the extension or update ember",
                     EM_CPU_API_VERSION, t->version);
        return -1;
    }
    api = t;
    return 0;
}

void em_parallel_for(int64_t n, int64_t grain,
                     void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
    api->parallel_for(n, grain, fn, ctx);
}

int em_parallel_run(int nthreads, void (*fn)(void *ctx, int tid, int nthreads), void *ctx) {
    return api->parallel_run(nthreads, fn, ctx);
}

int em_get_num_threads(void) { return api->get_num_threads(); }
void em_set_num_threads(int n) { api->set_num_threads(n); }
int em_in_parallel(void) { return api->in_parallel(); }

int em_gemm(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
            const void *a, int64_t rsa, int64_t csa,
            const void *b, int64_t rsb, int64_t csb, double beta,
            void *c, int64_t rsc, int64_t csc) {
    return api->gemm(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

int em_gemm_batched(int dtype, int bdims, const int64_t *bshape, const int64_t *bsa,
                    const int64_t *bsb, const int64_t *bsc,
                    int64_t m, int64_t n, int64_t k, double alpha,
                    const void *a, int64_t rsa, int64_t csa,
                    const void *b, int64_t rsb, int64_t csb, double beta,
                    void *c, int64_t rsc, int64_t csc) {
    return api->gemm_batched(dtype, bdims, bshape, bsa, bsb, bsc, m, n, k, alpha,
                             a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

int em_gemm_complex(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
                    const void *a, int64_t rsa, int64_t csa, int ca,
                    const void *b, int64_t rsb, int64_t csb, int cb, double beta,
                    void *c, int64_t rsc, int64_t csc) {
    return api->gemm_complex(dtype, m, n, k, alpha, a, rsa, csa, ca, b, rsb, csb, cb, beta,
                             c, rsc, csc);
}

void em_gemm_set_kernel(int which) { api->gemm_set_kernel(which); }
const char *em_gemm_kernel_name(void) { return api->gemm_kernel_name(); }
int em_gemm_bf16_f32(int64_t m, int64_t n, int64_t k, const void *a, int64_t rsa,
                     int64_t csa, const void *b, int64_t rsb, int64_t csb, float beta,
                     float *c, int64_t rsc, int64_t csc) {
    return api->gemm_bf16_f32(m, n, k, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}
