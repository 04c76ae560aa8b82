/* trt_kernels' compiled eager launcher: one call from the generated fast path to the CUDA
 * driver's cuLaunchKernel, with the kernel's parameters converted here.
 *
 * Built on the first eager launch by trt_kernels/eager/compiled_launcher.py with the system C compiler and
 * cached (the key hashes this file, the Python ABI and the platform). It uses Python's C API
 * only: no CUDA headers, no torch headers. The driver's entry point is handed over as an
 * address by set_entry() (launcher.py resolves it through cuda.bindings' cuGetProcAddress, the
 * driver library the process already uses); until then, launch() refuses to run.
 *
 *   launch(func, gx, gy, gz, bx, by, bz, shared_mem, stream, codes, *values) -> CUresult (int)
 *
 * func and stream are handles as ints (CUfunction, CUstream; 0 is the default stream); codes is a
 * bytes object with one struct code per kernel parameter (Q q I i H h B b: integers of that size,
 * f: a 32-bit float, ?: a C bool; x: a value the kernel does not take, skipped: a parameter its compiler
 * folded into the code) and values holds one Python value per code. Each value is converted to its C
 * type in its own 8-byte slot on the stack, and the driver gets the array of the slots' addresses: the
 * same bytes struct.pack('=' + code, value) gives. A value that does not fit its type raises
 * OverflowError, one of the wrong type TypeError (nothing is launched). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define TRTK_LAUNCHER_ABI 2
#define TRTK_MAX_PARAMS 128
#define TRTK_FIXED_ARGS 10 /* func, gx, gy, gz, bx, by, bz, shared_mem, stream, codes */

/* CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY, unsigned gridDimZ,
 *     unsigned blockDimX, unsigned blockDimY, unsigned blockDimZ, unsigned sharedMemBytes,
 *     CUstream hStream, void **kernelParams, void **extra); CUfunction and CUstream are pointers. */
typedef int (*trtk_launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, void *, void **, void **);

static trtk_launch_fn trtk_entry = NULL;

static int trtk_unsigned(PyObject *o, unsigned int *out, const char *what) {
    unsigned long long v;
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "launch(): %s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    if (v > 0xFFFFFFFFull) {
        PyErr_Format(PyExc_OverflowError, "launch(): %s = %llu does not fit a 32-bit unsigned int", what, v);
        return -1;
    }
    *out = (unsigned int)v;
    return 0;
}

static int trtk_handle(PyObject *o, void **out, const char *what) {
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "launch(): %s must be an int handle, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyLong_AsVoidPtr(o);
    return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
}

static int trtk_signed_range(PyObject *o, long long lo, long long hi, char code, long long *out) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_OverflowError, "'%c' format requires %lld <= number <= %lld", code, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int trtk_unsigned_range(PyObject *o, unsigned long long hi, char code, unsigned long long *out) {
    unsigned long long v;
    PyObject *idx = PyNumber_Index(o);
    if (idx == NULL)
        return -1;
    v = PyLong_AsUnsignedLongLong(idx);
    Py_DECREF(idx);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError, "'%c' format requires 0 <= number <= %llu", code, hi);
        }
        return -1;
    }
    if (v > hi) {
        PyErr_Format(PyExc_OverflowError, "'%c' format requires 0 <= number <= %llu", code, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Convert one value into its slot; 0 or -1 with an exception set. */
static int trtk_convert(char code, PyObject *o, uint64_t *slot) {
    long long s;
    unsigned long long u;
    *slot = 0;
    switch (code) {
    case 'Q':
        if (PyLong_CheckExact(o)) { /* the common case: a data pointer */
            u = PyLong_AsUnsignedLongLong(o);
            if (u == (unsigned long long)-1 && PyErr_Occurred())
                return -1;
        } else if (trtk_unsigned_range(o, 0xFFFFFFFFFFFFFFFFull, code, &u) < 0) {
            return -1;
        }
        memcpy(slot, &u, 8);
        return 0;
    case 'q':
        if (trtk_signed_range(o, INT64_MIN, INT64_MAX, code, &s) < 0)
            return -1;
        memcpy(slot, &s, 8);
        return 0;
    case 'i': {
        int32_t v;
        if (trtk_signed_range(o, INT32_MIN, INT32_MAX, code, &s) < 0)
            return -1;
        v = (int32_t)s;
        memcpy(slot, &v, 4);
        return 0;
    }
    case 'I': {
        uint32_t v;
        if (trtk_unsigned_range(o, 0xFFFFFFFFull, code, &u) < 0)
            return -1;
        v = (uint32_t)u;
        memcpy(slot, &v, 4);
        return 0;
    }
    case 'h': {
        int16_t v;
        if (trtk_signed_range(o, INT16_MIN, INT16_MAX, code, &s) < 0)
            return -1;
        v = (int16_t)s;
        memcpy(slot, &v, 2);
        return 0;
    }
    case 'H': {
        uint16_t v;
        if (trtk_unsigned_range(o, 0xFFFFull, code, &u) < 0)
            return -1;
        v = (uint16_t)u;
        memcpy(slot, &v, 2);
        return 0;
    }
    case 'b': {
        int8_t v;
        if (trtk_signed_range(o, INT8_MIN, INT8_MAX, code, &s) < 0)
            return -1;
        v = (int8_t)s;
        memcpy(slot, &v, 1);
        return 0;
    }
    case 'B': {
        uint8_t v;
        if (trtk_unsigned_range(o, 0xFFull, code, &u) < 0)
            return -1;
        v = (uint8_t)u;
        memcpy(slot, &v, 1);
        return 0;
    }
    case 'f': {
        double d = PyFloat_AsDouble(o);
        float f;
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        f = (float)d;
        if (isinf(f) && !isinf(d)) {
            PyErr_SetString(PyExc_OverflowError, "float too large to pack with f format");
            return -1;
        }
        memcpy(slot, &f, 4);
        return 0;
    }
    case '?': {
        int t = PyObject_IsTrue(o);
        unsigned char c;
        if (t < 0)
            return -1;
        c = (unsigned char)(t != 0);
        memcpy(slot, &c, 1);
        return 0;
    }
    default:
        PyErr_Format(PyExc_ValueError, "launch(): unknown parameter code '%c'", (int)(unsigned char)code);
        return -1;
    }
}

static PyObject *trtk_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static const char *dims[7] = {"gx", "gy", "gz", "bx", "by", "bz", "shared_mem"};
    unsigned int d[7];
    uint64_t slots[TRTK_MAX_PARAMS];
    void *params[TRTK_MAX_PARAMS];
    void *func, *stream;
    const char *codes;
    Py_ssize_t n, i, m;
    trtk_launch_fn fn = trtk_entry;
    int err;
    (void)self;
    if (nargs < TRTK_FIXED_ARGS) {
        PyErr_SetString(PyExc_TypeError,
                        "launch(func, gx, gy, gz, bx, by, bz, shared_mem, stream, codes, *values): too few arguments");
        return NULL;
    }
    if (fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "launch(): the driver's cuLaunchKernel is not set (set_entry)");
        return NULL;
    }
    if (trtk_handle(args[0], &func, "func") < 0)
        return NULL;
    for (i = 0; i < 7; i++)
        if (trtk_unsigned(args[1 + i], &d[i], dims[i]) < 0)
            return NULL;
    if (trtk_handle(args[8], &stream, "stream") < 0)
        return NULL;
    if (!PyBytes_Check(args[9])) {
        PyErr_SetString(PyExc_TypeError, "launch(): codes must be bytes");
        return NULL;
    }
    codes = PyBytes_AS_STRING(args[9]);
    n = PyBytes_GET_SIZE(args[9]);
    if (n != nargs - TRTK_FIXED_ARGS) {
        PyErr_Format(PyExc_TypeError, "launch(): %zd values for %zd parameter codes", nargs - TRTK_FIXED_ARGS, n);
        return NULL;
    }
    if (n > TRTK_MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "launch(): %zd parameters, at most %d", n, TRTK_MAX_PARAMS);
        return NULL;
    }
    for (i = 0, m = 0; i < n; i++) {
        if (codes[i] == 'x')
            continue;
        if (trtk_convert(codes[i], args[TRTK_FIXED_ARGS + i], &slots[m]) < 0)
            return NULL;
        params[m] = &slots[m];
        m++;
    }
    Py_BEGIN_ALLOW_THREADS
    err = fn(func, d[0], d[1], d[2], d[3], d[4], d[5], d[6], stream, m ? params : NULL, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong((long)err);
}

static PyObject *trtk_set_entry(PyObject *self, PyObject *addr) {
    void *p, *cur;
    PyObject *prev;
    (void)self;
    if (trtk_handle(addr, &p, "the entry address") < 0)
        return NULL;
    memcpy(&cur, &trtk_entry, sizeof cur); /* function and object pointers: same size on the platforms CUDA has */
    prev = PyLong_FromVoidPtr(cur);
    if (prev == NULL)
        return NULL;
    memcpy(&trtk_entry, &p, sizeof p);
    return prev;
}

static PyMethodDef trtk_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))trtk_launch, METH_FASTCALL,
     "launch(func, gx, gy, gz, bx, by, bz, shared_mem, stream, codes, *values) -> CUresult"},
    {"set_entry", trtk_set_entry, METH_O,
     "set_entry(address) -> previous address: the cuLaunchKernel launch() calls (0: none)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef trtk_module = {
    PyModuleDef_HEAD_INIT, "_claunch", "trt_kernels' compiled eager launcher (see launcher.py)", -1, trtk_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__claunch(void) {
    PyObject *m = PyModule_Create(&trtk_module);
    if (m == NULL)
        return NULL;
#ifdef Py_GIL_DISABLED
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
    if (PyModule_AddIntConstant(m, "ABI", TRTK_LAUNCHER_ABI) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PARAMS", TRTK_MAX_PARAMS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
