/* The compiled twin of minikafka.protocol.validator.walk_records_py: the record walk of a produced
 * batch, the hottest loop of Produce. It must return exactly what the Python reference returns for
 * every input (tests/unit/protocol/test_validator.py compares them on generated and mutated
 * batches); change both together.
 *
 * walk_records(data, count, base_timestamp, ts_low, ts_high, key_required, target_timestamp)
 *   -> (fault: str | None, max_timestamp, match_delta, match_timestamp, bad: list[(index, kind, ts)])
 *
 * Why C and not Rust: one function over a byte buffer, no dependency beyond the compiler that
 * setuptools already drives for `pip install`, and a build that takes a second.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define MISSING_KEY 1
#define TIMESTAMP_OUT_OF_RANGE 2

/* 0: ok; 1: premature end; 2: too long. Kafka's ByteUtils.readVarint/readVarlong, zigzag-decoded. */
static int read_varint(const uint8_t **pp, const uint8_t *end, int max_bytes, int bits, int64_t *out)
{
    uint64_t value = 0;
    int shift = 0;
    const uint8_t *p = *pp;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= end)
            return 1;
        uint8_t b = *p++;
        value |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            if (bits == 32)
                value &= 0xFFFFFFFFULL;
            *out = (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
            *pp = p;
            return 0;
        }
        shift += 7;
    }
    return 2;
}

#define VARINT(target, limit, nbytes, nbits)                                                   \
    do {                                                                                       \
        int rc_ = read_varint(&p, (limit), (nbytes), (nbits), &(target));                      \
        if (rc_ == 1) {                                                                        \
            fault = PyUnicode_FromString("premature end of record");                           \
            goto done;                                                                         \
        }                                                                                      \
        if (rc_ == 2) {                                                                        \
            fault = PyUnicode_FromFormat("varint longer than %d bytes", (nbytes));             \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)

static int add_bad(PyObject **bad, long long index, int kind, long long ts)
{
    if (*bad == NULL) {
        *bad = PyList_New(0);
        if (*bad == NULL)
            return -1;
    }
    PyObject *item = Py_BuildValue("(LiL)", index, kind, ts);
    if (item == NULL)
        return -1;
    int rc = PyList_Append(*bad, item);
    Py_DECREF(item);
    return rc;
}

static int as_i64(PyObject *o, int64_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)v;
    return 0;
}

static PyObject *walk_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "walk_records takes 7 arguments");
        return NULL;
    }
    int64_t count, base_ts, ts_low, ts_high, target;
    if (as_i64(args[1], &count) || as_i64(args[2], &base_ts) || as_i64(args[3], &ts_low) ||
        as_i64(args[4], &ts_high) || as_i64(args[6], &target))
        return NULL;
    int key_required = PyObject_IsTrue(args[5]);
    if (key_required < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;

    const uint8_t *base = (const uint8_t *)view.buf;
    const uint8_t *end = base + view.len;
    const uint8_t *p = base;
    int64_t max_ts = -1, match_delta = -1, match_ts = -1;
    PyObject *fault = NULL;
    PyObject *bad = NULL;
    int failed = 0;

    int64_t i = 0;
    while (i < count) {
        if (p >= end) {
            fault = PyUnicode_FromFormat("Incorrect declared batch size, premature EOF reached at record %lld of %lld",
                                         (long long)i, (long long)count);
            goto done;
        }
        int64_t size, ts_delta, offset_delta, key_len, value_len, n_headers;
        VARINT(size, end, 5, 32);
        if (size < 0 || size > end - p) {
            fault = PyUnicode_FromFormat("Invalid record size %lld at record %lld: %zd bytes remain in the batch",
                                         (long long)size, (long long)i, (Py_ssize_t)(end - p));
            goto done;
        }
        const uint8_t *start = p;
        const uint8_t *rec_end = p + size;
        if (p >= rec_end) {
            fault = PyUnicode_FromFormat("Invalid record size %lld at record %lld", (long long)size, (long long)i);
            goto done;
        }
        p += 1; /* attributes */
        VARINT(ts_delta, rec_end, 10, 64);
        VARINT(offset_delta, rec_end, 5, 32);
        VARINT(key_len, rec_end, 5, 32);
        if (key_len < -1 || key_len > rec_end - p) {
            fault = PyUnicode_FromFormat("Invalid key length %lld at record %lld", (long long)key_len, (long long)i);
            goto done;
        }
        if (key_len > 0)
            p += key_len;
        VARINT(value_len, rec_end, 5, 32);
        if (value_len < -1 || value_len > rec_end - p) {
            fault = PyUnicode_FromFormat("Invalid value length %lld at record %lld", (long long)value_len,
                                         (long long)i);
            goto done;
        }
        if (value_len > 0)
            p += value_len;
        VARINT(n_headers, rec_end, 5, 32);
        if (n_headers < 0 || n_headers > rec_end - p) {
            fault = PyUnicode_FromFormat("Found invalid number of record headers %lld at record %lld",
                                         (long long)n_headers, (long long)i);
            goto done;
        }
        for (int64_t h = 0; h < n_headers; h++) {
            int64_t hk, hv;
            VARINT(hk, rec_end, 5, 32);
            if (hk < 0 || hk > rec_end - p) {
                fault = PyUnicode_FromFormat("Invalid header key size %lld at record %lld", (long long)hk,
                                             (long long)i);
                goto done;
            }
            p += hk;
            VARINT(hv, rec_end, 5, 32);
            if (hv < -1 || hv > rec_end - p) {
                fault = PyUnicode_FromFormat("Invalid header value size %lld at record %lld", (long long)hv,
                                             (long long)i);
                goto done;
            }
            if (hv > 0)
                p += hv;
        }
        if (p != rec_end) {
            fault = PyUnicode_FromFormat("Invalid record size: expected to read %lld bytes in record payload, "
                                         "but instead read %zd (record %lld)",
                                         (long long)size, (Py_ssize_t)(p - start), (long long)i);
            goto done;
        }
        if (offset_delta != i) {
            fault = PyUnicode_FromFormat("record %lld has offset delta %lld; the deltas of a batch must run "
                                         "0, 1, ..., count - 1", (long long)i, (long long)offset_delta);
            goto done;
        }
        int64_t ts = (int64_t)((uint64_t)base_ts + (uint64_t)ts_delta);
        if (ts > max_ts)
            max_ts = ts;
        if (key_required && key_len < 0 && add_bad(&bad, i, MISSING_KEY, ts) < 0) {
            failed = 1;
            goto done;
        }
        if (ts != -1 && (ts < ts_low || ts > ts_high) && add_bad(&bad, i, TIMESTAMP_OUT_OF_RANGE, ts) < 0) {
            failed = 1;
            goto done;
        }
        if (match_delta < 0 && target >= 0 && ts >= target) {
            match_delta = i;
            match_ts = ts;
        }
        i++;
    }
    if (p != end) {
        fault = PyUnicode_FromFormat("Incorrect declared batch size, records still remaining in file "
                                     "(%zd bytes after record %lld)", (Py_ssize_t)(end - p),
                                     (long long)(count - 1));
    }

done:
    PyBuffer_Release(&view);
    if (failed || PyErr_Occurred()) {
        Py_XDECREF(fault);
        Py_XDECREF(bad);
        return NULL;
    }
    if (bad == NULL && (bad = PyList_New(0)) == NULL) {
        Py_XDECREF(fault);
        return NULL;
    }
    if (fault == NULL) {
        fault = Py_None;
        Py_INCREF(fault);
    }
    return Py_BuildValue("(NLLLN)", fault, (long long)max_ts, (long long)match_delta, (long long)match_ts, bad);
}

/* record_spans(data, count) -> list[(offset_delta, timestamp_delta, key_start, key_length,
 * value_length, tail_start, end)]: where each record of a decompressed records section lies, for
 * the log cleaner (minikafka.protocol.batch_rewrite.record_spans_py is the Python reference and
 * raises where this raises ValueError). key_length/value_length are -1 for null. */
static PyObject *record_spans(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "record_spans(data, count)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    long long count = PyLong_AsLongLong(args[1]);
    PyObject *out = NULL;
    if (count == -1 && PyErr_Occurred())
        goto done;
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    const uint8_t *base = (const uint8_t *)view.buf;
    const uint8_t *limit = base + view.len;
    const uint8_t *p = base;
    for (long long i = 0; i < count; i++) {
        int64_t length, ts_delta, off_delta, klen, vlen;
        if (read_varint(&p, limit, 10, 64, &length) != 0)
            goto corrupt;
        const uint8_t *end = p + length;
        if (length <= 0 || length > limit - p)
            goto corrupt;
        p += 1; /* attributes */
        if (read_varint(&p, limit, 10, 64, &ts_delta) != 0 || read_varint(&p, limit, 10, 64, &off_delta) != 0)
            goto corrupt;
        const uint8_t *tail = p;
        if (read_varint(&p, limit, 10, 64, &klen) != 0)
            goto corrupt;
        const uint8_t *key = p;
        if (klen > 0) {
            if (klen > end - p)
                goto corrupt;
            p += klen;
        }
        if (p > end || read_varint(&p, limit, 10, 64, &vlen) != 0)
            goto corrupt;
        if (p > end || (vlen > 0 && vlen > end - p))
            goto corrupt;
        PyObject *item = Py_BuildValue("(LLnLLnn)", (long long)off_delta, (long long)ts_delta,
                                       (Py_ssize_t)(key - base), (long long)klen, (long long)vlen,
                                       (Py_ssize_t)(tail - base), (Py_ssize_t)(end - base));
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(item);
        p = end;
    }
    goto done;
corrupt:
    Py_CLEAR(out);
    PyErr_SetString(PyExc_ValueError, "record overruns its batch");
done:
    PyBuffer_Release(&view);
    return out;
}


/* ------------------------------------------------------------------------------------------
 * bounds_walk(spec, frame, pos) -> end position, or -1 (a length past the end, an impossible
 * array, a null where the schema has none: codec's Python walk names the fault), or -2 (a
 * tagged field the schema does not define: the caller strips them and decodes a copy).
 *
 * The compiled twin of the checking walk of minikafka.protocol.codec._bounds_checker (out=None),
 * which interprets the same spec:
 * the lengths of a request are checked against the bytes left before kio's reader, which
 * preallocates arrays by their declared length (KAFKA-14063). codec compiles each request class
 * into `spec` once; tests/unit/protocol/test_codec_bounds.py compares both walks on generated and
 * damaged requests of every API and version served. Change both together.
 *
 * spec of a struct: (flexible, (field, ...), {tag: field})
 * field: (0, size, ...)                   fixed-size value
 *        (1, nullable, wide, ...)         string (wide 0: int16 length) or bytes/records (wide 1: int32)
 *        (2, nullable, struct spec, ...)  a nested struct (nullable: an int8 marker first, -1 null, 1 present)
 *        (3, nullable, item field, ...)   an array
 * (codec's spec ends each field with its name, for the Python walk's messages; not read here)
 */
#define WALK_BAD -1
#define WALK_UNKNOWN_TAG -2

static Py_ssize_t walk_uvarint(const uint8_t *buf, Py_ssize_t len, Py_ssize_t pos, uint64_t *out)
{
    uint64_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (pos >= len)
            return WALK_BAD;
        uint8_t b = buf[pos++];
        value |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = value;
            return pos;
        }
    }
    return WALK_BAD;
}

/* A length prefix (-1: null). */
static Py_ssize_t walk_length(const uint8_t *buf, Py_ssize_t len, Py_ssize_t pos, int flexible, int wide,
                              int64_t *out)
{
    if (flexible) {
        uint64_t n;
        pos = walk_uvarint(buf, len, pos, &n);
        if (pos < 0)
            return pos;
        *out = (int64_t)n - 1;
        return pos;
    }
    if (wide) {
        if (pos + 4 > len)
            return WALK_BAD;
        *out = (int32_t)(((uint32_t)buf[pos] << 24) | ((uint32_t)buf[pos + 1] << 16) |
                         ((uint32_t)buf[pos + 2] << 8) | buf[pos + 3]);
        return pos + 4;
    }
    if (pos + 2 > len)
        return WALK_BAD;
    *out = (int16_t)(((uint16_t)buf[pos] << 8) | buf[pos + 1]);
    return pos + 2;
}

static Py_ssize_t walk_struct(PyObject *spec, const uint8_t *buf, Py_ssize_t len, Py_ssize_t pos, int depth);

static Py_ssize_t walk_field(PyObject *field, int flexible, const uint8_t *buf, Py_ssize_t len, Py_ssize_t pos,
                             int depth)
{
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(field, 0));
    if (kind == 0) {
        Py_ssize_t size = PyLong_AsSsize_t(PyTuple_GET_ITEM(field, 1));
        return pos + size > len ? WALK_BAD : pos + size;
    }
    int nullable = PyObject_IsTrue(PyTuple_GET_ITEM(field, 1));
    if (kind == 1) {
        int64_t n;
        pos = walk_length(buf, len, pos, flexible, PyObject_IsTrue(PyTuple_GET_ITEM(field, 2)), &n);
        if (pos < 0)
            return pos;
        if (n < -1 || (n == -1 && !nullable) || n > len - pos)
            return WALK_BAD;
        return n < 0 ? pos : pos + (Py_ssize_t)n;
    }
    if (kind == 2) {
        if (nullable) {
            if (pos >= len)
                return WALK_BAD;
            uint8_t marker = buf[pos++];
            if (marker == 0xFF)
                return pos;
            if (marker != 0x01)
                return WALK_BAD;
        }
        return walk_struct(PyTuple_GET_ITEM(field, 2), buf, len, pos, depth + 1);
    }
    if (kind == 3) {
        int64_t n;
        pos = walk_length(buf, len, pos, flexible, 1, &n);
        if (pos < 0)
            return pos;
        if (n < -1 || n > len - pos || (n == -1 && !nullable))
            return WALK_BAD;
        PyObject *item = PyTuple_GET_ITEM(field, 2);
        for (int64_t i = 0; i < n; i++) {
            pos = walk_field(item, flexible, buf, len, pos, depth + 1);
            if (pos < 0)
                return pos;
        }
        return pos;
    }
    return WALK_BAD;
}

static Py_ssize_t walk_struct(PyObject *spec, const uint8_t *buf, Py_ssize_t len, Py_ssize_t pos, int depth)
{
    if (depth > 64)  /* Kafka's schemas nest a few levels; a spec this deep is not one of them */
        return WALK_BAD;
    int flexible = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 0));
    PyObject *fields = PyTuple_GET_ITEM(spec, 1);
    Py_ssize_t nfields = PyTuple_GET_SIZE(fields);
    for (Py_ssize_t i = 0; i < nfields; i++) {
        pos = walk_field(PyTuple_GET_ITEM(fields, i), flexible, buf, len, pos, depth);
        if (pos < 0)
            return pos;
    }
    if (!flexible)
        return pos;
    uint64_t count;
    pos = walk_uvarint(buf, len, pos, &count);
    if (pos < 0)
        return pos;
    if (count > (uint64_t)(len - pos))
        return WALK_BAD;
    PyObject *tagged = PyTuple_GET_ITEM(spec, 2);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t tag, size;
        pos = walk_uvarint(buf, len, pos, &tag);
        if (pos < 0)
            return pos;
        pos = walk_uvarint(buf, len, pos, &size);
        if (pos < 0)
            return pos;
        if (size > (uint64_t)(len - pos))
            return WALK_BAD;
        Py_ssize_t end = pos + (Py_ssize_t)size;
        PyObject *key = PyLong_FromUnsignedLongLong(tag);
        if (key == NULL)
            return WALK_BAD;
        PyObject *known = PyDict_GetItemWithError(tagged, key);
        Py_DECREF(key);
        if (known == NULL) {
            PyErr_Clear();
            return WALK_UNKNOWN_TAG;
        }
        /* the tagged field is walked within its own size */
        Py_ssize_t got = walk_field(known, 1, buf, end, pos, depth);
        if (got < 0)
            return got;
        pos = end;
    }
    return pos;
}

static PyObject *bounds_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "bounds_walk(spec, frame, pos)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    Py_ssize_t end = WALK_BAD;
    if (!(pos == -1 && PyErr_Occurred()) && pos >= 0 && pos <= view.len)
        end = walk_struct(args[0], (const uint8_t *)view.buf, view.len, pos, 0);
    PyBuffer_Release(&view);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromSsize_t(end);
}

static PyMethodDef methods[] = {
    {"walk_records", (PyCFunction)(void (*)(void))walk_records, METH_FASTCALL,
     "Walk the records of a batch; see minikafka.protocol.validator.walk_records_py."},
    {"record_spans", (PyCFunction)(void (*)(void))record_spans, METH_FASTCALL,
     "Where each record of a records section lies; see minikafka.protocol.batch_rewrite.record_spans_py."},
    {"bounds_walk", (PyCFunction)(void (*)(void))bounds_walk, METH_FASTCALL,
     "Check a request's lengths before kio reads it; see minikafka.protocol.codec._bounds_checker."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void)
{
    return PyModule_Create(&module);
}
