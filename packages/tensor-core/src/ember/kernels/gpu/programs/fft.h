// dtypes: float32 float64
/* The FFT family on the GPU (kernels/cpu/fft.c on the CPU): complex numbers are
 * (re, im) pairs of EM_T, lines are dense rows of n complex numbers.
 *
 * A transform of a smooth length is a Stockham pass per radix (FFTPACK's order and
 * layout: input (i, j, k) = i + ido * (j + ip * k), output (i, k, j) = i + ido * (k + l1 * j),
 * output j multiplied by W^(j * l1 * i)), one work-item per butterfly; the radix is any
 * small factor (2, 3, 4, 5, 7, ..., up to 16) and the twiddles come from a table of the
 * n roots W^t = exp(sign 2 pi i t / n) computed on the host in double. Other lengths
 * go through Bluestein's convolution, whose FFTs are these passes. Every buffer is a
 * dense tensor from element 0 (the host's fresh work buffers). */

#define EM_FFT_MAXRADIX 16

EM_KERNEL void EM_NAME(fft_pass)(em_int64 lines, em_int64 n, em_int64 ip, em_int64 l1,
                                 em_int64 ido, EM_GLOBAL const EM_T *src, EM_GLOBAL EM_T *dst,
                                 EM_GLOBAL const EM_T *tw, EM_CT scale) {
    const em_int64 per = l1 * ido, step = n / ip;
    for (em_int64 g = EM_GID(); g < lines * per; g += EM_GSIZE()) {
        const em_int64 line = g / per, r = g % per, k = r / ido, i = r % ido;
        EM_GLOBAL const EM_T *cc = src + 2 * line * n;
        EM_GLOBAL EM_T *ch = dst + 2 * line * n;
        EM_CT xr[EM_FFT_MAXRADIX], xi[EM_FFT_MAXRADIX];
        for (em_int64 j = 0; j < ip; j++) {
            const em_int64 a = i + ido * (j + ip * k);
            xr[j] = cc[2 * a];
            xi[j] = cc[2 * a + 1];
        }
        for (em_int64 m = 0; m < ip; m++) {
            EM_CT sr, si;
            if (ip == 4) {           /* the common radix without the table */
                const EM_CT s = tw[2 * step + 1];     /* sign of the exponent (+-1) */
                EM_CT t1r = xr[0] - xr[2], t1i = xi[0] - xi[2], t2r = xr[0] + xr[2],
                      t2i = xi[0] + xi[2], t3r = xr[1] + xr[3], t3i = xi[1] + xi[3],
                      t4r = -(xi[1] - xi[3]) * s, t4i = (xr[1] - xr[3]) * s;
                if (m == 0) { sr = t2r + t3r; si = t2i + t3i; }
                else if (m == 1) { sr = t1r + t4r; si = t1i + t4i; }
                else if (m == 2) { sr = t2r - t3r; si = t2i - t3i; }
                else { sr = t1r - t4r; si = t1i - t4i; }
            } else {
                sr = 0;
                si = 0;
                em_int64 q = 0;
                for (em_int64 j = 0; j < ip; j++) {
                    const EM_CT wr = tw[2 * q * step], wi = tw[2 * q * step + 1];
                    sr += xr[j] * wr - xi[j] * wi;
                    si += xr[j] * wi + xi[j] * wr;
                    q += m;
                    if (q >= ip) q -= ip;
                }
            }
            const em_int64 t = m * l1 * i;
            const EM_CT wr = tw[2 * t], wi = tw[2 * t + 1];
            const em_int64 o = i + ido * (k + l1 * m);
            ch[2 * o] = (sr * wr - si * wi) * scale;
            ch[2 * o + 1] = (sr * wi + si * wr) * scale;
        }
    }
}

/* Bluestein (the chirp bk and the FFT of its conjugate, bkf, come from the host) */
/* a = x * bk zero-padded from n to n2 (lines rows) */
EM_KERNEL void EM_NAME(fft_blue_pre)(em_int64 lines, em_int64 n, em_int64 n2,
                                     EM_GLOBAL const EM_T *x, EM_GLOBAL const EM_T *bk,
                                     EM_GLOBAL EM_T *a) {
    for (em_int64 g = EM_GID(); g < lines * n2; g += EM_GSIZE()) {
        const em_int64 line = g / n2, m = g % n2;
        EM_CT yr = 0, yi = 0;
        if (m < n) {
            const EM_CT xr = x[2 * (line * n + m)], xi = x[2 * (line * n + m) + 1],
                        br = bk[2 * m], bi = bk[2 * m + 1];
            yr = xr * br - xi * bi;
            yi = xr * bi + xi * br;
        }
        a[2 * g] = yr;
        a[2 * g + 1] = yi;
    }
}

/* a *= f (f one row of n2, a lines rows) */
EM_KERNEL void EM_NAME(fft_blue_mul)(em_int64 lines, em_int64 n2, EM_GLOBAL EM_T *a,
                                     EM_GLOBAL const EM_T *f) {
    for (em_int64 g = EM_GID(); g < lines * n2; g += EM_GSIZE()) {
        const em_int64 m = g % n2;
        const EM_CT xr = a[2 * g], xi = a[2 * g + 1], br = f[2 * m], bi = f[2 * m + 1];
        a[2 * g] = xr * br - xi * bi;
        a[2 * g + 1] = xr * bi + xi * br;
    }
}

/* y = scale * a[:n] * bk */
EM_KERNEL void EM_NAME(fft_blue_post)(em_int64 lines, em_int64 n, em_int64 n2,
                                      EM_GLOBAL const EM_T *a, EM_GLOBAL const EM_T *bk,
                                      EM_GLOBAL EM_T *y, EM_CT scale) {
    for (em_int64 g = EM_GID(); g < lines * n; g += EM_GSIZE()) {
        const em_int64 line = g / n, m = g % n;
        const EM_CT xr = a[2 * (line * n2 + m)], xi = a[2 * (line * n2 + m) + 1],
                    br = bk[2 * m], bi = bk[2 * m + 1];
        y[2 * g] = (xr * br - xi * bi) * scale;
        y[2 * g + 1] = (xr * bi + xi * br) * scale;
    }
}

/* c2r's input: the Hermitian lines of n from their first m entries (zeros past them;
 * the imaginary parts of entry 0 and, for even n, n / 2 dropped) */
EM_KERNEL void EM_NAME(fft_hermitian)(em_int64 lines, em_int64 n, em_int64 m,
                                      EM_GLOBAL const EM_T *x, EM_GLOBAL EM_T *y) {
    for (em_int64 g = EM_GID(); g < lines * n; g += EM_GSIZE()) {
        const em_int64 line = g / n, k = g % n, h = n / 2;
        const em_int64 s = k <= h ? k : n - k;
        EM_CT re = 0, im = 0;
        if (s < m) {
            re = x[2 * (line * m + s)];
            im = x[2 * (line * m + s) + 1];
        }
        if (s == 0 || 2 * s == n) im = 0;
        y[2 * g] = re;
        y[2 * g + 1] = k <= h ? im : -im;
    }
}
