// dtypes: bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64
/* C = A @ B over a batch of strided matrices (any row/column strides, any signs;
 * batch dims broadcast through zero strides), the matmul family's one kernel.
 *
 * Tiled in local memory: a work-group of 16 x 16 work-items computes a 64 x 64 block
 * of C, each work-item a 4 x 4 register block (rows ty + 16 i, columns tx + 16 j),
 * so every value loaded into local memory is used 64 times from there. Work-group
 * (x, y) = (column block, row block); z strides over the batch, whose layout (dims
 * and strides of C, A, B in operands 0, 1, 2) is an em_layout. Floats accumulate in
 * EM_CT (float for float16 and bfloat16); integers in int64, stored wrapped to EM_T as the CPU's
 * GEMM does; bool counts true products and stores "any" (PyTorch's bool matmul). */
#ifndef EM_GEMM_TILE
#define EM_GEMM_TILE 64
#define EM_GEMM_K 16
#endif
#if defined(EM_DT_float16) || defined(EM_DT_bfloat16) || defined(EM_DT_float32) || \
    defined(EM_DT_float64)
#define EM_GEMM_ACC EM_CT
#else
#define EM_GEMM_ACC em_int64
#endif
#ifdef EM_DT_bool
#define EM_GEMM_OUT(v) ((v) != 0)
#else
#define EM_GEMM_OUT(v) (v)
#endif

EM_KERNEL void EM_NAME(gemm)(em_int64 M, em_int64 N, em_int64 K, em_int64 nbatch,
                             EM_GLOBAL EM_T *C, em_int64 c_rs, em_int64 c_cs,
                             EM_GLOBAL const EM_T *A, em_int64 a_rs, em_int64 a_cs,
                             EM_GLOBAL const EM_T *B, em_int64 b_rs, em_int64 b_cs,
                             em_layout L) {
    EM_LOCAL EM_GEMM_ACC As[EM_GEMM_K][EM_GEMM_TILE + 1];   /* As[k][m] */
    EM_LOCAL EM_GEMM_ACC Bs[EM_GEMM_K][EM_GEMM_TILE + 1];   /* Bs[k][n] */
    const int tx = EM_LID(), ty = EM_LID_Y();
    const int t = ty * 16 + tx;
    const em_int64 row0 = EM_GROUP_Y() * EM_GEMM_TILE, col0 = EM_GROUP() * EM_GEMM_TILE;
    for (em_int64 b = EM_GROUP_Z(); b < nbatch; b += EM_NGROUPS_Z()) {
        em_int64 off[3];
        off[0] = L.offset[0]; off[1] = L.offset[1]; off[2] = L.offset[2];
        em_layout_offsets(&L, 0, (int)L.nd, b, 3, off);
        EM_GEMM_ACC acc[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) acc[i][j] = 0;
        for (em_int64 k0 = 0; k0 < K; k0 += EM_GEMM_K) {
            /* 256 work-items load the 16 x 64 slices of A and B, 4 values each */
            for (int r = 0; r < 4; r++) {
                int e = t + 256 * r;               /* 0 .. 1023 */
                int kk = e % EM_GEMM_K, mm = e / EM_GEMM_K;
                em_int64 gm = row0 + mm, gk = k0 + kk;
                As[kk][mm] = (gm < M && gk < K) ? (EM_GEMM_ACC)EM_LD(A, off[1] + gm * a_rs + gk * a_cs) : (EM_GEMM_ACC)0;
                int nn = e % EM_GEMM_TILE, kb = e / EM_GEMM_TILE;
                em_int64 gn = col0 + nn, gkb = k0 + kb;
                Bs[kb][nn] = (gn < N && gkb < K) ? (EM_GEMM_ACC)EM_LD(B, off[2] + gkb * b_rs + gn * b_cs) : (EM_GEMM_ACC)0;
            }
            EM_BARRIER();
            for (int kk = 0; kk < EM_GEMM_K; kk++) {
                EM_GEMM_ACC a[4], bv[4];
                for (int i = 0; i < 4; i++) a[i] = As[kk][ty + 16 * i];
                for (int j = 0; j < 4; j++) bv[j] = Bs[kk][tx + 16 * j];
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++) acc[i][j] += a[i] * bv[j];
            }
            EM_BARRIER();
        }
        for (int i = 0; i < 4; i++) {
            em_int64 gm = row0 + ty + 16 * i;
            for (int j = 0; j < 4; j++) {
                em_int64 gn = col0 + tx + 16 * j;
                if (gm < M && gn < N) EM_ST(C, off[0] + gm * c_rs + gn * c_cs, EM_GEMM_OUT(acc[i][j]));
            }
        }
    }
}
