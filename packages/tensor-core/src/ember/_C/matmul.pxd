# matmul is cpdef so that `cimport ember` code calls it without Python dispatch.
cpdef object matmul(object a, object b, str op=*)
