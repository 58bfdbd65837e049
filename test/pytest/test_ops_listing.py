"""docs/ops.md, the listing of every core and tpu op (tools/gen_ops_listing.py), is current and
points at each op's declaration."""

from __future__ import annotations

import re

import jax

from mlconv.tools import gen_ops_listing

ROW = re.compile(r"^\| `(?P<op>[\w.]+)` \| `(?P<cls>\w+)` \| (?P<path>[\w/.]+):(?P<line>\d+) \|")


def _section(text: str, name: str) -> str:
    return text.split(f"## {name} ", 1)[1].split("\n## ", 1)[0]


def test_listing_is_current():
    """Fails when an op was added, moved or renamed without regenerating the listing:
    run `python -m mlconv.tools.gen_ops_listing`."""
    checked_in = gen_ops_listing.LISTING.read_text(encoding="utf-8")
    generated = gen_ops_listing.generate()
    message = "docs/ops.md is stale: run python -m mlconv.tools.gen_ops_listing"
    assert _section(checked_in, "core") == _section(generated, "core"), message
    if f"jax {jax.__version__})" in checked_in:  # the tpu ops follow the installed jax
        assert checked_in == generated, message


def test_every_row_points_at_its_declaration():
    table = [line for line in gen_ops_listing.generate().splitlines() if line.startswith("| `")]
    rows = [m for m in map(ROW.match, table) if m]
    assert len(rows) == len(table) > 250
    names = {m["op"] for m in rows}
    assert {"core.Convolution", "core.Relu", "core.Custom", "tpu.region", "tpu.add"} <= names
    for match in rows:
        lines = (gen_ops_listing.ROOT / match["path"]).read_text(encoding="utf-8").splitlines()
        text = lines[int(match["line"]) - 1]
        short = match["op"].split(".", 1)[1]
        assert (
            f"class {match['cls']}" in text
            or f'"{short}"' in text
            or "def _make_primitive_op" in text
        ), (match["op"], match["path"], match["line"], text)
