"""Per-layer errors as Model Explorer node data: each node coloured by its error.

The rows are `mlconv.verify.compare_source`'s (`name`, `location`, `max_abs`, `max_rel`,
`diverged`; dicts with those keys work too). A layer row colours every node whose location is
the row's source node (all the ops that node lowered to); an output row (`kind == "output"`)
the node producing the tensor of that name. The colour follows the relative error
(`ERROR_COLOURS`); a row that diverged is red whatever its value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from model_explorer import graph_builder as gb
from model_explorer import node_data_builder as ndb

ERROR_COLOURS = (
    (1e-6, "#a5d6a7"),  # green: equal up to float rounding
    (1e-4, "#dcedc8"),  # light green
    (1e-3, "#fff59d"),  # yellow
    (1e-2, "#ffcc80"),  # orange
    (1e300, "#ef9a9a"),  # red
)
"""(upper bound of the relative error, background colour), in increasing order."""
DIVERGED_COLOUR = "#e57373"
CONSTANT_LABELS = ("constant", "const")
LARGEST = 1e300
"""Non-finite errors (NaN, inf) are shown as this value: node data is JSON, which has neither."""


def _field(row: Any, name: str, default: Any = None) -> Any:
    if isinstance(row, Mapping):
        return row.get(name, default)
    return getattr(row, name, default)


def _finite(value: Any) -> float:
    value = float(value)
    return value if math.isfinite(value) else LARGEST


def colour_of(max_rel: float) -> str:
    """The background colour for a relative error (ERROR_COLOURS)."""
    return next(colour for bound, colour in ERROR_COLOURS if max_rel <= bound)


def node_index(graphs: Iterable[gb.Graph]) -> tuple[dict, dict]:
    """(location -> [(graph id, node id)], tensor name -> [(graph id, node id)])."""
    by_location: dict[str, list[tuple[str, str]]] = {}
    by_tensor: dict[str, list[tuple[str, str]]] = {}
    for graph in graphs:
        for node in graph.nodes:
            if node.label.lower() in CONSTANT_LABELS:  # weights are not the layer's value
                continue
            for attr in node.attrs:
                if attr.key == "location":
                    by_location.setdefault(attr.value, []).append((graph.id, node.id))
            for output in node.outputsMetadata:
                for attr in output.attrs:
                    if attr.key == "tensor_name":
                        by_tensor.setdefault(attr.value, []).append((graph.id, node.id))
    return by_location, by_tensor


def error_node_data(
    graphs: list[gb.Graph], rows: Iterable[Any], metric: str = "max_rel", against: str = ""
) -> ndb.ModelNodeData:
    """Node data giving each node matched by a row the row's `metric` (max_rel or max_abs),
    coloured by the row's relative error; nodes no row names carry no value (nor do constants).
    `against` names the reference in the overlay's title."""
    by_location, by_tensor = node_index(graphs)
    results: dict[str, dict[str, ndb.NodeDataResult]] = {graph.id: {} for graph in graphs}
    for row in rows:
        nodes = None
        if _field(row, "kind") == "output":
            nodes = by_tensor.get(_field(row, "name"))
        nodes = nodes or by_location.get(_field(row, "location"))
        if not nodes:
            continue
        max_rel = _finite(_field(row, "max_rel", 0.0))
        colour = DIVERGED_COLOUR if _field(row, "diverged", False) else colour_of(max_rel)
        value = _finite(_field(row, metric, 0.0))
        for graph_id, node_id in nodes:
            results[graph_id][node_id] = ndb.NodeDataResult(value=value, bgColor=colour)
    thresholds = [ndb.ThresholdItem(value=bound, bgColor=colour) for bound, colour in ERROR_COLOURS]
    name = metric.replace("_", " ") + " error" + (f" vs {against}" if against else "")
    return ndb.ModelNodeData(
        graphsData={
            graph_id: ndb.GraphNodeData(
                results=values, name=name, thresholds=thresholds if metric == "max_rel" else []
            )
            for graph_id, values in results.items()
            if values
        }
    )


def matched_nodes(node_data: ndb.ModelNodeData) -> int:
    """How many nodes the node data gives a value (over all graphs)."""
    return sum(len(data.results) for data in node_data.graphsData.values())
