/* Tensor-core matrix products (CUDA only; the portable tiled GEMM is
 * kernels/gpu/programs/matmul.h).
 *
 *   gemm_tc_float16: C = A @ B for float16 operands, float32 accumulation (wmma 16x16x16)
 *   gemm_tc_bfloat16: the same for bfloat16 operands (wmma 16x16x16, sm_80 and later)
 *   gemm_tf32_float32: C = A @ B for float32 operands rounded to TF32 (wmma 16x16x8),
 *                      used only when em.backends.cuda.matmul.allow_tf32 is True
 *
 * Operands are strided like the CPU GEMM (kernels/cpu/gemm.h): A is M x K with row
 * stride rsa and column stride csa (in elements, either may be 1, so A or A.T are read
 * in place), B is K x N likewise, C is M x N with row stride ldc and unit column
 * stride; blockIdx.z walks a batch whose operands are bsa / bsb / bsc elements apart.
 * Launch: grid (ceil(N / 128), ceil(M / 128), batch), block 256.
 *
 * Each block computes a 128 x 128 tile of C: the 8 warps (2 x 4) own 64 x 32 each, as
 * 4 x 2 wmma accumulators. A and B tiles of depth 32 are staged in shared memory; the
 * loads are mapped so that consecutive threads read consecutive addresses whichever of
 * the two strides is 1, and bounds-checked (any M, N, K). The result passes through a
 * per-warp 16 x 16 staging area so edges are written with bounds checks too.
 */
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>

using namespace nvcuda;

namespace {

constexpr int BM = 128, BN = 128, BK = 32, WM = 64, WN = 32, THREADS = 256;

template <typename T> struct tc_traits;
template <> struct tc_traits<__half> {
    static constexpr int KF = 16;
    using precision = __half;
    static __device__ void round(wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> &) {}
    static __device__ void round(wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> &) {}
};
template <> struct tc_traits<__nv_bfloat16> {
    static constexpr int KF = 16;
    using precision = __nv_bfloat16;
    static __device__ void round(wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> &) {}
    static __device__ void round(wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> &) {}
};
template <> struct tc_traits<float> {
    static constexpr int KF = 8;
    using precision = wmma::precision::tf32;
    template <typename F> static __device__ void round(F &f) {
        for (int t = 0; t < f.num_elements; t++) f.x[t] = wmma::__float_to_tf32(f.x[t]);
    }
};

template <typename T>
__device__ __forceinline__ void gemm_tc(const T *__restrict__ A, const T *__restrict__ B,
                                        T *__restrict__ C, int M, int N, int K,
                                        long rsa, long csa, long rsb, long csb, long ldc,
                                        long bsa, long bsb, long bsc) {
    using tr = tc_traits<T>;
    constexpr int KF = tr::KF;
    constexpr int PAD = 16 / sizeof(T);          /* rows 16 bytes apart: fewer bank conflicts */
    __shared__ __align__(32) T As[BM][BK + PAD];
    __shared__ __align__(32) T Bs[BK][BN + PAD];
    __shared__ __align__(32) float Cs[THREADS / 32][16 * 16];

    A += blockIdx.z * bsa;
    B += blockIdx.z * bsb;
    C += blockIdx.z * bsc;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / 4) * WM, wn = (warp % 4) * WN;
    const T zero = T(0.0f);

    wmma::fragment<wmma::accumulator, 16, 16, KF, float> acc[WM / 16][WN / 16];
    for (int i = 0; i < WM / 16; i++)
        for (int j = 0; j < WN / 16; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
            int r = csa == 1 ? e / BK : e % BM, c = csa == 1 ? e % BK : e / BM;
            int gr = m0 + r, gc = k0 + c;
            As[r][c] = (gr < M && gc < K) ? A[gr * rsa + gc * csa] : zero;
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            int r = csb == 1 ? e / BN : e % BK, c = csb == 1 ? e % BN : e / BK;
            int gr = k0 + r, gc = n0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[gr * rsb + gc * csb] : zero;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; kk += KF) {
            wmma::fragment<wmma::matrix_a, 16, 16, KF, typename tr::precision, wmma::row_major> a[WM / 16];
            wmma::fragment<wmma::matrix_b, 16, 16, KF, typename tr::precision, wmma::row_major> b[WN / 16];
            for (int i = 0; i < WM / 16; i++) {
                wmma::load_matrix_sync(a[i], &As[wm + i * 16][kk], BK + PAD);
                tr::round(a[i]);
            }
            for (int j = 0; j < WN / 16; j++) {
                wmma::load_matrix_sync(b[j], &Bs[kk][wn + j * 16], BN + PAD);
                tr::round(b[j]);
            }
            for (int i = 0; i < WM / 16; i++)
                for (int j = 0; j < WN / 16; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    float *stage = Cs[warp];
    for (int i = 0; i < WM / 16; i++)
        for (int j = 0; j < WN / 16; j++) {
            wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                int gr = m0 + wm + i * 16 + e / 16, gc = n0 + wn + j * 16 + e % 16;
                if (gr < M && gc < N) C[gr * ldc + gc] = T(stage[e]);
            }
            __syncwarp();
        }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_tc_float16(const __half *A, const __half *B, __half *C, int M, int N, int K,
                long rsa, long csa, long rsb, long csb, long ldc, long bsa, long bsb, long bsc) {
    gemm_tc<__half>(A, B, C, M, N, K, rsa, csa, rsb, csb, ldc, bsa, bsb, bsc);
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_tc_bfloat16(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N,
                 int K, long rsa, long csa, long rsb, long csb, long ldc, long bsa, long bsb,
                 long bsc) {
    gemm_tc<__nv_bfloat16>(A, B, C, M, N, K, rsa, csa, rsb, csb, ldc, bsa, bsb, bsc);
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_tf32_float32(const float *A, const float *B, float *C, int M, int N, int K,
                  long rsa, long csa, long rsb, long csb, long ldc, long bsa, long bsb, long bsc) {
    gemm_tc<float>(A, B, C, M, N, K, rsa, csa, rsb, csb, ldc, bsa, bsb, bsc);
}
