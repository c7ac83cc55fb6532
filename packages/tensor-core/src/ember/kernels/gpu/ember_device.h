/* The portable device dialect of ember's GPU kernels (OpenCL C and CUDA C++).
 *
 * Every program under kernels/gpu/programs/ and every kernel ops/render.py generates
 * for a GPU is written once against these macros: OpenCL compiles the text at run
 * time (__OPENCL_VERSION__), nvcc at build time (__CUDACC__). Rules for kernel authors:
 *   - a kernel is `EM_KERNEL void name(params)`; its parameters are buffers
 *     (`EM_GLOBAL T *p`, always followed somewhere by an element offset: OpenCL
 *     buffers cannot be offset on the host), scalars (em_int64, int, float, double,
 *     EM_CT) or an em_layout by value. The hosts type their arguments from this
 *     parameter list (ember/ops/gpu_programs.py parses it), so no other parameter
 *     types are allowed;
 *   - memory is read and written through EM_LD_<dtype>(p, i) / EM_ST_<dtype>(p, i, v)
 *     (float16 and bfloat16 are storage types only: they are computed in float);
 *   - every work-item of a work-group reaches every barrier: no early `continue` or
 *     `return` around a barrier even when the condition is uniform (PoCL miscompiles
 *     it: the cross-entropy rows wrote out of bounds);
 *   - programs/<family>.h is compiled once per dtype named on its `// dtypes:` line
 *     with EM_T (storage type), EM_CT (compute type), EM_DT (the dtype's name token)
 *     defined, and names those kernels EM_NAME(base) -> base_<dtype>; `none` on the
 *     line adds one compile without EM_DT, program <family>, for the file's kernels
 *     with plain names (a file with both keeps them apart with #ifdef EM_DT).
 * Headers shared by several programs (group_reduce.h) sit beside this one.
 */
#ifndef EMBER_DEVICE_H
#define EMBER_DEVICE_H

#define EM_MAXD 8          /* dims of an em_layout after merging (the host merges) */

#if defined(__OPENCL_VERSION__)
/* ---------------------------------------------------------------- OpenCL C */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define EM_HAS_FP64 1
#endif
#define EM_KERNEL __kernel
#define EM_DEVICE
#define EM_INLINE static inline
#define EM_GLOBAL __global
#define EM_LOCAL __local
#define EM_LPTR __local       /* a pointer parameter into local memory */
#define EM_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define EM_GID() ((em_int64)get_global_id(0))
#define EM_GSIZE() ((em_int64)get_global_size(0))
#define EM_LID() ((int)get_local_id(0))
#define EM_LSIZE() ((int)get_local_size(0))
#define EM_GROUP() ((em_int64)get_group_id(0))
#define EM_NGROUPS() ((em_int64)get_num_groups(0))
#define EM_GROUP_Y() ((em_int64)get_group_id(1))
#define EM_GROUP_Z() ((em_int64)get_group_id(2))
#define EM_NGROUPS_Z() ((em_int64)get_num_groups(2))
#define EM_LID_Y() ((int)get_local_id(1))
typedef uchar em_bool;
typedef uchar em_uint8;
typedef char em_int8;
typedef short em_int16;
typedef int em_int32;
typedef long em_int64;
typedef ulong em_uint64;
typedef uint em_uint32;
typedef ushort em_uint16;
typedef half em_float16;       /* a pointer type only, through vload_half/vstore_half */
typedef float em_float32;
#ifdef EM_HAS_FP64
typedef double em_float64;
#endif
#define EM_LD_float16(p, i) vload_half((i), (p))
#define EM_ST_float16(p, i, v) vstore_half((float)(v), (i), (p))
/* OpenCL C has no bfloat16 type: its bits in a ushort, converted as on the CPU
   (kernels/cpu/ember_bf16.h: round to nearest even, NaN kept) */
typedef ushort em_bfloat16;
static inline float em_bf16_to_f32(ushort h) { return as_float((uint)h << 16); }
static inline ushort em_f32_to_bf16(float f) {
    uint u = as_uint(f);
    uint r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (ushort)(((u & 0x7fffffffu) > 0x7f800000u) ? ((u >> 16) | 0x40u) : r);
}
#define EM_LD_bfloat16(p, i) em_bf16_to_f32((p)[i])
#define EM_ST_bfloat16(p, i, v) ((p)[i] = em_f32_to_bf16((float)(v)))
#define em_atomic_add_int32(p, v) atomic_add((p), (v))
#define em_mulhi64(a, b) mul_hi((em_uint64)(a), (em_uint64)(b))
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#define em_atomic_min_int64(p, v) atom_min((p), (v))

#elif defined(__CUDACC__)
/* ---------------------------------------------------------------- CUDA C++ */
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>
#define EM_HAS_FP64 1
#define EM_KERNEL extern "C" __global__
#define EM_DEVICE __device__
#define EM_INLINE static __device__ __forceinline__
#define EM_GLOBAL
#define EM_LOCAL __shared__
#define EM_LPTR
#define EM_BARRIER() __syncthreads()
#define EM_GID() ((em_int64)blockIdx.x * blockDim.x + threadIdx.x)
#define EM_GSIZE() ((em_int64)gridDim.x * blockDim.x)
#define EM_LID() ((int)threadIdx.x)
#define EM_LSIZE() ((int)blockDim.x)
#define EM_GROUP() ((em_int64)blockIdx.x)
#define EM_NGROUPS() ((em_int64)gridDim.x)
#define EM_GROUP_Y() ((em_int64)blockIdx.y)
#define EM_GROUP_Z() ((em_int64)blockIdx.z)
#define EM_NGROUPS_Z() ((em_int64)gridDim.z)
#define EM_LID_Y() ((int)threadIdx.y)
typedef unsigned char em_bool;
typedef unsigned char em_uint8;
typedef signed char em_int8;
typedef short em_int16;
typedef int em_int32;
typedef long long em_int64;
typedef unsigned long long em_uint64;
typedef unsigned int em_uint32;
typedef unsigned short em_uint16;
typedef __half em_float16;
typedef float em_float32;
typedef double em_float64;
#define EM_LD_float16(p, i) __half2float((p)[i])
#define EM_ST_float16(p, i, v) ((p)[i] = __float2half((float)(v)))
/* bfloat16: __nv_bfloat16 storage; stores round by the CPU's bit formula (round to
   nearest even, the NaN's sign and payload kept), so every device stores the same bits */
typedef __nv_bfloat16 em_bfloat16;
static __device__ __forceinline__ float em_bf16_to_f32(__nv_bfloat16 h) { return __bfloat162float(h); }
static __device__ __forceinline__ __nv_bfloat16 em_f32_to_bf16(float f) {
    unsigned int u = __float_as_uint(f);
    unsigned int r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return __ushort_as_bfloat16((unsigned short)(((u & 0x7fffffffu) > 0x7f800000u) ? ((u >> 16) | 0x40u) : r));
}
#define EM_LD_bfloat16(p, i) em_bf16_to_f32((p)[i])
#define EM_ST_bfloat16(p, i, v) ((p)[i] = em_f32_to_bf16((float)(v)))
#define em_atomic_add_int32(p, v) atomicAdd((p), (v))
#define em_mulhi64(a, b) __umul64hi((em_uint64)(a), (em_uint64)(b))
#define em_atomic_min_int64(p, v) atomicMin((long long *)(p), (long long)(v))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif

#else
#error "ember_device.h is device code: compile it as OpenCL C or CUDA C++"
#endif

/* Plain loads and stores for every dtype but float16 and bfloat16. */
#define EM_LD_bool(p, i) ((p)[i])
#define EM_LD_uint8(p, i) ((p)[i])
#define EM_LD_int8(p, i) ((p)[i])
#define EM_LD_int16(p, i) ((p)[i])
#define EM_LD_int32(p, i) ((p)[i])
#define EM_LD_int64(p, i) ((p)[i])
#define EM_LD_uint16(p, i) ((p)[i])
#define EM_LD_uint32(p, i) ((p)[i])
#define EM_LD_uint64(p, i) ((p)[i])
#define EM_LD_float32(p, i) ((p)[i])
#define EM_LD_float64(p, i) ((p)[i])
#define EM_ST_bool(p, i, v) ((p)[i] = (em_bool)(v))
#define EM_ST_uint8(p, i, v) ((p)[i] = (em_uint8)(v))
#define EM_ST_int8(p, i, v) ((p)[i] = (em_int8)(v))
#define EM_ST_int16(p, i, v) ((p)[i] = (em_int16)(v))
#define EM_ST_int32(p, i, v) ((p)[i] = (em_int32)(v))
#define EM_ST_int64(p, i, v) ((p)[i] = (em_int64)(v))
#define EM_ST_uint16(p, i, v) ((p)[i] = (em_uint16)(v))
#define EM_ST_uint32(p, i, v) ((p)[i] = (em_uint32)(v))
#define EM_ST_uint64(p, i, v) ((p)[i] = (em_uint64)(v))
#define EM_ST_float32(p, i, v) ((p)[i] = (float)(v))
#define EM_ST_float64(p, i, v) ((p)[i] = (double)(v))
/* complex64 / complex128: the structs of kernels/common/ember_complex.h (values of
   that type already: no conversion on the way) */
#define EM_LD_complex64(p, i) ((p)[i])
#define EM_LD_complex128(p, i) ((p)[i])
#define EM_ST_complex64(p, i, v) ((p)[i] = (v))
#define EM_ST_complex128(p, i, v) ((p)[i] = (v))

#define EM_CAT_(a, b) a##_##b
#define EM_CAT(a, b) EM_CAT_(a, b)
#define EM_NAME(base) EM_CAT(base, EM_DT)
#define EM_LD(p, i) EM_CAT(EM_LD, EM_DT)(p, i)
#define EM_ST(p, i, v) EM_CAT(EM_ST, EM_DT)(p, i, v)

/* Accumulators of float16/bfloat16/float32 sums: double where the device has it. */
#ifdef EM_HAS_FP64
typedef double em_wide;
#else
typedef float em_wide;
#endif

/* A strided iteration space of up to EM_MAXD dims over up to 4 operands (operand 0
 * is the output), in elements. `contig`: every tensor operand is contiguous in the
 * same order (index i is element offset + i). `scalar`: bit k set when operand k is
 * a by-value scalar argument instead of a buffer. `split`: for reductions, the
 * first `split` dims are kept, the rest reduced. All int64: the host packs it as
 * an array of int64. */
typedef struct {
    em_int64 nd, contig, scalar, split;
    em_int64 shape[EM_MAXD];
    em_int64 strides[4][EM_MAXD];
    em_int64 offset[4];
} em_layout;

/* Element offsets of flat index i (row-major over shape[lo..hi)) for operands
 * 0..nops-1 added into off[]. */
EM_INLINE void em_layout_offsets(const em_layout *L, int lo, int hi, em_int64 i, int nops,
                                 em_int64 *off) {
    for (int d = hi - 1; d >= lo; d--) {
        em_int64 s = L->shape[d], c = i % s;
        i /= s;
        for (int k = 0; k < nops; k++) off[k] += c * L->strides[k][d];
    }
}

/* Philox4x32-10 (kernels/cpu/random.c): word p of the stream of `seed` is word p % 4
 * of the block counter {lo(p / 4), hi(p / 4), 0, 0} under key {lo(seed), hi(seed)}, so
 * every device draws the CPU's numbers. */
EM_INLINE em_uint32 em_mulhi32(em_uint32 a, em_uint32 b) {
    return (em_uint32)(((em_uint64)a * b) >> 32);
}

EM_INLINE em_uint32 em_philox_word(em_uint32 key0, em_uint32 key1, em_uint64 p) {
    em_uint64 blk = p >> 2;
    em_uint32 c0 = (em_uint32)blk, c1 = (em_uint32)(blk >> 32), c2 = 0, c3 = 0;
    em_uint32 k0 = key0, k1 = key1;
    for (int r = 0; r < 10; r++) {
        em_uint32 h0 = em_mulhi32(0xD2511F53u, c0), l0 = 0xD2511F53u * c0;
        em_uint32 h1 = em_mulhi32(0xCD9E8D57u, c2), l1 = 0xCD9E8D57u * c2;
        em_uint32 n0 = h1 ^ c1 ^ k0, n2 = h0 ^ c3 ^ k1;
        c1 = l1; c3 = l0; c0 = n0; c2 = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    int w = (int)(p & 3);
    return w == 0 ? c0 : w == 1 ? c1 : w == 2 ? c2 : c3;
}

/* The op table's scalar helpers (kernels/common/ember_scalar.h, included next by
 * every program) use the device's own math library for float32 transcendentals. */
#define EM_NATIVE_MATH 1

#endif /* EMBER_DEVICE_H */
