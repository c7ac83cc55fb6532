"""Extensions written against ember's public .pxd and C headers (DESIGN.md, "Extension
authoring"): `cimport ember` reads tensor memory without copying, allocates results and
calls ember ops; plain C reaches the same view through ember/python.h; the headers
compile as CUDA. The modules are built with ember.utils.extension.load."""
import os
import shutil
import subprocess
import sysconfig
import textwrap

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember.utils import extension

pytest.importorskip("Cython")

PYX = textwrap.dedent("""
    # cython: language_level=3
    cimport ember
    from libc.stdint cimport int64_t

    def strided_sum(ember.TensorBase t):
        '''Sum a float64 tensor of any layout through the C view (no copy).'''
        cdef ember.em_tensor_view v = ember.tensor_view(t)
        cdef double *base = <double *>v.data + v.offset
        cdef long long idx[16]
        cdef long long n = 1, k, off
        cdef int d
        cdef double total = 0
        for d in range(v.ndim):
            n *= v.shape[d]
            idx[d] = 0
        for k in range(n):
            off = 0
            for d in range(v.ndim):
                off += idx[d] * v.strides[d]
            total += base[off]
            d = v.ndim - 1
            while d >= 0:
                idx[d] += 1
                if idx[d] < v.shape[d]:
                    break
                idx[d] = 0
                d -= 1
        return total

    def view_info(ember.TensorBase t):
        cdef ember.em_tensor_view v = ember.tensor_view(t)
        return v.ndim, v.dtype, v.itemsize, v.offset

    def accessors(ember.TensorBase t):
        return (<size_t>ember.data_ptr(t), ember.ndim(t),
                tuple([ember.size(t, d) for d in range(ember.ndim(t))]),
                tuple([ember.shape(t)[d] for d in range(ember.ndim(t))]),
                tuple([ember.stride(t, d) for d in range(ember.ndim(t))]),
                tuple([ember.strides(t)[d] for d in range(ember.ndim(t))]),
                ember.dtype(t), ember.itemsize(t), ember.device(t), ember.device_type(t),
                ember.is_contiguous(t), ember.numel(t), ember.device_index(t))

    def codes():
        return {"bool": ember.EM_BOOL, "uint8": ember.EM_UINT8, "int8": ember.EM_INT8,
                "int16": ember.EM_INT16, "int32": ember.EM_INT32, "int64": ember.EM_INT64,
                "float16": ember.EM_FLOAT16, "float32": ember.EM_FLOAT32,
                "float64": ember.EM_FLOAT64}, (ember.EM_CPU, ember.EM_CUDA, ember.EM_OPENCL)

    def iota(shape, int dtype):
        '''A new tensor from ember.empty, filled with 0, 1, ... through its pointer.'''
        cdef int64_t sh[16]
        for d in range(len(shape)):
            sh[d] = shape[d]
        cdef ember.TensorBase t = ember.empty(len(shape), sh, dtype)
        cdef double *p = <double *>ember.data_ptr(t)
        cdef int64_t i
        for i in range(ember.numel(t)):
            p[i] = i
        return t

    def empty_like(ember.TensorBase t, int dtype=-1):
        return ember.empty_like(t, dtype)

    def bad_empty(int ndim, int dtype):
        cdef int64_t sh[17]
        for d in range(17):
            sh[d] = 1
        return ember.empty(ndim, sh, dtype)

    def contiguous(ember.TensorBase t):
        return ember.contiguous(t)

    cdef ember.Op ADD = ember.elementwise_op("add")
    cdef ember.Op EXP = ember.elementwise_op("exp")
    cdef ember.Op WHERE = ember.elementwise_op("where")

    def add_exp(a, b):
        '''exp(a + b) through the op table, without Python dispatch.'''
        return ember.elementwise(EXP, ember.elementwise(ADD, a, b))

    def where(c, a, b):
        return ember.elementwise(WHERE, c, a, b)

    def exp_with_two(a, b):
        return ember.elementwise(EXP, a, b)

    def lookup(str name):
        return ember.elementwise_op(name).nin

    def matmul(a, b):
        return ember.matmul(a, b)
""")

CAPI = textwrap.dedent("""
    #define PY_SSIZE_T_CLEAN
    #include "ember/python.h"

    /* sum of a float64 tensor of any layout, through em_view_from_object */
    static PyObject *total(PyObject *self, PyObject *arg) {
        em_tensor_view v;
        if (em_view_from_object(arg, &v) < 0)
            return NULL;
        if (v.dtype != EM_FLOAT64) {
            PyErr_Format(PyExc_TypeError, "total: expected float64, got dtype code %d", v.dtype);
            return NULL;
        }
        const double *base = (const double *)em_data(&v);
        int64_t n = em_numel(&v), idx[EMBER_MAX_DIMS] = {0};
        double s = 0;
        for (int64_t k = 0; k < n; k++) {
            int64_t off = 0;
            for (int d = 0; d < v.ndim; d++)
                off += idx[d] * v.strides[d];
            s += base[off];
            for (int d = v.ndim - 1; d >= 0; d--) {
                if (++idx[d] < v.shape[d])
                    break;
                idx[d] = 0;
            }
        }
        return PyFloat_FromDouble(s);
    }

    static PyObject *contiguous(PyObject *self, PyObject *arg) {
        em_tensor_view v;
        if (em_view_from_object(arg, &v) < 0)
            return NULL;
        return PyBool_FromLong(em_is_contiguous(&v));
    }

    /* arange(n) as float32, allocated with em_empty */
    static PyObject *arange_f32(PyObject *self, PyObject *args) {
        long long n;
        int dtype = EM_FLOAT32;
        if (!PyArg_ParseTuple(args, "L|i", &n, &dtype))
            return NULL;
        int64_t shape[1] = {n};
        PyObject *t = em_empty(1, shape, dtype);
        if (t == NULL)
            return NULL;
        em_tensor_view v;
        em_view_from_object(t, &v);
        float *p = (float *)em_data(&v);
        for (long long i = 0; i < n; i++)
            p[i] = (float)i;
        return t;
    }

    static PyMethodDef methods[] = {
        {"total", total, METH_O, NULL},
        {"contiguous", contiguous, METH_O, NULL},
        {"arange_f32", arange_f32, METH_VARARGS, NULL},
        {NULL, NULL, 0, NULL}};
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "emcapi", NULL, -1, methods};

    PyMODINIT_FUNC PyInit_emcapi(void) {
        if (em_import() < 0)
            return NULL;
        return PyModule_Create(&module);
    }
""")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ext-cache")


@pytest.fixture(scope="module")
def emext(tmp_path_factory, cache):
    d = tmp_path_factory.mktemp("ext")
    (d / "emext.pyx").write_text(PYX)
    return extension.load("emext", [d / "emext.pyx"], build_directory=cache)


@pytest.fixture(scope="module")
def emcapi(tmp_path_factory, cache):
    d = tmp_path_factory.mktemp("capi")
    (d / "emcapi.c").write_text(CAPI)
    return extension.load("emcapi", [d / "emcapi.c"], build_directory=cache)


def test_c_view_reads_strided_tensor(emext):
    x = em.arange(24, dtype=em.float64).reshape(2, 3, 4)
    y = x.permute(2, 0, 1).narrow(0, 1, 2)       # non-contiguous, with an offset
    assert emext.strided_sum(y) == y.sum().item()
    assert emext.view_info(y) == (3, em.float64.num, 8, 1)


def test_accessors(emext):
    x = em.arange(24, dtype=em.float32).reshape(2, 3, 4)
    y = x.permute(2, 0, 1).narrow(0, 1, 2)
    ptr, nd, sizes, shape, strides, strides2, dt, isz, dev, dtype_, contig, n, index = \
        emext.accessors(y)
    assert ptr == extension_data_pointer(y)
    assert (nd, sizes, shape) == (3, (2, 2, 3), (2, 2, 3))
    assert strides == strides2 == tuple(y.stride())
    assert (dt, isz, dev, dtype_, contig, n) == (em.float32.num, 4, em.device("cpu"), 0,
                                                 False, 12)
    assert index == em.device("cpu").index
    assert emext.accessors(x)[10] is True


def extension_data_pointer(t):
    """Element 0's address from the documented C view (tensor_view_dict)."""
    from ember._C import core
    v = core.tensor_view_dict(t)
    return v["data"] + v["offset"] * v["itemsize"]


def test_dtype_and_device_codes_match_python(emext):
    dtypes, devices = emext.codes()
    for name, code in dtypes.items():
        assert getattr(em, name).num == code, name
    assert devices == (0, 1, 2)


@given(st.lists(st.integers(0, 5), min_size=0, max_size=4))
def test_empty_allocates_contiguous_result(emext, shape):
    t = emext.iota(shape, em.float64.num)
    assert isinstance(t, em.Tensor)
    assert tuple(t.shape) == tuple(shape) and t.dtype == em.float64 and t.is_contiguous()
    n = int(np.prod(shape)) if shape else 1
    np.testing.assert_array_equal(t.numpy().ravel(), np.arange(n, dtype=np.float64))
    x = em.ones(*shape, dtype=em.float16).T if shape else em.ones((), dtype=em.float16)
    like = emext.empty_like(x)
    assert tuple(like.shape) == tuple(x.shape) and like.dtype == em.float16
    assert like.is_contiguous()
    assert emext.empty_like(x, em.int32.num).dtype == em.int32


def test_empty_rejects_bad_codes(emext):
    with pytest.raises(ValueError, match="ember.empty: 15 is not a dtype code"):
        emext.bad_empty(1, 15)      # 9, 10 complex64 / complex128, 11 bfloat16, 12-14 uint16-64
    with pytest.raises(ValueError, match="ember.empty: -1 is not a dtype code"):
        emext.bad_empty(1, -1)
    with pytest.raises(ValueError, match="ember.empty: ndim=17"):
        emext.bad_empty(17, em.float32.num)


def test_contiguous(emext):
    x = em.arange(12, dtype=em.float32).reshape(3, 4)
    assert emext.contiguous(x) is x
    y = emext.contiguous(x.T)
    assert y.is_contiguous() and y.tolist() == x.T.tolist()


def test_contiguous_is_recorded_for_autograd(emext):
    pytest.importorskip("ember.autograd")
    w = em.ones(3, 2, requires_grad=True)
    c = emext.contiguous(w.T)
    assert c.grad_fn is not None
    (c * em.arange(6.0).reshape(2, 3)).sum().backward()
    assert w.grad.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([em.float32, em.float64]))
def test_elementwise_from_cython(emext, m, n, dtype):
    a = em.arange(m * n, dtype=dtype).reshape(m, n) / (m * n)
    b = em.arange(n, dtype=dtype) / n                  # broadcasts
    got = emext.add_exp(a, b)
    np.testing.assert_allclose(got.numpy(), np.exp(a.numpy() + b.numpy()), rtol=1e-6)
    assert emext.add_exp(a, 2).dtype == dtype         # Python scalars are weak, as in Python
    w = emext.where(a > 0.5, a, b)
    np.testing.assert_array_equal(w.numpy(), np.where(a.numpy() > 0.5, a.numpy(), b.numpy()))


def test_elementwise_errors(emext):
    with pytest.raises(ValueError, match="no elementwise op named 'nope'"):
        emext.lookup("nope")
    assert emext.lookup("where") == 3 and emext.lookup("neg") == 1
    with pytest.raises(TypeError, match="exp: takes 1 operand"):
        emext.exp_with_two(em.ones(2), em.ones(2))
    with pytest.raises(ValueError, match=r"add: shapes \(2,\) and \(3,\) cannot be broadcast"):
        emext.add_exp(em.ones(2), em.ones(3))
    with pytest.raises(TypeError, match="add: unsupported operand types str, Tensor"):
        emext.add_exp("x", em.ones(3))


def test_matmul_from_cython(emext):
    a = em.arange(6, dtype=em.float64).reshape(2, 3)
    b = em.arange(12, dtype=em.float64).reshape(3, 4)
    np.testing.assert_allclose(emext.matmul(a, b).numpy(), a.numpy() @ b.numpy())
    with pytest.raises(ValueError, match="inner dimensions 3 and 2 differ"):
        emext.matmul(a, a)


def test_c_api_header(emcapi):
    x = em.arange(24, dtype=em.float64).reshape(2, 3, 4)
    y = x.permute(2, 0, 1).narrow(0, 1, 2)
    assert emcapi.total(y) == y.sum().item()
    assert emcapi.contiguous(x) is True and emcapi.contiguous(y) is False
    t = emcapi.arange_f32(5)
    assert t.dtype == em.float32 and t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(TypeError, match="expected an ember tensor, got list"):
        emcapi.total([1.0])
    with pytest.raises(ValueError, match="em_empty: 15 is not a dtype code"):
        emcapi.arange_f32(3, 15)
    with pytest.raises(ValueError, match="negative dimension -2"):
        emcapi.arange_f32(-2)


def test_include_dirs_exist():
    inc = extension.get_include()
    for h in ("tensor.h", "python.h"):
        assert os.path.exists(os.path.join(inc[0], "ember", h))
    assert os.path.exists(os.path.join(inc[1], "ember", "__init__.pxd"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_headers_compile_as_cuda(tmp_path):
    src = tmp_path / "view.cu"
    src.write_text(textwrap.dedent("""
        #include "ember/tensor.h"
        #include "ember/python.h"
        __global__ void scale(float *p, int64_t n, float a) {
            int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
            if (i < n) p[i] *= a;
        }
        extern "C" void launch(const em_tensor_view *v, float a) {
            if (v->dtype == EM_FLOAT32 && v->device_type == EM_CUDA && em_is_contiguous(v))
                scale<<<(unsigned)((em_numel(v) + 255) / 256), 256>>>(
                    (float *)em_data(v), em_numel(v), a);
        }
    """))
    r = subprocess.run(["nvcc", "-c", str(src), "-o", str(tmp_path / "view.o"),
                        *(f"-I{d}" for d in extension.get_include()),
                        f"-I{sysconfig.get_paths()['include']}"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "view.o").stat().st_size > 0
