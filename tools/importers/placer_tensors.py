"""placer tensor files (docs/tensor-file.md) from Python: what the importers write weights,
inputs and expected outputs with, and read placer's outputs (`placer eval --outputs`,
`--gradients`, `placer train --save-weights`) back.

    import placer_tensors
    placer_tensors.write("model.weights", [("fc1.weight", w), ("fc1.bias", b)])
    for name, array in placer_tensors.read("model.weights"): ...

Arrays are numpy arrays of float32 or int32 (any layout when written, row-major in the
file; read ones are fresh, writable arrays). Both functions check what the C reader
(src/formats/tensor_file.c) checks; a problem raises TensorFileError naming the file and
the tensor or JSON pointer.
Needs numpy and the standard library only (zlib for the CRC-32)."""

import json
import os
import re
import tempfile
import zlib

import numpy

__all__ = ["TensorFileError", "read", "write", "encode", "write_atomically", "decode", "MAGIC", "VERSION", "ALIGN"]

MAGIC = b"placer-tensors\n"
VERSION = 1
ALIGN = 64
MAX_RANK = 6
MAX_DIM = 2**31 - 1
MAX_ELEMENTS = 2**31
MAX_NAME = 255
MAX_TENSORS = 1000000
MAX_HEADER = 64 << 20
DTYPES = {"f32": numpy.dtype("<f4"), "i32": numpy.dtype("<i4")}
FIELDS = ("name", "dtype", "shape", "offset", "bytes", "crc32")


class TensorFileError(ValueError):
    """A tensor file or a list of tensors that breaks the format: the message names the file
    and where (a tensor's name or a JSON pointer)."""


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _check_name(name, where, fail):
    if not isinstance(name, str):
        fail(f"{where}: expected a tensor name (a string), found {type(name).__name__}")
    size = len(name.encode("utf-8"))
    if size == 0 or size > MAX_NAME:
        fail(f"{where}: a tensor name of {size} bytes (1 to {MAX_NAME})")
    if re.search(r"[\x00-\x1f\x7f]", name):
        fail(f"{where}: the tensor name contains a control character")


def _dtype_name(array):
    for name, dtype in DTYPES.items():
        if array.dtype.kind == dtype.kind and array.dtype.itemsize == 4:
            return name
    return None


def write(path, tensors):
    """Writes `tensors`, a list of (name, numpy array of float32 or int32), in this order, to
    `path` atomically: a temporary file beside it, renamed over it, with the mode the umask
    gives (as placer writes its files). Nothing is written when `tensors` is refused."""
    path = os.fspath(path)
    write_atomically(path, encode(tensors, path))


def write_atomically(path, data):
    """Writes bytes to `path` through a temporary file beside it, renamed over it, with the
    mode the umask gives."""
    directory = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def encode(tensors, source="<tensors>"):
    """The bytes of a tensor file holding `tensors` (as `write` takes them), for a caller that
    writes the file itself; TensorFileError messages start with `source`."""

    def fail(message):
        raise TensorFileError(f"{source}: {message}")

    tensors = list(tensors)
    if len(tensors) > MAX_TENSORS:
        fail(f"{len(tensors)} tensors (at most {MAX_TENSORS})")
    index, blobs, seen, offset = [], [], set(), 0
    for k, item in enumerate(tensors):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            fail(f"tensor {k}: expected a (name, array) pair")
        name, array = item
        _check_name(name, f"tensor {k}", fail)
        if name in seen:
            fail(f'tensor "{name}" is given twice')
        seen.add(name)
        if not isinstance(array, numpy.ndarray):
            fail(f'tensor "{name}": expected a numpy array, found {type(array).__name__}')
        dtype = _dtype_name(array)
        if dtype is None:
            fail(f'tensor "{name}": dtype {array.dtype} (expected float32 or int32)')
        if array.ndim > MAX_RANK:
            fail(f'tensor "{name}": rank {array.ndim} (at most {MAX_RANK})')
        if any(d > MAX_DIM for d in array.shape) or array.size > MAX_ELEMENTS:
            fail(f'tensor "{name}": shape {list(array.shape)} is too large')
        data = numpy.ascontiguousarray(array, dtype=DTYPES[dtype]).tobytes()
        index.append({"name": name, "dtype": dtype, "shape": [int(d) for d in array.shape],
                      "offset": offset, "bytes": len(data),
                      "crc32": zlib.crc32(data) & 0xFFFFFFFF})
        blobs.append(data)
        offset = _align(offset + len(data))
    header = json.dumps({"format": "placer-tensors", "version": VERSION, "tensors": index},
                        separators=(",", ":"), ensure_ascii=True).encode("ascii")
    head = MAGIC + header + b"\n"
    parts = [head, bytes(_align(len(head)) - len(head))]
    for k, data in enumerate(blobs):
        parts.append(data)
        if k + 1 < len(blobs):  # the next tensor starts aligned; the last one ends the file
            parts.append(bytes(_align(len(data)) - len(data)))
    return b"".join(parts)


def _member(obj, key, kind, where, fail):
    if key not in obj:
        fail(f"{where}: missing member \"{key}\"")
    value = obj[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        fail(f"{where}/{key}: expected an integer, found {type(value).__name__}")
    if kind is not int and not isinstance(value, kind):
        fail(f"{where}/{key}: expected {kind.__name__}, found {type(value).__name__}")
    return value


def _read_entry(item, k, size, data_start, fail):
    where = f"/tensors/{k}"
    if not isinstance(item, dict):
        fail(f"{where}: expected an object")
    for key in item:
        if key not in FIELDS:
            fail(f"{where}: unknown member \"{key}\"")
    name = _member(item, "name", str, where, fail)
    _check_name(name, f"{where}/name", fail)
    dtype = _member(item, "dtype", str, where, fail)
    if dtype not in DTYPES:
        fail(f'{where}/dtype: unknown dtype "{dtype}" (known: f32, i32)')
    shape = _member(item, "shape", list, where, fail)
    if len(shape) > MAX_RANK:
        fail(f"{where}/shape: rank {len(shape)} (at most {MAX_RANK})")
    elements = 1
    for i, dim in enumerate(shape):
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim <= MAX_DIM:
            fail(f"{where}/shape/{i}: expected a dimension (an integer 0 to {MAX_DIM})")
        elements *= dim
        if elements > MAX_ELEMENTS:
            fail(f"{where}/shape/{i}: more than {MAX_ELEMENTS} elements")
    offset = _member(item, "offset", int, where, fail)
    nbytes = _member(item, "bytes", int, where, fail)
    crc = _member(item, "crc32", int, where, fail)
    if offset < 0 or nbytes < 0 or not 0 <= crc <= 0xFFFFFFFF:
        fail(f"{where}: offset, bytes and crc32 must not be negative (crc32 below 2^32)")
    if nbytes != elements * 4:
        fail(f"{where}/bytes: {nbytes} bytes for {elements} elements of 4 bytes")
    if offset % ALIGN:
        fail(f"{where}/offset: offset {offset} is not a multiple of {ALIGN}")
    if data_start + offset + nbytes > size:
        fail(f'truncated: tensor "{name}" ends at byte {data_start + offset + nbytes} '
             f"of a {size}-byte file")
    return name, dtype, tuple(shape), offset, nbytes, crc


def read(path):
    """The tensors of the file at `path` as a list of (name, numpy array), in the file's
    order, after checking everything (TensorFileError otherwise)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        return decode(f.read(), path)


def decode(blob, source="<bytes>"):
    """The tensors of a tensor file's bytes, as `read` returns them; TensorFileError
    messages start with `source`."""
    path = source

    def fail(message):
        raise TensorFileError(f"{path}: {message}")
    if not blob.startswith(MAGIC):
        fail('not a placer tensor file (it must start with the line "placer-tensors")')
    end = blob.find(b"\n", len(MAGIC))
    if end < 0:
        fail("truncated (reading the header line: no newline ends it)")
    if end - len(MAGIC) > MAX_HEADER:
        fail(f"the header line is longer than {MAX_HEADER} bytes")
    try:
        header = json.loads(blob[len(MAGIC):end].decode("utf-8"),
                            object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as error:
        fail(f"the header line is not JSON: {error}")
    if not isinstance(header, dict):
        fail("expected the tensor file header object")
    if header.get("format") != "placer-tensors":
        fail(f'/format: this is a "{header.get("format")}" file, not a "placer-tensors"')
    if header.get("version") != VERSION:
        fail(f"/version: version {header.get('version')} (this reader reads {VERSION})")
    for key in header:
        if key not in ("format", "version", "tensors"):
            fail(f'unknown member "{key}"')
    entries = _member(header, "tensors", list, "", fail)
    if len(entries) > MAX_TENSORS:
        fail(f"/tensors: {len(entries)} tensors (at most {MAX_TENSORS})")
    data_start = _align(end + 1)
    if len(blob) < data_start:
        fail("truncated (reading the padding before the data)")
    if any(blob[end + 1:data_start]):
        fail("the bytes between the header and the data are not zeros")
    index, seen = [], {}
    for k, item in enumerate(entries):
        entry = _read_entry(item, k, len(blob), data_start, fail)
        if entry[0] in seen:
            fail(f'/tensors/{k}/name: tensor "{entry[0]}" is given twice '
                 f"(first at /tensors/{seen[entry[0]]})")
        seen[entry[0]] = k
        index.append(entry)
    at, previous = data_start, None
    for name, _, _, offset, nbytes, _ in sorted(index, key=lambda e: e[3]):
        if data_start + offset < at:
            fail(f'tensor "{name}" (offset {offset}) overlaps tensor "{previous}"')
        at, previous = data_start + offset + nbytes, name
    if len(blob) > at:
        fail(f"{len(blob) - at} bytes after the last tensor's data")
    tensors = []
    for name, dtype, shape, offset, nbytes, crc in index:
        data = blob[data_start + offset:data_start + offset + nbytes]
        found = zlib.crc32(data) & 0xFFFFFFFF
        if found != crc:
            fail(f'tensor "{name}": the checksum of its data is {found}, the header says '
                 f"{crc} (the file is damaged)")
        array = numpy.frombuffer(data, dtype=DTYPES[dtype]).reshape(shape)
        tensors.append((name, array.astype(DTYPES[dtype].newbyteorder("="), copy=True)))
    return tensors


def _no_duplicates(pairs):
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f'duplicate object key "{key}"')
    return dict(pairs)
