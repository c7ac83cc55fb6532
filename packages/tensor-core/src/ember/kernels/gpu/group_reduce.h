/* Sum and maximum over a work-group through local memory, for kernels that give a
 * row one work-group (programs/softmax.h, programs/loss.h, ...). Per dtype (EM_NAME)
 * over EM_GROUP_T, EM_CT unless the program defines it first (programs/linalg.h: the
 * real type of a complex dtype); buf holds EM_LSIZE() values; every work-item of the
 * group must call. */
#ifndef EMBER_GROUP_REDUCE_H
#define EMBER_GROUP_REDUCE_H
#ifndef EM_GROUP_T
#define EM_GROUP_T EM_CT
#endif

EM_INLINE EM_GROUP_T EM_NAME(group_sum)(EM_LPTR EM_GROUP_T *buf, EM_GROUP_T v) {
    const int lid = EM_LID();
    buf[lid] = v;
    EM_BARRIER();
    for (int s = EM_LSIZE() / 2; s > 0; s >>= 1) {
        if (lid < s) buf[lid] += buf[lid + s];
        EM_BARRIER();
    }
    EM_GROUP_T r = buf[0];
    EM_BARRIER();
    return r;
}

/* the maximum, NaN winning (as the CPU kernels' comparisons) */
EM_INLINE EM_GROUP_T EM_NAME(group_max)(EM_LPTR EM_GROUP_T *buf, EM_GROUP_T v) {
    const int lid = EM_LID();
    buf[lid] = v;
    EM_BARRIER();
    for (int s = EM_LSIZE() / 2; s > 0; s >>= 1) {
        if (lid < s) {
            EM_GROUP_T a = buf[lid], b = buf[lid + s];
            buf[lid] = (b > a || b != b) ? b : a;
        }
        EM_BARRIER();
    }
    EM_GROUP_T r = buf[0];
    EM_BARRIER();
    return r;
}

#endif /* EMBER_GROUP_REDUCE_H */
