"""The op table at run time: each elementwise and reduction row's number, arity, dtype
rules and output dtypes, read from ember/ops/table.py at import."""

cdef struct OpInfo:
    int arity
    bint out_bool
    bint promote_float
    bint out_real        # the result is the compute dtype's real part (abs, angle)
    int kinds            # bit k set: the row has a body for kind k
    bint is_where

cdef OpInfo *OPS = NULL
cdef list OP_NAMES = []
OP_INDEX = {}
cdef int OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_AND, OP_OR, OP_XOR
cdef int OP_SHL, OP_SHR, OP_NEG, OP_ABS, OP_INVERT
cdef int CMP_OPS[6]

cdef list RED_NAMES = []
RED_INDEX = {}
cdef int RED_OUT[32][NDTYPES]   # output dtype of reduction r over dtype d (-1: unsupported)
cdef bint RED_WIDE[32]           # the row accumulates float16/float32 in float64


cdef _load_table():
    global OPS, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_AND, OP_OR
    global OP_XOR, OP_SHL, OP_SHR, OP_NEG, OP_ABS, OP_INVERT
    from ember.ops import table, render
    n = len(table.ELEMENTWISE)
    if n != em_num_elementwise_ops():
        raise ImportError("ember: the compiled kernels do not match ember/ops/table.py; "
                          "rebuild the package")
    OPS = <OpInfo *>calloc(n, sizeof(OpInfo))
    bits = {"bool": 1, "int": 2, "float": 4, "complex": 8}
    for i, row in enumerate(table.ELEMENTWISE):
        OPS[i].arity = row.arity
        OPS[i].out_bool = row.out == "bool"
        OPS[i].promote_float = row.promote == "float"
        OPS[i].out_real = row.out == "real"
        OPS[i].kinds = sum(bits[k] for k in row.body)
        OPS[i].is_where = row.name == "where"
        OP_NAMES.append(row.name)
        OP_INDEX[row.name] = i
    OP_ADD, OP_SUB = OP_INDEX["add"], OP_INDEX["sub"]
    OP_MUL, OP_DIV = OP_INDEX["mul"], OP_INDEX["div"]
    OP_FLOORDIV, OP_MOD, OP_POW = OP_INDEX["floor_divide"], OP_INDEX["remainder"], OP_INDEX["pow"]
    OP_AND, OP_OR, OP_XOR = OP_INDEX["bitwise_and"], OP_INDEX["bitwise_or"], OP_INDEX["bitwise_xor"]
    OP_SHL, OP_SHR = OP_INDEX["bitwise_left_shift"], OP_INDEX["bitwise_right_shift"]
    OP_NEG, OP_ABS, OP_INVERT = OP_INDEX["neg"], OP_INDEX["abs"], OP_INDEX["bitwise_not"]
    for k, name in enumerate(["lt", "le", "eq", "ne", "gt", "ge"]):
        CMP_OPS[k] = OP_INDEX[name]
    for r, row in enumerate(table.REDUCTIONS):
        RED_NAMES.append(row.name)
        RED_INDEX[row.name] = r
        RED_WIDE[r] = render.reduction_types(row, render.BY_NAME["float32"])[0] == "double"
        for d, info in enumerate(render.DTYPES):
            RED_OUT[r][d] = -1
            if info.kind in row.kinds:
                out_name = render.reduction_types(row, info)[1]
                RED_OUT[r][d] = render.DTYPES.index(render.BY_NAME[out_name])

_load_table()


def _set_f16c_loops(bint on):
    """float16 loops: on = the AVX2+F16C copies where the CPU has them (the default),
    off = the portable copies (tests compare the two)."""
    em_set_f16c_loops(on)


def reduction_names():
    return list(RED_NAMES)


def elementwise_names():
    return list(OP_NAMES)
