/* a.T + b on n x n float32 (output contiguous), walked the way ember's iterator
 * does it today (64x64 tiles, one call of the generic strided loop per tile row)
 * beside alternatives. Times are thread CPU time (steadier on a shared machine).
 *   gcc -O3 -mavx2 -mfma -o /tmp/transpose_add benchmarks/c/transpose_add.c
 *   /tmp/transpose_add 4096        (n: a multiple of 256) */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static float *huge(size_t n){size_t sz=n*4, span=sz+(2<<20);char*r=mmap(0,span,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
 char*a=(char*)(((uintptr_t)r+(2<<20)-1)&~((uintptr_t)(2<<20)-1)); madvise(a,sz,MADV_HUGEPAGE); return (float*)a;}
// current: generic strided inner loop (as em_ew_add_float32 fallback), TILE x TILE tiles
__attribute__((noinline)) static void loop_generic(char **p,const int64_t*s,int64_t n){
  for(int64_t i=0;i<n;i++) *(float*)(p[0]+i*s[0]) = *(const float*)(p[1]+i*s[1]) + *(const float*)(p[2]+i*s[2]);}
static void tiled(int T,float*o,const float*a,const float*b,int64_t n){
  int64_t s[3]={4,n*4,4};
  for(int64_t i0=0;i0<n;i0+=T) for(int64_t j0=0;j0<n;j0+=T) for(int64_t i=i0;i<i0+T;i++){
    char*q[3]={(char*)(o+i*n+j0),(char*)(a+j0*n+i),(char*)(b+i*n+j0)}; loop_generic(q,s,T);} }
// 8x8 register transpose of a block of a, then add b rows
static inline void tr8(__m256 r[8]){
  __m256 t0=_mm256_unpacklo_ps(r[0],r[1]),t1=_mm256_unpackhi_ps(r[0],r[1]),t2=_mm256_unpacklo_ps(r[2],r[3]),t3=_mm256_unpackhi_ps(r[2],r[3]);
  __m256 t4=_mm256_unpacklo_ps(r[4],r[5]),t5=_mm256_unpackhi_ps(r[4],r[5]),t6=_mm256_unpacklo_ps(r[6],r[7]),t7=_mm256_unpackhi_ps(r[6],r[7]);
  __m256 u0=_mm256_shuffle_ps(t0,t2,0x44),u1=_mm256_shuffle_ps(t0,t2,0xEE),u2=_mm256_shuffle_ps(t1,t3,0x44),u3=_mm256_shuffle_ps(t1,t3,0xEE);
  __m256 u4=_mm256_shuffle_ps(t4,t6,0x44),u5=_mm256_shuffle_ps(t4,t6,0xEE),u6=_mm256_shuffle_ps(t5,t7,0x44),u7=_mm256_shuffle_ps(t5,t7,0xEE);
  r[0]=_mm256_permute2f128_ps(u0,u4,0x20);r[1]=_mm256_permute2f128_ps(u1,u5,0x20);r[2]=_mm256_permute2f128_ps(u2,u6,0x20);r[3]=_mm256_permute2f128_ps(u3,u7,0x20);
  r[4]=_mm256_permute2f128_ps(u0,u4,0x31);r[5]=_mm256_permute2f128_ps(u1,u5,0x31);r[6]=_mm256_permute2f128_ps(u2,u6,0x31);r[7]=_mm256_permute2f128_ps(u3,u7,0x31);}
static void reg8(int T,float*o,const float*a,const float*b,int64_t n){
  for(int64_t i0=0;i0<n;i0+=T) for(int64_t j0=0;j0<n;j0+=T)
   for(int64_t jb=j0;jb<j0+T;jb+=8) for(int64_t ib=i0;ib<i0+T;ib+=8){
     __m256 r[8]; for(int k=0;k<8;k++) r[k]=_mm256_loadu_ps(a+(jb+k)*n+ib); tr8(r);
     for(int k=0;k<8;k++) _mm256_storeu_ps(o+(ib+k)*n+jb,_mm256_add_ps(r[k],_mm256_loadu_ps(b+(ib+k)*n+jb)));}}
// copy a's TxT block transposed into a buffer (reading a's rows contiguously), then a contiguous add
static void bufT(int T,float*o,const float*a,const float*b,int64_t n){
  float buf[64*64];
  for(int64_t i0=0;i0<n;i0+=T) for(int64_t j0=0;j0<n;j0+=T){
    for(int64_t j=0;j<T;j++) for(int64_t i=0;i<T;i++) buf[i*T+j]=a[(j0+j)*n+i0+i];
    for(int64_t i=0;i<T;i++){float*O=o+(i0+i)*n+j0;const float*B=b+(i0+i)*n+j0;const float*X=buf+i*T; for(int64_t j=0;j<T;j++)O[j]=X[j]+B[j];}}}
// 16x16 blocks: every cache line of a, b and o is fully used within one block
static void reg16(int T,float*o,const float*a,const float*b,int64_t n){
  (void)T;
  for(int64_t i0=0;i0<n;i0+=16) for(int64_t j0=0;j0<n;j0+=16)
   for(int jh=0;jh<16;jh+=8) for(int ih=0;ih<16;ih+=8){
     __m256 r[8]; for(int k=0;k<8;k++) r[k]=_mm256_loadu_ps(a+(j0+jh+k)*n+i0+ih); tr8(r);
     for(int k=0;k<8;k++){int64_t off=(i0+ih+k)*n+j0+jh; _mm256_storeu_ps(o+off,_mm256_add_ps(r[k],_mm256_loadu_ps(b+off)));}}}
// same, loop order: a's 16 rows loaded as full lines first (ih inner), then
static void reg16b(int T,float*o,const float*a,const float*b,int64_t n){
  (void)T;
  for(int64_t j0=0;j0<n;j0+=16) for(int64_t i0=0;i0<n;i0+=16)
   for(int jh=0;jh<16;jh+=8) for(int ih=0;ih<16;ih+=8){
     __m256 r[8]; for(int k=0;k<8;k++) r[k]=_mm256_loadu_ps(a+(j0+jh+k)*n+i0+ih); tr8(r);
     for(int k=0;k<8;k++){int64_t off=(i0+ih+k)*n+j0+jh; _mm256_storeu_ps(o+off,_mm256_add_ps(r[k],_mm256_loadu_ps(b+off)));}}}
// scalar 16-row band: a read line by line, o and b walked 16 rows at once
static void band16(int T,float*o,const float*a,const float*b,int64_t n){
  (void)T;
  for(int64_t i0=0;i0<n;i0+=16) for(int64_t j=0;j<n;j++){const float*A=a+j*n+i0; for(int k=0;k<16;k++) o[(i0+k)*n+j]=A[k]+b[(i0+k)*n+j];}}
static void contig(int T,float*o,const float*a,const float*b,int64_t n){(void)T; for(int64_t i=0;i<n*n;i++) o[i]=a[i]+b[i];}
int main(int argc,char**argv){
  int64_t n=argc>1?atoll(argv[1]):4096; size_t N=n*n;
  if(n%256){fprintf(stderr,"n must be a multiple of 256\n");return 2;}
  float*a=huge(N),*b=huge(N),*o=huge(N),*ref=malloc(N*4);
  for(size_t i=0;i<N;i++){a[i]=(float)(i%1000)*0.001f;b[i]=(float)(i%777);}
  for(int64_t i=0;i<n;i++)for(int64_t j=0;j<n;j++)ref[i*n+j]=a[j*n+i]+b[i*n+j];
  struct {const char*name;void(*f)(int,float*,const float*,const float*,int64_t);int T;} V[]={
   {"generic tile64 (current)",tiled,64},{"generic tile32",tiled,32},{"generic tile16",tiled,16},{"generic tile8",tiled,8},
   {"avx2 8x8 regs, tile64",reg8,64},{"avx2 8x8 regs, tile32",reg8,32},{"avx2 8x8 regs, tile128",reg8,128},{"avx2 8x8 regs, tile256",reg8,256},{"buffered tile64",bufT,64},{"buffered tile32",bufT,32},{"avx2 16x16 full lines, row-major",reg16,16},{"avx2 16x16 full lines, col-major",reg16b,16},{"scalar 16-row band",band16,16},{"(contiguous a+b, reference)",contig,0}};
  for(size_t v=0;v<sizeof V/sizeof*V;v++){
    memset(o,0,N*4); V[v].f(V[v].T,o,a,b,n); if(V[v].f!=contig && memcmp(o,ref,N*4)){printf("%s WRONG\n",V[v].name);continue;}
    double best[7]; for(int r=0;r<7;r++){double t=now();V[v].f(V[v].T,o,a,b,n);best[r]=now()-t;}
    for(int i=0;i<7;i++)for(int j=i+1;j<7;j++)if(best[j]<best[i]){double x=best[i];best[i]=best[j];best[j]=x;}
    printf("n=%ld %-34s median %7.2f ms  %5.1f GB/s\n",(long)n,V[v].name,best[3]*1e3,3.0*N*4/best[3]/1e9);}
}
