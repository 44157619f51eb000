/* glibc's mallopt and malloc_trim for the broker process's allocator (broker/allocator.py).
 *
 * Why: allocator.py reaches them through ctypes otherwise, and importing ctypes took ~2 ms of the
 * moment the broker starts listening, when a client is already waiting for its first answer. This
 * module is optional: without it allocator.py uses ctypes (its Python reference, same calls).
 * Elsewhere than glibc both answer 0, "not taken", as musl's mallopt does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static PyObject *m_mallopt(PyObject *self, PyObject *args) {
    int param, value;
    if (!PyArg_ParseTuple(args, "ii", &param, &value))
        return NULL;
#if defined(__GLIBC__)
    return PyLong_FromLong(mallopt(param, value));
#else
    return PyLong_FromLong(0);
#endif
}

static PyObject *m_malloc_trim(PyObject *self, PyObject *args) {
    Py_ssize_t pad;
    if (!PyArg_ParseTuple(args, "n", &pad))
        return NULL;
    if (pad < 0) {
        PyErr_SetString(PyExc_ValueError, "pad must not be negative");
        return NULL;
    }
#if defined(__GLIBC__)
    int trimmed;
    Py_BEGIN_ALLOW_THREADS  /* as ctypes calls it: 2-14 ms with a large free heap */
    trimmed = malloc_trim((size_t)pad);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(trimmed);
#else
    return PyLong_FromLong(0);
#endif
}

static PyMethodDef methods[] = {
    {"mallopt", m_mallopt, METH_VARARGS, "mallopt(param, value) -> 1 when glibc took the value, else 0"},
    {"malloc_trim", m_malloc_trim, METH_VARARGS, "malloc_trim(pad) -> 1 when memory was given back, else 0"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_malloc", NULL, -1, methods};

PyMODINIT_FUNC PyInit__malloc(void) { return PyModule_Create(&module); }
