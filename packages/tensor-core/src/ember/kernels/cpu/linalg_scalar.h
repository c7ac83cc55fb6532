/* The scalar macros shared by linalg_impl.h and linalg_herm.h, for the T, R, SFX and
 * CPLX they are included with (each undefines these at its end): FN(name) suffixes a
 * kernel's name by its dtype, CONJ/RE/IM are identities and zero for real T. */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)
#if CPLX
#define CONJ(x) conj(x)
#define RE(x) creal(x)
#define IM(x) cimag(x)
#else
#define CONJ(x) (x)
#define RE(x) (x)
#define IM(x) ((R)0)
#endif
