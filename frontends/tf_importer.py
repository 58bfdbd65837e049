"""TensorFlow SavedModel -> `tf` dialect.

`import_tf(path, signature=None, alias=None, function=None)` loads a TF2 SavedModel folder,
picks one function (a signature, `serving_default` by default; a function alias given with
`SaveOptions(function_aliases=...)`; or a concrete function's name as the SavedModel's
function library spells it), freezes its variables into constants and translates the frozen
graph into `func.func @main`:

- the function's inputs are the arguments of @main, in TensorFlow's flat order (for a
  signature: sorted by input name, as in the SignatureDef), each with
  `{mlconv.name = "<input name>"}`; its outputs are returned in the same flat order with
  `{mlconv.name = "<output name>"}` (for positional outputs `output_<i>`);
- `Const` nodes become `tf.Const` with a dense `value` built from the tensor's bytes; every
  other node becomes `tf.<Op>` with the NodeDef attributes the OpDef declares (attributes
  starting with `_`, e.g. `_class`, `_output_shapes`, are dropped), result types from the
  graph's inferred shapes, and `loc("<node name>")`;
- control inputs (`^x`) and `NoOp`s are dropped; `Identity` nodes are kept (they carry the
  names of the outputs; a later pass removes them);
- `PartitionedCall`/`StatefulPartitionedCall` left after freezing are inlined (their nodes are
  located at `<call node>/<inner node>`); `If`/`While`/`Case` (stateless or not) get their
  functions from the graph's function library as regions ending in `tf.Yield`.

TensorFlow is imported only when a model is imported. Every user error is one line,
`mlconv.errors.FrontendError`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnrankedTensorType,
)
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from mlconv.errors import FrontendError
from mlconv.signature.main_function import main_function

_CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
# Ops whose variant tensors may be TensorLists (Keras RNNs' TensorArrays): imported with
# `!tf.variant` types; tf-to-core turns the lists into tensors.
_TENSOR_LIST_USERS = frozenset(
    {
        "TensorListReserve",
        "TensorListFromTensor",
        "TensorListSetItem",
        "TensorListGetItem",
        "TensorListStack",
        "TensorListLength",
        "While",
        "StatelessWhile",
        "Identity",
    }
)
_DEFAULT_SIGNATURE = "serving_default"
_TEMP_ALIAS = "__mlconv_requested_function__"


def quiet_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    return tf


def _loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), NoneAttr())


def _names(items: Sequence[str]) -> str:
    return ", ".join(sorted(items)) or "none"


# --------------------------------------------------------------------------- picking a function


def read_saved_model(path: str | os.PathLike):
    """The SavedModel protobuf of the folder `path` (its MetaGraphs and signatures)."""
    quiet_tensorflow()
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.core.protobuf import saved_model_pb2

    pb = Path(path) / "saved_model.pb"
    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString(pb.read_bytes())
    except OSError as error:
        raise FrontendError(f"'{pb}': cannot read: {error.strerror}") from None
    return proto


def callees(function_def: Any) -> set[str]:
    """Functions a FunctionDef calls directly (PartitionedCall's `f`, If/While branches, ...)."""
    found = set()
    for node in function_def.node_def:
        for value in node.attr.values():
            if value.HasField("func"):
                found.add(value.func.name)
            elif value.HasField("list"):
                found.update(f.name for f in value.list.func)
    return found


def reachable(library: dict[str, Any], start: Iterable[str]) -> set[str]:
    """The functions of `library` that `start` reaches through calls, `start` included."""
    seen: set[str] = set()
    todo = [n for n in start if n in library]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(c for c in callees(library[name]) if c in library)
    return seen


def _read_saved_model(path: Path):
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.core.protobuf import saved_model_pb2

    pb = path / "saved_model.pb"
    if not path.is_dir() or not pb.is_file():
        raise FrontendError(f"'{path}' is not a TensorFlow SavedModel folder (no saved_model.pb)")
    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString(pb.read_bytes())
    except Exception as err:  # a DecodeError, whatever protobuf build is installed
        raise FrontendError(f"'{pb}' is not a SavedModel protobuf: {err}") from None
    if not proto.meta_graphs:
        raise FrontendError(f"'{pb}' holds no MetaGraph")
    return proto


def _load(path: Path, tf, proto=None, function: str | None = None):
    """tf.saved_model.load with function aliases; `function` is given a temporary alias."""
    options = tf.saved_model.LoadOptions(experimental_load_function_aliases=True)
    if function is None:
        return tf.saved_model.load(str(path), options=options)
    # Loading renames every concrete function; only aliases survive it. Give the requested
    # function an alias in a copy of saved_model.pb next to links to the variables/assets.
    proto.meta_graphs[0].meta_info_def.function_aliases[function] = _TEMP_ALIAS
    with tempfile.TemporaryDirectory(prefix="mlconv-tf-") as tmp:
        for entry in path.iterdir():
            if entry.name not in ("saved_model.pb", "fingerprint.pb"):
                os.symlink(entry.resolve(), Path(tmp) / entry.name)
        (Path(tmp) / "saved_model.pb").write_bytes(proto.SerializeToString())
        return tf.saved_model.load(tmp, options=options)


def _single_concrete(value, what: str, names: Sequence[str]):
    functions = list(value) if isinstance(value, list | tuple) else None
    if functions is None:
        try:
            return value.get_concrete_function()
        except (TypeError, ValueError):
            functions = value._list_all_concrete_functions()
    if len(functions) != 1:
        raise FrontendError(
            f"{what} names {len(functions)} concrete functions; pick one by function name: "
            f"{_names(names)}"
        )
    return functions[0]


def pick(path: Path, tf, signature: str | None, alias: str | None, function: str | None):
    """(concrete function, whether it is a signature, the loaded object that keeps it alive)."""
    if sum(x is not None for x in (signature, alias, function)) > 1:
        raise FrontendError("give at most one of signature, alias and function")
    proto = _read_saved_model(path)
    meta = proto.meta_graphs[0]
    signatures = [k for k in meta.signature_def if not k.startswith("__")]
    aliases: dict[str, list[str]] = {}
    for fn_name, fn_alias in meta.meta_info_def.function_aliases.items():
        aliases.setdefault(fn_alias, []).append(fn_name)
    # Concrete functions the object graph can restore (not branch/body helper functions).
    concrete = [n for n in meta.object_graph_def.concrete_functions if "_traced_" not in n]

    if alias is not None:
        if alias not in aliases:
            raise FrontendError(
                f"'{path}' has no function alias '{alias}'; aliases: {_names(aliases)}"
            )
        loaded = _load(path, tf)
        fn = _single_concrete(loaded.function_aliases[alias], f"alias '{alias}'", aliases[alias])
        return fn, False, loaded
    if function is not None:
        if function not in concrete:
            raise FrontendError(
                f"'{path}' has no concrete function '{function}'; functions: {_names(concrete)}"
            )
        loaded = _load(path, tf, proto, function)
        fn = _single_concrete(loaded.function_aliases[_TEMP_ALIAS], f"'{function}'", [function])
        return fn, False, loaded
    signature = signature or _DEFAULT_SIGNATURE
    if signature not in signatures:
        raise FrontendError(
            f"'{path}' has no signature '{signature}'; signatures: {_names(signatures)}"
        )
    loaded = _load(path, tf)
    return loaded.signatures[signature], True, loaded


def io_names(fn, is_signature: bool) -> tuple[list[str], list[str]]:
    """Names of the function's flat inputs and outputs (dict keys, else spec/placeholder names)."""
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.python.util import nest

    args, kwargs = fn.structured_input_signature
    if is_signature:
        in_names = [p for p, _ in nest.flatten_with_joined_string_paths(kwargs)]
    else:
        specs = nest.flatten((args, kwargs))
        in_names = [
            getattr(s, "name", None)
            or (fn.inputs[i].op.name if i < len(fn.inputs) else f"input_{i}")
            for i, s in enumerate(specs)
        ]
    outputs = fn.structured_outputs
    flat = nest.flatten_with_joined_string_paths(outputs)
    if isinstance(outputs, dict):
        out_names = [p for p, _ in flat]
    else:
        out_names = [f"output_{i}" for i in range(len(flat))]
    return in_names, out_names


# --------------------------------------------------------------------------- graph translation


class _Translator:
    def __init__(self, tf, library: dict[str, Any]):
        # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
        from tensorflow.core.framework import types_pb2

        # lazy: loads numpy, which this module does not
        from mlconv.dialects import tf as tfd

        self.tf = tf
        self.tfd = tfd
        self.types_pb2 = types_pb2
        self.library = library

    # --- types and attributes

    def element(self, dtype, node: str, op_type: str, lists: bool = False) -> Attribute:
        """The element type; variant (a TensorList) only where `lists` or for list ops."""
        name = self.types_pb2.DataType.Name(dtype.as_datatype_enum)
        element = self.tfd.ELEMENT_TYPES.get(name)
        lists = lists or op_type in _TENSOR_LIST_USERS
        if lists and isinstance(element, self.tfd.VariantType):
            return element  # a TensorList: tf-to-core makes it a tensor
        if element is None or isinstance(element, self.tfd.OPAQUE_TYPES):
            kind = dtype.name
            raise FrontendError(
                f"'tf.{op_type}' op (node '{node}') has a {kind} tensor that survives freezing; "
                f"{kind} tensors cannot be compiled",
                node,
            )
        return element

    def tensor_type(self, tensor, node: str, op_type: str, lists: bool = False) -> Attribute:
        element = self.element(tensor.dtype, node, op_type, lists)
        shape = tensor.shape
        if shape.rank is None:
            return UnrankedTensorType(element)
        return TensorType(element, [DYNAMIC_INDEX if d is None else d for d in shape.as_list()])

    def dense(self, tensor_proto, node: str, op_type: str) -> Attribute:
        # lazy: loads numpy, which this module does not
        from mlconv.dense import to_dense_attr

        dtype = self.tf.dtypes.as_dtype(tensor_proto.dtype)
        self.element(dtype, node, op_type)
        array = self.tf.make_ndarray(tensor_proto)
        return to_dense_attr(array)

    def attribute(self, tf_type: str, value, node: str, op_type: str) -> Attribute:
        if tf_type.startswith("list("):
            item = tf_type[5:-1]
            lst = value.list
            field = {
                "int": lst.i,
                "float": lst.f,
                "bool": lst.b,
                "string": lst.s,
                "type": lst.type,
                "shape": lst.shape,
                "tensor": lst.tensor,
                "func": lst.func,
            }.get(item, ())
            return ArrayAttr([self.scalar(item, v, node, op_type) for v in field])
        kind = value.WhichOneof("value")
        if kind == "placeholder":
            raise FrontendError(
                f"'tf.{op_type}' op (node '{node}') has an unresolved attr placeholder", node
            )
        field = {
            "int": "i",
            "float": "f",
            "bool": "b",
            "string": "s",
            "type": "type",
            "shape": "shape",
            "tensor": "tensor",
            "func": "func",
        }.get(tf_type)
        if field is None:
            return StringAttr(str(value))
        return self.scalar(tf_type, getattr(value, field), node, op_type)

    def scalar(self, tf_type: str, v, node: str, op_type: str) -> Attribute:
        if tf_type == "int":
            return IntegerAttr(int(v), IntegerType(64))
        if tf_type == "float":
            return FloatAttr(float(v), Float32Type())
        if tf_type == "bool":
            return IntegerAttr(int(bool(v)), IntegerType(1))
        if tf_type == "string":
            return StringAttr(v.decode("utf-8", errors="backslashreplace"))
        if tf_type == "type":
            dtype = self.tf.dtypes.as_dtype(v)
            return self.tfd.ELEMENT_TYPES.get(self.types_pb2.DataType.Name(v)) or self.element(
                dtype, node, op_type
            )
        if tf_type == "shape":
            return self.tfd.shape_attr(None if v.unknown_rank else [d.size for d in v.dim])
        if tf_type == "tensor":
            return self.dense(v, node, op_type)
        if tf_type == "func":
            return SymbolRefAttr(v.name)
        raise FrontendError(f"'tf.{op_type}' op (node '{node}') has an attr of type {tf_type}")

    # --- graphs

    def function_graph(self, name: str, input_shapes):
        # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
        from tensorflow.python.framework.function_def_to_graph import function_def_to_graph

        fdef = self.library.get(name)
        if fdef is None:
            raise FrontendError(f"function '{name}' is not in the graph's function library")
        return function_def_to_graph(fdef, input_shapes=input_shapes)

    def region(self, name: str, input_shapes, prefix: str) -> Region:
        graph = self.function_graph(name, input_shapes)
        arg_types = [self.tensor_type(t, prefix, "Placeholder", lists=True) for t in graph.inputs]
        block = Block(arg_types=arg_types)
        outputs = self.translate(
            graph, graph.inputs, list(block.args), graph.outputs, block, prefix
        )
        block.add_op(self.tfd.YieldOp(*outputs))
        return Region(block)

    def translate(self, graph, inputs, args, outputs, block: Block, prefix: str) -> list[SSAValue]:
        """Translate `graph` into `block` with `inputs` bound to `args`; the outputs' values."""
        values: dict[str, SSAValue] = {t.name: a for t, a in zip(inputs, args, strict=True)}
        input_ops = {t.op.name for t in inputs}
        for op in _topological(graph.get_operations()):
            if op.name in input_ops or op.type == "NoOp":
                continue
            if op.type == "Placeholder":
                raise FrontendError(
                    f"'tf.Placeholder' op (node '{prefix}{op.name}') is not an input of the "
                    "function (unfed placeholder)",
                    prefix + op.name,
                )
            operands = [values[t.name] for t in op.inputs]
            if op.type in _CALL_OPS:
                callee = self.function_graph(op.get_attr("f").name, [t.shape for t in op.inputs])
                results = self.translate(
                    callee,
                    callee.inputs,
                    operands,
                    callee.outputs,
                    block,
                    f"{prefix}{op.name}/",
                )
            else:
                new_op = self.operation(op, operands, prefix)
                block.add_op(new_op)
                results = list(new_op.results)
            for tensor, value in zip(op.outputs, results, strict=True):
                values[tensor.name] = value
        return [values[t.name] for t in outputs]

    def operation(self, op, operands: list[SSAValue], prefix: str) -> Operation:
        node = prefix + op.name
        cls = self.tfd.OPS_BY_NAME.get(f"tf.{op.type}")
        if cls is None:
            raise FrontendError(
                f"op 'tf.{op.type}' (node '{node}') is not in the tf dialect's OpDef snapshot "
                f"(TensorFlow {self.tfd.TENSORFLOW_VERSION})",
                node,
            )
        spec = cls.OPDEF
        node_def = op.node_def
        region_attrs = self.tfd.REGION_ATTRS.get(op.type, ())
        attributes: dict[str, Attribute] = {}
        for name, tf_type, _ in spec["attrs"]:
            if name in node_def.attr and name not in region_attrs:
                attributes[name] = self.attribute(tf_type, node_def.attr[name], node, op.type)
        result_types = [self.tensor_type(t, node, op.type) for t in op.outputs]
        for tensor in op.inputs:
            self.element(tensor.dtype, node, op.type)
        regions = []
        if region_attrs:
            in_shapes = [t.shape for t in op.inputs]
            if op.type in ("If", "StatelessIf"):
                in_shapes = in_shapes[1:]
            elif op.type in ("Case", "StatelessCase"):
                in_shapes = in_shapes[1:]
            elif op.type in ("While", "StatelessWhile"):
                in_shapes = [t.shape for t in op.outputs]
            for name in region_attrs:
                value = node_def.attr[name]
                funcs = value.list.func if name == "branches" else [value.func]
                group = [self.region(f.name, in_shapes, node + "/") for f in funcs]
                regions.append(group if name == "branches" else group[0])
        new_op = cls.build(
            operands=_group(spec["inputs"], operands, node_def),
            result_types=_group(spec["outputs"], result_types, node_def),
            attributes=attributes,
            regions=regions,
        )
        new_op.location = _loc(node)
        return new_op


def _group(args, flat: list, node_def) -> list:
    """Split the flat operand/result list into one entry (a list for list args) per OpDef arg."""
    sizes = []
    for arg in args:
        if not arg[1]:
            sizes.append(None)
        elif arg[1] == "number":
            sizes.append(node_def.attr[arg[2]].i)
        else:
            sizes.append(len(node_def.attr[arg[2]].list.type))
    known = sum(1 if s is None else s for s in sizes)
    if known != len(flat):  # defensive: fall back to giving the slack to the one list arg
        lists = [i for i, s in enumerate(sizes) if s is not None]
        if len(lists) == 1:
            sizes[lists[0]] += len(flat) - known
    grouped, i = [], 0
    for size in sizes:
        if size is None:
            grouped.append(flat[i])
            i += 1
        else:
            grouped.append(flat[i : i + size])
            i += size
    return grouped


def _topological(ops) -> list:
    """Ops ordered so that data inputs come first (stable; control edges ignored)."""
    ops = list(ops)
    index = {op.name: i for i, op in enumerate(ops)}
    pending = {op.name: {t.op.name for t in op.inputs if t.op.name in index} for op in ops}
    users: dict[str, list[str]] = {}
    for name, deps in pending.items():
        for dep in deps:
            users.setdefault(dep, []).append(name)
    import heapq

    ready = [index[n] for n, deps in pending.items() if not deps]
    heapq.heapify(ready)
    order = []
    while ready:
        op = ops[heapq.heappop(ready)]
        order.append(op)
        for user in users.get(op.name, ()):
            pending[user].discard(op.name)
            if not pending[user]:
                heapq.heappush(ready, index[user])
    if len(order) != len(ops):
        stuck = sorted(n for n, d in pending.items() if d)[:5]
        raise FrontendError(f"the graph has a cycle through {', '.join(stuck)}", stuck[0])
    return order


def import_tf(
    path: str | os.PathLike,
    signature: str | None = None,
    alias: str | None = None,
    function: str | None = None,
) -> ModuleOp:
    """Import one function of a TF2 SavedModel folder as a module holding `func.func @main`."""
    path = Path(path)
    if not path.is_dir() or not (path / "saved_model.pb").is_file():
        raise FrontendError(f"'{path}' is not a TensorFlow SavedModel folder (no saved_model.pb)")
    tf = quiet_tensorflow()
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    fn, is_signature, _loaded = pick(path, tf, signature, alias, function)
    in_names, out_names = io_names(fn, is_signature)
    try:
        frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False)
    except Exception as err:
        raise FrontendError(f"'{path}': freezing the variables failed: {err}") from None
    graph = frozen.graph
    library = {f.signature.name: f for f in graph.as_graph_def().library.function}
    translator = _Translator(tf, library)
    inputs = list(frozen.inputs)
    if len(in_names) != len(inputs):
        in_names = [t.op.name for t in inputs]
    arg_types = [translator.tensor_type(t, t.op.name, "Placeholder") for t in inputs]
    block = Block(arg_types=arg_types)
    for arg, name in zip(block.args, in_names, strict=True):
        if name.replace("_", "a").isalnum() and not name[0].isdigit():
            arg.name_hint = name
    outputs = translator.translate(graph, inputs, list(block.args), frozen.outputs, block, "")
    if len(out_names) != len(outputs):
        out_names = [f"output_{i}" for i in range(len(outputs))]
    block.add_op(ReturnOp(*outputs))
    return ModuleOp([main_function(block, in_names, out_names)])
