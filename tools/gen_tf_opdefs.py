"""Write `dialects/tf_opdefs.json`: a snapshot of TensorFlow's OpDef registry for the tf dialect.

The tf dialect is described from TensorFlow's own op definitions, but importing TensorFlow
takes seconds, so the dialect reads this snapshot instead. Regenerate it after a TensorFlow
upgrade:

    python -m mlconv.tools.gen_tf_opdefs [-o dialects/tf_opdefs.json]

Every public op of `tf.raw_ops` is written (internal `_Op`s are not: they do not occur in a
frozen SavedModel function). The format, one entry per op under "ops":

    "Conv2D": {
      "summary": "Computes a 2-D convolution ...",
      "inputs":  [["input", ""], ["filter", ""]],   # [name, list kind(, length attr)]
      "outputs": [["output", ""]],
      "attrs":   [["T", "type", null], ["strides", "list(int)", null],
                  ["use_cudnn_on_gpu", "bool", true], ...]       # [name, TF type, default]
    }

The list kind of an argument is "" (one tensor), "number" (`number_attr`: N tensors of one
type) or "types" (`type_list_attr`: a list of tensors of listed types); list arguments
carry the attr that gives their length as a third entry (`["values", "number", "N"]`). Defaults are JSON
values: ints, floats, bools, strings; a type is its `DT_*` name; a shape is a list of dims
(-1 unknown) or null for an unknown rank; tensor and func defaults are null.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "dialects" / "tf_opdefs.json"


def _shape(proto) -> list[int] | None:
    if proto.unknown_rank:
        return None
    return [int(d.size) for d in proto.dim]


def _float(value: float) -> float | str:
    # JSON has no inf/nan: keep them as strings the dialect turns back into floats.
    return value if math.isfinite(value) else str(value)


def _default(attr, types_pb2):
    """The attr's default as a JSON value (None when it has no default)."""
    if not attr.HasField("default_value"):
        return None
    value = attr.default_value
    kind = value.WhichOneof("value")
    if kind == "i":
        return int(value.i)
    if kind == "f":
        return _float(value.f)
    if kind == "b":
        return bool(value.b)
    if kind == "s":
        return value.s.decode("utf-8", errors="backslashreplace")
    if kind == "type":
        return types_pb2.DataType.Name(value.type)
    if kind == "shape":
        return _shape(value.shape)
    if kind == "list":
        lst = value.list
        if attr.type == "list(int)":
            return [int(i) for i in lst.i]
        if attr.type == "list(float)":
            return [_float(f) for f in lst.f]
        if attr.type == "list(bool)":
            return [bool(b) for b in lst.b]
        if attr.type == "list(string)":
            return [s.decode("utf-8", errors="backslashreplace") for s in lst.s]
        if attr.type == "list(type)":
            return [types_pb2.DataType.Name(t) for t in lst.type]
        if attr.type == "list(shape)":
            return [_shape(s) for s in lst.shape]
        return []
    return None


def _summary(doc: str | None) -> str:
    """The first paragraph of a `tf.raw_ops` docstring (the registry's OpDefs carry no docs)."""
    paragraph = (doc or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split())


def _arg(arg) -> list[str]:
    if arg.number_attr:
        return [arg.name, "number", arg.number_attr]
    if arg.type_list_attr:
        return [arg.name, "types", arg.type_list_attr]
    return [arg.name, ""]


def snapshot() -> dict:
    """The OpDef snapshot of the installed TensorFlow as a JSON-ready dict."""
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2
    from tensorflow.python.framework import op_def_registry

    ops = {}
    for name in sorted(n for n in dir(tf.raw_ops) if not n.startswith("_")):
        op_def = op_def_registry.get(name)
        if op_def is None:
            continue
        ops[name] = {
            "summary": op_def.summary or _summary(getattr(tf.raw_ops, name).__doc__),
            "inputs": [_arg(a) for a in op_def.input_arg],
            "outputs": [_arg(a) for a in op_def.output_arg],
            "attrs": [[a.name, a.type, _default(a, types_pb2)] for a in op_def.attr],
        }
    return {"tensorflow_version": tf.__version__, "ops": ops}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    data = snapshot()
    # One op per line keeps diffs after a TensorFlow upgrade readable.
    lines = [
        f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in data["ops"].items()
    ]
    text = (
        '{"tensorflow_version":'
        + json.dumps(data["tensorflow_version"])
        + ',"ops":{\n'
        + ",\n".join(lines)
        + "\n}}\n"
    )
    args.output.write_text(text)
    print(f"{args.output}: {len(data['ops'])} ops, {len(text) // 1024} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
