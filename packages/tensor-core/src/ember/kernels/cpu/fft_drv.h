/* The executors and line loops of kernels/cpu/fft.c, a template included once per
 * (real type, instruction set): T the real type, DSUF the suffix of the functions made
 * here, KV / KS the suffixes of the vector / scalar passes (fft_kern.h), KVB that of
 * the batched vector ones (FK_BATCH), VLV the vector length of KV, T1_4 the radix-4 pass
 * for ido == 1 (vectorised over k) where HAVE_T1. */
#define FD_CAT_(a, b) a##b
#define FD_CAT(a, b) FD_CAT_(a, b)
#define DN(x) FD_CAT(x, FD_CAT(_, DSUF))
#define PV(x) FD_CAT(x, FD_CAT(_, KV))
#define PS(x) FD_CAT(x, FD_CAT(_, KS))
#define PVB(x) FD_CAT(x, FD_CAT(_, KVB))
#define VO(x) FD_CAT(KV, FD_CAT(_, x))

/* One pass over i in [0, ido): the vector loop, then the scalar tail. */
#define FD_PASS(name, ...)                                                              \
    do {                                                                                \
        if (iv) PV(name)(__VA_ARGS__, 0, iv, p1, p2, tw, fwd);                          \
        if (iv < ido) PS(name)(__VA_ARGS__, iv, ido, p1, p2, tw, fwd);                  \
    } while (0)

static T *DN(exec)(const fft_plan *p, T *data, T *work);

static T *DN(blue)(const fft_plan *p, T *data, T *work) {
    const int64_t n = p->n, n2 = p->n2;
    const T *bk = p->bk, *bkf = p->bkf;
    T *akf = work, *sw = work + 2 * n2;
    for (int64_t m = 0; m < n; m++) {
        T xr = data[2 * m], xi = data[2 * m + 1], br = bk[2 * m], bi = bk[2 * m + 1];
        akf[2 * m] = xr * br - xi * bi;
        akf[2 * m + 1] = xr * bi + xi * br;
    }
    memset(akf + 2 * n, 0, (size_t)(n2 - n) * 2 * sizeof(T));
    T *r = DN(exec)(p->sub_f, akf, sw);
    for (int64_t m = 0; m < n2; m++) {
        T xr = r[2 * m], xi = r[2 * m + 1], br = bkf[2 * m], bi = bkf[2 * m + 1];
        r[2 * m] = xr * br - xi * bi;
        r[2 * m + 1] = xr * bi + xi * br;
    }
    T *r2 = DN(exec)(p->sub_b, r, r == akf ? sw : akf);
    for (int64_t m = 0; m < n; m++) {
        T xr = r2[2 * m], xi = r2[2 * m + 1], br = bk[2 * m], bi = bk[2 * m + 1];
        data[2 * m] = xr * br - xi * bi;
        data[2 * m + 1] = xr * bi + xi * br;
    }
    return data;
}

/* The passes of a non-Bluestein plan from src, ping-ponging between a and b (src may
 * be a), the last one into dst (NULL: into a or b); returns the result's buffer. src
 * is read by the first pass only, so dst may be src when there are two passes or more. */
static T *DN(passes)(const fft_plan *p, const T *src, T *dst, T *a, T *b) {
    const T *p1 = src;
    const int64_t n = p->n;
    const int fwd = p->fwd;
    int64_t l1 = 1;
    for (int f = 0; f < p->nfct; f++) {
        T *p2 = dst && f == p->nfct - 1 ? dst : p1 == a ? b : a;
        const int64_t ip = p->fct[f], ido = n / (l1 * ip);
        const T *tw = p->tw[f];
        const int64_t iv = ido - ido % VLV;
        if (ido == 1 && ip == 4 && HAVE_T1) {
            T1_4(l1, p1, p2, fwd);
        } else {
            switch (ip) {
            case 2: FD_PASS(pass2, ido, l1); break;
            case 3: FD_PASS(pass3, ido, l1); break;
            case 4: FD_PASS(pass4, ido, l1); break;
            case 5: FD_PASS(pass5, ido, l1); break;
            case 7: FD_PASS(pass7, ido, l1); break;
            case 8: FD_PASS(pass8, ido, l1); break;
            default:
                if (iv) PV(passg)(ip, ido, l1, 0, iv, p1, p2, tw, p->roots[f]);
                if (iv < ido) PS(passg)(ip, ido, l1, iv, ido, p1, p2, tw, p->roots[f]);
            }
        }
        p1 = p2;
        l1 *= ip;
    }
    return (T *)p1;
}

/* The transform of data (n complex) using work (p->work complex); returns the buffer
 * holding the result (data or work). */
static T *DN(exec)(const fft_plan *p, T *data, T *work) {
    return p->n2 ? DN(blue)(p, data, work) : DN(passes)(p, data, NULL, data, work);
}

/* The transform of B adjacent lines at once (entry e of line b at data[2 (B e + b)];
 * work as large; B a multiple of VLV), by the batched passes. Each lane computes as any
 * other, so a line's result does not depend on its block. Not for Bluestein plans.
 * Returns the buffer holding the result. */
#define FD_BPASS(name, ...) PVB(name)(__VA_ARGS__, B, p1, p2, tw, fwd)

static T *DN(exec_b)(const fft_plan *p, T *data, T *work, int64_t B) {
    T *p1 = data, *p2 = work;
    const int64_t n = p->n;
    const int fwd = p->fwd;
    int64_t l1 = 1;
    for (int f = 0; f < p->nfct; f++) {
        const int64_t ip = p->fct[f], ido = n / (l1 * ip);
        const T *tw = p->tw[f];
        switch (ip) {
        case 2: FD_BPASS(pass2, ido, l1); break;
        case 3: FD_BPASS(pass3, ido, l1); break;
        case 4: FD_BPASS(pass4, ido, l1); break;
        case 5: FD_BPASS(pass5, ido, l1); break;
        case 7: FD_BPASS(pass7, ido, l1); break;
        case 8: FD_BPASS(pass8, ido, l1); break;
        default: PVB(passg)(ip, ido, l1, B, p1, p2, tw, p->roots[f]);
        }
        T *t = p1;
        p1 = p2;
        p2 = t;
        l1 *= ip;
    }
    return p1;
}

/* r2c of even n: z (h = n / 2 complex: the packed reals, transformed) into out
 * (h + 1 complex; may be z). Pairs (k, h - k): VLV of them at a time from both ends
 * (the far ones reversed in the register), the middle ones one by one. */
static void DN(r2c_post)(const fft_plan *rp, const T *z, T *out) {
    const int64_t h = rp->n / 2;
    const T *w = rp->rtw;
    T z0r = z[0], z0i = z[1];
    int64_t k = 1;
#if VLV > 1
    for (; k + VLV - 1 < h - k - VLV + 1; k += VLV) {
        const int64_t q = h - k - VLV + 1;
        VO(t) a = VO(ld)(z + 2 * k), b = VO(conj)(VO(rev)(VO(ld)(z + 2 * q)));
        VO(t) e = VO(scale)(VO(add)(a, b), (T)0.5);
        VO(t) t = VO(mul)(VO(rotm)(VO(scale)(VO(sub)(a, b), (T)0.5)), VO(ld)(w + 2 * k));
        VO(st)(out + 2 * k, VO(add)(e, t));
        VO(st)(out + 2 * q, VO(rev)(VO(conj)(VO(sub)(e, t))));
    }
#endif
    for (; 2 * k <= h; k++) {
        const int64_t q = h - k;
        T ar = z[2 * k], ai = z[2 * k + 1], br = z[2 * q], bi = -z[2 * q + 1];
        T er = (T)0.5 * (ar + br), ei = (T)0.5 * (ai + bi);
        T or_ = (T)0.5 * (ai - bi), oi = (T)-0.5 * (ar - br);
        T wr = w[2 * k], wi = w[2 * k + 1];
        T tr = wr * or_ - wi * oi, ti = wr * oi + wi * or_;
        out[2 * k] = er + tr;
        out[2 * k + 1] = ei + ti;
        out[2 * q] = er - tr;
        out[2 * q + 1] = -(ei - ti);
    }
    out[0] = z0r + z0i;
    out[1] = 0;
    out[2 * h] = z0r - z0i;
    out[2 * h + 1] = 0;
}

/* c2r of even n: X (h + 1 complex) into Z (h complex, in place), whose backward
 * transform is the n reals; pairs as in r2c_post. */
static void DN(c2r_pre)(const fft_plan *rp, T *x) {
    const int64_t h = rp->n / 2;
    const T *w = rp->rtw;
    T x0 = x[0], xh = x[2 * h];
    int64_t k = 1;
#if VLV > 1
    for (; k + VLV - 1 < h - k - VLV + 1; k += VLV) {
        const int64_t q = h - k - VLV + 1;
        VO(t) a = VO(ld)(x + 2 * k), b = VO(conj)(VO(rev)(VO(ld)(x + 2 * q)));
        VO(t) sm = VO(add)(a, b);
        VO(t) ie = VO(rotp)(VO(mul)(VO(sub)(a, b), VO(conj)(VO(ld)(w + 2 * k))));
        VO(st)(x + 2 * k, VO(add)(sm, ie));
        VO(st)(x + 2 * q, VO(rev)(VO(conj)(VO(sub)(sm, ie))));
    }
#endif
    for (; 2 * k <= h; k++) {
        const int64_t q = h - k;
        T ar = x[2 * k], ai = x[2 * k + 1], br = x[2 * q], bi = -x[2 * q + 1];
        T sr = ar + br, si = ai + bi, dr = ar - br, di = ai - bi;
        T wr = w[2 * k], wi = -w[2 * k + 1];                  /* conj(W^k) */
        T er = wr * dr - wi * di, ei = wr * di + wi * dr;     /* D = conj(W^k)(A - B) */
        /* Z_k = S + i D, Z_q = conj(S - i D) */
        x[2 * k] = sr - ei;
        x[2 * k + 1] = si + er;
        x[2 * q] = sr + ei;
        x[2 * q + 1] = -(si - er);
    }
    x[0] = x0 + xh;
    x[1] = x0 - xh;
}

/* Real transforms of odd n at about half a complex one, in halfcomplex spectra (see
 * fft_kern.h): the leaf lines (length L0 = rp->leaf > 1 where n has prime factors the
 * passes do not take: x[g + K0 j], K0 = n / L0) transformed two at a time by one complex
 * transform of x_g + i x_g+1 (split by symmetry: Y_g = (Z_k + conj Z_-k) / 2,
 * Y_g+1 = (Z_k - conj Z_-k) / 2i), the last alone (K0 is odd) by the half Bluestein plan
 * where L0 has one; then one real pass per radix (rp->fct, rp->nfct of them). A prime n
 * is a leaf alone. c2r runs the same steps backwards. */

/* k = 0 of the real passes: real values (the pass of fft_kern.h for k >= 1). P and
 * L == 1 (a whole pass) constant where they can be, so the loop over g vectorises. */
FFT_INLINE void DN(rpass0f_)(const int64_t P, const int64_t L, int64_t K,
                             const T *restrict in, T *restrict out, const T *restrict rt) {
    const int64_t S = (P - 1) / 2, KL = K * L;
    for (int64_t g = 0; g < K; g++) {
        const T *c = in + g * L;
        T *o = out + g * P * L;
        T tp[FFT_MAX_GENERIC / 2 + 1], tm[FFT_MAX_GENERIC / 2 + 1];
        const T a0 = c[0];
        T s = a0;
        for (int64_t r = 1; r <= S; r++) {
            const T a = c[r * KL], b = c[(P - r) * KL];
            tp[r] = a + b;
            tm[r] = a - b;
            s += tp[r];
        }
        o[0] = s;
        for (int64_t q = 1; q <= S; q++) {          /* X_q = sum_r a_r w^(rq) */
            T re = a0, im = 0;
            int64_t e = 0;
            for (int64_t r = 1; r <= S; r++) {
                e += q;
                if (e >= P) e -= P;
                re += tp[r] * rt[2 * e];
                im += tm[r] * rt[2 * e + 1];
            }
            o[2 * q * L - 1] = re;
            o[2 * q * L] = im;
        }
    }
}

FFT_INLINE void DN(rpass0b_)(const int64_t P, const int64_t L, int64_t K,
                             const T *restrict in, T *restrict out, const T *restrict rt) {
    const int64_t S = (P - 1) / 2, KL = K * L;
    for (int64_t g = 0; g < K; g++) {
        const T *c = in + g * P * L;
        T *o = out + g * L;
        T xr[FFT_MAX_GENERIC / 2 + 1], xi[FFT_MAX_GENERIC / 2 + 1];
        const T x0 = c[0];
        T s = x0;
        for (int64_t q = 1; q <= S; q++) {
            xr[q] = 2 * c[2 * q * L - 1];
            xi[q] = 2 * c[2 * q * L];
            s += xr[q];
        }
        o[0] = s;
        for (int64_t r = 1; r <= S; r++) {          /* v_r = X_0 + 2 Re sum_q X_q w^(rq) */
            T a = x0, b = 0;
            int64_t e = 0;
            for (int64_t q = 1; q <= S; q++) {
                e += r;
                if (e >= P) e -= P;
                a += xr[q] * rt[2 * e];
                b += xi[q] * rt[2 * e + 1];
            }
            o[r * KL] = a - b;
            o[(P - r) * KL] = a + b;
        }
    }
}

#define FD_RPASS0(name)                                                                 \
    static void DN(name)(int64_t P, int64_t L, int64_t K, const T *restrict in,        \
                         T *restrict out, const T *restrict rt) {                       \
        switch (P * (L == 1 ? -1 : 1)) {                                                \
        case -3: DN(name##_)(3, 1, K, in, out, rt); break;                              \
        case -5: DN(name##_)(5, 1, K, in, out, rt); break;                              \
        case -7: DN(name##_)(7, 1, K, in, out, rt); break;                              \
        case 3: DN(name##_)(3, L, K, in, out, rt); break;                               \
        case 5: DN(name##_)(5, L, K, in, out, rt); break;                               \
        case 7: DN(name##_)(7, L, K, in, out, rt); break;                               \
        default: DN(name##_)(P, L, K, in, out, rt);                                     \
        }                                                                               \
    }
FD_RPASS0(rpass0f)
FD_RPASS0(rpass0b)
#undef FD_RPASS0

/* The K leaf lines of x (stride sx) into halfcomplex spectra at d + g L0; w: leaf work
 * (L0 + the leaf plans' work, complex). */
static void DN(rleaf_fwd)(const fft_plan *rp, const T *x, int64_t sx, int64_t K, T *d,
                          T *w) {
    const int64_t L = rp->leaf, h = L / 2, st = K * sx;
    const fft_plan *cp = rp->half;
    T *cw = w + 2 * L;
    for (int64_t g = 0; g + 1 < K; g += 2) {
        const T *x0 = x + g * sx, *x1 = x0 + sx;
        for (int64_t j = 0; j < L; j++) {
            w[2 * j] = x0[j * st];
            w[2 * j + 1] = x1[j * st];
        }
        const T *r = DN(exec)(cp, w, cw);
        T *y0 = d + g * L, *y1 = y0 + L;
        y0[0] = r[0];
        y1[0] = r[1];
        for (int64_t k = 1; k <= h; k++) {
            const int64_t q = L - k;
            const T ar = r[2 * k], ai = r[2 * k + 1], br = r[2 * q], bi = -r[2 * q + 1];
            y0[2 * k - 1] = (T)0.5 * (ar + br);
            y0[2 * k] = (T)0.5 * (ai + bi);
            y1[2 * k - 1] = (T)0.5 * (ai - bi);
            y1[2 * k] = (T)-0.5 * (ar - br);
        }
    }
    const T *x0 = x + (K - 1) * sx;
    for (int64_t j = 0; j < L; j++) {
        w[2 * j] = x0[j * st];
        w[2 * j + 1] = 0;
    }
    const T *r = DN(exec)(rp->hblue ? rp->hblue : cp, w, cw);
    T *y0 = d + (K - 1) * L;
    y0[0] = r[0];
    memcpy(y0 + 1, r + 2, (size_t)(2 * h) * sizeof(T));
}

/* The K leaf spectra at a + g L0 back into the lines of y (stride sy) times sc. */
static void DN(rleaf_bwd)(const fft_plan *rp, const T *a, int64_t K, T *y, int64_t sy,
                          T sc, T *w) {
    const int64_t L = rp->leaf, h = L / 2, st = K * sy;
    const fft_plan *cp = rp->half;
    T *cw = w + 2 * L;
    for (int64_t g = 0; g + 1 < K; g += 2) {
        const T *y0 = a + g * L, *y1 = y0 + L;
        w[0] = y0[0];
        w[1] = y1[0];
        for (int64_t k = 1; k <= h; k++) {
            const T ar = y0[2 * k - 1], ai = y0[2 * k], br = y1[2 * k - 1], bi = y1[2 * k];
            w[2 * k] = ar - bi;                 /* Y_g + i Y_g+1 */
            w[2 * k + 1] = ai + br;
            w[2 * (L - k)] = ar + bi;           /* conj(Y_g) + i conj(Y_g+1) */
            w[2 * (L - k) + 1] = br - ai;
        }
        const T *r = DN(exec)(cp, w, cw);
        T *o0 = y + g * sy, *o1 = o0 + sy;
        for (int64_t j = 0; j < L; j++) {
            o0[j * st] = r[2 * j] * sc;
            o1[j * st] = r[2 * j + 1] * sc;
        }
    }
    const T *y0 = a + (K - 1) * L;
    w[0] = y0[0];
    w[1] = 0;
    if (rp->hblue) {                 /* x_j = Re(X_0 + 2 sum_{0 < k <= h} X_k w^jk) */
        for (int64_t k = 1; k <= h; k++) {
            w[2 * k] = 2 * y0[2 * k - 1];
            w[2 * k + 1] = 2 * y0[2 * k];
        }
        memset(w + 2 * (h + 1), 0, (size_t)(L - h - 1) * 2 * sizeof(T));
    } else {
        for (int64_t k = 1; k <= h; k++) {
            w[2 * k] = w[2 * (L - k)] = y0[2 * k - 1];
            w[2 * k + 1] = y0[2 * k];
            w[2 * (L - k) + 1] = -y0[2 * k];
        }
    }
    const T *r = DN(exec)(rp->hblue ? rp->hblue : cp, w, cw);
    T *o0 = y + (K - 1) * sy;
    for (int64_t j = 0; j < L; j++) o0[j * st] = r[2 * j] * sc;
}

/* A real pass's k >= 1 (p1 into p2): VLV values of k at a time and the rest one by one,
 * or for short lines VLV lines at a time and the rest one by one. */
#define FD_RPASS(name)                                                                  \
    do {                                                                                \
        if (hL >= VLV) {                                                                \
            const int64_t kv_ = 1 + hL - hL % VLV;                                      \
            PV(name)(P, 0, L, K, 0, K, 1, kv_, p1, p2, tw, rt);                         \
            if (kv_ <= hL) PS(name)(P, 0, L, K, 0, K, kv_, hL + 1, p1, p2, tw, rt);     \
        } else if (hL) {                                                                \
            const int64_t gv_ = K - K % VLV;                                            \
            if (gv_) PV(name)(P, 1, L, K, 0, gv_, 1, hL + 1, p1, p2, tw, rt);           \
            if (gv_ < K) PS(name)(P, 0, L, K, gv_, K, 1, hL + 1, p1, p2, tw, rt);       \
        }                                                                               \
    } while (0)

/* r2c of the odd-n real line x (stride sx) into out (n / 2 + 1 complex); work: rp->work
 * complex. The spectrum is built at out + 1 (entry 0 then moved to its place). */
static void DN(rodd_fwd)(const fft_plan *rp, const T *x, int64_t sx, T *out, T *work) {
    const int64_t n = rp->n, nf = rp->nfct;
    int64_t L = rp->leaf, K = n / L;
    T *a = work, *b = work + n, *lw = work + (nf ? 2 * n : 0);
    const T *p1 = x;
    if (L > 1) {
        T *d = nf ? a : out + 1;
        DN(rleaf_fwd)(rp, x, sx, K, d, lw);
        p1 = d;
    } else if (sx != 1) {
        for (int64_t j = 0; j < n; j++) a[j] = x[j * sx];
        p1 = a;
    }
    for (int64_t f = 0; f < nf; f++) {
        const int64_t P = rp->fct[f], hL = (L - 1) / 2;
        const T *tw = rp->tw[f], *rt = rp->roots[f];
        T *p2 = f == nf - 1 ? out + 1 : p1 == a ? b : a;
        K /= P;
        DN(rpass0f)(P, L, K, p1, p2, rt);
        FD_RPASS(rpassf);
        p1 = p2;
        L *= P;
    }
    out[0] = out[1];
    out[1] = 0;
}

/* c2r of odd n: X (n / 2 + 1 complex; its entry 0's imaginary part ignored, overwritten)
 * into the n reals y (stride sy) times sc; work: rp->work complex. */
static void DN(rodd_bwd)(const fft_plan *rp, T *X, T *y, int64_t sy, T sc, T *work) {
    const int64_t n = rp->n, nf = rp->nfct;
    int64_t L = n, K = 1;
    T *a = work, *b = work + n, *lw = work + (nf ? 2 * n : 0);
    const int direct = rp->leaf == 1 && sy == 1 && sc == (T)1;
    X[1] = X[0];                     /* the halfcomplex spectrum at X + 1 */
    const T *p1 = X + 1;
    for (int64_t f = nf - 1; f >= 0; f--) {
        const int64_t P = rp->fct[f];
        L /= P;
        const int64_t hL = (L - 1) / 2;
        const T *tw = rp->tw[f], *rt = rp->roots[f];
        T *p2 = f == 0 && direct ? y : p1 == a ? b : a;
        DN(rpass0b)(P, L, K, p1, p2, rt);
        FD_RPASS(rpassb);
        p1 = p2;
        K *= P;
    }
    if (L > 1) DN(rleaf_bwd)(rp, p1, K, y, sy, sc, lw);
    else if (!direct)
        for (int64_t j = 0; j < n; j++) y[j * sy] = p1[j] * sc;
}

typedef struct {
    const fft_plan *p;
    const T *in;
    T *out;
    int64_t n, n_in, s_in, n_out, s_out;
    int bdims;
    const int64_t *bshape, *bs_in, *bs_out;
    T scale;
    int kind;          /* 0 c2c, 1 r2c, 2 c2r */
    int failed;
} DN(job_t);

static void DN(offsets)(const DN(job_t) *J, int64_t li, int64_t *oi, int64_t *oo) {
    int64_t a = 0, b = 0;
    for (int d = J->bdims - 1; d >= 0; d--) {
        int64_t s = J->bshape[d], q = li % s;
        li /= s;
        a += q * J->bs_in[d];
        b += q * J->bs_out[d];
    }
    *oi = a;
    *oo = b;
}

static void DN(store)(T *y, int64_t s, const T *r, int64_t m, T scale) {
    if (s == 2 && scale == (T)1) {
        memcpy(y, r, (size_t)m * 2 * sizeof(T));
    } else if (s == 2) {
        for (int64_t j = 0; j < 2 * m; j++) y[j] = r[j] * scale;
    } else {
        for (int64_t j = 0; j < m; j++) {
            y[j * s] = r[2 * j] * scale;
            y[j * s + 1] = r[2 * j + 1] * scale;
        }
    }
}

/* c2c lines that are strided but whose neighbours (the innermost batch dim, stride 2
 * in and out) are adjacent: up to bmax of them at a time (about FFT_BLOCK_BYTES of
 * data, at least a cache line a row), copied out a row of neighbours at a time
 * (contiguous runs, no transpose; zero lanes up to a multiple of VLV), transformed
 * together by exec_b and copied back. */
#define FFT_BLOCK_BYTES ((int64_t)1 << 18)
static void DN(block_lines)(DN(job_t) *J, int64_t b0, int64_t b1) {
    const fft_plan *p = J->p;
    const int64_t n = J->n, inner = J->bshape[J->bdims - 1], z = 2 * (int64_t)sizeof(T);
    int64_t bmax = FFT_BLOCK_BYTES / (n * z);
    bmax -= bmax % VLV;
    if (bmax < 64 / z) bmax = 64 / z;
    const size_t nbytes = (size_t)(2 * bmax * n) * 2 * sizeof(T);
    T *buf = scratch_get(nbytes);
    if (!buf) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    T *work = buf + 2 * bmax * n;
    const int64_t si = J->s_in, so = J->s_out, m = J->n_in < n ? J->n_in : n;
    const T sc = J->scale;
    for (int64_t li = b0; li < b1;) {
        int64_t c = bmax, left = inner - li % inner;
        if (c > left) c = left;
        if (c > b1 - li) c = b1 - li;
        const int64_t cv = (c + VLV - 1) / VLV * VLV;
        int64_t oi, oo;
        DN(offsets)(J, li, &oi, &oo);
        const T *x = J->in + oi;
        T *y = J->out + oo;
        const size_t row = (size_t)c * 2 * sizeof(T), pad = (size_t)(cv - c) * 2 * sizeof(T);
        for (int64_t j = 0; j < m; j++) {
            memcpy(buf + 2 * cv * j, x + j * si, row);
            if (pad) memset(buf + 2 * (cv * j + c), 0, pad);
        }
        if (m < n) memset(buf + 2 * cv * m, 0, (size_t)((n - m) * cv) * 2 * sizeof(T));
        const T *r = DN(exec_b)(p, buf, work, cv);
        for (int64_t j = 0; j < n; j++) {
            const T *rj = r + 2 * cv * j;
            T *yj = y + j * so;
            if (sc == (T)1) memcpy(yj, rj, row);
            else
                for (int64_t q = 0; q < 2 * c; q++) yj[q] = rj[q] * sc;
        }
        li += c;
    }
    scratch_put(buf, nbytes);
}

/* Both squared norms finite (an inf or NaN would spread to the other line) and within
 * 64x of each other (norms within 8x). */
static int DN(balanced)(T s1, T s2) {
    return s1 - s1 == 0 && s2 - s2 == 0 && s1 <= 64 * s2 && s2 <= 64 * s1;
}

/* r2c / c2r of odd n, two lines (li, li + 1) at once: one complex transform of
 * x1 + i x2 (r2c) or of X1 + i X2 (c2r, each Hermitian half extended), split by
 * symmetry (X1 = (Z_k + conj Z_-k) / 2, X2 = (Z_k - conj Z_-k) / 2i; x1, x2 = re, im):
 * half a complex transform per line, as the packed even-n transform costs. The
 * rounding errors are those of the pair's transform, relative to ||x1|| + ||x2||: lines
 * whose norms differ by more than 8x are not paired (returns 0, nothing written), so
 * each keeps within a small factor of its own transform's accuracy. */
static int DN(odd_pair)(const DN(job_t) *J, int64_t li, T *buf, T *work) {
    const fft_plan *p = J->p;
    const int64_t n = J->n, h = n / 2, si = J->s_in, so = J->s_out;
    int64_t oi1, oo1, oi2, oo2;
    DN(offsets)(J, li, &oi1, &oo1);
    DN(offsets)(J, li + 1, &oi2, &oo2);
    const T *x1 = J->in + oi1, *x2 = J->in + oi2;
    T *y1 = J->out + oo1, *y2 = J->out + oo2;
    const T sc = J->scale;
    if (J->kind == 1) {
        const int64_t m = J->n_in < n ? J->n_in : n;
        T s1 = 0, s2 = 0;
        for (int64_t j = 0; j < m; j++) {
            T a = x1[j * si], b = x2[j * si];
            buf[2 * j] = a;
            buf[2 * j + 1] = b;
            s1 += a * a;
            s2 += b * b;
        }
        if (!DN(balanced)(s1, s2)) return 0;
        if (m < n) memset(buf + 2 * m, 0, (size_t)(n - m) * 2 * sizeof(T));
        const T *r = DN(exec)(p->half, buf, work);
        const T hs = (T)0.5 * sc;
        for (int64_t k = 0; k < J->n_out; k++) {
            const int64_t q = k ? n - k : 0;
            T ar = r[2 * k], ai = r[2 * k + 1], br = r[2 * q], bi = -r[2 * q + 1];
            y1[k * so] = hs * (ar + br);
            y1[k * so + 1] = hs * (ai + bi);
            y2[k * so] = hs * (ai - bi);
            y2[k * so + 1] = -hs * (ar - br);
        }
    } else {
        const int64_t m = J->n_in < h + 1 ? J->n_in : h + 1;
        T s1 = 0, s2 = 0;
        for (int64_t j = 0; j <= h; j++) {
            T ar = 0, ai = 0, br = 0, bi = 0;
            if (j < m) {
                ar = x1[j * si];
                br = x2[j * si];
                if (j) {
                    ai = x1[j * si + 1];
                    bi = x2[j * si + 1];
                }
            }
            s1 += ar * ar + ai * ai;
            s2 += br * br + bi * bi;
            buf[2 * j] = ar - bi;
            buf[2 * j + 1] = ai + br;
            if (j) {
                buf[2 * (n - j)] = ar + bi;
                buf[2 * (n - j) + 1] = br - ai;
            }
        }
        if (!DN(balanced)(s1, s2)) return 0;
        const T *r = DN(exec)(p->half, buf, work);
        for (int64_t j = 0; j < n; j++) {
            y1[j * so] = r[2 * j] * sc;
            y2[j * so] = r[2 * j + 1] * sc;
        }
    }
    return 1;
}

static void DN(lines)(void *ctx, int64_t b0, int64_t b1) {
    DN(job_t) *J = ctx;
    if (J->kind == 0 && J->bdims && J->s_in != 2 && !J->p->n2 &&
        J->bs_in[J->bdims - 1] == 2 && J->bs_out[J->bdims - 1] == 2 &&
        J->bshape[J->bdims - 1] > 1) {
        DN(block_lines)(J, b0, b1);
        return;
    }
    const fft_plan *p = J->p;
    const int64_t n = J->n, h = n / 2;
    /* the line buffer (n + 1 complex: c2r reads h + 1 entries into it) and the work */
    const fft_plan *cp = (p->kind & 1) ? p->half : p;
    /* odd real lines by rodd_fwd / rodd_bwd: plans with real passes, and lines alone of
     * a plan with a half Bluestein one (the rest in pairs, odd_pair); their result
     * (h + 1), work and a padded copy of the input */
    const int rpass = (p->kind & 1) && p->nfct, rsplit = rpass || ((p->kind & 1) && p->hblue);
    int64_t nb = rpass ? h + 2 : cp->n + 2, nw = rpass ? 0 : cp->work;
    if (rsplit && p->work + h + 1 > nw) nw = p->work + h + 1;
    const size_t nbytes = (size_t)(nb + nw) * 2 * sizeof(T);
    T *buf = scratch_get(nbytes);
    if (!buf) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    T *work = buf + 2 * nb;
    const int even = (n % 2) == 0;
    for (int64_t li = b0; li < b1; li++) {
        if (J->kind && !even && !rpass && li + 1 < b1 && DN(odd_pair)(J, li, buf, work)) {
            li++;
            continue;
        }
        int64_t oi, oo;
        DN(offsets)(J, li, &oi, &oo);
        const T *x = J->in + oi;
        T *y = J->out + oo;
        const int64_t si = J->s_in, so = J->s_out;
        if (J->kind == 0) {
            const int64_t m = J->n_in < n ? J->n_in : n;
            if (si == 2 && m == n && !p->n2 && p->nfct && (p->nfct > 1 || x != y)) {
                /* straight from the input line (and into the output's, unscaled) */
                T *r = DN(passes)(p, x, so == 2 && J->scale == (T)1 ? y : NULL, buf, work);
                if (r != y) DN(store)(y, so, r, n, J->scale);
                continue;
            }
            if (si == 2) memcpy(buf, x, (size_t)m * 2 * sizeof(T));
            else
                for (int64_t j = 0; j < m; j++) {
                    buf[2 * j] = x[j * si];
                    buf[2 * j + 1] = x[j * si + 1];
                }
            if (m < n) memset(buf + 2 * m, 0, (size_t)(n - m) * 2 * sizeof(T));
            T *r = DN(exec)(p, buf, work);
            DN(store)(y, so, r, n, J->scale);
        } else if (J->kind == 1) {
            const int64_t m = J->n_in < n ? J->n_in : n;
            T *r;
            if (even) {           /* the reals as h complex numbers */
                const fft_plan *hp = p->half;
                if (si == 1 && m == n && !hp->n2 && hp->nfct) {
                    r = DN(passes)(hp, x, NULL, buf, work);
                } else {
                    if (si == 1) memcpy(buf, x, (size_t)m * sizeof(T));
                    else
                        for (int64_t j = 0; j < m; j++) buf[j] = x[j * si];
                    if (m < n) memset(buf + m, 0, (size_t)(n - m) * sizeof(T));
                    r = DN(exec)(hp, buf, work);
                }
                if (so == 2 && J->scale == (T)1 && J->n_out == h + 1) {
                    DN(r2c_post)(p, r, y);      /* straight into the output line */
                    continue;
                }
                DN(r2c_post)(p, r, buf);
                r = buf;
            } else if (rsplit) {
                if (m < n) {
                    T *xb = work + 2 * p->work;
                    for (int64_t j = 0; j < m; j++) xb[j] = x[j * si];
                    memset(xb + m, 0, (size_t)(n - m) * sizeof(T));
                    DN(rodd_fwd)(p, xb, 1, buf, work);
                } else {
                    DN(rodd_fwd)(p, x, si, buf, work);
                }
                r = buf;
            } else {
                for (int64_t j = 0; j < m; j++) {
                    buf[2 * j] = x[j * si];
                    buf[2 * j + 1] = 0;
                }
                if (m < n) memset(buf + 2 * m, 0, (size_t)(n - m) * 2 * sizeof(T));
                r = DN(exec)(p->half, buf, work);
            }
            const int64_t no = J->n_out;
            DN(store)(y, so, r, h + 1 < no ? h + 1 : no, J->scale);
            for (int64_t k = h + 1; k < no; k++) {      /* the Hermitian rest */
                y[k * so] = r[2 * (n - k)] * J->scale;
                y[k * so + 1] = -r[2 * (n - k) + 1] * J->scale;
            }
        } else {
            const int64_t m = J->n_in < h + 1 ? J->n_in : h + 1;
            for (int64_t j = 0; j < m; j++) {
                buf[2 * j] = x[j * si];
                buf[2 * j + 1] = x[j * si + 1];
            }
            if (m < h + 1) memset(buf + 2 * m, 0, (size_t)(h + 1 - m) * 2 * sizeof(T));
            buf[1] = 0;
            T *r;
            if (even) {
                DN(c2r_pre)(p, buf);
                const fft_plan *hp = p->half;
                if (so == 1 && J->scale == (T)1 && !hp->n2 && hp->nfct) {
                    DN(passes)(hp, buf, y, buf, work);  /* the last pass into the output */
                    continue;
                }
                r = DN(exec)(hp, buf, work);
                if (so == 1 && J->scale == (T)1) memcpy(y, r, (size_t)n * sizeof(T));
                else
                    for (int64_t j = 0; j < n; j++) y[j * so] = r[j] * J->scale;
            } else if (rsplit) {
                DN(rodd_bwd)(p, buf, y, so, J->scale, work);
            } else {
                for (int64_t k = h + 1; k < n; k++) {     /* the Hermitian rest */
                    buf[2 * k] = buf[2 * (n - k)];
                    buf[2 * k + 1] = -buf[2 * (n - k) + 1];
                }
                r = DN(exec)(p->half, buf, work);
                for (int64_t j = 0; j < n; j++) y[j * so] = r[2 * j] * J->scale;
            }
        }
    }
    scratch_put(buf, nbytes);
}

static int DN(run)(int kind, const fft_plan *p, const void *in, void *out, int64_t n,
                   int64_t n_in, int64_t s_in, int64_t n_out, int64_t s_out, int bdims,
                   const int64_t *bshape, const int64_t *bs_in, const int64_t *bs_out,
                   double scale) {
    /* the batch dim of adjacent lines (stride 2 in and out) innermost, for block_lines */
    int64_t sh[EM_FFT_MAXDIM], si[EM_FFT_MAXDIM], so[EM_FFT_MAXDIM];
    int k = 0, adj = -1;
    for (int d = 0; d < bdims; d++)
        if (bs_in[d] == 2 && bs_out[d] == 2 && bshape[d] > 1) adj = d;
    for (int d = 0; d < bdims; d++)
        if (d != adj) {
            sh[k] = bshape[d];
            si[k] = bs_in[d];
            so[k++] = bs_out[d];
        }
    if (adj >= 0) {
        sh[k] = bshape[adj];
        si[k] = bs_in[adj];
        so[k++] = bs_out[adj];
    }
    DN(job_t) J = {p, in, out, n, n_in, s_in, n_out, s_out, bdims, sh, si, so,
                   (T)scale, kind, 0};
    int64_t lines = 1;
    for (int d = 0; d < bdims; d++) lines *= bshape[d];
    if (lines == 0) return 0;
    /* a grain of about 2^15 points of work per task */
    int64_t grain = ((int64_t)1 << 15) / (n + 1);
    if (grain < 1) grain = 1;
    if (kind && n % 2) grain += grain % 2;    /* odd_pair's pairs whatever the threads */
    em_parallel_for(lines, grain, DN(lines), &J);
    return J.failed ? -1 : 0;
}

#undef FD_RPASS
#undef FD_PASS
#undef FD_BPASS
#undef VO
#undef PVB
#undef PS
#undef PV
#undef DN
#undef FD_CAT
#undef FD_CAT_
