/* The protocol's compiled twins, each held by tests to a Python reference it must match on every
 * input (change both together):
 * - walk_records: the record walk of a produced batch (validator.walk_records_py;
 *   tests/unit/protocol/test_validator.py);
 * - client_batch, stamp_batch: a produced payload's checks and stamp in one call each
 *   (PartitionLog._check_client_payload, records.stamp_batch_py;
 *   tests/unit/storage/test_client_payload_check.py);
 * - produce_request: a Produce request's body as kio entities (kio's reader;
 *   tests/unit/protocol/test_produce_request.py), and entity, the builder it uses
 *   (protocol/entities.py; tests/unit/protocol/test_entities.py);
 * - record_spans (the log cleaner) and bounds_walk (codec's length checks), described below;
 * - unfilled_bytearray: bytearray(n) without zeroing it (the frame decoder; framing.py).
 *
 * walk_records(data, count, base_timestamp, ts_low, ts_high, key_required, target_timestamp)
 *   -> (fault: str | None, max_timestamp, match_delta, match_timestamp, bad: list[(index, kind, ts)])
 *
 * Why C and not Rust: functions over a byte buffer, no dependency beyond the compiler that
 * setuptools already drives for `pip install`, and a build that takes a second.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Big-endian fields, as Kafka writes them. */
static inline int64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

static inline int32_t be32(const uint8_t *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}

static inline int16_t be16(const uint8_t *p)
{
    return (int16_t)(((uint16_t)p[0] << 8) | p[1]);
}

static inline void put_be64(uint8_t *p, int64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)(v & 0xFF);
        v = (int64_t)((uint64_t)v >> 8);
    }
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

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
        if (rc_ == 1)                                                                          \
            FAULT("premature end of record");                                                  \
        if (rc_ == 2)                                                                          \
            FAULT("varint longer than %d bytes", (nbytes));                                    \
    } while (0)

/* A fault ends the walk: quiet walks only say so, loud ones say why (the Python reference's text). */
#define FAULT(...)                                                                             \
    do {                                                                                       \
        rc = 1;                                                                                \
        if (!quiet)                                                                            \
            fault = PyUnicode_FromFormat(__VA_ARGS__);                                         \
        goto done;                                                                             \
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

struct walk_result {
    int64_t max_ts, match_delta, match_ts;
    PyObject *fault; /* new reference or NULL (loud walks only) */
    PyObject *bad;   /* new reference or NULL (loud walks only) */
};

/* The walk of `count` records in [base, base + len). Returns 0 when every record is sound and
 * none is bad; 1 when one is not (a loud walk then holds the fault's text in out->fault, or the
 * bad records in out->bad, and goes on past bad records as the reference does; a quiet walk stops
 * at the first and builds nothing); -1 on a Python error. */
static int walk_core(const uint8_t *base, Py_ssize_t len, int64_t count, int64_t base_ts, int64_t ts_low,
                     int64_t ts_high, int key_required, int64_t target, int quiet, struct walk_result *out)
{
    const uint8_t *end = base + len;
    const uint8_t *p = base;
    int64_t max_ts = -1, match_delta = -1, match_ts = -1;
    PyObject *fault = NULL;
    PyObject *bad = NULL;
    int rc = 0;

    int64_t i = 0;
    while (i < count) {
        if (p >= end)
            FAULT("Incorrect declared batch size, premature EOF reached at record %lld of %lld",
                  (long long)i, (long long)count);
        int64_t size, ts_delta, offset_delta, key_len, value_len, n_headers;
        VARINT(size, end, 5, 32);
        if (size < 0 || size > end - p)
            FAULT("Invalid record size %lld at record %lld: %zd bytes remain in the batch",
                  (long long)size, (long long)i, (Py_ssize_t)(end - p));
        const uint8_t *start = p;
        const uint8_t *rec_end = p + size;
        if (p >= rec_end)
            FAULT("Invalid record size %lld at record %lld", (long long)size, (long long)i);
        p += 1; /* attributes */
        VARINT(ts_delta, rec_end, 10, 64);
        VARINT(offset_delta, rec_end, 5, 32);
        VARINT(key_len, rec_end, 5, 32);
        if (key_len < -1 || key_len > rec_end - p)
            FAULT("Invalid key length %lld at record %lld", (long long)key_len, (long long)i);
        if (key_len > 0)
            p += key_len;
        VARINT(value_len, rec_end, 5, 32);
        if (value_len < -1 || value_len > rec_end - p)
            FAULT("Invalid value length %lld at record %lld", (long long)value_len, (long long)i);
        if (value_len > 0)
            p += value_len;
        VARINT(n_headers, rec_end, 5, 32);
        if (n_headers < 0 || n_headers > rec_end - p)
            FAULT("Found invalid number of record headers %lld at record %lld", (long long)n_headers,
                  (long long)i);
        for (int64_t h = 0; h < n_headers; h++) {
            int64_t hk, hv;
            VARINT(hk, rec_end, 5, 32);
            if (hk < 0 || hk > rec_end - p)
                FAULT("Invalid header key size %lld at record %lld", (long long)hk, (long long)i);
            p += hk;
            VARINT(hv, rec_end, 5, 32);
            if (hv < -1 || hv > rec_end - p)
                FAULT("Invalid header value size %lld at record %lld", (long long)hv, (long long)i);
            if (hv > 0)
                p += hv;
        }
        if (p != rec_end)
            FAULT("Invalid record size: expected to read %lld bytes in record payload, "
                  "but instead read %zd (record %lld)",
                  (long long)size, (Py_ssize_t)(p - start), (long long)i);
        if (offset_delta != i)
            FAULT("record %lld has offset delta %lld; the deltas of a batch must run "
                  "0, 1, ..., count - 1", (long long)i, (long long)offset_delta);
        int64_t ts = (int64_t)((uint64_t)base_ts + (uint64_t)ts_delta);
        if (ts > max_ts)
            max_ts = ts;
        int missing_key = key_required && key_len < 0;
        int out_of_range = ts != -1 && (ts < ts_low || ts > ts_high);
        if (missing_key || out_of_range) {
            rc = 1;
            if (quiet)
                goto done;
            if ((missing_key && add_bad(&bad, i, MISSING_KEY, ts) < 0) ||
                (out_of_range && add_bad(&bad, i, TIMESTAMP_OUT_OF_RANGE, ts) < 0)) {
                rc = -1;
                goto done;
            }
        }
        if (match_delta < 0 && target >= 0 && ts >= target) {
            match_delta = i;
            match_ts = ts;
        }
        i++;
    }
    if (p != end)
        FAULT("Incorrect declared batch size, records still remaining in file "
              "(%zd bytes after record %lld)", (Py_ssize_t)(end - p), (long long)(count - 1));

done:
    if (PyErr_Occurred())
        rc = -1;
    out->max_ts = max_ts;
    out->match_delta = match_delta;
    out->match_ts = match_ts;
    out->fault = fault;
    out->bad = bad;
    return rc;
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
    struct walk_result r;
    int rc = walk_core((const uint8_t *)view.buf, view.len, count, base_ts, ts_low, ts_high, key_required, target,
                       0, &r);
    PyBuffer_Release(&view);
    if (rc < 0) {
        Py_XDECREF(r.fault);
        Py_XDECREF(r.bad);
        return NULL;
    }
    if (r.bad == NULL && (r.bad = PyList_New(0)) == NULL) {
        Py_XDECREF(r.fault);
        return NULL;
    }
    if (r.fault == NULL) {
        r.fault = Py_None;
        Py_INCREF(r.fault);
    }
    return Py_BuildValue("(NLLLN)", r.fault, (long long)r.max_ts, (long long)r.match_delta, (long long)r.match_ts,
                         r.bad);
}

/* ---------------------------------------------------------------------------------------------
 * CRC-32C: the project's one implementation (minikafka.protocol.crc, the crc32c package's, which
 * runs three streams at once), looked up when this module loads. */

static PyObject *crc32c_func = NULL;

/* 0 and the CRC in *out, or -1 with a Python error set. */
static int crc32c_of(const uint8_t *p, size_t n, uint32_t *out)
{
    PyObject *view = PyMemoryView_FromMemory((char *)p, (Py_ssize_t)n, PyBUF_READ);
    if (view == NULL)
        return -1;
    PyObject *r = PyObject_CallOneArg(crc32c_func, view);
    Py_DECREF(view);
    if (r == NULL)
        return -1;
    unsigned long v = PyLong_AsUnsignedLong(r);
    Py_DECREF(r);
    if (v == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The produced batch's checks in one call (issue 17: Produce spends its time in Python glue).
 *
 * client_batch(payload, ts_low, ts_high, key_required, max_message_bytes, header_type)
 *   -> (used, header, records_max_timestamp) | None
 *
 * The answer for the one case a client sends almost always: a payload holding exactly one whole,
 * uncompressed v2 batch (perhaps followed by fewer than 17 stray bytes, which the caller drops)
 * that passes every check of records.split_batches and validator.validate_client_batch. Anything
 * else (a fault of any kind, a compressed batch, a second batch) is None, and the caller runs the
 * Python reference, which raises the exact error or handles the case. So this function decides no
 * error of its own; tests hold its answers to the reference's on generated and mutated payloads.
 * `header` is built as header_type (records.BatchHeader) from the 13 header fields. */

#define HEADER_SIZE 61
#define UP_TO_MAGIC 17

static PyObject *client_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "client_batch takes 6 arguments");
        return NULL;
    }
    int64_t ts_low, ts_high, max_message_bytes;
    if (as_i64(args[1], &ts_low) || as_i64(args[2], &ts_high) || as_i64(args[4], &max_message_bytes))
        return NULL;
    int key_required = PyObject_IsTrue(args[3]);
    if (key_required < 0)
        return NULL;
    PyObject *header_type = args[5];
    if (!PyType_Check(header_type) || !PyType_IsSubtype((PyTypeObject *)header_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "header_type must be a tuple type");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    Py_ssize_t len = view.len;
    PyObject *result = NULL;
    int usual = 0;
    int64_t size = 0, records_max_ts = -1;
    int64_t base_offset = 0, attributes = 0, last_offset_delta = 0, base_ts = 0, max_ts = 0, producer_id = 0;
    int64_t producer_epoch = 0, base_sequence = 0, records_count = 0, leader_epoch = 0, batch_length = 0;
    uint32_t crc = 0;

    if (len < UP_TO_MAGIC)
        goto out;
    base_offset = be64(b);
    batch_length = be32(b + 8);
    size = batch_length + 12;
    /* split_batches: too small for any batch, incomplete, not magic 2, below a v2 header. */
    if (size - 12 < 14 || size > len || b[16] != 2 || size < HEADER_SIZE)
        goto out;
    if (len - size >= UP_TO_MAGIC) /* a second batch, whole or not: the reference decides */
        goto out;
    crc = (uint32_t)be32(b + 17);
    leader_epoch = be32(b + 12);
    attributes = be16(b + 21);
    last_offset_delta = be32(b + 23);
    base_ts = be64(b + 27);
    max_ts = be64(b + 35);
    producer_id = be64(b + 43);
    producer_epoch = be16(b + 51);
    base_sequence = be32(b + 53);
    records_count = be32(b + 57);
    /* PartitionLog.append and validator.check_client_batch_header. */
    if (size > max_message_bytes || base_offset != 0)
        goto out;
    if (last_offset_delta < 0 || records_count <= 0 || records_count != last_offset_delta + 1)
        goto out;
    if (attributes & 0x20) /* control */
        goto out;
    if (producer_id >= 0 && base_sequence < 0)
        goto out;
    if (attributes & 0x07) /* compressed: the reference decompresses */
        goto out;
    /* The CRC after every check on the header alone: a batch the reference will handle anyway (a
     * compressed one, most of all) is not hashed twice. Any None is the same None whatever the
     * order; only the reference's order of errors matters, and it decides them. */
    uint32_t computed;
    if (crc32c_of(b + 21, (size_t)(size - 21), &computed) < 0 || computed != crc)
        goto out;
    struct walk_result r;
    int rc = walk_core(b + HEADER_SIZE, (Py_ssize_t)(size - HEADER_SIZE), records_count, base_ts, ts_low, ts_high,
                       key_required, -1, 1, &r);
    if (rc < 0)
        goto out;
    if (rc > 0)
        goto out;
    records_max_ts = r.max_ts;
    usual = 1;

out:
    PyBuffer_Release(&view);
    if (PyErr_Occurred())
        return NULL;
    if (!usual)
        Py_RETURN_NONE;
    PyObject *fields = Py_BuildValue("(LiiiIiiLLLiii)", (long long)base_offset, (int)batch_length, (int)leader_epoch,
                                     2, (unsigned int)crc, (int)attributes, (int)last_offset_delta, (long long)base_ts,
                                     (long long)max_ts, (long long)producer_id, (int)producer_epoch,
                                     (int)base_sequence, (int)records_count);
    if (fields == NULL)
        return NULL;
    PyObject *targs = PyTuple_Pack(1, fields);
    Py_DECREF(fields);
    if (targs == NULL)
        return NULL;
    PyObject *header = PyTuple_Type.tp_new((PyTypeObject *)header_type, targs, NULL);
    Py_DECREF(targs);
    if (header == NULL)
        return NULL;
    result = Py_BuildValue("(nNL)", (Py_ssize_t)size, header, (long long)records_max_ts);
    return result;
}

/* stamp_batch(buf, pos, size, base_offset, timestamp, mode) -> None: what PartitionLog.append
 * writes into a batch it appends, in one call. Every mode sets the base offset and a partition
 * leader epoch of 0 (outside the CRC). Mode 1 also clears the timestamp type bit and sets
 * maxTimestamp (CreateTime), mode 2 sets the bit and maxTimestamp (LogAppendTime); both then
 * compute the CRC again. The Python reference: records.set_base_offset,
 * set_partition_leader_epoch and set_max_timestamp. */
static PyObject *stamp_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "stamp_batch takes 6 arguments");
        return NULL;
    }
    int64_t pos, size, base_offset, timestamp, mode;
    if (as_i64(args[1], &pos) || as_i64(args[2], &size) || as_i64(args[3], &base_offset) ||
        as_i64(args[4], &timestamp) || as_i64(args[5], &mode))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (pos < 0 || size < HEADER_SIZE || pos + size > view.len || mode < 0 || mode > 2) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "stamp_batch: no whole batch header at that position, or a bad mode");
        return NULL;
    }
    uint8_t *b = (uint8_t *)view.buf + pos;
    put_be64(b, base_offset);
    put_be32(b + 12, 0);
    if (mode) {
        uint16_t attrs = (uint16_t)(((uint16_t)b[21] << 8) | b[22]);
        attrs = mode == 2 ? (uint16_t)(attrs | 0x08) : (uint16_t)(attrs & ~0x08);
        b[21] = (uint8_t)(attrs >> 8);
        b[22] = (uint8_t)attrs;
        put_be64(b + 35, timestamp);
        uint32_t crc;
        if (crc32c_of(b + 21, (size_t)(size - 21), &crc) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        put_be32(b + 17, crc);
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
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
        *out = be32(buf + pos);
        return pos + 4;
    }
    if (pos + 2 > len)
        return WALK_BAD;
    *out = be16(buf + pos);
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

/* ---------------------------------------------------------------------------------------------
 * A Produce request's body (v3-v12) read straight into its kio entities.
 *
 * produce_request(frame, pos, flexible, shape, timedelta_of) -> ProduceRequest | None
 *
 * Why: kio's reader built each of a small Produce's three entities through its dataclass
 * __init__ (frozen: one object.__setattr__ per field), ~5 us per request, a sixth of the
 * request's time in the broker (issue 17). This reader fills the entities' slots through their
 * member descriptors, which is what __init__ ends up doing, and builds the same objects.
 * shape = (request class, its 4 field descriptors, topic class, its 2, partition class, its 2),
 * each in the field order transactional_id, acks, timeout, topic_data / name, partition_data /
 * index, records (protocol/produce_request.py checks that order against the classes).
 * timedelta_of(ms) gives the timeout as kio gives it.
 *
 * Anything unusual (a length past the end or negative where kio would refuse it, a null where
 * a value must be, invalid UTF-8, any tagged field) answers None and the caller runs kio, which
 * decodes it or names the fault. Tests hold the two to the same entities on generated and
 * mutated requests of every version.
 *
 * One difference, on purpose: a partition's records come as a bytearray (kio: bytes, equal in
 * value). The append stamps offsets into its payload in place, so it needs a buffer of its own;
 * this one is it, and the handler no longer copies every produced byte once more to get one. */

static PyObject *empty_tuple = NULL;

/* A reading position in the frame; the lengths are read by the bounds walk's own walk_length and
 * walk_uvarint above. */
struct cursor {
    const uint8_t *buf;
    Py_ssize_t len, pos;
};

static int cur_i16(struct cursor *c, int16_t *out)
{
    if (c->len - c->pos < 2)
        return -1;
    *out = be16(c->buf + c->pos);
    c->pos += 2;
    return 0;
}

static int cur_i32(struct cursor *c, int32_t *out)
{
    if (c->len - c->pos < 4)
        return -1;
    *out = be32(c->buf + c->pos);
    c->pos += 4;
    return 0;
}

/* A length: -1 for null, else the length; -2 when it cannot be read. */
static int64_t cur_length(struct cursor *c, int flexible, int wide)
{
    int64_t n;
    Py_ssize_t pos = walk_length(c->buf, c->len, c->pos, flexible, wide, &n);
    if (pos < 0)
        return -2;
    c->pos = pos;
    return n;
}

/* A string (nullable: None allowed); NULL with no error set: unusual. */
static PyObject *cur_string(struct cursor *c, int flexible, int nullable)
{
    int64_t n = cur_length(c, flexible, 0);
    if (n == -1 && nullable)
        Py_RETURN_NONE;
    if (n < 0 || n > c->len - c->pos)
        return NULL;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)c->buf + c->pos, (Py_ssize_t)n, NULL);
    if (s == NULL) {
        PyErr_Clear();
        return NULL;
    }
    c->pos += n;
    return s;
}

/* A flexible struct's tagged fields: none (0), or anything else (-1: kio decides). */
static int cur_no_tags(struct cursor *c, int flexible)
{
    if (!flexible)
        return 0;
    uint64_t n;
    Py_ssize_t pos = walk_uvarint(c->buf, c->len, c->pos, &n);
    if (pos < 0 || n != 0)
        return -1;
    c->pos = pos;
    return 0;
}

/* An entity of cls with its fields set through the descriptors, values stolen. */
static PyObject *build(PyObject *cls, PyObject *descrs, PyObject **values, Py_ssize_t n)
{
    PyObject *obj = NULL;
    if (PyTuple_GET_SIZE(descrs) == n)
        obj = PyBaseObject_Type.tp_new((PyTypeObject *)cls, empty_tuple, NULL);
    else
        PyErr_SetString(PyExc_TypeError, "an entity needs a value for each of its fields");
    for (Py_ssize_t i = 0; i < n; i++) {
        if (obj != NULL) {
            PyObject *d = PyTuple_GET_ITEM(descrs, i);
            descrsetfunc set = Py_TYPE(d)->tp_descr_set;
            if (set == NULL || set(d, obj, values[i]) < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "an entity field that cannot be set");
                Py_CLEAR(obj);
            }
        }
        Py_DECREF(values[i]);
    }
    return obj;
}

/* entity(cls, descriptors, *values) -> an entity of cls with each field set, in order (see
 * protocol/entities.py; its Python reference sets the same descriptors one by one). */
static PyObject *entity(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 2 || !PyType_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "entity(cls, descriptors, *values)");
        return NULL;
    }
    Py_ssize_t n = nargs - 2;
    PyObject *values[64];
    if (n > 64) {
        PyErr_SetString(PyExc_TypeError, "entity: more than 64 fields");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        values[i] = args[2 + i];
        Py_INCREF(values[i]);
    }
    return build(args[0], args[1], values, n);
}

static PyObject *produce_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "produce_request takes 5 arguments");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    int flexible = PyObject_IsTrue(args[2]);
    if (flexible < 0)
        return NULL;
    PyObject *shape = args[3];
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) != 6) {
        PyErr_SetString(PyExc_TypeError, "produce_request: shape must be a 6-tuple");
        return NULL;
    }
    PyObject *req_cls = PyTuple_GET_ITEM(shape, 0), *req_d = PyTuple_GET_ITEM(shape, 1);
    PyObject *topic_cls = PyTuple_GET_ITEM(shape, 2), *topic_d = PyTuple_GET_ITEM(shape, 3);
    PyObject *part_cls = PyTuple_GET_ITEM(shape, 4), *part_d = PyTuple_GET_ITEM(shape, 5);
    if (!PyType_Check(req_cls) || !PyType_Check(topic_cls) || !PyType_Check(part_cls) || !PyTuple_Check(req_d) ||
        !PyTuple_Check(topic_d) || !PyTuple_Check(part_d)) {
        PyErr_SetString(PyExc_TypeError, "produce_request: shape holds classes and descriptor tuples");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL, *txn = NULL, *timeout = NULL, *topics = NULL;
    if (pos < 0 || pos > view.len)
        goto out;
    struct cursor c = {(const uint8_t *)view.buf, view.len, pos};
    int16_t acks;
    int32_t timeout_ms;
    txn = cur_string(&c, flexible, 1);
    if (txn == NULL || cur_i16(&c, &acks) < 0 || cur_i32(&c, &timeout_ms) < 0)
        goto out;
    int64_t n_topics = cur_length(&c, flexible, 1);
    if (n_topics < 0 || n_topics > c.len - c.pos)
        goto out;
    topics = PyTuple_New((Py_ssize_t)n_topics);
    if (topics == NULL)
        goto out;
    for (int64_t t = 0; t < n_topics; t++) {
        PyObject *name = cur_string(&c, flexible, 0);
        if (name == NULL)
            goto out;
        int64_t n_parts = cur_length(&c, flexible, 1);
        if (n_parts < 0 || n_parts > c.len - c.pos) {
            Py_DECREF(name);
            goto out;
        }
        PyObject *parts = PyTuple_New((Py_ssize_t)n_parts);
        if (parts == NULL) {
            Py_DECREF(name);
            goto out;
        }
        for (int64_t i = 0; i < n_parts; i++) {
            int32_t index;
            int64_t size;
            PyObject *data = NULL;
            if (cur_i32(&c, &index) < 0 || (size = cur_length(&c, flexible, 1)) < -1 || size > c.len - c.pos)
                goto bad_part;
            if (size == -1) {
                data = Py_None;
                Py_INCREF(data);
            } else if ((data = PyByteArray_FromStringAndSize((const char *)c.buf + c.pos, (Py_ssize_t)size)) == NULL) {
                goto bad_part;
            }
            c.pos += size < 0 ? 0 : size;
            if (cur_no_tags(&c, flexible) < 0)
                goto bad_part_data;
            PyObject *index_obj = PyLong_FromLong(index);
            if (index_obj == NULL)
                goto bad_part_data;
            PyObject *values[2] = {index_obj, data};
            PyObject *part = build(part_cls, part_d, values, 2);
            if (part == NULL)
                goto bad_part;
            PyTuple_SET_ITEM(parts, (Py_ssize_t)i, part);
            continue;
        bad_part_data:
            Py_DECREF(data);
        bad_part:
            Py_DECREF(name);
            Py_DECREF(parts);
            goto out;
        }
        if (cur_no_tags(&c, flexible) < 0) {
            Py_DECREF(name);
            Py_DECREF(parts);
            goto out;
        }
        PyObject *values[2] = {name, parts};
        PyObject *topic = build(topic_cls, topic_d, values, 2);
        if (topic == NULL)
            goto out;
        PyTuple_SET_ITEM(topics, (Py_ssize_t)t, topic);
    }
    if (cur_no_tags(&c, flexible) < 0)
        goto out;
    /* Bytes after the body are ignored, as codec.decode_request ignores them. */
    PyObject *ms = PyLong_FromLong(timeout_ms);
    if (ms == NULL)
        goto out;
    timeout = PyObject_CallOneArg(args[4], ms);
    Py_DECREF(ms);
    if (timeout == NULL)
        goto out;
    PyObject *acks_obj = PyLong_FromLong(acks);
    if (acks_obj == NULL)
        goto out;
    PyObject *values[4] = {txn, acks_obj, timeout, topics};
    txn = timeout = topics = NULL; /* stolen by build */
    result = build(req_cls, req_d, values, 4);

out:
    PyBuffer_Release(&view);
    Py_XDECREF(txn);
    Py_XDECREF(timeout);
    Py_XDECREF(topics);
    if (result == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}

/* unfilled_bytearray(n) -> a bytearray of n bytes whose contents are not set.
 *
 * Why: the frame decoder receives a large frame into a buffer of its exact size and hands it out
 * only once every byte is filled (framing.py). bytearray(n) zeroes it first, which cost as much as
 * filling it (perf: memset 7 % of the broker's samples under 100 KiB records, issue 17). */
static PyObject *unfilled_bytearray(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "unfilled_bytearray: negative size");
        return NULL;
    }
    return PyByteArray_FromStringAndSize(NULL, n);
}

static PyMethodDef methods[] = {
    {"unfilled_bytearray", (PyCFunction)unfilled_bytearray, METH_O,
     "bytearray(n) without zeroing it: for a buffer whose every byte is set before it is read."},
    {"walk_records", (PyCFunction)(void (*)(void))walk_records, METH_FASTCALL,
     "Walk the records of a batch; see minikafka.protocol.validator.walk_records_py."},
    {"record_spans", (PyCFunction)(void (*)(void))record_spans, METH_FASTCALL,
     "Where each record of a records section lies; see minikafka.protocol.batch_rewrite.record_spans_py."},
    {"client_batch", (PyCFunction)(void (*)(void))client_batch, METH_FASTCALL,
     "A produced payload's checks in one call, or None; see PartitionLog._check_client_payload."},
    {"stamp_batch", (PyCFunction)(void (*)(void))stamp_batch, METH_FASTCALL,
     "Offsets, leader epoch and (modes 1, 2) maxTimestamp and CRC; see records.stamp_batch."},
    {"produce_request", (PyCFunction)(void (*)(void))produce_request, METH_FASTCALL,
     "A Produce request's body (v3-v12) as its kio entities, or None; see protocol/produce_request.py."},
    {"entity", (PyCFunction)(void (*)(void))entity, METH_FASTCALL,
     "An entity with its fields set through their slot descriptors; see protocol/entities.py."},
    {"bounds_walk", (PyCFunction)(void (*)(void))bounds_walk, METH_FASTCALL,
     "Check a request's lengths before kio reads it; see minikafka.protocol.codec._bounds_checker."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void)
{
    if (empty_tuple == NULL && (empty_tuple = PyTuple_New(0)) == NULL)
        return NULL;
    if (crc32c_func == NULL) {
        PyObject *crc = PyImport_ImportModule("minikafka.protocol.crc");
        if (crc == NULL)
            return NULL;
        crc32c_func = PyObject_GetAttrString(crc, "crc32c");
        Py_DECREF(crc);
        if (crc32c_func == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
