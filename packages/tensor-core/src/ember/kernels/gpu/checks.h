// dtypes: none
/* Device-side input checks that report to the host later instead of waiting on the
 * device now: flag[0] starts at n and ends as the first bad position (or n). */

EM_KERNEL void check_targets(em_int64 n, EM_GLOBAL const em_int64 *t, em_int64 C,
                             em_int64 ignore, EM_GLOBAL em_int64 *flag) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE())
        if ((t[i] < 0 || t[i] >= C) && t[i] != ignore) em_atomic_min_int64(flag, i);
}
