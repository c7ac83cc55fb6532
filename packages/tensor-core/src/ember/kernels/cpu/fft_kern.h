/* The butterfly passes of kernels/cpu/fft.c, a template included once per (real type,
 * complex vector type): T is the real type, OPS the prefix of the vector operations
 * (OPS_t the type of VL complex numbers, OPS_ld/st/add/sub/mul/rotp/rotm/scale/fma),
 * KSUF the suffix of the functions made here.
 *
 * Each pass is one Stockham step of decimation in frequency (as FFTPACK's): with
 * l1 the product of the radices before it and ido = n / (l1 * ip), input entry
 * (i, j, k) = cc[i + ido * (j + ip * k)] and output (i, k, j) = ch[i + ido * (k + l1 * j)],
 * the butterfly runs over j and output j > 0 is multiplied by the twiddle
 * tw[(j - 1) * ido + i] (NULL when ido == 1). A pass covers i in [i0, i1) in steps of
 * VL, so the vector loop and the scalar tail are two calls.
 *
 * With FK_BATCH, a pass transforms B adjacent lines at once (FK_RANGE is B instead of
 * i0, i1): each entry above is a row of B complex numbers (entry e, line b at
 * 2 (B e + b)), the butterflies run over b in steps of VL with one twiddle broadcast
 * to every lane, so the loads are whole vectors however short ido is. */
#define FK_CAT_(a, b) a##b
#define FK_CAT(a, b) FK_CAT_(a, b)
#define O(x) FK_CAT(OPS, FK_CAT(_, x))
#define KN(x) FK_CAT(x, FK_CAT(_, KSUF))
#define CV O(t)
#ifdef FK_BATCH
#define FK_RANGE int64_t B
#define FK_LOOP                                                                         \
    for (int64_t k = 0; k < l1; k++)                                                    \
        for (int64_t i = 0; i < ido; i++)                                               \
            for (int64_t b = 0; b < B; b += VL)
#define EL(e) (B * (e) + b)
#define TWL(j, i) O(bc)(tw + 2 * (((j) - 1) * ido + (i)))
#else
#define FK_RANGE int64_t i0, int64_t i1
#define FK_LOOP                                                                         \
    for (int64_t k = 0; k < l1; k++)                                                    \
        for (int64_t i = i0; i < i1; i += VL)
#define EL(e) (e)
#define TWL(j, i) O(ld)(tw + 2 * (((j) - 1) * ido + (i)))
#endif
#define CC(i, j) (cc + 2 * EL((i) + ido * ((j) + IP * k)))
#define CH(i, j) (ch + 2 * EL((i) + ido * (k + l1 * (j))))
#define ROT(fwd, a) ((fwd) ? O(rotm)(a) : O(rotp)(a))   /* times -i (forward) or +i */

static void KN(pass2)(int64_t ido, int64_t l1, FK_RANGE, const T *restrict cc,
                      T *restrict ch, const T *restrict tw, int fwd) {
    enum { IP = 2 };
    (void)fwd;
    FK_LOOP {
            CV a0 = O(ld)(CC(i, 0)), a1 = O(ld)(CC(i, 1));
            CV y1 = O(sub)(a0, a1);
            O(st)(CH(i, 0), O(add)(a0, a1));
            if (tw) y1 = O(mul)(y1, TWL(1, i));
            O(st)(CH(i, 1), y1);
        }
}

static void KN(pass4)(int64_t ido, int64_t l1, FK_RANGE, const T *restrict cc,
                      T *restrict ch, const T *restrict tw, int fwd) {
    enum { IP = 4 };
    FK_LOOP {
            CV a0 = O(ld)(CC(i, 0)), a1 = O(ld)(CC(i, 1)), a2 = O(ld)(CC(i, 2)),
               a3 = O(ld)(CC(i, 3));
            CV t1 = O(sub)(a0, a2), t2 = O(add)(a0, a2), t3 = O(add)(a1, a3),
               t4 = ROT(fwd, O(sub)(a1, a3));
            CV y1 = O(add)(t1, t4), y2 = O(sub)(t2, t3), y3 = O(sub)(t1, t4);
            O(st)(CH(i, 0), O(add)(t2, t3));
            if (tw) {
                y1 = O(mul)(y1, TWL(1, i));
                y2 = O(mul)(y2, TWL(2, i));
                y3 = O(mul)(y3, TWL(3, i));
            }
            O(st)(CH(i, 1), y1);
            O(st)(CH(i, 2), y2);
            O(st)(CH(i, 3), y3);
        }
}

/* radix 8: a radix-2 step (j, j + 4) with the eighth roots, then two radix-4 steps */
static void KN(pass8)(int64_t ido, int64_t l1, FK_RANGE, const T *restrict cc,
                      T *restrict ch, const T *restrict tw, int fwd) {
    enum { IP = 8 };
    const T h = (T)0.70710678118654752440;
    FK_LOOP {
            CV a0 = O(ld)(CC(i, 0)), a1 = O(ld)(CC(i, 1)), a2 = O(ld)(CC(i, 2)),
               a3 = O(ld)(CC(i, 3)), a4 = O(ld)(CC(i, 4)), a5 = O(ld)(CC(i, 5)),
               a6 = O(ld)(CC(i, 6)), a7 = O(ld)(CC(i, 7));
            CV b0 = O(add)(a0, a4), b1 = O(add)(a1, a5), b2 = O(add)(a2, a6),
               b3 = O(add)(a3, a7);
            CV c0 = O(sub)(a0, a4), c1 = O(sub)(a1, a5), c2 = O(sub)(a2, a6),
               c3 = O(sub)(a3, a7);
            /* c_j times w8^j, w8 = exp(sign i pi / 4) = (1 + sign i) / sqrt 2 */
            c1 = O(scale)(O(add)(c1, ROT(fwd, c1)), h);
            c2 = ROT(fwd, c2);
            c3 = O(scale)(O(sub)(ROT(fwd, c3), c3), h);
            CV t1 = O(sub)(b0, b2), t2 = O(add)(b0, b2), t3 = O(add)(b1, b3),
               t4 = ROT(fwd, O(sub)(b1, b3));
            CV y0 = O(add)(t2, t3), y4 = O(sub)(t2, t3), y2 = O(add)(t1, t4),
               y6 = O(sub)(t1, t4);
            t1 = O(sub)(c0, c2);
            t2 = O(add)(c0, c2);
            t3 = O(add)(c1, c3);
            t4 = ROT(fwd, O(sub)(c1, c3));
            CV y1 = O(add)(t2, t3), y5 = O(sub)(t2, t3), y3 = O(add)(t1, t4),
               y7 = O(sub)(t1, t4);
            O(st)(CH(i, 0), y0);
            if (tw) {
                y1 = O(mul)(y1, TWL(1, i));
                y2 = O(mul)(y2, TWL(2, i));
                y3 = O(mul)(y3, TWL(3, i));
                y4 = O(mul)(y4, TWL(4, i));
                y5 = O(mul)(y5, TWL(5, i));
                y6 = O(mul)(y6, TWL(6, i));
                y7 = O(mul)(y7, TWL(7, i));
            }
            O(st)(CH(i, 1), y1);
            O(st)(CH(i, 2), y2);
            O(st)(CH(i, 3), y3);
            O(st)(CH(i, 4), y4);
            O(st)(CH(i, 5), y5);
            O(st)(CH(i, 6), y6);
            O(st)(CH(i, 7), y7);
        }
}

static void KN(pass3)(int64_t ido, int64_t l1, FK_RANGE, const T *restrict cc,
                      T *restrict ch, const T *restrict tw, int fwd) {
    enum { IP = 3 };
    const T c1 = (T)-0.5, s1 = (T)((fwd ? -1 : 1) * 0.86602540378443864676);
    FK_LOOP {
            CV a0 = O(ld)(CC(i, 0)), a1 = O(ld)(CC(i, 1)), a2 = O(ld)(CC(i, 2));
            CV t1 = O(add)(a1, a2), t2 = O(sub)(a1, a2);
            CV ca = O(fma)(t1, c1, a0), cb = O(rotp)(O(scale)(t2, s1));
            CV y1 = O(add)(ca, cb), y2 = O(sub)(ca, cb);
            O(st)(CH(i, 0), O(add)(a0, t1));
            if (tw) {
                y1 = O(mul)(y1, TWL(1, i));
                y2 = O(mul)(y2, TWL(2, i));
            }
            O(st)(CH(i, 1), y1);
            O(st)(CH(i, 2), y2);
        }
}

static void KN(pass5)(int64_t ido, int64_t l1, FK_RANGE, const T *restrict cc,
                      T *restrict ch, const T *restrict tw, int fwd) {
    enum { IP = 5 };
    const double sg = fwd ? -1 : 1;
    const T c1 = (T)0.3090169943749474241, s1 = (T)(sg * 0.95105651629515357212),
            c2 = (T)-0.8090169943749474241, s2 = (T)(sg * 0.58778525229247312917);
    FK_LOOP {
            CV a0 = O(ld)(CC(i, 0)), a1 = O(ld)(CC(i, 1)), a2 = O(ld)(CC(i, 2)),
               a3 = O(ld)(CC(i, 3)), a4 = O(ld)(CC(i, 4));
            CV t1 = O(add)(a1, a4), t4 = O(sub)(a1, a4), t2 = O(add)(a2, a3),
               t3 = O(sub)(a2, a3);
            O(st)(CH(i, 0), O(add)(a0, O(add)(t1, t2)));
            CV ca = O(fma)(t2, c2, O(fma)(t1, c1, a0));
            CV cb = O(rotp)(O(fma)(t3, s2, O(scale)(t4, s1)));
            CV y1 = O(add)(ca, cb), y4 = O(sub)(ca, cb);
            ca = O(fma)(t2, c1, O(fma)(t1, c2, a0));
            cb = O(rotp)(O(fma)(t3, -s1, O(scale)(t4, s2)));
            CV y2 = O(add)(ca, cb), y3 = O(sub)(ca, cb);
            if (tw) {
                y1 = O(mul)(y1, TWL(1, i));
                y2 = O(mul)(y2, TWL(2, i));
                y3 = O(mul)(y3, TWL(3, i));
                y4 = O(mul)(y4, TWL(4, i));
            }
            O(st)(CH(i, 1), y1);
            O(st)(CH(i, 2), y2);
            O(st)(CH(i, 3), y3);
            O(st)(CH(i, 4), y4);
        }
}

static void KN(pass7)(int64_t ido, int64_t l1, FK_RANGE, const T *restrict cc,
                      T *restrict ch, const T *restrict tw, int fwd) {
    enum { IP = 7 };
    const double sg = fwd ? -1 : 1;
    const T c1 = (T)0.623489801858733530525, s1 = (T)(sg * 0.7818314824680298087084),
            c2 = (T)-0.222520933956314404289, s2 = (T)(sg * 0.9749279121818236070181),
            c3 = (T)-0.9009688679024191262361, s3 = (T)(sg * 0.4338837391175581204758);
    FK_LOOP {
            CV a0 = O(ld)(CC(i, 0)), a1 = O(ld)(CC(i, 1)), a2 = O(ld)(CC(i, 2)),
               a3 = O(ld)(CC(i, 3)), a4 = O(ld)(CC(i, 4)), a5 = O(ld)(CC(i, 5)),
               a6 = O(ld)(CC(i, 6));
            CV p1 = O(add)(a1, a6), m1 = O(sub)(a1, a6), p2 = O(add)(a2, a5),
               m2 = O(sub)(a2, a5), p3 = O(add)(a3, a4), m3 = O(sub)(a3, a4);
            O(st)(CH(i, 0), O(add)(a0, O(add)(p1, O(add)(p2, p3))));
            CV ca = O(fma)(p3, c3, O(fma)(p2, c2, O(fma)(p1, c1, a0)));
            CV cb = O(rotp)(O(fma)(m3, s3, O(fma)(m2, s2, O(scale)(m1, s1))));
            CV y1 = O(add)(ca, cb), y6 = O(sub)(ca, cb);
            ca = O(fma)(p3, c1, O(fma)(p2, c3, O(fma)(p1, c2, a0)));
            cb = O(rotp)(O(fma)(m3, -s1, O(fma)(m2, -s3, O(scale)(m1, s2))));
            CV y2 = O(add)(ca, cb), y5 = O(sub)(ca, cb);
            ca = O(fma)(p3, c2, O(fma)(p2, c1, O(fma)(p1, c3, a0)));
            cb = O(rotp)(O(fma)(m3, s2, O(fma)(m2, -s1, O(scale)(m1, s3))));
            CV y3 = O(add)(ca, cb), y4 = O(sub)(ca, cb);
            if (tw) {
                y1 = O(mul)(y1, TWL(1, i));
                y2 = O(mul)(y2, TWL(2, i));
                y3 = O(mul)(y3, TWL(3, i));
                y4 = O(mul)(y4, TWL(4, i));
                y5 = O(mul)(y5, TWL(5, i));
                y6 = O(mul)(y6, TWL(6, i));
            }
            O(st)(CH(i, 1), y1);
            O(st)(CH(i, 2), y2);
            O(st)(CH(i, 3), y3);
            O(st)(CH(i, 4), y4);
            O(st)(CH(i, 5), y5);
            O(st)(CH(i, 6), y6);
        }
}

/* Any odd radix ip <= FFT_MAX_GENERIC: the direct DFT over j, pairing j with ip - j.
 * roots[2 m], roots[2 m + 1] = cos, sin(sign 2 pi m / ip). */
static void KN(passg)(int64_t IP, int64_t ido, int64_t l1, FK_RANGE,
                      const T *restrict cc, T *restrict ch, const T *restrict tw,
                      const T *restrict roots) {
    const int64_t h = (IP - 1) / 2;
    CV tp[FFT_MAX_GENERIC / 2 + 1], tm[FFT_MAX_GENERIC / 2 + 1];
    FK_LOOP {
            CV a0 = O(ld)(CC(i, 0)), s = a0;
            for (int64_t j = 1; j <= h; j++) {
                CV x = O(ld)(CC(i, j)), y = O(ld)(CC(i, IP - j));
                tp[j] = O(add)(x, y);
                tm[j] = O(sub)(x, y);
                s = O(add)(s, tp[j]);
            }
            O(st)(CH(i, 0), s);
            for (int64_t m = 1; m <= h; m++) {
                CV ca = a0, cb = O(scale)(tm[1], roots[2 * m + 1]);
                ca = O(fma)(tp[1], roots[2 * m], ca);
                int64_t q = m;
                for (int64_t j = 2; j <= h; j++) {
                    q += m;
                    if (q >= IP) q -= IP;
                    ca = O(fma)(tp[j], roots[2 * q], ca);
                    cb = O(fma)(tm[j], roots[2 * q + 1], cb);
                }
                cb = O(rotp)(cb);
                CV y1 = O(add)(ca, cb), y2 = O(sub)(ca, cb);
                if (tw) {
                    y1 = O(mul)(y1, TWL(m, i));
                    y2 = O(mul)(y2, TWL(IP - m, i));
                }
                O(st)(CH(i, m), y1);
                O(st)(CH(i, IP - m), y2);
            }
        }
}

#ifndef FK_BATCH
/* Real passes (odd radix P, FFTPACK's radf / radb in a Stockham order): a real
 * transform is a sequence of them over halfcomplex spectra (length L odd: entry 0 the
 * real X_0, then Re X_k, Im X_k for k = 1 .. (L - 1) / 2). The forward pass turns
 * the P spectra of length L at in + (g + r K) L (the decimated lines x[g + K (P j + r)],
 * r < P) into the spectrum of length P L at out + g P L: X[k + q L] = sum_r w_P^(rq)
 * W_PL^(rk) Y_r[k], X[-f] = conj X[f]; the backward pass undoes it (the inverse
 * radix-P DFT, then the conjugate twiddles; unnormalised). tw[(r - 1) hL + k - 1] =
 * W_PL^(rk) and rt[e] = w_P^e carry the direction's sign. These cover k >= 1; k = 0 is
 * real (rpass0f / rpass0b in fft_drv.h). */

/* U_q = sum_r u_r rt^(rq), q < P: the radix-P DFT both passes share. */
FFT_INLINE void KN(rdft)(const int64_t P, const CV *u, CV *U, const T *restrict rt) {
    const int64_t S = (P - 1) / 2;
    CV tp[FFT_MAX_GENERIC / 2 + 1], tm[FFT_MAX_GENERIC / 2 + 1], s0 = u[0];
    for (int64_t r = 1; r <= S; r++) {
        tp[r] = O(add)(u[r], u[P - r]);
        tm[r] = O(sub)(u[r], u[P - r]);
        s0 = O(add)(s0, tp[r]);
    }
    U[0] = s0;
    for (int64_t q = 1; q <= S; q++) {
        CV a = O(fma)(tp[1], rt[2 * q], u[0]), b = O(scale)(tm[1], rt[2 * q + 1]);
        int64_t e = q;
        for (int64_t r = 2; r <= S; r++) {
            e += q;
            if (e >= P) e -= P;
            a = O(fma)(tp[r], rt[2 * e], a);
            b = O(fma)(tm[r], rt[2 * e + 1], b);
        }
        b = O(rotp)(b);
        U[q] = O(add)(a, b);
        U[P - q] = O(sub)(a, b);
    }
}

/* Entry k of a halfcomplex spectrum (k >= 1). */
#define HC(p, k) ((p) + 2 * (k) - 1)

/* g in [g0, g1), k in [k0, k1): VL values of k at a time (lines of length L >= 2 VL + 1,
 * the far half of the spectrum stored reversed), or with byg VL lines g at a time
 * (short lines: strided loads and stores, one twiddle for every lane). */
FFT_INLINE void KN(rpassf_)(const int64_t P, const int byg, int64_t L, int64_t K,
                            int64_t g0, int64_t g1, int64_t k0, int64_t k1,
                            const T *restrict in, T *restrict out, const T *restrict tw,
                            const T *restrict rt) {
    const int64_t hL = (L - 1) / 2, S = (P - 1) / 2, KL = K * L, PL = P * L;
    for (int64_t g = g0; g < g1; g += byg ? VL : 1) {
        const T *c = in + g * L;
        T *o = out + g * PL;
        for (int64_t k = k0; k < k1; k += byg ? 1 : VL) {
            CV u[FFT_MAX_GENERIC], U[FFT_MAX_GENERIC];
            u[0] = byg ? O(ldg)(HC(c, k), L) : O(ld)(HC(c, k));
            for (int64_t r = 1; r < P; r++) {
                const T *w = tw + 2 * ((r - 1) * hL + k - 1);
                u[r] = byg ? O(mul)(O(ldg)(HC(c + r * KL, k), L), O(bc)(w))
                           : O(mul)(O(ld)(HC(c + r * KL, k)), O(ld)(w));
            }
            KN(rdft)(P, u, U, rt);
            if (byg) O(stg)(HC(o, k), PL, U[0]);
            else O(st)(HC(o, k), U[0]);
            for (int64_t q = 1; q <= S; q++) {    /* X[k + q L], conj X[(P - q) L + k] */
                if (byg) {
                    O(stg)(HC(o, k + q * L), PL, U[q]);
                    O(stg)(HC(o, q * L - k), PL, O(conj)(U[P - q]));
                } else {
                    O(st)(HC(o, k + q * L), U[q]);
                    O(st)(HC(o, q * L - k - VL + 1), O(rev)(O(conj)(U[P - q])));
                }
            }
        }
    }
}

FFT_INLINE void KN(rpassb_)(const int64_t P, const int byg, int64_t L, int64_t K,
                            int64_t g0, int64_t g1, int64_t k0, int64_t k1,
                            const T *restrict in, T *restrict out, const T *restrict tw,
                            const T *restrict rt) {
    const int64_t hL = (L - 1) / 2, S = (P - 1) / 2, KL = K * L, PL = P * L;
    for (int64_t g = g0; g < g1; g += byg ? VL : 1) {
        const T *c = in + g * PL;
        T *o = out + g * L;
        for (int64_t k = k0; k < k1; k += byg ? 1 : VL) {
            CV u[FFT_MAX_GENERIC], U[FFT_MAX_GENERIC];
            if (byg) {
                u[0] = O(ldg)(HC(c, k), PL);
                for (int64_t q = 1; q <= S; q++) {
                    u[q] = O(ldg)(HC(c, k + q * L), PL);
                    u[P - q] = O(conj)(O(ldg)(HC(c, q * L - k), PL));
                }
            } else {
                u[0] = O(ld)(HC(c, k));
                for (int64_t q = 1; q <= S; q++) {
                    u[q] = O(ld)(HC(c, k + q * L));
                    u[P - q] = O(conj)(O(rev)(O(ld)(HC(c, q * L - k - VL + 1))));
                }
            }
            KN(rdft)(P, u, U, rt);
            if (byg) O(stg)(HC(o, k), L, U[0]);
            else O(st)(HC(o, k), U[0]);
            for (int64_t r = 1; r < P; r++) {
                const T *w = tw + 2 * ((r - 1) * hL + k - 1);
                if (byg) O(stg)(HC(o + r * KL, k), L, O(mul)(U[r], O(bc)(w)));
                else O(st)(HC(o + r * KL, k), O(mul)(U[r], O(ld)(w)));
            }
        }
    }
}
#undef HC

/* constant P for 3, 5, 7 (the loops unrolled) */
#define FK_RPASS(name)                                                                  \
    static void KN(name)(int64_t P, int byg, int64_t L, int64_t K, int64_t g0,         \
                         int64_t g1, int64_t k0, int64_t k1, const T *restrict in,      \
                         T *restrict out, const T *restrict tw, const T *restrict rt) { \
        if (byg && VL > 1) {                                                            \
            switch (P) {                                                                \
            case 3: KN(name##_)(3, 1, L, K, g0, g1, k0, k1, in, out, tw, rt); break;    \
            case 5: KN(name##_)(5, 1, L, K, g0, g1, k0, k1, in, out, tw, rt); break;    \
            case 7: KN(name##_)(7, 1, L, K, g0, g1, k0, k1, in, out, tw, rt); break;    \
            default: KN(name##_)(P, 1, L, K, g0, g1, k0, k1, in, out, tw, rt);          \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        switch (P) {                                                                    \
        case 3: KN(name##_)(3, 0, L, K, g0, g1, k0, k1, in, out, tw, rt); break;        \
        case 5: KN(name##_)(5, 0, L, K, g0, g1, k0, k1, in, out, tw, rt); break;        \
        case 7: KN(name##_)(7, 0, L, K, g0, g1, k0, k1, in, out, tw, rt); break;        \
        default: KN(name##_)(P, 0, L, K, g0, g1, k0, k1, in, out, tw, rt);              \
        }                                                                               \
    }
FK_RPASS(rpassf)
FK_RPASS(rpassb)
#undef FK_RPASS
#endif

#undef ROT
#undef TWL
#undef EL
#undef FK_LOOP
#undef FK_RANGE
#undef CH
#undef CC
#undef CV
#undef KN
#undef O
#undef FK_CAT
#undef FK_CAT_
