// dtypes: float16 bfloat16 float32 float64
/* The optimizers', GradScaler's and gradient clipping's steps on a device, over up to 16
 * tensors a launch (backends/gpu/optim.py; the CPU's are ember/_C/foreach.pyx's adam_,
 * sgd_ and non_finite_check_and_unscale, whose arithmetic these repeat op for op).
 *
 * Multi-tensor launches: OpenCL 1.2 has no pointers inside buffers, so each list's
 * buffers are 16 parameters (EM_SLOTS16) and a slot picks its own (EM_PICK16); each
 * slot's element count and element offsets are a row of `tab` (em_int64, made by the
 * host once per layout and kept on the device). The elementwise ones (scale, adam,
 * sgd) run a work-group per chunk of the slots' elements (grid-stride): a piece of a
 * large slot or several small slots whole, listed after the slot rows (em_chunk_lo);
 * its work-items stride over each slot's part as over a flat buffer (every work-item
 * striding over every slot left most of them idle in the small slots: 1.8x a flat
 * buffer's time on PoCL). GradScaler's found-inf
 * flag is read here, on the device: with `check` and
 * found[f0] != 0 the optimizer kernels change nothing, so a scaled step needs no host
 * read. */
#include "../group_reduce.h"

#ifndef EM_NSLOTS
#define EM_NSLOTS 16
/* EM_SLOTS16(T, x): the parameters `T x0, ..., T x15` (gpu_programs.py expands it the
 * same way for the host's signature); EM_PICK16(x, s): x##s for a run-time s < 16 */
#define EM_SLOTS16(T, x) \
    T x##0, T x##1, T x##2, T x##3, T x##4, T x##5, T x##6, T x##7, \
    T x##8, T x##9, T x##10, T x##11, T x##12, T x##13, T x##14, T x##15
#define EM_PICK16(x, s) ( \
    (s) == 0 ? x##0 : (s) == 1 ? x##1 : (s) == 2 ? x##2 : (s) == 3 ? x##3 : \
    (s) == 4 ? x##4 : (s) == 5 ? x##5 : (s) == 6 ? x##6 : (s) == 7 ? x##7 : \
    (s) == 8 ? x##8 : (s) == 9 ? x##9 : (s) == 10 ? x##10 : (s) == 11 ? x##11 : \
    (s) == 12 ? x##12 : (s) == 13 ? x##13 : (s) == 14 ? x##14 : x##15)
#endif

#ifndef EM_CHUNK_HEAD
#define EM_CHUNK_HEAD
/* The work-groups of an elementwise multi-tensor launch: after the ns slot rows of
 * `width` words in tab, their count and a row (s0, s1, lo, hi) each (optim.py's
 * _chunk_rows): slots s0 .. s1 - 1, from element lo of the first to before element hi
 * of the last. The part of slot s in chunk d: */
EM_INLINE em_int64 em_chunk_lo(EM_GLOBAL const em_int64 *d, int s) {
    return s == d[0] ? d[2] : 0;
}
EM_INLINE em_int64 em_chunk_hi(EM_GLOBAL const em_int64 *d, int s, em_int64 n) {
    return s == d[1] - 1 ? d[3] : n;
}
#endif

/* out[o0 + s] = sum of x_s^2 over slot s, accumulated in the compute type by one
 * work-group per slot (clip_grad_norm_'s squared 2-norms); tab rows: n, the offset in x */
EM_KERNEL void EM_NAME(sumsq_multi)(int ns, EM_GLOBAL const em_int64 *tab,
                                    EM_SLOTS16(EM_GLOBAL const EM_T *, x),
                                    EM_GLOBAL EM_CT *out, em_int64 o0) {
    EM_LOCAL EM_CT buf[256];
    for (int s = (int)EM_GROUP(); s < ns; s += (int)EM_NGROUPS()) {
        EM_GLOBAL const EM_T *xs = EM_PICK16(x, s);
        const em_int64 n = tab[2 * s], x_at = tab[2 * s + 1];
        EM_CT acc = 0;
        for (em_int64 k = EM_LID(); k < n; k += EM_LSIZE()) {
            const EM_CT v = EM_LD(xs, x_at + k);
            acc += v * v;
        }
        acc = EM_NAME(group_sum)(buf, acc);
        if (EM_LID() == 0) out[o0 + s] = acc;
    }
}

/* g_s *= f[i0] in every slot; with check, found[f0] = 1 when any g was inf or NaN
 * (GradScaler's unscale; only ever 1 is written, so the stores race harmlessly). Without
 * check: clipping's scale by its coefficient. tab rows: n, the offset in g */
EM_KERNEL void EM_NAME(scale_multi)(int ns, EM_GLOBAL const em_int64 *tab,
                                    EM_SLOTS16(EM_GLOBAL EM_T *, g),
                                    EM_GLOBAL const EM_CT *f, em_int64 i0,
                                    EM_GLOBAL float *found, em_int64 f0, int check) {
    const EM_CT c = f[i0];
    int bad = 0;
    EM_GLOBAL const em_int64 *ct = tab + 2 * ns;
    for (em_int64 ck = EM_GROUP(); ck < ct[0]; ck += EM_NGROUPS()) {
        EM_GLOBAL const em_int64 *cd = ct + 1 + 4 * ck;
        for (int s = (int)cd[0]; s < (int)cd[1]; ++s) {
            EM_GLOBAL EM_T *gs = EM_PICK16(g, s);
            const em_int64 g_at = tab[2 * s + 1], hi = em_chunk_hi(cd, s, tab[2 * s]);
            for (em_int64 i = em_chunk_lo(cd, s) + EM_LID(); i < hi; i += EM_LSIZE()) {
                const EM_CT x = EM_LD(gs, g_at + i);
                bad |= !isfinite(x);
                EM_ST(gs, g_at + i, x * c);
            }
        }
    }
    if (check && bad) found[f0] = 1.0f;
}

/* Adam / AdamW (em_adam_* of foreach.pyx): shrink = 1 - lr * wd when decoupled, l2 = wd
 * otherwise; m, v lerp to g, g^2; vmax (amsgrad) keeps the maximum, NaN propagating;
 * p += m / (sqrt(v) + eps * bc2) * (-lr * bc2 / bc1). The step count t is this step's,
 * old + 1 (step_bump advances it after): bc1 = 1 - beta1^t = -expm1(t * log(beta1)),
 * bc2 = sqrt(-expm1(t * log(beta2))). With amsgrad 0 the x slots are any buffers.
 * tab rows: n, the offsets in p, g, m, v, x, t */
EM_KERNEL void EM_NAME(adam_multi)(int ns, EM_GLOBAL const em_int64 *tab,
                                   EM_SLOTS16(EM_GLOBAL EM_T *, p),
                                   EM_SLOTS16(EM_GLOBAL const EM_T *, g),
                                   EM_SLOTS16(EM_GLOBAL EM_T *, m),
                                   EM_SLOTS16(EM_GLOBAL EM_T *, v),
                                   EM_SLOTS16(EM_GLOBAL EM_T *, x),
                                   EM_SLOTS16(EM_GLOBAL const float *, t),
                                   EM_GLOBAL const float *found, em_int64 f0, int check,
                                   int amsgrad, EM_CT shrink, EM_CT l2, int neg, EM_CT w1,
                                   EM_CT w2, EM_CT lb1, EM_CT lb2, EM_CT eps, EM_CT lr) {
    if (check && found[f0] != 0) return;
    EM_GLOBAL const em_int64 *ct = tab + 7 * ns;
    for (em_int64 ck = EM_GROUP(); ck < ct[0]; ck += EM_NGROUPS()) {
      EM_GLOBAL const em_int64 *cd = ct + 1 + 4 * ck;
      for (int s = (int)cd[0]; s < (int)cd[1]; ++s) {
        EM_GLOBAL const em_int64 *e = tab + 7 * s;
        const em_int64 lo = em_chunk_lo(cd, s), hi = em_chunk_hi(cd, s, e[0]);
        if (lo + EM_LID() >= hi) continue;   /* no element here: skip the scalars too */
        const em_int64 p_at = e[1], g_at = e[2], m_at = e[3], v_at = e[4], x_at = e[5];
        EM_GLOBAL EM_T *ps = EM_PICK16(p, s);
        EM_GLOBAL const EM_T *gs = EM_PICK16(g, s);
        EM_GLOBAL EM_T *ms = EM_PICK16(m, s);
        EM_GLOBAL EM_T *vs = EM_PICK16(v, s);
        EM_GLOBAL EM_T *xs = EM_PICK16(x, s);
        const EM_CT step = (EM_CT)EM_PICK16(t, s)[e[6]] + 1;
        const EM_CT bc1 = -expm1(step * lb1), bc2 = sqrt(-expm1(step * lb2));
        const EM_CT eps2 = eps * bc2, size = -lr * bc2 / bc1;
        for (em_int64 i = lo + EM_LID(); i < hi; i += EM_LSIZE()) {
            EM_CT pi = EM_LD(ps, p_at + i), gi = EM_LD(gs, g_at + i);
            if (neg) gi = -gi;
            if (shrink != 1) pi = pi * shrink;
            if (l2 != 0) gi = pi * l2 + gi;
            const EM_CT mo = EM_LD(ms, m_at + i), vo = EM_LD(vs, v_at + i);
            const EM_CT mi = mo + w1 * (gi - mo);
            EM_CT vi = vo + w2 * (gi * gi - vo);
            EM_ST(ms, m_at + i, mi);
            EM_ST(vs, v_at + i, vi);
            if (amsgrad) {
                const EM_CT u = EM_LD(xs, x_at + i);
                vi = (u != u || u > vi) ? u : vi;
                EM_ST(xs, x_at + i, vi);
            }
            EM_ST(ps, p_at + i, pi + mi / (sqrt(vi) + eps2) * size);
        }
      }
    }
}

/* t_s[tab[stride * s + at]] += 1 in every slot, unless check and found[f0] != 0: the
 * step counts, advanced after the launches that read them (adam_multi) */
EM_KERNEL void EM_NAME(step_bump)(int ns, EM_GLOBAL const em_int64 *tab, int stride, int at,
                                  EM_SLOTS16(EM_GLOBAL float *, t),
                                  EM_GLOBAL const float *found, em_int64 f0, int check) {
    const int s = (int)EM_GID();
    if (s >= ns || (check && found[f0] != 0)) return;
    EM_PICK16(t, s)[tab[stride * s + at]] += 1.0f;
}

/* SGD (em_sgd_*): d = g (negated to maximize) + l2 * p; with momentum (has_buf) buf = d
 * at a slot's first step (fresh), else buf * mom + d * keep; d = buf, or d + mom * buf
 * with nesterov; p += d * nlr. tab rows: n, the offsets in p, g, b, fresh */
EM_KERNEL void EM_NAME(sgd_multi)(int ns, EM_GLOBAL const em_int64 *tab,
                                  EM_SLOTS16(EM_GLOBAL EM_T *, p),
                                  EM_SLOTS16(EM_GLOBAL const EM_T *, g),
                                  EM_SLOTS16(EM_GLOBAL EM_T *, b),
                                  EM_GLOBAL const float *found, em_int64 f0, int check,
                                  int has_buf, EM_CT l2, int neg, EM_CT mom, EM_CT keep,
                                  int nesterov, EM_CT nlr) {
    if (check && found[f0] != 0) return;
    EM_GLOBAL const em_int64 *ct = tab + 5 * ns;
    for (em_int64 ck = EM_GROUP(); ck < ct[0]; ck += EM_NGROUPS()) {
      EM_GLOBAL const em_int64 *cd = ct + 1 + 4 * ck;
      for (int s = (int)cd[0]; s < (int)cd[1]; ++s) {
        EM_GLOBAL const em_int64 *e = tab + 5 * s;
        const em_int64 lo = em_chunk_lo(cd, s), hi = em_chunk_hi(cd, s, e[0]);
        const em_int64 p_at = e[1], g_at = e[2], b_at = e[3];
        const int fresh = (int)e[4];
        EM_GLOBAL EM_T *ps = EM_PICK16(p, s);
        EM_GLOBAL const EM_T *gs = EM_PICK16(g, s);
        EM_GLOBAL EM_T *bs = EM_PICK16(b, s);
        for (em_int64 i = lo + EM_LID(); i < hi; i += EM_LSIZE()) {
            const EM_CT pi = EM_LD(ps, p_at + i);
            EM_CT d = EM_LD(gs, g_at + i);
            if (neg) d = -d;
            if (l2 != 0) d = pi * l2 + d;
            if (has_buf) {
                const EM_CT bo = fresh ? d : EM_LD(bs, b_at + i) * mom + (keep == 1 ? d : d * keep);
                EM_ST(bs, b_at + i, bo);
                d = nesterov ? bo * mom + d : bo;
            }
            EM_ST(ps, p_at + i, pi + d * nlr);
        }
      }
    }
}

/* GradScaler.update (PyTorch's _amp_update_scale_) in one work-item: with found[f0] != 0
 * scale *= backoff and the tracker restarts; else the tracker counts a clean step and at
 * `interval` scale *= growth (kept when that overflows) and the tracker restarts.
 * Compiled per dtype like the rest; the host runs the float32 program's. */
EM_KERNEL void EM_NAME(amp_update_scale)(EM_GLOBAL float *scale, em_int64 s0,
                                         EM_GLOBAL em_int32 *tracker, em_int64 t0,
                                         EM_GLOBAL const float *found, em_int64 f0,
                                         float growth, float backoff, int interval) {
    if (EM_GID() != 0) return;
    if (found[f0] > 0) {
        scale[s0] = scale[s0] * backoff;
        tracker[t0] = 0;
        return;
    }
    const em_int32 k = tracker[t0] + 1;
    if (k >= interval) {
        const float grown = scale[s0] * growth;
        if (isfinite(grown)) scale[s0] = grown;
        tracker[t0] = 0;
    } else {
        tracker[t0] = k;
    }
}
