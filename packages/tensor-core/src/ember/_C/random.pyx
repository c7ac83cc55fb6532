# kernels: random.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""The CPU side of ember's random numbers: Philox4x32-10 streams (kernels/cpu/random.c).

Every function here fills a contiguous CPU tensor from the stream of (seed, offset);
ember/ops/random.py owns the generators, reserves the words each call uses and handles
dtypes, devices and non-contiguous outputs. The word each element uses is fixed (see
random.c's header and ops/random.py's docstring), so another device reproduces any
element on its own.
"""
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.math cimport log1p, INFINITY, isfinite
from libc.stdlib cimport malloc, free, qsort

from ember._C.core cimport TensorBase

cdef extern from "ember_cpu.h" nogil:
    void em_philox4x32_10(const uint32_t *ctr, const uint32_t *key, uint32_t *out)
    void em_random_uniform(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                           double low, double high)
    void em_random_normal(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                          double mean, double std)
    void em_random_int(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                       int64_t low, uint64_t range)
    void em_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset)

DEF NBIG = 1 << 16      # release the GIL above this many elements
DEF FLOAT16 = 6
DEF BFLOAT16 = 11   # the last float; 12-14 are uint16/32/64
DEF FLOAT32 = 7
DEF FLOAT64 = 8
DEF INT64 = 5


cdef struct Stream:
    uint32_t key[2]
    uint64_t block
    uint32_t words[4]
    bint have


cdef inline void stream_init(Stream *s, uint64_t seed) noexcept nogil:
    s.key[0] = <uint32_t>seed
    s.key[1] = <uint32_t>(seed >> 32)
    s.have = False


cdef inline uint32_t word_at(Stream *s, uint64_t pos) noexcept nogil:
    """Word `pos` of the stream (the same function as random.c's word_at)."""
    cdef uint64_t b = pos >> 2
    cdef uint32_t ctr[4]
    if not s.have or s.block != b:
        ctr[0] = <uint32_t>b
        ctr[1] = <uint32_t>(b >> 32)
        ctr[2] = 0
        ctr[3] = 0
        em_philox4x32_10(ctr, s.key, s.words)
        s.block = b
        s.have = True
    return s.words[pos & 3]


cdef inline double u53(Stream *s, uint64_t pos) noexcept nogil:
    """The float64 uniform in [0, 1) made of words pos and pos + 1 (as random.c)."""
    cdef uint64_t hi = word_at(s, pos), lo = word_at(s, pos + 1)
    return <double>((hi << 21) | (lo >> 11)) * (1.0 / 9007199254740992.0)


cdef class PhiloxGenerator:
    """The state of one stream: a 64-bit seed and an offset counted in 32-bit words.
    ember.Generator subclasses this and adds the PyTorch-style API."""
    cdef uint64_t _seed
    cdef uint64_t _offset

    def _reserve(self, uint64_t nwords):
        """Claim the next `nwords` words of the stream: (seed, first word). Atomic
        under the GIL, so threads sharing a generator never get the same words."""
        cdef uint64_t start = self._offset
        self._offset = start + nwords
        return self._seed, start

    def _get(self):
        return self._seed, self._offset

    def _set(self, uint64_t seed, uint64_t offset):
        self._seed = seed
        self._offset = offset


def philox4x32_10(ctr, key):
    """One Philox4x32-10 block: four 32-bit words from a 4-word counter and 2-word key."""
    cdef uint32_t c[4]
    cdef uint32_t k[2]
    cdef uint32_t o[4]
    if len(ctr) != 4 or len(key) != 2:
        raise ValueError("philox4x32_10: expected 4 counter words and 2 key words")
    for i in range(4):
        c[i] = ctr[i]
    for i in range(2):
        k[i] = key[i]
    em_philox4x32_10(c, k, o)
    return (o[0], o[1], o[2], o[3])


def stream_words(uint64_t seed, uint64_t offset, Py_ssize_t n):
    """Words [offset, offset + n) of the stream of `seed`, as a list of ints (for tests
    and for other backends to check themselves against)."""
    cdef Stream s
    stream_init(&s, seed)
    return [word_at(&s, offset + <uint64_t>i) for i in range(n)]


cdef int check_out(TensorBase out, str op) except -1:
    if out._storage.device.type_id != 0 or not out.contiguous_c():
        raise ValueError(f"{op}: internal error: the output must be a contiguous CPU tensor")
    return 0


def uniform(TensorBase out, uint64_t seed, uint64_t offset, double low, double high):
    """out[i] = low + (high - low) * u_i (float16, float32, float64)."""
    check_out(out, "uniform")
    if out._dtype < FLOAT16 or out._dtype > BFLOAT16:
        raise TypeError("uniform: expected a floating point output")
    cdef int64_t n = out.numel_c()
    cdef int dt = out._dtype
    cdef char *p = out.ptr()
    if n >= NBIG:
        with nogil:
            em_random_uniform(dt, p, n, seed, offset, low, high)
    else:
        em_random_uniform(dt, p, n, seed, offset, low, high)


def normal(TensorBase out, uint64_t seed, uint64_t offset, double mean, double std):
    """out[i] = mean + std * z_i, z_i standard normal (Box-Muller)."""
    check_out(out, "normal")
    if out._dtype < FLOAT16 or out._dtype > BFLOAT16:
        raise TypeError("normal: expected a floating point output")
    cdef int64_t n = out.numel_c()
    cdef int dt = out._dtype
    cdef char *p = out.ptr()
    if n >= NBIG:
        with nogil:
            em_random_normal(dt, p, n, seed, offset, mean, std)
    else:
        em_random_normal(dt, p, n, seed, offset, mean, std)


def integers(TensorBase out, uint64_t seed, uint64_t offset, int64_t low, uint64_t span):
    """out[i] = low + r_i with r_i uniform in [0, span); any dtype."""
    check_out(out, "integers")
    if span == 0:
        raise ValueError("integers: empty range")
    cdef int64_t n = out.numel_c()
    cdef int dt = out._dtype
    cdef char *p = out.ptr()
    if n >= NBIG:
        with nogil:
            em_random_int(dt, p, n, seed, offset, low, span)
    else:
        em_random_int(dt, p, n, seed, offset, low, span)


def randperm(TensorBase out, uint64_t seed, uint64_t offset):
    """A random permutation of 0..n-1 into a 1-d int64 tensor (Fisher-Yates)."""
    check_out(out, "randperm")
    if out._dtype != INT64 or out._ndim != 1:
        raise TypeError("randperm: expected a 1-d int64 output")
    cdef int64_t n = out.numel_c()
    cdef int64_t *p = <int64_t *>out.ptr()
    if n >= NBIG:
        with nogil:
            em_randperm(p, n, seed, offset)
    else:
        em_randperm(p, n, seed, offset)


def exponential(TensorBase out, uint64_t seed, uint64_t offset, double lambd):
    """out[i] = -log1p(-u_i) / lambd: the uniform of out's dtype, transformed in place
    (float32 and float64; ops/random.py computes float16 in float32)."""
    check_out(out, "exponential")
    if out._dtype != FLOAT32 and out._dtype != FLOAT64:
        raise TypeError("exponential: expected a float32 or float64 output")
    uniform(out, seed, offset, 0.0, 1.0)
    cdef int64_t i, n = out.numel_c()
    cdef float *f = <float *>out.ptr()
    cdef double *d = <double *>out.ptr()
    cdef bint single = out._dtype == FLOAT32
    with nogil:
        if single:
            for i in range(n):
                f[i] = <float>(-log1p(-<double>f[i]) / lambd)
        else:
            for i in range(n):
                d[i] = -log1p(-d[i]) / lambd


# multinomial ---------------------------------------------------------------------

cdef struct Keyed:
    double key
    int64_t index


cdef int by_key(const void *a, const void *b) noexcept nogil:
    cdef const Keyed *x = <const Keyed *>a
    cdef const Keyed *y = <const Keyed *>b
    if x.key < y.key:
        return -1
    if x.key > y.key:
        return 1
    return (x.index > y.index) - (x.index < y.index)


def multinomial(TensorBase weights, TensorBase out, uint64_t seed, uint64_t offset,
                bint replacement):
    """Draw out.shape[1] category indices per row of `weights` (2-d contiguous float64,
    non-negative) into `out` (2-d contiguous int64).

    With replacement, draw j of row r inverts the row's CDF at the float64 uniform of
    words offset + 2 * (r * k + j). Without replacement, category c of row r gets the
    key -log1p(-u) / w (u from words offset + 2 * (r * n + c)) and the k smallest keys
    win, in order: the same distribution as drawing one at a time and removing it."""
    check_out(weights, "multinomial")
    check_out(out, "multinomial")
    if weights._dtype != FLOAT64 or out._dtype != INT64 or weights._ndim != 2 or out._ndim != 2:
        raise TypeError("multinomial: internal error: expected float64 weights, int64 output")
    cdef int64_t rows = weights._shape[0], n = weights._shape[1], k = out._shape[1]
    cdef const double *w = <const double *>weights.ptr()
    cdef int64_t *o = <int64_t *>out.ptr()
    cdef int64_t r, c, j, lo, hi, mid, last, nonzero
    cdef double total, x
    # validate every row first: the error names the row
    for r in range(rows):
        total = 0.0
        nonzero = 0
        for c in range(n):
            x = w[r * n + c]
            if not isfinite(x) or x < 0:
                raise ValueError(f"multinomial: probabilities must be finite and "
                                 f"non-negative, got {x} in row {r}")
            total += x
            nonzero += x > 0
        if total <= 0:
            raise ValueError(f"multinomial: row {r} of the probabilities sums to 0")
        if not replacement and nonzero < k:
            raise ValueError(f"multinomial: cannot draw {k} samples without replacement "
                             f"from row {r}, which has only {nonzero} non-zero "
                             f"probabilities")
    cdef Stream s
    stream_init(&s, seed)
    cdef double *cdf = <double *>malloc(max(n, 1) * sizeof(double))
    cdef Keyed *keys = <Keyed *>malloc(max(n, 1) * sizeof(Keyed))
    if cdf == NULL or keys == NULL:
        free(cdf)
        free(keys)
        raise MemoryError("multinomial: out of memory")
    with nogil:
        for r in range(rows):
            if replacement:
                total = 0.0
                last = 0
                for c in range(n):
                    total += w[r * n + c]
                    cdf[c] = total
                    if w[r * n + c] > 0:
                        last = c
                for j in range(k):
                    x = u53(&s, offset + 2 * <uint64_t>(r * k + j)) * total
                    lo = 0
                    hi = n
                    while lo < hi:      # first c with cdf[c] > x
                        mid = (lo + hi) // 2
                        if cdf[mid] > x:
                            hi = mid
                        else:
                            lo = mid + 1
                    o[r * k + j] = lo if lo < n else last
            else:
                for c in range(n):
                    x = w[r * n + c]
                    keys[c].index = c
                    keys[c].key = INFINITY if x <= 0 else \
                        -log1p(-u53(&s, offset + 2 * <uint64_t>(r * n + c))) / x
                qsort(keys, n, sizeof(Keyed), by_key)
                for j in range(k):
                    o[r * k + j] = keys[j].index
    free(cdf)
    free(keys)
