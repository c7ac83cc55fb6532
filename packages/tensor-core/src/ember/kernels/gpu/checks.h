// dtypes: none
/* Device-side input checks that report to the host later instead of waiting on the
 * device now: flag[0] starts at n and ends as the first bad position (or n). */

EM_KERNEL void check_targets(em_int64 n, EM_GLOBAL const em_int64 *t, em_int64 C,
                             em_int64 ignore, EM_GLOBAL em_int64 *flag) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE())
        if ((t[i] < 0 || t[i] >= C) && t[i] != ignore) em_atomic_min_int64(flag, i);
}

/* wrap negative indices in place (when allowed) and record the first index outside
 * [0, size) (flag[0] starts at n) */
EM_KERNEL void index_normalize(em_int64 n, EM_GLOBAL em_int64 *idx, em_int64 size,
                               int allow_negative, EM_GLOBAL em_int64 *flag) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        em_int64 v = idx[i];
        if (v < 0 && allow_negative) v += size;
        if (v < 0 || v >= size) em_atomic_min_int64(flag, i);
        else idx[i] = v;
    }
}
