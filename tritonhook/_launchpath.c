/* The per-launch path of tritonhook's LaunchTracer (tritonhook/_triton/launches.py), in C.

   Why C: a launch-bound program launches a small Triton kernel every ~12 us of host time, and a recording must
   cost it at most 5%. A Python wrapper around `CompiledKernel.launch_metadata` costs ~0.9 us per launch on the
   H200's host before it does anything (measured: benchmarks/memwatch_overhead.py), so the launches a recording
   passes over are handled here; everything else (a kernel's first launch, a signature's first, the launches it
   times, sampling draws) calls back into the tracer's Python `_seen`.

   Types:
     KernelSeen     a kernel's state (see `_launchpath`'s docstring in the tracer);
     SignatureSeen  one launch signature of a kernel (see `_triton.LaunchTracer`);
     LaunchMetadata the wrapper set on `CompiledKernel.launch_metadata`: a method descriptor, so that
                    `kernel.launch_metadata(grid, stream, *args)` calls it with the kernel first, through vectorcall,
                    and it hands the very same argument array to Triton's method.
   Built by tritonhook/_native.py with the C compiler Triton's launchers are built with. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* ----- KernelSeen ------------------------------------------------------------------------------------------------ */
typedef struct {
    PyObject_HEAD
    PyObject *spec;
    Py_ssize_t seen, skip, weight, arity;
    PyObject *key_function, *signatures, *by_arity;
    PyObject *last_key, *last_signature;  /* the fast path's last hit: (grid, scalars) and its SignatureSeen */
} KernelSeen;

static int KernelSeen_init(KernelSeen *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"spec", NULL};
    PyObject *spec;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", names, &spec))
        return -1;
    PyObject *by_arity = PyDict_New();
    if (by_arity == NULL)
        return -1;
    Py_INCREF(spec);
    Py_XSETREF(self->spec, spec);
    Py_XSETREF(self->by_arity, by_arity);
    Py_INCREF(Py_None);
    Py_XSETREF(self->key_function, Py_None);
    Py_INCREF(Py_None);
    Py_XSETREF(self->signatures, Py_None);
    self->seen = self->skip = 0;
    self->weight = 1;
    self->arity = -1;
    return 0;
}

static int KernelSeen_traverse(KernelSeen *self, visitproc visit, void *arg) {
    Py_VISIT(self->spec);
    Py_VISIT(self->key_function);
    Py_VISIT(self->signatures);
    Py_VISIT(self->by_arity);
    Py_VISIT(self->last_key);
    Py_VISIT(self->last_signature);
    return 0;
}

static int KernelSeen_clear(KernelSeen *self) {
    Py_CLEAR(self->spec);
    Py_CLEAR(self->key_function);
    Py_CLEAR(self->signatures);
    Py_CLEAR(self->by_arity);
    Py_CLEAR(self->last_key);
    Py_CLEAR(self->last_signature);
    return 0;
}

static void KernelSeen_dealloc(KernelSeen *self) {
    PyObject_GC_UnTrack(self);
    KernelSeen_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef KernelSeen_members[] = {
    {"spec", T_OBJECT_EX, offsetof(KernelSeen, spec), 0, "the kernel's LaunchSpec"},
    {"seen", T_PYSSIZET, offsetof(KernelSeen, seen), 0, "launches seen in full"},
    {"skip", T_PYSSIZET, offsetof(KernelSeen, skip), 0, "sampling: launches to pass over before the next"},
    {"weight", T_PYSSIZET, offsetof(KernelSeen, weight), 0, "sampling: launches the next full one stands for"},
    {"arity", T_PYSSIZET, offsetof(KernelSeen, arity), 0, "the argument count of the fast path's signatures"},
    {"key_function", T_OBJECT_EX, offsetof(KernelSeen, key_function), 0,
     "the fast path's key: positions (a tuple) or a function of the arguments; None: no fast path"},
    {"signatures", T_OBJECT_EX, offsetof(KernelSeen, signatures), 0, "the fast path's signatures, or None"},
    {"by_arity", T_OBJECT_EX, offsetof(KernelSeen, by_arity), 0, "argument count -> (key function, signatures)"},
    {NULL}};

static PyTypeObject KernelSeenType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tritonhook._launchpath.KernelSeen",
    .tp_basicsize = sizeof(KernelSeen),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A kernel's state in a LaunchTracer.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)KernelSeen_init,
    .tp_traverse = (traverseproc)KernelSeen_traverse,
    .tp_clear = (inquiry)KernelSeen_clear,
    .tp_dealloc = (destructor)KernelSeen_dealloc,
    .tp_members = KernelSeen_members,
};

/* ----- SignatureSeen --------------------------------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *data;
    Py_ssize_t pass_next, passed;
} SignatureSeen;

static PyObject *SignatureSeen_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    SignatureSeen *self = (SignatureSeen *)type->tp_alloc(type, 0);
    if (self != NULL) {
        Py_INCREF(Py_None);
        self->data = Py_None;
    }
    return (PyObject *)self;
}

static int SignatureSeen_traverse(SignatureSeen *self, visitproc visit, void *arg) {
    Py_VISIT(self->data);
    return 0;
}

static int SignatureSeen_clear(SignatureSeen *self) {
    Py_CLEAR(self->data);
    return 0;
}

static void SignatureSeen_dealloc(SignatureSeen *self) {
    PyObject_GC_UnTrack(self);
    SignatureSeen_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef SignatureSeen_members[] = {
    {"data", T_OBJECT, offsetof(SignatureSeen, data), 0, "what the consumer keeps for the signature"},
    {"pass_next", T_PYSSIZET, offsetof(SignatureSeen, pass_next), 0, "launches to pass over (the consumer sets it)"},
    {"passed", T_PYSSIZET, offsetof(SignatureSeen, passed), 0, "launches passed over since the last full one"},
    {NULL}};

static PyTypeObject SignatureSeenType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tritonhook._launchpath.SignatureSeen",
    .tp_basicsize = sizeof(SignatureSeen),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One launch signature of a kernel in a LaunchTracer.",
    .tp_new = SignatureSeen_new,
    .tp_traverse = (traverseproc)SignatureSeen_traverse,
    .tp_clear = (inquiry)SignatureSeen_clear,
    .tp_dealloc = (destructor)SignatureSeen_dealloc,
    .tp_members = SignatureSeen_members,
};

/* ----- LaunchMetadata -------------------------------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *original;   /* Triton's CompiledKernel.launch_metadata */
    PyObject *slow;       /* the tracer's _seen(kernel, seen or None, grid, args) */
    PyObject *kernels;    /* dict: Triton hash -> KernelSeen */
    PyObject *autotune;   /* an AutotuneTracer (its `benchmarking` count) or None */
    PyObject *dict;       /* __dict__: functools.wraps and the like may set attributes */
    int active;
    vectorcallfunc vectorcall;
} LaunchMetadata;

static PyObject *str_hash, *str_benchmarking;

static PyObject *args_tuple(PyObject *const *args, Py_ssize_t n) {
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    return tuple;
}

/* A launch's key from its arguments: `key` is a tuple of positions (the key: the tuple of the arguments there; the
   caller checked the argument count) or a function of the argument tuple. */
static PyObject *key_of(PyObject *key, PyObject *const *args, Py_ssize_t n) {
    if (PyTuple_CheckExact(key)) {
        Py_ssize_t count = PyTuple_GET_SIZE(key);
        PyObject *values = PyTuple_New(count);
        if (values == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(key, i));
            if (at < 0 || at >= n) {
                Py_DECREF(values);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_IndexError, "a key position past the launch's arguments");
                return NULL;
            }
            Py_INCREF(args[at]);
            PyTuple_SET_ITEM(values, i, args[at]);
        }
        return values;
    }
    PyObject *tuple = args_tuple(args, n);
    if (tuple == NULL)
        return NULL;
    PyObject *values = PyObject_CallOneArg(key, tuple);
    Py_DECREF(tuple);
    return values;
}

/* Equal element by element, as a dictionary compares keys (identity first, then ==): 1, 0 or -1 (an error). */
static int same_items(PyObject *const *items, PyObject *tuple) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        int same = PyObject_RichCompareBool(items[i], PyTuple_GET_ITEM(tuple, i), Py_EQ);
        if (same != 1)
            return same;
    }
    return 1;
}

/* The kernel's last signature (borrowed) when this launch's grid and key positions hold what its key held: a loop
   launching one signature over and over then builds, hashes and looks up no key. NULL otherwise (or an error). */
static PyObject *last_signature_if_same(KernelSeen *seen, PyObject *grid, PyObject *const *args, Py_ssize_t n) {
    if (seen->last_key == NULL || !PyTuple_CheckExact(seen->key_function))
        return NULL;
    PyObject *last_grid = PyTuple_GET_ITEM(seen->last_key, 0), *last_scalars = PyTuple_GET_ITEM(seen->last_key, 1);
    /* a key of other positions (the tracer drops a scalar that varies at every launch) makes the last key stale */
    if (PyTuple_GET_SIZE(grid) != PyTuple_GET_SIZE(last_grid) || !PyTuple_CheckExact(last_scalars) ||
        PyTuple_GET_SIZE(last_scalars) != PyTuple_GET_SIZE(seen->key_function))
        return NULL;
    int same = same_items(&PyTuple_GET_ITEM(grid, 0), last_grid);
    for (Py_ssize_t i = 0; same == 1 && i < PyTuple_GET_SIZE(seen->key_function); i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(seen->key_function, i));
        if (at < 0 || at >= n)
            return NULL;  /* the full lookup reports it */
        same = PyObject_RichCompareBool(args[at], PyTuple_GET_ITEM(last_scalars, i), Py_EQ);
    }
    return same == 1 ? seen->last_signature : NULL;
}

/* The launch's signature (borrowed) from the kernel's dictionary, remembered as its last; NULL if it has none yet
   (or an error). */
static PyObject *signature_of(KernelSeen *seen, PyObject *grid, PyObject *const *args, Py_ssize_t n) {
    PyObject *scalars = key_of(seen->key_function, args, n);
    if (scalars == NULL)
        return NULL;
    PyObject *key = PyTuple_Pack(2, grid, scalars);
    Py_DECREF(scalars);
    if (key == NULL)
        return NULL;
    PyObject *signature = PyDict_GetItemWithError(seen->signatures, key);
    if (signature == NULL || Py_TYPE(signature) != &SignatureSeenType) {
        Py_DECREF(key);
        return NULL;
    }
    Py_INCREF(signature);
    Py_XSETREF(seen->last_key, key);
    Py_XSETREF(seen->last_signature, signature);
    return signature;
}

/* The launch is passed over (1), goes to the tracer (0), or an error is set (-1). */
static int passed_over(LaunchMetadata *self, PyObject *const *args, Py_ssize_t nargs, KernelSeen **seen_out) {
    PyObject *hash = PyObject_GetAttr(args[0], str_hash);
    if (hash == NULL)
        return -1;
    KernelSeen *seen = (KernelSeen *)PyDict_GetItemWithError(self->kernels, hash);
    Py_DECREF(hash);
    *seen_out = seen;
    if (seen == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (seen->skip > 0) {  /* sampling */
        seen->skip--;
        return 1;
    }
    if (seen->signatures == NULL || seen->signatures == Py_None || seen->key_function == NULL ||
        nargs - 3 != seen->arity || !PyTuple_CheckExact(args[1]))
        return 0;
    if (self->autotune != Py_None) {
        PyObject *busy = PyObject_GetAttr(self->autotune, str_benchmarking);
        if (busy == NULL)
            return -1;
        int truth = PyObject_IsTrue(busy);
        Py_DECREF(busy);
        if (truth != 0)
            return truth < 0 ? -1 : 0;
    }
    SignatureSeen *signature = (SignatureSeen *)last_signature_if_same(seen, args[1], args + 3, nargs - 3);
    if (signature == NULL) {
        if (PyErr_Occurred())
            return -1;
        signature = (SignatureSeen *)signature_of(seen, args[1], args + 3, nargs - 3);
        if (signature == NULL)
            return PyErr_Occurred() ? -1 : 0;
    }
    if (signature->pass_next <= 0)
        return 0;
    signature->pass_next--;
    signature->passed++;
    return 1;
}

static PyObject *LaunchMetadata_vectorcall(LaunchMetadata *self, PyObject *const *args, size_t nargsf,
                                           PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *result = PyObject_Vectorcall(self->original, args, nargs, kwnames);
    if (result == NULL || !self->active || kwnames != NULL || nargs < 3)
        return result;
    KernelSeen *seen = NULL;
    int passed = passed_over(self, args, nargs, &seen);
    if (passed == 1)
        return result;
    if (passed < 0)  /* an unhashable grid or argument, say: the tracer's full path handles and reports it */
        PyErr_Clear();
    PyObject *launch_args = args_tuple(args + 3, nargs - 3);
    if (launch_args == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    PyObject *known = seen ? (PyObject *)seen : Py_None;
    Py_INCREF(known);
    PyObject *slow_args[4] = {args[0], known, args[1], launch_args};
    PyObject *done = PyObject_Vectorcall(self->slow, slow_args, 4, NULL);
    Py_DECREF(known);
    Py_DECREF(launch_args);
    if (done == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    Py_DECREF(done);
    return result;
}

static PyObject *LaunchMetadata_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"original", "slow", "kernels", "autotune", NULL};
    PyObject *original, *slow, *kernels, *autotune;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O", names, &original, &slow, &PyDict_Type, &kernels,
                                     &autotune))
        return NULL;
    LaunchMetadata *self = (LaunchMetadata *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(original);
    Py_INCREF(slow);
    Py_INCREF(kernels);
    Py_INCREF(autotune);
    self->original = original;
    self->slow = slow;
    self->kernels = kernels;
    self->autotune = autotune;
    self->active = 1;
    self->vectorcall = (vectorcallfunc)LaunchMetadata_vectorcall;
    return (PyObject *)self;
}

static PyObject *LaunchMetadata_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static int LaunchMetadata_traverse(LaunchMetadata *self, visitproc visit, void *arg) {
    Py_VISIT(self->original);
    Py_VISIT(self->slow);
    Py_VISIT(self->kernels);
    Py_VISIT(self->autotune);
    Py_VISIT(self->dict);
    return 0;
}

static int LaunchMetadata_clear(LaunchMetadata *self) {
    Py_CLEAR(self->original);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->kernels);
    Py_CLEAR(self->autotune);
    Py_CLEAR(self->dict);
    return 0;
}

static void LaunchMetadata_dealloc(LaunchMetadata *self) {
    PyObject_GC_UnTrack(self);
    LaunchMetadata_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef LaunchMetadata_members[] = {
    {"active", T_BOOL, offsetof(LaunchMetadata, active), 0, "False: a pass-through to Triton's method"},
    {NULL}};

static PyGetSetDef LaunchMetadata_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict},
    {NULL}};

static PyTypeObject LaunchMetadataType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tritonhook._launchpath.LaunchMetadata",
    .tp_basicsize = sizeof(LaunchMetadata),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "LaunchMetadata(original, slow, kernels, autotune): CompiledKernel.launch_metadata, traced.",
    .tp_new = LaunchMetadata_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(LaunchMetadata, vectorcall),
    .tp_descr_get = LaunchMetadata_get,
    .tp_dictoffset = offsetof(LaunchMetadata, dict),
    .tp_traverse = (traverseproc)LaunchMetadata_traverse,
    .tp_clear = (inquiry)LaunchMetadata_clear,
    .tp_dealloc = (destructor)LaunchMetadata_dealloc,
    .tp_members = LaunchMetadata_members,
    .tp_getset = LaunchMetadata_getset,
};

/* ----- the module ------------------------------------------------------------------------------------------------ */
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_launchpath",
                                    "The per-launch path of tritonhook's LaunchTracer, in C.", -1, NULL};

PyMODINIT_FUNC PyInit__launchpath(void) {
    str_hash = PyUnicode_InternFromString("hash");
    str_benchmarking = PyUnicode_InternFromString("benchmarking");
    if (str_hash == NULL || str_benchmarking == NULL)
        return NULL;
    PyTypeObject *types[] = {&KernelSeenType, &SignatureSeenType, &LaunchMetadataType};
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        const char *name = strrchr(types[i]->tp_name, '.') + 1;
        if (PyType_Ready(types[i]) < 0 || PyModule_AddObjectRef(m, name, (PyObject *)types[i]) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
