/* ember tensors in an extension written in C against the Python C API (no Cython).
 *
 *     #include "ember/python.h"
 *     PyMODINIT_FUNC PyInit_myext(void) {
 *         if (em_import() < 0) return NULL;     // once, before any other em_ call
 *         ...
 *     }
 *     static PyObject *total(PyObject *self, PyObject *arg) {
 *         em_tensor_view v;
 *         if (em_view_from_object(arg, &v) < 0) return NULL;   // TypeError is set
 *         ...
 *     }
 *
 * The view borrows from the tensor: keep a reference to it while you use the view.
 * Include this header in one C file per extension (its state is static).
 */
#ifndef EMBER_PYTHON_H
#define EMBER_PYTHON_H
#include <Python.h>
#include "ember/tensor.h"

/* Filled by em_import() from ember._C.core: the Tensor type and the C functions that
 * `cimport ember` uses (exported by Cython in __pyx_capi__). */
static PyTypeObject *em__tensor_type = NULL;
static PyObject *em__cpu = NULL;
static em_tensor_view (*em__tensor_view)(PyObject *) = NULL;
static PyObject *(*em__new_tensor)(int, const int64_t *, int, PyObject *) = NULL;

static void *em__capi_function(PyObject *capi, const char *name) {
    PyObject *cap = PyDict_GetItemString(capi, name);   /* borrowed */
    if (cap == NULL || !PyCapsule_CheckExact(cap)) {
        PyErr_Format(PyExc_ImportError, "ember/python.h: ember._C.core does not export %s; "
                     "rebuild the extension against the installed ember", name);
        return NULL;
    }
    return PyCapsule_GetPointer(cap, PyCapsule_GetName(cap));
}

/* 0 on success; -1 with ImportError set. */
static int em_import(void) {
    PyObject *core = PyImport_ImportModule("ember._C.core"), *capi = NULL, *fn = NULL;
    int rc = -1;
    if (core == NULL)
        return -1;
    em__tensor_type = (PyTypeObject *)PyObject_GetAttrString(core, "TensorBase");
    capi = PyObject_GetAttrString(core, "__pyx_capi__");
    fn = PyObject_GetAttrString(core, "as_device");
    if (em__tensor_type == NULL || capi == NULL || fn == NULL)
        goto done;
    em__cpu = PyObject_CallFunction(fn, "s", "cpu");
    if (em__cpu == NULL)
        goto done;
    *(void **)&em__tensor_view = em__capi_function(capi, "tensor_view");
    *(void **)&em__new_tensor = em__capi_function(capi, "new_tensor");
    if (em__tensor_view != NULL && em__new_tensor != NULL)
        rc = 0;
done:
    Py_XDECREF(fn);
    Py_XDECREF(capi);
    Py_DECREF(core);
    return rc;
}

/* 1 when obj is an ember tensor. */
static int em_is_tensor(PyObject *obj) {
    return PyObject_TypeCheck(obj, em__tensor_type);
}

/* The C view of an ember tensor: 0, or -1 with TypeError set naming what obj is. */
static int em_view_from_object(PyObject *obj, em_tensor_view *view) {
    if (!em_is_tensor(obj)) {
        PyErr_Format(PyExc_TypeError, "expected an ember tensor, got %s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    *view = em__tensor_view(obj);
    return 0;
}

/* A new contiguous tensor with uninitialised values on the CPU: a new reference, or
 * NULL with an exception set (bad dtype or shape, out of memory). */
static PyObject *em_empty(int ndim, const int64_t *shape, int dtype) {
    if (dtype < 0 || dtype >= EM_NUM_DTYPES) {
        PyErr_Format(PyExc_ValueError, "em_empty: %d is not a dtype code", dtype);
        return NULL;
    }
    if (ndim < 0 || ndim > EMBER_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "em_empty: ndim=%d; ember supports 0 to %d dimensions",
                     ndim, EMBER_MAX_DIMS);
        return NULL;
    }
    return em__new_tensor(ndim, shape, dtype, em__cpu);
}

#endif
