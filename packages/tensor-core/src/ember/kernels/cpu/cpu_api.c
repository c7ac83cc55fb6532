/* The table of cpu_api.h, in ember._C.core: the pool of threads.c, the GEMM of gemm.c. */
#include "cpu_api.h"
#include "gemm.h"
#include "threads.h"

static const em_cpu_api table = {
    EM_CPU_API_VERSION,
    em_parallel_for,
    em_parallel_run,
    em_get_num_threads,
    em_set_num_threads,
    em_in_parallel,
    em_gemm,
    em_gemm_batched,
    em_gemm_set_kernel,
    em_gemm_kernel_name,
    em_gemm_complex,
    em_gemm_bf16_f32,
};

const em_cpu_api *em_cpu_api_table(void) { return &table; }
