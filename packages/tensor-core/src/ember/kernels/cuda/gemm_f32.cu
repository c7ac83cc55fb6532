/* float32 C = A @ B on the CUDA cores (no TF32): CUDA's fast path beside the portable
 * kernels/gpu/programs/matmul.h (64 x 64 tiles, 4 x 4 per work-item), which is
 * register-starved on a GPU with 255 registers per thread.
 *
 *   gemm_simt_float32: same parameters and launch as kernels/cuda/gemm_tc.cu (strided
 *   A (M x K) and B (K x N), C row stride ldc, blockIdx.z over a batch
 *   bsa / bsb / bsc elements apart; grid (ceil(N / 128), ceil(M / 128), batch), 256
 *   threads)
 *
 * Each block computes a 128 x 128 tile of C; each thread an 8 x 8 register block at
 * rows ty + 16 i and columns tx + 16 j (tx, ty in 0..15), so the shared-memory reads of
 * a warp are conflict-free and its stores to C coalesced. Tiles of depth 8 of A
 * (stored k-major) and B are staged in shared memory, loaded so that consecutive
 * threads read consecutive addresses whichever stride of the operand is 1, zero-padded
 * at the edges (any M, N, K). Per k, a thread does 64 FMAs for 16 shared loads.
 */
namespace {
constexpr int BM = 128, BN = 128, BK = 8, THREADS = 256;
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_simt_float32(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                  int M, int N, int K, long rsa, long csa, long rsb, long csb, long ldc,
                  long bsa, long bsb, long bsc) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    A += blockIdx.z * bsa;
    B += blockIdx.z * bsb;
    C += blockIdx.z * bsc;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int t = threadIdx.x, tx = t % 16, ty = t / 16;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int r = 0; r < (BM * BK) / THREADS; r++) {
            const int e = t + THREADS * r;                      /* 0 .. 1023 */
            const int am = csa == 1 ? e / BK : e % BM, ak = csa == 1 ? e % BK : e / BM;
            const int gm = m0 + am, gk = k0 + ak;
            As[ak][am] = (gm < M && gk < K) ? A[gm * rsa + gk * csa] : 0.0f;
            const int bk = csb == 1 ? e / BN : e % BK, bn = csb == 1 ? e % BN : e / BK;
            const int gkb = k0 + bk, gn = n0 + bn;
            Bs[bk][bn] = (gkb < K && gn < N) ? B[gkb * rsb + gn * csb] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float a[8], b[8];
#pragma unroll
            for (int i = 0; i < 8; i++) a[i] = As[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 8; j++) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int gm = m0 + ty + 16 * i;
        if (gm >= M) continue;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int gn = n0 + tx + 16 * j;
            if (gn < N) C[gm * ldc + gn] = acc[i][j];
        }
    }
}
