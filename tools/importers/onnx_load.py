"""Reads an ONNX model and its external data without trusting either.

onnx.load would follow an external-data location wherever it points (a symbolic link to
/etc/passwd, /dev/zero with a length of gigabytes). Here the model is parsed without its
external data, and each tensor's data is read by this module: only from a regular file
inside the model's folder, reached without a symbolic link, after its offset and length
have been checked against the file's size and the tensor's declared shape and type.
"""

import os
import stat

import limits
from builder import ImportError_

PROTOBUF_LIMIT = 2 ** 31 - 1  # the largest message protobuf parses

# Bytes per element of each ONNX element type that can be external data (STRING cannot).
ELEMENT_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4,
                 13: 8, 14: 8, 15: 16, 16: 2, 17: 1, 18: 1, 19: 1, 20: 1}


def load(path):
    """(the model at path with every tensor's data in it, the external data files read)."""
    import onnx
    from google.protobuf.message import DecodeError
    data = _read_model(path)
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise ImportError_("%s: not a valid ONNX model: %s" % (path, e))
    _check_text(path, model, "")
    folder = os.path.dirname(os.path.abspath(path))
    memory_left = limits.memory_bytes()  # overlapping tensors may read one file many times
    files = set()
    for tensor in _tensors(model.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            location, size = _resolve(path, folder, tensor, memory_left)
            files.add(os.path.join(folder, location))
            memory_left -= size
    return model, sorted(files)


def _read_model(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise ImportError_("%s: cannot open: %s" % (path, e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ImportError_("%s: not a regular file" % path)
        if st.st_size > PROTOBUF_LIMIT:
            raise ImportError_("%s: %s, more than an ONNX file can hold (2 GiB; larger models "
                               "keep their weights as external data)"
                               % (path, limits.size_text(st.st_size)))
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def _check_text(path, message, where):
    """Every string field is UTF-8: protobuf hands over the bytes of one that is not. where:
    the message's JSON-pointer-like path, for the error."""
    for field, value in message.ListFields():
        if field.type not in (field.TYPE_STRING, field.TYPE_MESSAGE):
            continue  # numbers and bytes: nothing to decode
        repeated = field.label == field.LABEL_REPEATED
        for k, v in enumerate(value if repeated else [value]):
            here = "%s/%s%s" % (where, field.name, "/%d" % k if repeated else "")
            if field.type == field.TYPE_STRING and isinstance(v, bytes):
                raise ImportError_("%s: not a valid ONNX model: %s is not UTF-8 text"
                                   % (path, here))
            if field.type == field.TYPE_MESSAGE:
                _check_text(path, v, here)


def _tensors(graph):
    """Every TensorProto of a graph: initializers, sparse ones, node attributes, subgraphs."""
    for t in graph.initializer:
        yield t
    for s in graph.sparse_initializer:
        yield s.values
        yield s.indices
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("sparse_tensor"):
                yield a.sparse_tensor.values
                yield a.sparse_tensor.indices
            for s in a.sparse_tensors:
                yield s.values
                yield s.indices
            if a.HasField("g"):
                yield from _tensors(a.g)
            for g in a.graphs:
                yield from _tensors(g)


def _resolve(path, folder, tensor, memory_left):
    """Reads a tensor's external data into it; returns (its location, its bytes)."""
    info = {e.key: e.value for e in tensor.external_data}
    location = info.get("location", "")

    def refuse(what):
        raise ImportError_("%s: tensor %r: external data %r: %s"
                           % (path, tensor.name, location, what))

    fd = _open_inside(folder, location, refuse)
    try:
        size = _declared_bytes(tensor, refuse)
        offset = _whole_number(info.get("offset", "0"), "offset", refuse)
        length = _whole_number(info["length"], "length", refuse) if "length" in info else size
        if length != size:
            refuse("length %d, but the tensor's shape %s takes %d bytes"
                   % (length, list(tensor.dims), size))
        if size > memory_left:
            refuse("%s, more than this machine's memory holds" % limits.size_text(size))
        file_size = os.fstat(fd).st_size
        if offset + length > file_size:
            refuse("bytes %d to %d lie past the end of the file (%d bytes)"
                   % (offset, offset + length, file_size))
        data = os.pread(fd, length, offset) if length else b""
    finally:
        os.close(fd)
    if len(data) != length:
        refuse("the file ended early (it changed while it was read)")
    del tensor.external_data[:]
    tensor.data_location = 0  # DEFAULT: the data is in the tensor now
    tensor.raw_data = data
    return location, length


def _declared_bytes(tensor, refuse):
    element = ELEMENT_BYTES.get(tensor.data_type)
    if element is None:
        refuse("element type %d cannot be stored as external data" % tensor.data_type)
    size = element
    for d in tensor.dims:
        if d < 0:
            refuse("the tensor's shape %s has a negative dimension" % list(tensor.dims))
        size *= d
    return size


def _whole_number(text, key, refuse):
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        refuse("%s %r is not a whole number below 10^18" % (key, text[:40]))
    return int(text)


def _open_inside(folder, location, refuse):
    """A descriptor on the regular file at `location` below `folder`: a relative path with no
    "..", none of whose components is a symbolic link, so that it cannot leave the folder."""
    if not location:
        refuse("no location")
    if "\0" in location:
        refuse("holds a NUL byte")
    if os.path.isabs(location):
        refuse("an absolute path; locations are relative to the model's folder")
    parts = [p for p in location.split("/") if p not in ("", ".")]
    if ".." in parts:
        refuse("\"..\" leads out of the model's folder")
    if not parts:
        refuse("names the model's folder, not a file")
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        refuse("cannot open the model's folder: %s" % e.strerror)
    try:
        for k, part in enumerate(parts):
            last = k == len(parts) - 1
            where = "/".join(parts[:k + 1])
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except OSError as e:
                refuse("%s: %s" % (where, e.strerror))
            if stat.S_ISLNK(st.st_mode):
                refuse("%s is a symbolic link; external data must be a file in the "
                       "model's folder" % where)
            if last and not stat.S_ISREG(st.st_mode):
                refuse("not a regular file")
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | (
                os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                inner = os.open(part, flags, dir_fd=fd)
            except OSError as e:
                refuse("%s: %s" % (where, e.strerror))
            os.close(fd)
            fd = inner
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since it was looked at
            refuse("not a regular file")
        return fd
    except BaseException:
        os.close(fd)
        raise
