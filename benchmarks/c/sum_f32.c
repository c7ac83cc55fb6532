/* Contiguous float32 sum and sum over dim 0, as ember's generated loops do them
 * today (em_red_run: pairwise above 1024, 8 double accumulators, compiled for the
 * baseline only; em_red_outer: one input row per pass) beside alternatives.
 * Thread CPU time, best of reps.
 *   gcc -O3 -fno-math-errno -fno-trapping-math -o /tmp/sum_f32 benchmarks/c/sum_f32.c
 *   /tmp/sum_f32 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static float *huge(size_t n){size_t sz=n*4, span=sz+(2<<20);char*r=mmap(0,span,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
 char*a=(char*)(((uintptr_t)r+(2<<20)-1)&~((uintptr_t)(2<<20)-1)); madvise(a,sz,MADV_HUGEPAGE); return (float*)a;}
#define RUN_BODY \
    if (n > 1024) { int64_t h = (n / 2) & ~(int64_t)7; return NAME(in, h) + NAME(in + h, n - h); } \
    double a[8]; for (int k = 0; k < 8; k++) a[k] = 0; int64_t i = 0; \
    for (; i + 8 <= n; i += 8) for (int k = 0; k < 8; k++) a[k] += (double)in[i + k]; \
    for (; i < n; i++) { a[0] += in[i]; } double r = a[0]; for (int k = 1; k < 8; k++) r += a[k]; return r;
#define NAME run_base
__attribute__((noinline)) static double run_base(const float *in, int64_t n) { RUN_BODY }
#undef NAME
#define NAME run_avx2
__attribute__((noinline,target("avx2,fma"))) static double run_avx2(const float *in, int64_t n) { RUN_BODY }
#undef NAME
// keeps double accumulation, AVX2 with 16 doubles (4 ymm chains) so adds are not latency-bound
__attribute__((noinline,target("avx2,fma"))) static double run_d16(const float *in, int64_t n) {
    if (n > 1024) { int64_t h = (n / 2) & ~(int64_t)15; return run_d16(in, h) + run_d16(in + h, n - h); }
    __m256d s0=_mm256_setzero_pd(),s1=s0,s2=s0,s3=s0; int64_t i=0;
    for (; i + 16 <= n; i += 16) {
        s0=_mm256_add_pd(s0,_mm256_cvtps_pd(_mm_loadu_ps(in+i)));   s1=_mm256_add_pd(s1,_mm256_cvtps_pd(_mm_loadu_ps(in+i+4)));
        s2=_mm256_add_pd(s2,_mm256_cvtps_pd(_mm_loadu_ps(in+i+8))); s3=_mm256_add_pd(s3,_mm256_cvtps_pd(_mm_loadu_ps(in+i+12))); }
    __m256d s=_mm256_add_pd(_mm256_add_pd(s0,s1),_mm256_add_pd(s2,s3)); double t[4]; _mm256_storeu_pd(t,s);
    double r=(t[0]+t[1])+(t[2]+t[3]); for(;i<n;i++) r+=in[i]; return r; }
// float32 lanes within a 1024-element leaf (4 x 8 lanes: each lane adds 32 numbers), double above
__attribute__((noinline,target("avx2,fma"))) static double run_f32(const float *in, int64_t n) {
    if (n > 1024) { int64_t h = (n / 2) & ~(int64_t)31; return run_f32(in, h) + run_f32(in + h, n - h); }
    __m256 s0=_mm256_setzero_ps(),s1=s0,s2=s0,s3=s0; int64_t i=0;
    for (; i + 32 <= n; i += 32) { s0=_mm256_add_ps(s0,_mm256_loadu_ps(in+i)); s1=_mm256_add_ps(s1,_mm256_loadu_ps(in+i+8));
        s2=_mm256_add_ps(s2,_mm256_loadu_ps(in+i+16)); s3=_mm256_add_ps(s3,_mm256_loadu_ps(in+i+24)); }
    __m256 s=_mm256_add_ps(_mm256_add_ps(s0,s1),_mm256_add_ps(s2,s3)); float t[8]; _mm256_storeu_ps(t,s);
    double r=0; for(int k=0;k<8;k++) r+=t[k]; for(;i<n;i++) r+=in[i]; return r; }
__attribute__((noinline,target("avx2,fma"))) static void outer1(float*o,const float*x,int64_t rows,int64_t n){
    for(int64_t j=0;j<rows;j++){const float*X=x+j*n; for(int64_t i=0;i<n;i++) o[i]+=X[i];}}
__attribute__((noinline,target("avx2,fma"))) static void outer4(float*o,const float*x,int64_t rows,int64_t n){
    int64_t j=0; for(;j+4<=rows;j+=4){const float*A=x+j*n,*B=A+n,*C=B+n,*D=C+n; for(int64_t i=0;i<n;i++) o[i]+=((A[i]+B[i])+(C[i]+D[i]));}
    for(int64_t t=0;t<rows%4;t++){const float*X=x+(j+t)*n; for(int64_t i=0;i<n;i++) o[i]+=X[i];}}
#define BENCH(label, expr, bytes) do { double best=1e9; volatile double sink=0; for(int r=0;r<reps;r++){__asm__ volatile("" ::: "memory"); double t=now(); sink+=(expr); t=now()-t; if(t<best)best=t;} \
    printf("%-34s %8.3f ms %6.1f GB/s\n", label, best*1e3, (bytes)/best/1e9); } while(0)
int main(void){
  int64_t N=16777216; float*x=huge(N); for(int64_t i=0;i<N;i++) x[i]=(float)((i*2654435761u)%1000)/1000.f;
  float*o=huge(4096);
  int64_t sizes[]={100000, 10000000}; 
  for(int s=0;s<2;s++){int64_t n=sizes[s]; int reps=n<1e6?2000:30; char l[64];
    sprintf(l,"sum n=%ld base(sse2,double)",(long)n); BENCH(l, run_base(x,n), n*4.0);
    sprintf(l,"sum n=%ld avx2,double",(long)n); BENCH(l, run_avx2(x,n), n*4.0);
    sprintf(l,"sum n=%ld avx2,double x16",(long)n); BENCH(l, run_d16(x,n), n*4.0);
    sprintf(l,"sum n=%ld avx2,f32 leaves",(long)n); BENCH(l, run_f32(x,n), n*4.0);}
  int reps=30;
  BENCH("sum dim0 4096^2, 1 row/pass", (outer1(o,x,4096,4096),o[0]), N*4.0);
  BENCH("sum dim0 4096^2, 4 rows/pass", (outer4(o,x,4096,4096),o[0]), N*4.0);
  printf("check %.6f %.6f %.6f %.6f\n", run_base(x,N), run_avx2(x,N), run_d16(x,N), run_f32(x,N));
}
