"""`ai.onnx.ml` (scikit-learn through skl2onnx, onnxmltools): numeric operators as core ops.

The domain's nodes import as `onnx.Custom`, keyed `ai.onnx.ml.<op>` (every domain version,
attributes read per version where they changed). Every attribute is a constant of the fitted
model, so the lowerings build constant tables with numpy and index them with core ops:

- Scaler, Normalizer, Binarizer, Imputer, LinearRegressor, LinearClassifier, OneHotEncoder
  (integer categories), LabelEncoder (numeric keys and values), ArrayFeatureExtractor,
  FeatureVectorizer: elementwise ops, MatMul, Equal against the table;
- TreeEnsembleClassifier/Regressor (and opset 5's TreeEnsemble): a vectorized traversal. Every
  tree's nodes (leaves included) share one index space; the (batch, tree) matrix of current
  nodes starts at the roots and takes one step per level of the deepest tree (a leaf points to
  itself): gather each node's feature, threshold and mode, compare, select the next node. The
  leaves' weights are then gathered as a (batch, tree, target) tensor and aggregated;
- SVMRegressor/SVMClassifier: the kernel as MatMul against the support vectors; the
  classifier's one-vs-one votes, and its probabilities by Platt scaling and libsvm's pairwise
  coupling (a fixed number of its iterations).

String labels, string categories and ZipMap's maps have no tensor form here: those nodes are
refused in one line.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import Float32Type, i64

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_ml as ml
from mlconv.dialects import core_nn as nn
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering

ML = "ai.onnx.ml."
F32 = Float32Type()


def _attr(op, name, default=None):
    value = op.onnx_attr(name)
    if value is None:
        return default
    return value


def _array(op, name, dtype, default=None):
    """A list attribute, or its `<name>_as_tensor` form (TreeEnsemble*-3), as numpy."""
    value = _attr(op, name)
    if value is None or (isinstance(value, list) and not value):
        tensor = _attr(op, f"{name}_as_tensor")
        if tensor is not None:
            value = tensor
    if value is None or (isinstance(value, list) and not value):
        return None if default is None else np.asarray(default, dtype)
    return np.asarray(value, dtype).reshape(-1)


def _float_input(b, x):
    """The features as f32 (the domain takes f32/f64/i64/i32 and computes in float)."""
    if b.dtype(x) != np.float32:
        x = b(ct.ConvertOp, x, destination_type=F32)
    return x


def _as_2d(b, x):
    """(N, C) features: a 1-D input is one sample."""
    if b.rank(x) == 1:
        return b(ct.UnsqueezeOp, x, b.ints([0]))
    if b.rank(x) != 2:
        raise b.fail("needs 2-D features (N, C)")
    return x


def _labels(b, op):
    if _attr(op, "classlabels_strings"):
        raise b.fail("string class labels are not supported (string tensors)")
    labels = _array(op, "classlabels_int64s", np.int64)
    labels = _array(op, "classlabels_ints", np.int64) if labels is None else labels
    if labels is None:
        raise b.fail("needs class labels")
    return labels


def _post_transform(b, op, scores, name="post_transform"):
    transform = _attr(op, name, "NONE")
    if transform == "NONE":
        return scores
    if transform == "SOFTMAX":
        return b(nn.SoftmaxOp, scores, axis=-1)
    if transform == "LOGISTIC":
        return b(ew.SigmoidOp, scores)
    if transform == "SOFTMAX_ZERO":  # softmax over the non-zero scores, zeros stay zero
        nonzero = b(ew.NotEqualOp, scores, b.const(np.float32(0)))
        high = b(ct.ReduceMaxOp, scores, b.ints([-1]), keep_dims=True)
        e = b(ew.ExpOp, b(ew.SubtractOp, scores, high))
        e = b(ct.SelectOp, nonzero, e, b.const(np.float32(0)))
        total = b(ct.ReduceSumOp, e, b.ints([-1]), keep_dims=True)
        return b(ew.DivideOp, e, total)
    raise b.fail(f"post_transform {transform} is not supported")


def _argmax(b, scores):
    """The index of the largest score along the last axis (the first of equal ones)."""
    _, index = b(
        ci.TopKOp, scores, b.ints(1), axis=-1, mode="max", sort="none", index_element_type=i64
    )
    return b(ct.SqueezeOp, index, b.ints([-1]))


def _take(b, table, index):
    return b(ct.GatherOp, b.const(table), index, b.ints(0))


# --- preprocessing ------------------------------------------------------------------------------


@lowering(ML + "Scaler")
def scaler(op, b):
    x = _float_input(b, op.operands[0])
    offset = _array(op, "offset", np.float32, [0.0])
    scale = _array(op, "scale", np.float32, [1.0])
    return [b(ew.MultiplyOp, b(ew.SubtractOp, x, b.const(offset)), b.const(scale))]


@lowering(ML + "Normalizer")
def normalizer(op, b):
    x = _as_2d(b, _float_input(b, op.operands[0]))
    norm = _attr(op, "norm", "MAX")
    axes = b.ints([1])
    if norm == "MAX":
        size = b(ct.ReduceMaxOp, x, axes, keep_dims=True)
    elif norm == "L1":
        size = b(ct.ReduceSumOp, b(ew.AbsOp, x), axes, keep_dims=True)
    elif norm == "L2":
        size = b(ew.SqrtOp, b(ct.ReduceSumOp, b(ew.MultiplyOp, x, x), axes, keep_dims=True))
    else:
        raise b.fail(f"unknown norm '{norm}'")
    zero = b(ew.EqualOp, size, b.const(np.float32(0)))
    size = b(ct.SelectOp, zero, b.const(np.float32(1)), size)
    return [b(ew.DivideOp, x, size)]


@lowering(ML + "Binarizer")
def binarizer(op, b):
    x = op.operands[0]
    threshold = b.const(np.asarray(_attr(op, "threshold", 0.0), b.dtype(x)))
    above = b(ew.GreaterOp, x, threshold)
    one, zero = (b.const(np.asarray(v, b.dtype(x))) for v in (1, 0))
    return [b(ct.SelectOp, above, one, zero)]


@lowering(ML + "Imputer")
def imputer(op, b):
    x = op.operands[0]
    floating = np.issubdtype(b.dtype(x), np.floating)
    if floating:
        values = _array(op, "imputed_value_floats", np.float32)
        replaced = float(_attr(op, "replaced_value_float", 0.0))
    else:
        values = _array(op, "imputed_value_int64s", np.int64)
        replaced = int(_attr(op, "replaced_value_int64", 0))
    if values is None:
        raise b.fail("needs imputed values of the input's kind")
    values = values.astype(b.dtype(x))
    if floating and math.isnan(replaced):
        hit = b(ew.IsNaNOp, x)
    else:
        hit = b(ew.EqualOp, x, b.const(np.asarray(replaced, b.dtype(x))))
    return [b(ct.SelectOp, hit, b.const(values), x)]


@lowering(ML + "ArrayFeatureExtractor")
def array_feature_extractor(op, b):
    x, indices = op.operands
    if b.rank(x) == 1:
        x = b(ct.UnsqueezeOp, x, b.ints([0]))
    flat = b(ct.ReshapeOp, indices, b.ints([-1]), special_zero=False)
    return [b(ct.GatherOp, x, flat, b.ints(-1))]


@lowering(ML + "FeatureVectorizer")
def feature_vectorizer(op, b):
    dims = list(_attr(op, "inputdimensions", []))
    if len(dims) != len(op.operands):
        raise b.fail("needs one input dimension per input")
    parts = []
    for x, size in zip(op.operands, dims, strict=True):
        x = _float_input(b, x)
        x = b(ct.ReshapeOp, x, b.ints([0, -1]), special_zero=True) if b.rank(x) != 1 else x
        if b.rank(x) == 1:
            x = b(ct.UnsqueezeOp, x, b.ints([1]))
        width = x.type.get_shape()[1]
        if width < 0:
            raise b.fail("needs static feature widths")
        if width > size:
            x = b(ci.SliceOp, x, b.ints([0]), b.ints([size]), b.ints([1]), b.ints([1]))
        elif width < size:
            x = b(
                ci.PadOp,
                x,
                b.ints([0, 0]),
                b.ints([0, size - width]),
                b.const(np.float32(0)),
                pad_mode="constant",
            )
        parts.append(x)
    return [b(ct.ConcatOp, parts, axis=1)]


@lowering(ML + "OneHotEncoder")
def one_hot_encoder(op, b):
    if _attr(op, "cats_strings"):
        raise b.fail("string categories are not supported (string tensors)")
    cats = _array(op, "cats_int64s", np.int64)
    if cats is None:
        raise b.fail("needs cats_int64s")
    x = op.operands[0]
    if np.issubdtype(b.dtype(x), np.floating):
        x = b(ct.ConvertOp, x, destination_type=i64)
    hit = b(ew.EqualOp, b(ct.UnsqueezeOp, x, b.ints([-1])), b.const(cats))
    return [b(ct.ConvertOp, hit, destination_type=F32)]


@lowering(ML + "LabelEncoder")
def label_encoder(op, b):
    keys = _numeric(op, "keys")
    values = _numeric(op, "values")
    if keys is None or values is None:
        raise b.fail("string keys or values are not supported (string tensors)")
    default = _attr(op, "default_tensor")
    if default is None:
        default = _attr(op, "default_int64" if values.dtype == np.int64 else "default_float")
        default = -1 if default is None and values.dtype == np.int64 else default
        default = -0.0 if default is None else default
    default = np.asarray(default, values.dtype).reshape(())
    x = op.operands[0]
    hit = b(ew.EqualOp, b(ct.UnsqueezeOp, x, b.ints([-1])), b.const(keys.astype(b.dtype(x))))
    found = b(ct.ReduceLogicalOrOp, hit, b.ints([-1]), keep_dims=False)
    index = _argmax(b, b(ct.ConvertOp, hit, destination_type=F32))
    return [b(ct.SelectOp, found, _take(b, values, index), b.const(default))]


def _numeric(op, kind):
    tensor = _attr(op, f"{kind}_tensor")
    if tensor is not None:
        return None if tensor.dtype.kind in "OUS" else np.asarray(tensor).reshape(-1)
    for suffix, dtype in (("int64s", np.int64), ("floats", np.float32)):
        value = _attr(op, f"{kind}_{suffix}")
        if value:
            return np.asarray(value, dtype)
    return None


# --- linear models ------------------------------------------------------------------------------


def _linear(b, op, x, targets):
    x = _as_2d(b, _float_input(b, x))
    width = x.type.get_shape()[1]
    coefficients = _array(op, "coefficients", np.float32)
    if width < 0 or coefficients is None or coefficients.size != targets * width:
        raise b.fail("needs static feature width matching its coefficients")
    weights = coefficients.reshape(targets, width)
    scores = b(nn.MatMulOp, x, b.const(weights), transpose_b=True)
    intercepts = _array(op, "intercepts", np.float32)
    if intercepts is not None and intercepts.size:
        scores = b(ew.AddOp, scores, b.const(intercepts))
    return scores


@lowering(ML + "LinearRegressor")
def linear_regressor(op, b):
    targets = int(_attr(op, "targets", 1))
    return [_post_transform(b, op, _linear(b, op, op.operands[0], targets))]


@lowering(ML + "LinearClassifier")
def linear_classifier(op, b):
    labels = _labels(b, op)
    coefficients = _array(op, "coefficients", np.float32)
    width = op.operands[0].type.get_shape()[-1]
    if width <= 0 or coefficients is None:
        raise b.fail("needs a static feature width")
    classes = coefficients.size // width
    scores = _linear(b, op, op.operands[0], classes)
    if classes == 1:  # binary: one score, the positive class's
        transform = _attr(op, "post_transform", "NONE")
        scores = _post_transform(b, op, scores)
        if transform == "LOGISTIC":
            positive = b(ew.GreaterOp, scores, b.const(np.float32(0.5)))
            other = b(ew.SubtractOp, b.const(np.float32(1)), scores)
        else:
            positive = b(ew.GreaterOp, scores, b.const(np.float32(0)))
            other = b(ew.NegativeOp, scores)
        scores = b(ct.ConcatOp, [other, scores], axis=1)
        index = b(ct.ConvertOp, b(ct.SqueezeOp, positive, b.ints([1])), destination_type=i64)
    else:
        scores = _post_transform(b, op, scores)
        index = _argmax(b, scores)
    return [_take(b, labels, index), scores]


# --- tree ensembles -----------------------------------------------------------------------------

_MODES = {
    "BRANCH_LEQ": 0,
    "BRANCH_LT": 1,
    "BRANCH_GTE": 2,
    "BRANCH_GT": 3,
    "BRANCH_EQ": 4,
    "BRANCH_NEQ": 5,
    "BRANCH_MEMBER": 6,
    "LEAF": 7,
}
_LEAF = 7
_COMPARE = {
    0: ew.LessEqualOp,
    1: ew.LessOp,
    2: ew.GreaterEqualOp,
    3: ew.GreaterOp,
    4: ew.EqualOp,
    5: ew.NotEqualOp,
}


class _Forest:
    """Every tree's nodes in one index space: per node its feature, threshold, mode, next
    node when true / false (a leaf points to itself), whether a missing value goes the true
    way, the set of a BRANCH_MEMBER node, and each leaf's weight per target."""

    def __init__(self, count: int, targets: int):
        self.feature = np.zeros(count, np.int64)
        self.threshold = np.zeros(count, np.float32)
        self.mode = np.full(count, _LEAF, np.int64)
        self.true_next = np.arange(count, dtype=np.int64)
        self.false_next = np.arange(count, dtype=np.int64)
        self.missing_true = np.zeros(count, bool)
        self.weights = np.zeros((count, targets), np.float32)
        self.has_weight = np.zeros((count, targets), bool)
        self.members: dict[int, list[float]] = {}
        self.roots = np.zeros(0, np.int64)

    def depth(self) -> int:
        """Steps from the roots to the deepest leaf (a cycle is an error)."""
        level = self.roots.copy()
        for step in range(len(self.mode) + 1):
            inner = self.mode[level] != _LEAF
            if not inner.any():
                return step
            level = np.concatenate([self.true_next[level[inner]], self.false_next[level[inner]]])
            level = np.unique(level)
        raise ValueError("the trees have a cycle")


def _legacy_forest(b, op, prefix: str, targets: int) -> _Forest:
    """TreeEnsembleClassifier/Regressor's node lists (keyed by tree id and node id)."""
    tree_ids = _array(op, "nodes_treeids", np.int64)
    node_ids = _array(op, "nodes_nodeids", np.int64)
    if tree_ids is None or node_ids is None:
        raise b.fail("needs nodes_treeids and nodes_nodeids")
    index = {(int(t), int(n)): i for i, (t, n) in enumerate(zip(tree_ids, node_ids, strict=True))}
    forest = _Forest(len(index), targets)
    modes = _attr(op, "nodes_modes", [])
    forest.mode[:] = [_MODES.get(m, -1) for m in modes]
    if (forest.mode < 0).any() or (forest.mode == 6).any():
        raise b.fail("unknown node mode")
    forest.feature[:] = _array(op, "nodes_featureids", np.int64)
    forest.threshold[:] = _array(op, "nodes_values", np.float32, np.zeros(len(index)))
    tracks = _array(op, "nodes_missing_value_tracks_true", np.int64)
    if tracks is not None and tracks.size:
        forest.missing_true[:] = tracks != 0
    true_ids = _array(op, "nodes_truenodeids", np.int64)
    false_ids = _array(op, "nodes_falsenodeids", np.int64)
    for i, (t, mode) in enumerate(zip(tree_ids, forest.mode, strict=True)):
        if mode != _LEAF:
            forest.true_next[i] = index[(int(t), int(true_ids[i]))]
            forest.false_next[i] = index[(int(t), int(false_ids[i]))]
    weight_trees = _array(op, f"{prefix}_treeids", np.int64)
    weight_nodes = _array(op, f"{prefix}_nodeids", np.int64)
    weight_targets = _array(op, f"{prefix}_ids", np.int64)
    weights = _array(op, f"{prefix}_weights", np.float32)
    for t, n, k, w in zip(weight_trees, weight_nodes, weight_targets, weights, strict=True):
        forest.weights[index[(int(t), int(n))], k] += w
        forest.has_weight[index[(int(t), int(n))], k] = True
    firsts: dict[int, int] = {}
    for i, t in enumerate(tree_ids):
        firsts.setdefault(int(t), i)
    # a tree's root is its node that no other node of it points to
    pointed = set(forest.true_next[forest.mode != _LEAF]) | set(
        forest.false_next[forest.mode != _LEAF]
    )
    roots = {}
    for i, t in enumerate(tree_ids):
        if i not in pointed:
            roots.setdefault(int(t), i)
    forest.roots = np.asarray([roots.get(t, firsts[t]) for t in sorted(firsts)], np.int64)
    return forest


def _v5_forest(b, op) -> _Forest:
    """opset 5's TreeEnsemble: interior nodes by index, leaves by index in the leaf lists."""
    features = _array(op, "nodes_featureids", np.int64)
    splits = _attr(op, "nodes_splits")
    modes = _attr(op, "nodes_modes")
    leaf_targets = _array(op, "leaf_targetids", np.int64)
    leaf_weights = np.asarray(_attr(op, "leaf_weights"), np.float32).reshape(-1)
    if features is None or splits is None or modes is None or leaf_targets is None:
        raise b.fail("needs nodes_featureids, nodes_splits, nodes_modes and leaf lists")
    inner = len(features)
    forest = _Forest(inner + len(leaf_targets), int(_attr(op, "n_targets", 1)))
    forest.feature[:inner] = features
    forest.threshold[:inner] = np.asarray(splits, np.float32).reshape(-1)
    forest.mode[:inner] = np.asarray(modes).reshape(-1).astype(np.int64)
    tracks = _array(op, "nodes_missing_value_tracks_true", np.int64)
    if tracks is not None and tracks.size:
        forest.missing_true[:inner] = tracks != 0
    for side, ids, leafs in (
        (forest.true_next, "nodes_truenodeids", "nodes_trueleafs"),
        (forest.false_next, "nodes_falsenodeids", "nodes_falseleafs"),
    ):
        target = _array(op, ids, np.int64)
        is_leaf = _array(op, leafs, np.int64)
        side[:inner] = np.where(is_leaf != 0, target + inner, target)
    for i, (k, w) in enumerate(zip(leaf_targets, leaf_weights, strict=True)):
        forest.weights[inner + i, k] = w
        forest.has_weight[inner + i, k] = True
    if (forest.mode[:inner] == 6).any():
        values = np.asarray(_attr(op, "membership_values"), np.float32).reshape(-1)
        sets, current = [], []
        for v in values:
            if np.isnan(v):
                sets.append(current)
                current = []
            else:
                current.append(float(v))
        sets.append(current)
        for node, members in zip(np.nonzero(forest.mode[:inner] == 6)[0], sets, strict=False):
            forest.members[int(node)] = members
    forest.roots = np.asarray(_attr(op, "tree_roots"), np.int64).reshape(-1)
    return forest


def _traverse(b, forest: _Forest, x):
    """The (N, trees) leaf each sample reaches in each tree."""
    x = _as_2d(b, _float_input(b, x))
    trees = len(forest.roots)
    batch = b(ct.GatherOp, b(ct.ShapeOfOp, x), b.ints([0]), b.ints(0))
    node = b(
        ct.BroadcastOp,
        b.const(forest.roots.reshape(1, trees)),
        b(ct.ConcatOp, [batch, b.ints([trees])], axis=0),
    )
    present = sorted(set(forest.mode.tolist()) - {_LEAF})
    member_table = None
    if forest.members:
        width = max(len(m) for m in forest.members.values()) or 1
        member_table = np.full((len(forest.mode), width), np.nan, np.float32)
        for i, members in forest.members.items():
            member_table[i, : len(members)] = members
    any_missing = bool(forest.missing_true.any())
    try:
        depth = forest.depth()
    except ValueError as error:
        raise b.fail(str(error)) from None
    for _ in range(depth):
        value = b(ci.GatherElementsOp, x, _take(b, forest.feature, node), axis=1)
        go_true = None
        mode = _take(b, forest.mode, node) if len(present) > 1 else None
        for code in present:
            if code == 6:
                sets = _take(b, member_table, node)
                hit = b(ew.EqualOp, b(ct.UnsqueezeOp, value, b.ints([-1])), sets)
                test = b(ct.ReduceLogicalOrOp, hit, b.ints([-1]), keep_dims=False)
            else:
                test = b(_COMPARE[code], value, _take(b, forest.threshold, node))
            if mode is not None:
                test = b(ew.LogicalAndOp, test, b(ew.EqualOp, mode, b.ints(code)))
            go_true = test if go_true is None else b(ew.LogicalOrOp, go_true, test)
        if any_missing:
            missing = b(ew.LogicalAndOp, b(ew.IsNaNOp, value), _take(b, forest.missing_true, node))
            go_true = b(ew.LogicalOrOp, go_true, missing)
        node = b(
            ct.SelectOp,
            go_true,
            _take(b, forest.true_next, node),
            _take(b, forest.false_next, node),
        )
    return node


def _aggregate(b, forest: _Forest, leaves, function: str, base):
    """(N, targets) from each tree's leaf weights: SUM, AVERAGE, MIN or MAX, plus the base."""
    weights = forest.weights
    if function in ("MIN", "MAX"):
        fill = np.float32(np.inf if function == "MIN" else -np.inf)
        weights = np.where(forest.has_weight, weights, fill)
    gathered = _take(b, weights, leaves)  # (N, trees, targets)
    axes = b.ints([1])
    if function == "SUM":
        scores = b(ct.ReduceSumOp, gathered, axes, keep_dims=False)
    elif function == "AVERAGE":
        total = b(ct.ReduceSumOp, gathered, axes, keep_dims=False)
        scores = b(ew.DivideOp, total, b.const(np.float32(len(forest.roots))))
    elif function in ("MIN", "MAX"):
        reduce = ct.ReduceMinOp if function == "MIN" else ct.ReduceMaxOp
        scores = b(reduce, gathered, axes, keep_dims=False)
        finite = b(ew.IsFiniteOp, scores)
        scores = b(ct.SelectOp, finite, scores, b.const(np.float32(0)))
    else:
        raise b.fail(f"unknown aggregate_function '{function}'")
    if base is not None and base.size:
        scores = b(ew.AddOp, scores, b.const(base.astype(np.float32)))
    return scores


@lowering(ML + "TreeEnsembleRegressor")
def tree_ensemble_regressor(op, b):
    targets = int(_attr(op, "n_targets", 1))
    forest = _legacy_forest(b, op, "target", targets)
    leaves = _traverse(b, forest, op.operands[0])
    base = _array(op, "base_values", np.float32)
    scores = _aggregate(b, forest, leaves, _attr(op, "aggregate_function", "SUM"), base)
    return [_post_transform(b, op, scores)]


@lowering(ML + "TreeEnsemble")
def tree_ensemble(op, b):
    forest = _v5_forest(b, op)
    leaves = _traverse(b, forest, op.operands[0])
    function = {0: "AVERAGE", 1: "SUM", 2: "MIN", 3: "MAX"}.get(
        int(_attr(op, "aggregate_function", 1))
    )
    if function is None:
        raise b.fail("unknown aggregate_function")
    scores = _aggregate(b, forest, leaves, function, None)
    transform = int(_attr(op, "post_transform", 0))
    names = {0: "NONE", 1: "SOFTMAX", 2: "LOGISTIC", 3: "SOFTMAX_ZERO", 4: "PROBIT"}
    if transform:
        scores = _named_transform(b, names.get(transform, "?"), scores)
    element = b.dtype(op.operands[0])
    if element != np.float32:
        scores = b(ct.ConvertOp, scores, destination_type=op.results[0].type.get_element_type())
    return [scores]


def _named_transform(b, name, scores):
    class _Op:
        @staticmethod
        def onnx_attr(attr):
            return name

    return _post_transform(b, _Op, scores)


@lowering(ML + "TreeEnsembleClassifier")
def tree_ensemble_classifier(op, b):
    labels = _labels(b, op)
    classes = len(labels)
    forest = _legacy_forest(b, op, "class", classes)
    leaves = _traverse(b, forest, op.operands[0])
    base = _array(op, "base_values", np.float32)
    positive_weights = bool((forest.weights >= 0).all())
    if classes == 2 and not forest.has_weight[:, 1].any():
        return _binary_one_score(b, op, forest, leaves, base, labels, positive_weights)
    scores = _aggregate(b, forest, leaves, "SUM", base)
    scores = _post_transform(b, op, scores)
    if classes == 2:
        threshold = np.float32(0.5 if positive_weights else 0.0)
        column = b(ci.SliceOp, scores, b.ints([1]), b.ints([2]), b.ints([1]), b.ints([1]))
        column = b(ct.SqueezeOp, column, b.ints([1]))
        index = b(ct.ConvertOp, b(ew.GreaterOp, column, b.const(threshold)), destination_type=i64)
    else:
        index = _argmax(b, scores)
    return [_take(b, labels, index), scores]


def _binary_one_score(b, op, forest, leaves, base, labels, positive_weights):
    """Two classes, weights for the first only (skl2onnx's binary forests and boosting): the
    one score is the positive class's, as onnxruntime reads it; the other class gets 1 - p
    (LOGISTIC or positive weights) or -score."""
    forest.weights = forest.weights[:, :1]
    forest.has_weight = forest.has_weight[:, :1]
    score = _aggregate(b, forest, leaves, "SUM", None if base is None else base[:1])
    transform = _attr(op, "post_transform", "NONE")
    if transform not in ("NONE", "LOGISTIC"):
        raise b.fail(f"post_transform {transform} of a one-score binary classifier")
    if transform == "LOGISTIC":
        score = b(ew.SigmoidOp, score)
    complement = transform == "LOGISTIC" or positive_weights
    threshold = np.float32(0.5 if complement else 0.0)
    if complement:
        other = b(ew.SubtractOp, b.const(np.float32(1)), score)
    else:
        other = b(ew.NegativeOp, score)
    scores = b(ct.ConcatOp, [other, score], axis=1)
    positive = b(ew.GreaterOp, b(ct.SqueezeOp, score, b.ints([1])), b.const(threshold))
    index = b(ct.ConvertOp, positive, destination_type=i64)
    return [_take(b, labels, index), scores]


# --- support vector machines --------------------------------------------------------------------


def _kernel(b, op, x, vectors):
    """(N, S) kernel values of the samples against the support vectors."""
    kind = _attr(op, "kernel_type", "LINEAR")
    params = list(_attr(op, "kernel_params", [])) + [0.0, 0.0, 0.0]
    gamma, coef0, degree = (np.float32(v) for v in params[:3])
    if kind == "RBF":
        squares = b(ct.ReduceSumOp, b(ew.MultiplyOp, x, x), b.ints([1]), keep_dims=True)
        cross = b(nn.MatMulOp, x, b.const(vectors), transpose_b=True)
        norms = b.const((vectors * vectors).sum(axis=1).astype(np.float32))
        distance = b(ew.AddOp, b(ew.SubtractOp, squares, b(ew.AddOp, cross, cross)), norms)
        distance = b(ew.MaximumOp, distance, b.const(np.float32(0)))
        return b(ew.ExpOp, b(ew.MultiplyOp, distance, b.const(-gamma)))
    dot = b(nn.MatMulOp, x, b.const(vectors), transpose_b=True)
    if kind == "LINEAR":
        return dot
    scaled = b(ew.AddOp, b(ew.MultiplyOp, dot, b.const(gamma)), b.const(coef0))
    if kind == "POLY":
        return b(ew.PowerOp, scaled, b.const(degree))
    if kind == "SIGMOID":
        return b(ew.TanhOp, scaled)
    raise b.fail(f"unknown kernel_type '{kind}'")


def _support_vectors(b, op, x, count):
    vectors = _array(op, "support_vectors", np.float32)
    width = x.type.get_shape()[1]
    if vectors is None or width < 0 or count <= 0 or vectors.size != count * width:
        raise b.fail("needs support vectors matching a static feature width")
    return vectors.reshape(count, width)


@lowering(ML + "SVMRegressor")
def svm_regressor(op, b):
    x = _as_2d(b, _float_input(b, op.operands[0]))
    count = int(_attr(op, "n_supports", 0))
    coefficients = _array(op, "coefficients", np.float32)
    rho = _array(op, "rho", np.float32, [0.0])
    if count == 0:  # linear: the coefficients are the one weight vector
        score = b(nn.MatMulOp, x, b.const(coefficients.reshape(-1, 1)))
    else:
        kernel = _kernel(b, op, x, _support_vectors(b, op, x, count))
        score = b(nn.MatMulOp, kernel, b.const(coefficients.reshape(-1, 1)))
    score = b(ew.AddOp, score, b.const(rho[:1]))
    if int(_attr(op, "one_class", 0)):
        positive = b(ew.GreaterOp, score, b.const(np.float32(0)))
        score = b(ct.SelectOp, positive, b.const(np.float32(1)), b.const(np.float32(-1)))
    return [_post_transform(b, op, score)]


@lowering(ML + "SVMClassifier")
def svm_classifier(op, b):
    labels = _labels(b, op)
    per_class = _array(op, "vectors_per_class", np.int64)
    if per_class is None or not per_class.size:
        raise b.fail("linear SVMClassifier (no support vectors) is not supported")
    classes = len(per_class)
    if classes != len(labels) or classes < 2:
        raise b.fail("needs one vectors_per_class entry per class label")
    x = _as_2d(b, _float_input(b, op.operands[0]))
    count = int(per_class.sum())
    kernel = _kernel(b, op, x, _support_vectors(b, op, x, count))
    coefficients = _array(op, "coefficients", np.float32).reshape(-1, count)
    starts = np.concatenate([[0], np.cumsum(per_class)[:-1]])
    pairs = [(i, j) for i in range(classes) for j in range(i + 1, classes)]
    dual = np.zeros((len(pairs), count), np.float32)
    winner = np.zeros((len(pairs), classes), np.float32)
    loser = np.zeros((len(pairs), classes), np.float32)
    for p, (i, j) in enumerate(pairs):
        si, sj = starts[i], starts[j]
        dual[p, si : si + per_class[i]] = coefficients[j - 1, si : si + per_class[i]]
        dual[p, sj : sj + per_class[j]] = coefficients[i, sj : sj + per_class[j]]
        winner[p, i] = loser[p, j] = 1
    rho = _array(op, "rho", np.float32)
    decision = b(nn.MatMulOp, kernel, b.const(dual), transpose_b=True)
    decision = b(ew.AddOp, decision, b.const(rho))  # (N, pairs): > 0 votes for i
    wins = b(ct.ConvertOp, b(ew.GreaterOp, decision, b.const(np.float32(0))), destination_type=F32)
    votes = b(
        ew.AddOp,
        b(nn.MatMulOp, wins, b.const(winner)),
        b(nn.MatMulOp, b(ew.SubtractOp, b.const(np.float32(1)), wins), b.const(loser)),
    )
    label = _take(b, labels, _argmax(b, votes))
    prob_a = _array(op, "prob_a", np.float32)
    if prob_a is None or not prob_a.size:
        scores = decision
        if len(pairs) == 1:
            scores = b(ct.ConcatOp, [b(ew.NegativeOp, decision), decision], axis=1)
        return [label, _post_transform(b, op, scores)]
    prob_b = _array(op, "prob_b", np.float32)
    # Platt: P(i | i or j) = 1 - sigmoid(decision * A + B), within [1e-7, 1 - 1e-7]
    platt = b(ew.AddOp, b(ew.MultiplyOp, decision, b.const(prob_a)), b.const(prob_b))
    pairwise = b(ew.SubtractOp, b.const(np.float32(1)), b(ew.SigmoidOp, platt))
    pairwise = b(ew.ClampOp, pairwise, min=1e-7, max=1 - 1e-7)
    upper = np.zeros((len(pairs), classes * classes), np.float32)
    lower = np.zeros((len(pairs), classes * classes), np.float32)
    for p, (i, j) in enumerate(pairs):
        upper[p, i * classes + j] = 1
        lower[p, j * classes + i] = 1
    matrix = b(
        ew.AddOp,
        b(nn.MatMulOp, pairwise, b.const(upper)),
        b(nn.MatMulOp, b(ew.SubtractOp, b.const(np.float32(1)), pairwise), b.const(lower)),
    )
    matrix = b(ct.ReshapeOp, matrix, b.ints([0, classes, classes]), special_zero=True)
    probabilities = b(ml.PairwiseCouplingOp, matrix)
    return [label, _post_transform(b, op, probabilities)]
