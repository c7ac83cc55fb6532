/* expf / tanhf over 256 floats (one 16x16 tensor), ns per element:
 * with ember's flags (scalar libm calls) and with glibc's vector math (libmvec).
 *   gcc -O3 -mavx2 -mfma -fno-math-errno -fno-trapping-math -o /tmp/vm_scalar benchmarks/c/vec_math.c -lm
 *   gcc -O3 -mavx2 -mfma -ffast-math -o /tmp/vm_libmvec benchmarks/c/vec_math.c -lmvec -lm
 *   /tmp/vm_scalar; /tmp/vm_libmvec */
#include <math.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
__attribute__((noinline)) void k_exp(float*restrict o,const float*restrict a,long n){for(long i=0;i<n;i++)o[i]=expf(a[i]);}
__attribute__((noinline)) void k_tanh(float*restrict o,const float*restrict a,long n){for(long i=0;i<n;i++)o[i]=tanhf(a[i]);}
int main(void){ static float a[256],o[256]; for(int i=0;i<256;i++)a[i]=0.5f+i/256.f;
  double t=now(); for(int r=0;r<200000;r++) k_exp(o,a,256); double te=(now()-t)/200000/256*1e9;
  t=now(); for(int r=0;r<200000;r++) k_tanh(o,a,256); double tt=(now()-t)/200000/256*1e9;
  printf("exp %.2f ns/elem  tanh %.2f ns/elem  (256-elem loop; o[100]=%g)\n",te,tt,o[100]); }
