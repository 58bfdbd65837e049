#!/usr/bin/env bash
# Mutation score per product module (issue 31), with cosmic-ray.
#
#   bench/mutation.sh [MODULE ...]        # default: every module in the table below
#   SAMPLE=20 BUDGET=600 TIMEOUT=120 bench/mutation.sh batcher check_numerics
#   TESTS_FROM=<commit> bench/mutation.sh batcher   # the same mutants against older tests
#   AT=<commit> ...                                  # mutate that commit instead of HEAD (files
#                                                    # moved since TESTS_FROM: pick AT before the move)
#   PYTEST_ARGS="-k expr" bench/mutation.sh batcher  # extra pytest arguments (a subset of tests)
#   RECHECK=1 bench/mutation.sh batcher  # the last run's survivors ($OUT/<module>.sqlite) again,
#                                        # against the tests of HEAD: the "after" of one sample
#
# cosmic-ray mutates the module's file on disk and runs a test command per mutant, so it works
# with mlconv's layout (the repository root is the package `mlconv`): everything runs in a
# scratch copy of HEAD (git worktree, detached) reached through PYTHONPATH=<dir>/mlconv -> copy,
# never in your checkout. Per module: `cosmic-ray init`, then a random SAMPLE of its mutants
# (seeded by SEED; the rest marked skipped in the session) run within BUDGET seconds in all and
# TIMEOUT seconds each; the score is killed / (killed + survived) of the mutants that ran, from
# the session's own results (`cr-report` is printed too). Surviving mutants' diffs are written
# to $OUT/<module>.survivors.txt for review. Survivors listed in bench/mutation-equivalent.tsv
# (module, the line before, the line after, why no test can tell them apart) are equivalent
# mutants: the score of non-equivalent mutants leaves them out. The session is kept as
# $OUT/<module>.sqlite; RECHECK=1 reruns its survivors only (a mutant killed before is killed by
# the same tests after, as long as no test was removed), so before and after are one sample.
# A module's lit tests (4th column below) run after its pytest tests; the tests run once on the
# unmutated code first (BASELINE=0 skips that); mutants inside annotations of a module with
# `from __future__ import annotations` are left out of the sample (equivalent by construction).
set -euo pipefail
ROOT=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
PY=${PY:-python}
SAMPLE=${SAMPLE:-12}
SEED=${SEED:-31}
BUDGET=${BUDGET:-600}
TIMEOUT=${TIMEOUT:-120}
OUT=${OUT:-$ROOT/bench/mutation-out}
PYTEST="$PY -m pytest -q -x -p no:cacheprovider ${PYTEST_ARGS:-}"

# module name | file (relative to the root) | tests that cover it
declare -A FILE TESTS LIT
add() { FILE[$1]=$2; TESTS[$1]=$3; LIT[$1]=${4:-}; }  # 4th: lit tests run after pytest
add batcher          converter/batcher.py                   "test/pytest/test_batching.py test/pytest/test_mlconv_convert.py::test_batching_needs_functions_converted_for_one_row"
add serving          converter/serving.py                   "test/pytest/test_serving_limits.py test/pytest/test_open_inference.py"
add http_request     backends/http_request.py               "test/pytest/test_fuzz_readers.py::test_http_request_parser test/pytest/test_open_inference.py test/pytest/test_serving_limits.py"
add open_inference   backends/open_inference.py             "test/pytest/test_open_inference.py"
add artifact         converter/artifact.py                  "test/pytest/test_artifact_trust.py -k \"not tensorflow_host_part\""
add sharding         converter/sharding.py                  "test/pytest/test_sharding.py"
add openvino_ir      backends/openvino_ir.py               "test/pytest/test_openvino_ir.py test/pytest/test_openvino_ir_trust.py"
add openvino_layers  backends/openvino_layers.py           "test/pytest/test_openvino_ir.py test/pytest/test_openvino_oracle.py"
add core_quantize    passes/core_quantize.py               "test/pytest/test_quantization.py"
add tpu_quantize     passes/tpu_quantize.py                "test/pytest/test_quantization.py -k \"tpu_quantize or runs_in_openvino\"" test/filecheck/passes/tpu-quantize
add core_fusions     passes/core_fusions                   "test/pytest/test_core_fusions.py -k \"small_variances or lit_case\"" test/filecheck/passes/core-fuse
add check_numerics   interpreters/check_numerics.py               "test/pytest/test_check_numerics.py"
add compare_source   verify/compare_source.py               "test/pytest/test_compare_source.py"
# the options' parsing and checks (the conversions of test_mlconv_convert.py and the 15 s
# filterlist conversion left out: seconds per mutant on a shared 2-core machine)
add converter_options converter/options.py           "test/pytest/test_options_trust.py test/pytest/test_mlconv_convert.py -k \"not filterlist_naming_no_op and not end_to_end and not write_nothing and (options or seed_example_parses or schema_numbers or field_path or default_states or one_line or utf8)\""
MODULES=("$@")
[ ${#MODULES[@]} -eq 0 ] && MODULES=(batcher serving http_request open_inference artifact sharding openvino_ir openvino_layers core_quantize tpu_quantize core_fusions check_numerics compare_source converter_options)

SCRATCH=$(mktemp -d /tmp/mlconv-mutation.XXXXXX)
git -C "$ROOT" worktree add -q --detach "$SCRATCH/mlconv" "${AT:-HEAD}"
trap 'git -C "$ROOT" worktree remove --force "$SCRATCH/mlconv"; rm -rf "$SCRATCH"' EXIT
if [ -n "${TESTS_FROM:-}" ]; then  # older tests, same product code
  git -C "$SCRATCH/mlconv" checkout -q "$TESTS_FROM" -- test/pytest
fi
export PYTHONPATH=$SCRATCH
mkdir -p "$OUT"
cd "$SCRATCH/mlconv"

for m in "${MODULES[@]}"; do
  f=${MODULE_FILE:-${FILE[$m]:?unknown module $m}}  # MODULE_FILE: the path at AT, if moved since
  [ -e "$f" ] || { echo "$m: $f not found (moved?)"; continue; }
  cfg=$SCRATCH/$m.toml db=$OUT/$m.sqlite
  # the test command as a script: pytest, then the module's lit tests (lit pins pass rewrites)
  printf '%s\n' "set -e" "$PYTEST ${TESTS[$m]}" "${LIT[$m]:+lit -q ${LIT[$m]}}" > "$SCRATCH/$m.sh"
  cat > "$cfg" <<TOML
[cosmic-ray]
module-path = "$f"
timeout = $TIMEOUT
excluded-modules = []
test-command = "bash $SCRATCH/$m.sh"
[cosmic-ray.distributor]
name = "local"
TOML
  if [ -n "${RECHECK:-}" ]; then
    [ -f "$db" ] || { echo "$m: no $db to recheck"; continue; }
    $PY - "$db" <<'PYEOF'
import sqlite3, sys
with sqlite3.connect(sys.argv[1]) as db:  # survivors become pending: run again
    n = db.execute("delete from work_results where test_outcome = 'SURVIVED'").rowcount
print(f"rechecking {n} survivors")
PYEOF
  else
  rm -f "$db"
  cosmic-ray init "$cfg" "$db" >/dev/null
  # keep a seeded random sample of the mutants; the others are marked skipped
  $PY - "$db" "$SAMPLE" "$SEED" <<'PYEOF'
import ast, random, sys
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkResult, WorkerOutcome
db_path, sample, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with use_db(db_path, WorkDB.Mode.open) as db:
    # job ids are random: order by the mutation itself, so the same SEED samples the same
    # mutants in another session (TESTS_FROM) and across a move of the file
    items = sorted(
        db.work_items,
        key=lambda i: [
            (str(m.module_path), m.operator_name, m.occurrence, tuple(m.start_pos))
            for m in i.mutations
        ],
    )
    # a mutant inside an annotation of a module with `from __future__ import annotations` is
    # equivalent by construction (annotations are never evaluated): left out of the sample
    spans = {}
    for path in {m.module_path for i in items for m in i.mutations}:
        tree = ast.parse(open(path).read())
        future = any(
            isinstance(n, ast.ImportFrom) and n.module == "__future__"
            and any(a.name == "annotations" for a in n.names) for n in tree.body
        )
        notes = [
            n.annotation if isinstance(n, (ast.arg, ast.AnnAssign)) else n.returns
            for n in ast.walk(tree)
            if isinstance(n, (ast.arg, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        spans[path] = [
            ((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset))
            for a in notes if future and a is not None
        ]

    def annotation(item):
        return all(
            any(lo <= tuple(m.start_pos) and tuple(m.end_pos) <= hi for lo, hi in spans[m.module_path])
            for m in item.mutations
        )

    candidates = [i for i in items if not annotation(i)]
    keep = {i.job_id for i in random.Random(seed).sample(candidates, min(sample, len(candidates)))}
    for item in items:
        if item.job_id not in keep:
            db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    print(f"{len(items)} mutants, {len(items) - len(candidates)} in annotations (equivalent), "
          f"{len(keep)} sampled")
PYEOF
  fi
  start=$(date +%s)
  # the tests must pass on the unmutated code, or every mutant would count as killed
  if [ "${BASELINE:-1}" != 0 ] && ! timeout "$TIMEOUT" bash "$SCRATCH/$m.sh" >"$OUT/$m.baseline.txt" 2>&1; then
    echo "$m: the tests fail without a mutation ($OUT/$m.baseline.txt): not measured"; continue
  fi
  timeout "$BUDGET" cosmic-ray exec "$cfg" "$db" >/dev/null 2>&1 || true
  git checkout -q -- "$f"  # a mutant cut off by the budget leaves its mutation on disk
  $PY - "$db" "$m" "$(( $(date +%s) - start ))" "$OUT" "$ROOT/bench/mutation-equivalent.tsv" <<'PYEOF'
import sys
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome
db_path, name, seconds, out, listed = sys.argv[1:6]
equivalent = set()
for line in open(listed):
    if line.strip() and not line.startswith("#"):
        module, before, after, _why = line.rstrip("\n").split("\t")
        equivalent.add((module, before.strip(), after.strip()))


def changed(diff):
    lines = diff.splitlines()
    minus = [x[1:].strip() for x in lines if x.startswith("-") and not x.startswith("---")]
    plus = [x[1:].strip() for x in lines if x.startswith("+") and not x.startswith("+++")]
    return " ".join(minus), " ".join(plus)


killed = survived = other = same = 0
survivors = []
with use_db(db_path, WorkDB.Mode.open) as db:
    total = db.num_work_items
    for job_id, result in db.results:
        if result.worker_outcome == WorkerOutcome.SKIPPED:
            continue
        if result.test_outcome == TestOutcome.KILLED:
            killed += 1
        elif result.test_outcome == TestOutcome.SURVIVED:
            survived += 1
            is_same = (name, *changed(result.diff)) in equivalent
            same += is_same
            tag = "equivalent (listed)" if is_same else "SURVIVED"
            survivors.append(f"--- job {job_id}: {tag}\n{result.diff}")
        else:
            other += 1
    pending = sum(1 for _ in db.pending_work_items)
ran = killed + survived
score = f"{100 * killed / ran:.0f}%" if ran else "n/a"
real = ran - same
real_score = f"{100 * killed / real:.0f}%" if real else "n/a"
print(f"{name}: score {score} ({killed} killed, {survived} survived of {ran} run; "
      f"{other} incompetent/timeout, {pending} of the sample not reached; {total} mutants in all; {seconds} s); "
      f"of non-equivalent mutants {real_score} ({killed}/{real}; {same} survivors listed equivalent)")
open(f"{out}/{name}.survivors.txt", "w").write("\n".join(survivors))
PYEOF
done
