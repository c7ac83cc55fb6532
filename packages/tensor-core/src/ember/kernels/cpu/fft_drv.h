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

/* Real transforms of odd n = P m (P the smallest factor, kept small) at about half a
 * complex one: one decimation in time. The P real lines x[P j + r] (j < m) are
 * transformed in pairs, one complex transform of x[P j + 2s] + i x[P j + 2s + 1] each
 * (split by symmetry: Y_2s = (Z_k + conj Z_-k) / 2, Y_2s+1 = (Z_k - conj Z_-k) / 2i),
 * the last alone by the real plan of m (split again while it can be); then
 * X[k + q m] = sum_r w_P^(rq) (W_n^(rk) Y_r[k]) for k <= m / 2 gives every output or
 * its conjugate. c2r runs the same steps backwards. A prime n (or one with no factor
 * <= FFT_RSPLIT_MAX) is a leaf: one complex transform of the line. */
FFT_INLINE void DN(rodd_fwd_comb)(const int64_t P, const fft_plan *rp, const T *Z,
                                  const T *yl, T *out, int64_t k0, int64_t k1) {
    const int64_t n = rp->n, h = n / 2, m = n / P, hm = m / 2, S = (P - 1) / 2;
    const T *tw = rp->rtw, *rt = rp->rroots;
    for (int64_t k = k0; k < k1; k++) {
        const int64_t kb = k ? m - k : 0;
        T tr[FFT_RSPLIT_MAX], ti[FFT_RSPLIT_MAX];
        for (int64_t s = 0; s <= S; s++) {
            T y0r, y0i, y1r = 0, y1i = 0;
            if (s < S) {
                const T *z = Z + 2 * s * m;
                const T ar = z[2 * k], ai = z[2 * k + 1], br = z[2 * kb], bi = -z[2 * kb + 1];
                y0r = (T)0.5 * (ar + br);
                y0i = (T)0.5 * (ai + bi);
                y1r = (T)0.5 * (ai - bi);
                y1i = (T)-0.5 * (ar - br);
            } else {
                y0r = yl[2 * k];
                y0i = yl[2 * k + 1];
            }
            for (int64_t e = 0; e < 2 && 2 * s + e < P; e++) {
                const int64_t r = 2 * s + e;
                const T vr = e ? y1r : y0r, vi = e ? y1i : y0i;
                if (r == 0) {
                    tr[0] = vr;
                    ti[0] = vi;
                } else {
                    const T *w = tw + 2 * ((r - 1) * (hm + 1) + k);
                    tr[r] = vr * w[0] - vi * w[1];
                    ti[r] = vr * w[1] + vi * w[0];
                }
            }
        }
        for (int64_t q = 0; q < P; q++) {
            T sr = tr[0], si = ti[0];
            for (int64_t r = 1; r <= S; r++) {       /* r with P - r: w^(rq), w^(-rq) */
                const int64_t e = (r * q) % P;
                const T c = rt[2 * e], sn = rt[2 * e + 1];
                sr += (tr[r] + tr[P - r]) * c - (ti[r] - ti[P - r]) * sn;
                si += (ti[r] + ti[P - r]) * c + (tr[r] - tr[P - r]) * sn;
            }
            const int64_t kk = k + q * m;
            if (kk <= h) {
                out[2 * kk] = sr;
                out[2 * kk + 1] = si;
            } else {
                out[2 * (n - kk)] = sr;
                out[2 * (n - kk) + 1] = -si;
            }
        }
    }
}

FFT_INLINE void DN(rodd_bwd_comb)(const int64_t P, const fft_plan *rp, const T *X, T *W,
                                  T *vl, int64_t k0, int64_t k1) {
    const int64_t n = rp->n, h = n / 2, m = n / P, hm = m / 2, S = (P - 1) / 2;
    const T *tw = rp->rtw, *rt = rp->rroots;
    for (int64_t k = k0; k < k1; k++) {
        T xr[FFT_RSPLIT_MAX], xi[FFT_RSPLIT_MAX];
        for (int64_t q = 0; q < P; q++) {
            const int64_t kk = k + q * m;
            if (kk <= h) {
                xr[q] = X[2 * kk];
                xi[q] = kk ? X[2 * kk + 1] : 0;
            } else {
                xr[q] = X[2 * (n - kk)];
                xi[q] = -X[2 * (n - kk) + 1];
            }
        }
        T vr[FFT_RSPLIT_MAX], vi[FFT_RSPLIT_MAX];
        for (int64_t r = 0; r < P; r++) {
            T sr = xr[0], si = xi[0];
            for (int64_t q = 1; q <= S; q++) {
                const int64_t e = (r * q) % P;
                const T c = rt[2 * e], sn = rt[2 * e + 1];
                sr += (xr[q] + xr[P - q]) * c - (xi[q] - xi[P - q]) * sn;
                si += (xi[q] + xi[P - q]) * c + (xr[q] - xr[P - q]) * sn;
            }
            if (r == 0) {
                vr[0] = sr;
                vi[0] = si;
            } else {
                const T *w = tw + 2 * ((r - 1) * (hm + 1) + k);
                vr[r] = sr * w[0] - si * w[1];
                vi[r] = sr * w[1] + si * w[0];
            }
        }
        if (k == 0)                  /* the lines are real: V_r[0] is */
            for (int64_t r = 0; r < P; r++) vi[r] = 0;
        for (int64_t s = 0; s < S; s++) {
            T *w = W + 2 * s * m;
            const T ar = vr[2 * s], ai = vi[2 * s], br = vr[2 * s + 1], bi = vi[2 * s + 1];
            w[2 * k] = ar - bi;          /* V_2s + i V_2s+1 */
            w[2 * k + 1] = ai + br;
            if (k) {                     /* conj(V_2s) + i conj(V_2s+1) */
                w[2 * (m - k)] = ar + bi;
                w[2 * (m - k) + 1] = br - ai;
            }
        }
        vl[2 * k] = vr[P - 1];
        vl[2 * k + 1] = vi[P - 1];
    }
}

#if VLV > 1
/* rodd_fwd_comb for k in [k0, k1) (1 <= k0, k1 - k0 a multiple of VLV), VLV at a time:
 * Z_-k read reversed; an output run that crosses n / 2 is stored lane by lane. */
FFT_INLINE void DN(rodd_fwd_vec)(const int64_t P, const fft_plan *rp, const T *Z,
                                 const T *yl, T *out, int64_t k0, int64_t k1) {
    const int64_t n = rp->n, h = n / 2, m = n / P, hm = m / 2, S = (P - 1) / 2;
    const T *tw = rp->rtw, *rt = rp->rroots;
    for (int64_t k = k0; k < k1; k += VLV) {
        VO(t) t[FFT_RSPLIT_MAX];
        for (int64_t s = 0; s < S; s++) {
            const T *z = Z + 2 * s * m;
            VO(t) a = VO(ld)(z + 2 * k), b = VO(conj)(VO(rev)(VO(ld)(z + 2 * (m - k - VLV + 1))));
            VO(t) y0 = VO(scale)(VO(add)(a, b), (T)0.5);
            VO(t) y1 = VO(scale)(VO(rotm)(VO(sub)(a, b)), (T)0.5);
            t[2 * s] = s ? VO(mul)(y0, VO(ld)(tw + 2 * ((2 * s - 1) * (hm + 1) + k))) : y0;
            t[2 * s + 1] = VO(mul)(y1, VO(ld)(tw + 2 * (2 * s * (hm + 1) + k)));
        }
        t[P - 1] = VO(mul)(VO(ld)(yl + 2 * k), VO(ld)(tw + 2 * ((P - 2) * (hm + 1) + k)));
        for (int64_t q = 0; q < P; q++) {
            VO(t) acc = t[0], accb = t[0];
            for (int64_t r = 1; r <= S; r++) {
                const int64_t e = (r * q) % P;
                acc = VO(fma)(VO(add)(t[r], t[P - r]), rt[2 * e], acc);
                VO(t) mr = VO(sub)(t[r], t[P - r]);
                accb = r == 1 ? VO(scale)(mr, rt[2 * e + 1]) : VO(fma)(mr, rt[2 * e + 1], accb);
            }
            VO(t) x = VO(add)(acc, VO(rotp)(accb));
            const int64_t kk = k + q * m;
            if (kk + VLV - 1 <= h) {
                VO(st)(out + 2 * kk, x);
            } else if (kk > h) {
                VO(st)(out + 2 * (n - kk - VLV + 1), VO(rev)(VO(conj)(x)));
            } else {
                T v[2 * VLV];
                VO(st)(v, x);
                for (int64_t l = 0; l < VLV; l++) {
                    const int64_t kl = kk + l;
                    if (kl <= h) {
                        out[2 * kl] = v[2 * l];
                        out[2 * kl + 1] = v[2 * l + 1];
                    } else {
                        out[2 * (n - kl)] = v[2 * l];
                        out[2 * (n - kl) + 1] = -v[2 * l + 1];
                    }
                }
            }
        }
    }
}

/* rodd_bwd_comb for k in [k0, k1) as rodd_fwd_vec. */
FFT_INLINE void DN(rodd_bwd_vec)(const int64_t P, const fft_plan *rp, const T *X, T *W,
                                 T *vl, int64_t k0, int64_t k1) {
    const int64_t n = rp->n, h = n / 2, m = n / P, hm = m / 2, S = (P - 1) / 2;
    const T *tw = rp->rtw, *rt = rp->rroots;
    for (int64_t k = k0; k < k1; k += VLV) {
        VO(t) x[FFT_RSPLIT_MAX], v[FFT_RSPLIT_MAX];
        for (int64_t q = 0; q < P; q++) {
            const int64_t kk = k + q * m;
            if (kk + VLV - 1 <= h) {
                x[q] = VO(ld)(X + 2 * kk);
            } else if (kk > h) {
                x[q] = VO(conj)(VO(rev)(VO(ld)(X + 2 * (n - kk - VLV + 1))));
            } else {
                T g[2 * VLV];
                for (int64_t l = 0; l < VLV; l++) {
                    const int64_t kl = kk + l;
                    g[2 * l] = X[2 * (kl <= h ? kl : n - kl)];
                    g[2 * l + 1] = kl <= h ? X[2 * kl + 1] : -X[2 * (n - kl) + 1];
                }
                x[q] = VO(ld)(g);
            }
        }
        for (int64_t r = 0; r < P; r++) {
            VO(t) acc = x[0], accb = x[0];
            for (int64_t q = 1; q <= S; q++) {
                const int64_t e = (r * q) % P;
                acc = VO(fma)(VO(add)(x[q], x[P - q]), rt[2 * e], acc);
                VO(t) mq = VO(sub)(x[q], x[P - q]);
                accb = q == 1 ? VO(scale)(mq, rt[2 * e + 1]) : VO(fma)(mq, rt[2 * e + 1], accb);
            }
            VO(t) u = VO(add)(acc, VO(rotp)(accb));
            v[r] = r ? VO(mul)(u, VO(ld)(tw + 2 * ((r - 1) * (hm + 1) + k))) : u;
        }
        for (int64_t s = 0; s < S; s++) {
            T *w = W + 2 * s * m;
            VO(t) iv = VO(rotp)(v[2 * s + 1]);
            VO(st)(w + 2 * k, VO(add)(v[2 * s], iv));
            VO(st)(w + 2 * (m - k - VLV + 1), VO(rev)(VO(conj)(VO(sub)(v[2 * s], iv))));
        }
        VO(st)(vl + 2 * k, v[P - 1]);
    }
}
#endif

/* the combination step of rodd_fwd (bwd 0) or rodd_bwd (bwd 1): k = 0 and the tail
 * one by one, the rest VLV at a time; constant P for 3, 5, 7 (loops unrolled). */
#if VLV > 1
#define FD_RCOMB(P, bwd, a, b, c)                                                       \
    do {                                                                                \
        const int64_t hm_ = rp->n / (P) / 2, kv_ = 1 + hm_ - hm_ % VLV;                  \
        if (bwd) {                                                                      \
            DN(rodd_bwd_comb)(P, rp, a, b, c, 0, 1);                                    \
            DN(rodd_bwd_vec)(P, rp, a, b, c, 1, kv_);                                   \
            DN(rodd_bwd_comb)(P, rp, a, b, c, kv_, hm_ + 1);                            \
        } else {                                                                        \
            DN(rodd_fwd_comb)(P, rp, a, b, c, 0, 1);                                    \
            DN(rodd_fwd_vec)(P, rp, a, b, c, 1, kv_);                                   \
            DN(rodd_fwd_comb)(P, rp, a, b, c, kv_, hm_ + 1);                            \
        }                                                                               \
    } while (0)
#else
#define FD_RCOMB(P, bwd, a, b, c)                                                       \
    do {                                                                                \
        if (bwd) DN(rodd_bwd_comb)(P, rp, a, b, c, 0, rp->n / (P) / 2 + 1);             \
        else DN(rodd_fwd_comb)(P, rp, a, b, c, 0, rp->n / (P) / 2 + 1);                 \
    } while (0)
#endif
#define FD_RCOMB_ANY(bwd, a, b, c)                                                      \
    switch (rp->rsp) {                                                                  \
    case 3: FD_RCOMB(3, bwd, a, b, c); break;                                           \
    case 5: FD_RCOMB(5, bwd, a, b, c); break;                                           \
    case 7: FD_RCOMB(7, bwd, a, b, c); break;                                           \
    default: FD_RCOMB(rp->rsp, bwd, a, b, c);                                           \
    }

/* r2c of the odd-n real line x (stride sx) into out (n / 2 + 1 complex); work: rp->work
 * complex. */
static void DN(rodd_fwd)(const fft_plan *rp, const T *x, int64_t sx, T *out, T *work) {
    const int64_t n = rp->n;
    const fft_plan *cp = rp->half;
    if (!rp->rsp) {
        for (int64_t j = 0; j < n; j++) {
            work[2 * j] = x[j * sx];
            work[2 * j + 1] = 0;
        }
        const T *r = DN(exec)(rp->hblue ? rp->hblue : cp, work, work + 2 * n);
        memcpy(out, r, (size_t)(n / 2 + 1) * 2 * sizeof(T));
        return;
    }
    const int64_t P = rp->rsp, m = n / P, S = (P - 1) / 2, st = P * sx;
    T *Z = work, *yl = work + 2 * S * m, *tmp = yl + 2 * (m / 2 + 1);
    for (int64_t s = 0; s < S; s++) {
        T *zs = Z + 2 * s * m, *g = cp->n2 ? zs : tmp;
        const T *x0 = x + 2 * s * sx, *x1 = x0 + sx;
        if (sx == 1)               /* the pair adjacent: one 2-real move each */
            for (int64_t j = 0; j < m; j++) memcpy(g + 2 * j, x0 + j * st, 2 * sizeof(T));
        else
            for (int64_t j = 0; j < m; j++) {
                g[2 * j] = x0[j * st];
                g[2 * j + 1] = x1[j * st];
            }
        if (cp->n2) DN(blue)(cp, zs, tmp);
        else DN(passes)(cp, tmp, zs, tmp, tmp + 2 * m);
    }
    DN(rodd_fwd)(rp->rsub, x + (P - 1) * sx, st, yl, tmp);
    FD_RCOMB_ANY(0, Z, yl, out)
}

/* c2r of odd n: X (n / 2 + 1 complex; its entry 0's imaginary part ignored) into the
 * n reals y (stride sy) times sc; work: rp->work complex. */
static void DN(rodd_bwd)(const fft_plan *rp, const T *X, T *y, int64_t sy, T sc, T *work) {
    const int64_t n = rp->n, h = n / 2;
    const fft_plan *cp = rp->half;
    if (!rp->rsp && rp->hblue) {     /* x_j = Re(X_0 + 2 sum_{0 < k <= h} X_k w^jk) */
        work[0] = X[0];
        work[1] = 0;
        for (int64_t k = 1; k <= h; k++) {
            work[2 * k] = 2 * X[2 * k];
            work[2 * k + 1] = 2 * X[2 * k + 1];
        }
        memset(work + 2 * (h + 1), 0, (size_t)(n - h - 1) * 2 * sizeof(T));
        const T *r = DN(exec)(rp->hblue, work, work + 2 * n);
        for (int64_t j = 0; j < n; j++) y[j * sy] = r[2 * j] * sc;
        return;
    }
    if (!rp->rsp) {
        work[0] = X[0];
        work[1] = 0;
        for (int64_t k = 1; k <= h; k++) {
            work[2 * k] = work[2 * (n - k)] = X[2 * k];
            work[2 * k + 1] = X[2 * k + 1];
            work[2 * (n - k) + 1] = -X[2 * k + 1];
        }
        const T *r = DN(exec)(cp, work, work + 2 * n);
        for (int64_t j = 0; j < n; j++) y[j * sy] = r[2 * j] * sc;
        return;
    }
    const int64_t P = rp->rsp, m = n / P, S = (P - 1) / 2, st = P * sy;
    T *W = work, *vl = work + 2 * S * m, *tmp = vl + 2 * (m / 2 + 1);
    FD_RCOMB_ANY(1, X, W, vl)
    for (int64_t s = 0; s < S; s++) {
        const T *r = DN(exec)(cp, W + 2 * s * m, tmp);
        T *y0 = y + 2 * s * sy, *y1 = y0 + sy;
        for (int64_t j = 0; j < m; j++) {
            y0[j * st] = r[2 * j] * sc;
            y1[j * st] = r[2 * j + 1] * sc;
        }
    }
    DN(rodd_bwd)(rp->rsub, vl, y + (P - 1) * sy, st, sc, tmp);
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
    /* odd real lines by rodd_fwd / rodd_bwd: split plans, and lines alone of a plan with
     * a half Bluestein one (the rest in pairs, odd_pair); their result (h + 1), work
     * and a padded copy of the input */
    const int rsplit = (p->kind & 1) && (p->rsp || p->hblue);
    int64_t nb = (p->kind & 1) && p->rsp ? h + 2 : cp->n + 2, nw = cp->work;
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
        if (J->kind && !even && !p->rsp && li + 1 < b1 && DN(odd_pair)(J, li, buf, work)) {
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

#undef FD_RCOMB_ANY
#undef FD_RCOMB
#undef FD_PASS
#undef FD_BPASS
#undef VO
#undef PVB
#undef PS
#undef PV
#undef DN
#undef FD_CAT
#undef FD_CAT_
