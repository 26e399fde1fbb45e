"""Writes the ONNX models tests/importers-invalid.sh feeds tools/import-onnx, into FOLDER.

Each is x [N, 4] @ w [4, 3] -> y, with w stored as external data pointing somewhere it must
not be read from (a symbolic link, an absolute or ".." path, a device, bytes past the end
of its file), or a file that is wrong in another way. ok.onnx is the same model done right.
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper


def model(path, weight, x_dims=("N", 4), before=(), initializers=()):
    """x @ weight -> y, with the nodes `before` (which make "x1" from "x") ahead of it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x_dims[:-1]) + [3])
    matmul = helper.make_node("MatMul", ["x1" if before else "x", "w"], ["y"], name="/fc/MatMul")
    graph = helper.make_graph(list(before) + [matmul], "hostile", [x], [y],
                              [weight] + list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def external(location, offset=None, length=None, dims=(4, 3)):
    """w as external data: location, offset and length as given (None: left out)."""
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
    return t


def main(folder):
    def at(name):
        return os.path.join(folder, name)
    values = np.arange(12, dtype=np.float32)
    with open(at("w.bin"), "wb") as f:
        f.write(values.tobytes())
    with open(at("short.bin"), "wb") as f:
        f.write(values[:10].tobytes())
    os.symlink("/etc/passwd", at("passwd.bin"))
    os.symlink("/dev/zero", at("zero.bin"))
    os.symlink("/etc", at("etc"))
    os.mkfifo(at("fifo.bin"))
    os.mkdir(at("sub"))
    cases = {
        "ok": external("w.bin", 0, 48),
        "symlink": external("passwd.bin", 0, 48),
        "symlink-dir": external("etc/passwd", 0, 48),
        "absolute": external("/etc/passwd", 0, 48),
        "dotdot": external("../outside.bin", 0, 48),
        "dotdot-inner": external("sub/../w.bin", 0, 48),
        "dev-zero": external("zero.bin", 0, 2 ** 40, dims=(2 ** 18, 2 ** 20)),
        "fifo": external("fifo.bin", 0, 48),
        "folder": external("sub", 0, 48),
        "missing": external("nothere.bin", 0, 48),
        "past-end": external("short.bin", 0, 48),
        "offset-past-end": external("w.bin", 8, 48),
        "length": external("w.bin", 0, 1000),
        "offset-text": external("w.bin", "abc", 48),
        "huge-shape": external("w.bin", 0, None, dims=(2 ** 40, 2 ** 40)),
        "no-location": external("", 0, 48),
        "offset-long": external("w.bin", "9" * 5000, 48),
        "nul-location": external("w.bin\0/etc/passwd", 0, 48),
    }
    for name, weight in cases.items():
        model(at(name + ".onnx"), weight)
    with open(at("../outside.bin"), "wb") as f:
        f.write(values.tobytes())
    # Data that does not match the shape; inputs past placer's limits.
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3],
                        raw_data=values[:10].tobytes())
    model(at("data-short.onnx"), short)
    whole = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3],
                        raw_data=values.tobytes())
    model(at("input-huge.onnx"), whole, ("N", 100000, 100000, 4))
    model(at("input-zero.onnx"), whole, ("N", 0, 4))
    # A batch norm whose epsilon is NaN: JSON cannot carry it.
    norm = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["x1"],
                            name="/bn/BatchNormalization", epsilon=float("nan"))
    stats = [helper.make_tensor(n, TensorProto.FLOAT, [4], [1.0] * 4) for n in "sbmv"]
    model(at("nan-epsilon.onnx"), whole, before=[norm], initializers=stats)


if __name__ == "__main__":
    main(sys.argv[1])
