"""The house conventions of ../shared/STYLE.md, checked over the whole code base.

A registry entry whose module does not import (not written yet, or broken) fails here: the
registries must only name what exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mlconv.dialects import DIALECTS
from mlconv.passes import PASSES, PIPELINES

ROOT = Path(__file__).resolve().parents[2]
FILECHECK = ROOT / "test" / "filecheck"
ALL_PASSES = {**PASSES, **PIPELINES}


def _load_pass(name: str):
    try:
        return ALL_PASSES[name]()
    except Exception as error:  # noqa: BLE001 - reported as the failure
        pytest.fail(f"pass '{name}' is registered but cannot be loaded: {error!r}")


def _load_dialect(name: str):
    try:
        return DIALECTS[name]()
    except Exception as error:  # noqa: BLE001 - reported as the failure
        pytest.fail(f"dialect '{name}' is registered but cannot be loaded: {error!r}")


# --------------------------------------------------------------------------- registries


@pytest.mark.parametrize("name", sorted(ALL_PASSES))
def test_pass_registry_key_is_pass_name(name: str) -> None:
    assert _load_pass(name).name == name


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_dialect_registry_key_is_dialect_name(name: str) -> None:
    assert _load_dialect(name).name == name


# --------------------------------------------------------------------------- op classes


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_op_classes_end_in_op_and_have_docstrings(name: str) -> None:
    dialect = _load_dialect(name)
    operations = list(dialect.operations)
    badly_named = [op.__name__ for op in operations if not op.__name__.endswith("Op")]
    undocumented = [
        op.__name__ for op in operations if not (op.__dict__.get("__doc__") or "").strip()
    ]
    assert not badly_named, f"op classes of '{name}' not ending in Op: {badly_named[:20]}"
    assert not undocumented, f"op classes of '{name}' without a docstring: {undocumented[:20]}"


# --------------------------------------------------------------------------- lit tests


def _is_ours(pass_class: type) -> bool:
    return pass_class.__module__.startswith("mlconv.passes")


@pytest.mark.parametrize("name", sorted(ALL_PASSES))
def test_every_pass_has_a_lit_test(name: str) -> None:
    pass_class = _load_pass(name)
    if not _is_ours(pass_class):
        return  # upstream xDSL passes are tested upstream
    file = FILECHECK / "passes" / f"{name}.mlir"
    folder = FILECHECK / "passes" / name
    has_folder = folder.is_dir() and any(folder.rglob("*.mlir"))
    assert file.is_file() or has_folder, f"pass '{name}' has no lit test {file} or {folder}/"


_SUFFIXES = r"(?:-(?:NEXT|LABEL|SAME|NOT|DAG|EMPTY|COUNT-\d+))?"
_PREFIX_OPTION = re.compile(r"--check-prefix(?:es)?[= ]([A-Za-z0-9_,-]+)")


def _check_prefixes(text: str) -> set[str]:
    """CHECK plus every prefix a RUN line of the file names with --check-prefix(es)."""
    prefixes = {"CHECK"}
    for match in _PREFIX_OPTION.finditer(text):
        prefixes.update(p for p in match[1].split(",") if p)
    return prefixes


def missing_colons(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each FileCheck directive written without its colon."""
    prefixes = "|".join(re.escape(p) for p in sorted(_check_prefixes(text), key=len, reverse=True))
    directive = re.compile(rf"^\s*//\s*(?:{prefixes}){_SUFFIXES}(?![\w-])(?!:)")
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if directive.match(line)
    ]


def test_missing_colon_detector() -> None:
    text = "// RUN: x | filecheck %s --check-prefix=FOO\n"
    bad = "// CHECK foo\n// CHECK-NEXT bar\n// CHECK-LABEL @f\n// FOO-SAME x\n// CHECK-DAG y\n"
    good = "// CHECK: a\n// CHECK-NOT: b\n// FOO-LABEL: c\n// CHECKS that\n// Checks x\n"
    assert [n for n, _ in missing_colons(text + bad + good)] == [2, 3, 4, 5, 6]


def _lit_files() -> list[Path]:
    return sorted(p for p in FILECHECK.rglob("*.mlir") if "Output" not in p.parts)


@pytest.mark.parametrize("path", _lit_files(), ids=lambda p: str(p.relative_to(FILECHECK)))
def test_no_check_directive_without_colon(path: Path) -> None:
    bad = missing_colons(path.read_text(encoding="utf-8"))
    assert not bad, "directives without their colon (silently ignored by FileCheck):\n" + "\n".join(
        f"  {path.name}:{n}: {line}" for n, line in bad
    )


# --------------------------------------------------------------------------- verifier messages


def _fixed_prefix(node: ast.expr) -> str | None:
    """The literal text a message starts with: a str constant, or an f-string's leading text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                text += part.value
            else:
                break
        return text
    return None


def verify_messages(source: str) -> list[str]:
    """The fixed prefix of each `raise VerifyException("...")` message in a module's source."""
    messages: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        function = node.exc.func
        called = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
        if called != "VerifyException" or not node.exc.args:
            continue
        prefix = _fixed_prefix(node.exc.args[0])
        if prefix is not None:
            messages.append(prefix)
    return messages


def _dialect_sources(name: str) -> list[Path]:
    folder = ROOT / "dialects"
    return sorted([*folder.glob(f"{name}.py"), *folder.glob(f"{name}_*.py")])


def _invalid_tests(name: str) -> list[Path]:
    folder = FILECHECK / "dialects"
    candidates = [folder / name / "invalid.mlir", folder / f"{name}-invalid.mlir"]
    candidates += sorted((folder / name).glob("invalid*.mlir")) if (folder / name).is_dir() else []
    return [p for p in dict.fromkeys(candidates) if p.is_file()]


def _normalize(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_every_verifier_message_has_an_invalid_case(name: str) -> None:
    messages = {
        _normalize(m)
        for source in _dialect_sources(name)
        for m in verify_messages(source.read_text(encoding="utf-8"))
    }
    # A prefix shorter than this says too little to look for ("expected ", "").
    messages = {m for m in messages if len(m.strip()) >= 8}
    if not messages:
        return
    tests = _invalid_tests(name)
    assert tests, f"dialect '{name}' raises VerifyException but has no dialects/{name}/invalid.mlir"
    text = _normalize(" ".join(t.read_text(encoding="utf-8") for t in tests))
    missing = sorted(m for m in messages if m.strip() not in text)
    assert not missing, (
        f"verifier messages of '{name}' without a case in invalid.mlir:\n"
        + "\n".join(f"  {m!r}" for m in missing)
    )


# --------------------------------------------------------------------------- layers
# Imports point down (../shared/DESIGN.md, "Layers"): a package may import itself and the
# packages of the rows below its own, never a row above nor another package of its own row.
# Function-local imports count as much as top-level ones. `plugins.py` is the one documented
# cycle: the plugin registry, which dialects, frontends and passes look plugins up in and which
# registers plugins into them; it may import what passes may, and anyone may import it.
LAYERS: list[set[str]] = [
    {"tools"},  # mlconv-* entry points and generators
    {"explorer"},  # the Model Explorer adapter (mlconv-view)
    {"verify"},  # mlconv against other runtimes, through mlconv.compile
    {"__init__"},  # `import mlconv`: mlconv.compile, mlconv.load
    {"api"},  # the public face: compile, load
    {"converter"},  # the TPU converter product
    {"backends"},  # execution: JAX/XLA, OpenVINO runtime; writers
    {"interpreters"},  # reference interpreters, numerics checking
    {"passes"},  # passes, pipelines, the lowering driver
    {"frontends"},  # importers, model loading
    {"semantics", "signature"},  # running a core op's semantics; a module's @main signature
    {"dialects"},
    {"dense", "custom_ops", "fake_quant", "fileio"},
    {"errors", "version"},
]
REGISTRY = "plugins"
SKIPPED = {"test", "bench", "examples", "docs"}  # not part of the installed package


def _package(module: str) -> str:
    """`mlconv.passes.core_fuse` -> `passes`; `mlconv` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in SKIPPED or rel.parts[0].startswith("."):
            continue
        name = ".".join(("mlconv", *rel.with_suffix("").parts)).removesuffix(".__init__")
        found[name] = path
    return found


def import_graph(root: Path) -> list[tuple[str, str, str | None, int]]:
    """(importing module, imported module, imported name or None, line) of every import of
    mlconv in the code under `root`, function-local ones included."""
    modules = _modules(root)
    edges = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                pairs = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for target, imported in pairs:
                if target != "mlconv" and not target.startswith("mlconv."):
                    continue
                if imported and f"{target}.{imported}" in modules:
                    target, imported = f"{target}.{imported}", None
                edges.append((name, target, imported, node.lineno))
    return edges


def _rank(package: str) -> int | None:
    if package == REGISTRY:  # imports what the row above passes may
        return next(i for i, row in enumerate(LAYERS) if "passes" in row) - 1
    return next((i for i, row in enumerate(LAYERS) if package in row), None)


def layer_violations(root: Path) -> list[str]:
    """Every import under `root` that breaks the layer table, every private name imported
    across modules, and every cycle between packages (the registry aside)."""
    problems = []
    packages: dict[str, set[str]] = {}
    for source, target, imported, line in import_graph(root):
        where = f"{source} (line {line}) imports {target}{'.' + imported if imported else ''}"
        if imported and imported.startswith("_") and not imported.startswith("__"):
            if target != source:
                problems.append(f"{where}: a private name, used outside its module")
        mine, theirs = _package(source), _package(target)
        if mine == theirs:
            continue
        packages.setdefault(mine, set()).add(theirs)
        if theirs == REGISTRY:
            continue
        low, high = _rank(theirs), _rank(mine)
        if low is None or high is None:
            problems.append(f"{where}: a package missing from LAYERS")
        elif low <= high:
            problems.append(f"{where}: {mine} may not import {theirs} (LAYERS)")
    graph = {p: targets - {REGISTRY} for p, targets in packages.items() if p != REGISTRY}
    done: set[str] = set()

    def visit(package: str, path: list[str]) -> None:
        if package in path:
            problems.append("import cycle: " + " -> ".join(path[path.index(package) :] + [package]))
            return
        if package in done:
            return
        for target in sorted(graph.get(package, ())):
            visit(target, [*path, package])
        done.add(package)

    for package in sorted(graph):
        visit(package, [])
    return problems


def test_imports_follow_the_layers() -> None:
    problems = layer_violations(ROOT)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("path", "line", "expected"),
    [
        ("backends/x.py", "from mlconv.api import compile", "backends may not import api"),
        ("backends/x.py", "def f():\n    import mlconv.tools.cli", "backends may not import tools"),
        ("dialects/x.py", "from mlconv.dialects.y import _hidden", "a private name"),
        ("passes/x.py", "from mlconv.nowhere import y", "missing from LAYERS"),
    ],
)
def test_layer_check_catches(tmp_path: Path, path: str, line: str, expected: str) -> None:
    """The check itself: a tree with one bad import is reported (the real tree's verdict
    would mean nothing if the check could not fail)."""
    for folder in ("api.py", "tools/cli.py", "dialects/y.py", "backends/__init__.py"):
        (tmp_path / folder).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / folder).write_text("")
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(line + "\n")
    problems = layer_violations(tmp_path)
    assert any(expected in problem for problem in problems), problems


def test_layer_check_catches_a_cycle(tmp_path: Path) -> None:
    # Two packages of one row importing each other break the table and form a cycle.
    for path, line in [("semantics/a.py", "signature.b"), ("signature/b.py", "semantics.a")]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f"import mlconv.{line}\n")
    problems = layer_violations(tmp_path)
    assert any(p.startswith("import cycle: semantics -> signature -> semantics") for p in problems)


# --------------------------------------------------------------------------- local imports
# A function-local `import mlconv...` is for a cycle or for startup (a heavy module loaded on
# first use). One whose module is loaded anyway when the importing module loads (it is in the
# module-level import closure: its own top-level imports, those of the packages above it, e.g.
# `mlconv/__init__.py`, and so on down) dodges neither, unless the target needs the importing
# module back (a cycle): it belongs at the top. `if TYPE_CHECKING:` blocks load nothing.


def _scoped_imports(root: Path) -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """({module: mlconv modules it imports at module level}, [(module, target, line) of each
    function-local mlconv import])."""
    modules = _modules(root)
    top: dict[str, set[str]] = {name: set() for name in modules}
    local: list[tuple[str, str, int]] = []

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            pairs = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            pairs = [(node.module, alias.name) for alias in node.names]
        else:
            return []
        found = []
        for target, imported in pairs:
            if target == "mlconv" or target.startswith("mlconv."):
                dotted = f"{target}.{imported}"
                found.append(dotted if imported and dotted in modules else target)
        return found

    def visit(name: str, node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            for target in targets(child):
                if in_function:
                    local.append((name, target, child.lineno))
                else:
                    top[name].add(target)
            function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(name, child, in_function or function)

    for name, path in modules.items():
        visit(name, ast.parse(path.read_text(), str(path)), False)
    return top, local


def _loaded_with(
    module: str, top: dict[str, set[str]], loading: frozenset[str] = frozenset()
) -> set[str]:
    """Every mlconv module that importing `module` loads: its packages' `__init__`s first,
    then what each loaded module imports at module level. Packages in `loading` (being
    imported already, above the importer) load nothing more."""
    loaded: set[str] = set()
    pending = [module]
    while pending:
        parts = pending.pop().split(".")
        for size in range(1, len(parts) + 1):
            name = ".".join(parts[:size])
            if name in loading and name != module:
                continue
            if name in top and name not in loaded:
                loaded.add(name)
                pending.extend(top[name])
    return loaded


def hoistable_local_imports(root: Path) -> list[str]:
    """Every function-local mlconv import under `root` whose target is loaded with the
    importing module anyway and does not load that module back."""
    top, local = _scoped_imports(root)
    problems = []
    for module, target, line in local:
        if target in _loaded_with(module, top) and module not in _loaded_with(target, top):
            problems.append(
                f"{module} (line {line}): function-local import of {target}, which "
                f"`import {module}` loads anyway: import it at the top"
            )
    return problems


def _loaded_by_importing(target: str, importer: str, top: dict[str, set[str]]) -> set[str]:
    """What `import target` loads when `importer` runs it at its top: the packages above
    `importer`, already loading, load nothing more."""
    parts = importer.split(".")
    loading = {".".join(parts[:size]) for size in range(1, len(parts))}
    if target.startswith(importer + "."):
        loading.add(importer)  # a package importing its own submodule
    return _loaded_with(target, top, frozenset(loading))


def cycle_dodging_local_imports(root: Path) -> list[str]:
    """Every function-local mlconv import under `root` that could not move to the top because
    its target imports the importing module back (the plugin registry aside): a cycle that a
    move of code, not a local import, should break."""
    top, local = _scoped_imports(root)
    problems = []
    for module, target, line in local:
        if REGISTRY in (_package(module), _package(target)):
            continue
        if module in _loaded_by_importing(target, module, top):
            problems.append(
                f"{module} (line {line}): function-local import of {target}, which imports "
                f"{module} back: move the code both need below them"
            )
    return problems


def test_no_local_import_that_dodges_a_cycle() -> None:
    problems = cycle_dodging_local_imports(ROOT)
    assert not problems, "\n".join(problems)


def unexplained_local_imports(root: Path) -> list[str]:
    """Every function-local mlconv import under `root` with no comment saying why: none on its
    line, none on the line above the group of import statements it stands in."""
    modules = _modules(root)
    _, local = _scoped_imports(root)
    problems = []
    spans: dict[str, dict[int, int]] = {}
    for module, target, line in sorted(set(local)):
        lines = modules[module].read_text().splitlines()
        if module not in spans:
            tree = ast.parse("\n".join(lines))
            spans[module] = {
                n.lineno: n.end_lineno
                for n in ast.walk(tree)
                if isinstance(n, ast.Import | ast.ImportFrom)
            }
        ends = {end: start for start, end in spans[module].items()}
        first = line
        while first - 1 in ends:  # the import statement that ends right above
            first = ends[first - 1]
        said = "#" in lines[line - 1] or (first > 1 and lines[first - 2].strip().startswith("#"))
        if not said:
            problems.append(f"{module} (line {line}): function-local import of {target}: say why")
    return problems


def test_every_local_import_says_why() -> None:
    """A function-local import is lazy loading for a reason (a heavy dependency the module does
    not load otherwise, a command's start-up, the plugin registry), said in a comment."""
    problems = unexplained_local_imports(ROOT)
    assert not problems, "\n".join(problems)


def test_unexplained_local_import_check_catches(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "def f():\n    import mlconv.b\n\n\ndef g():\n    # lazy: loads b\n"
        "    import mlconv.c\n    from mlconv.b import (\n        x,\n    )\n"
    )
    (tmp_path / "b.py").write_text("x = 1\n")
    (tmp_path / "c.py").write_text("")
    assert [p.split(":")[0] for p in unexplained_local_imports(tmp_path)] == ["mlconv.a (line 2)"]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # b imports a back at its top: the local import dodges a cycle, flagged
        (
            {"a.py": "def f():\n    import mlconv.b\n", "b.py": "import mlconv.a\n"},
            ["mlconv.a (line 2): function-local import of mlconv.b"],
        ),
        # the same through a third module: flagged
        (
            {
                "a.py": "def f():\n    from mlconv.b import g\n",
                "b.py": "import mlconv.c\n\ndef g():\n    pass\n",
                "c.py": "import mlconv.a\n",
            },
            ["mlconv.a (line 2): function-local import of mlconv.b"],
        ),
        # a package importing its own submodule lazily: not a cycle (lazy loading), kept
        (
            {"p/__init__.py": "def f():\n    from mlconv.p import s\n", "p/s.py": "x = 1\n"},
            [],
        ),
        # a lazy import of a module that does not import back: kept
        ({"a.py": "def f():\n    import mlconv.c\n"}, []),
    ],
)
def test_cycle_check_catches(tmp_path: Path, files: dict[str, str], expected: list[str]) -> None:
    """The check itself, on small trees: it flags exactly the local imports that a cycle keeps
    local."""
    for path, text in {"c.py": "def g():\n    pass\n", **files}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    problems = cycle_dodging_local_imports(tmp_path)
    assert [p.split(", which")[0] for p in problems] == expected, problems


def test_no_local_import_that_could_be_top_level() -> None:
    problems = hoistable_local_imports(ROOT)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # loaded by the module's own top-level import chain (b -> c): flagged
        (
            {
                "a.py": "import mlconv.b\n\ndef f():\n    from mlconv.c import g\n",
                "b.py": "import mlconv.c\n",
            },
            ["mlconv.a (line 4): function-local import of mlconv.c"],
        ),
        # loaded by the package's __init__, which Python runs first: flagged
        (
            {"__init__.py": "from mlconv.c import g\n", "a.py": "def f():\n    import mlconv.c\n"},
            ["mlconv.a (line 2): function-local import of mlconv.c"],
        ),
        # not loaded otherwise (a lazy import for startup): kept
        ({"a.py": "def f():\n    import mlconv.c\n"}, []),
        # loaded, but it imports the module back (a cycle): kept
        (
            {
                "a.py": "import mlconv.b\n\ndef f():\n    import mlconv.b\n",
                "b.py": "import mlconv.a\n",
            },
            [],
        ),
        # only under TYPE_CHECKING: not loaded, kept
        (
            {"a.py": "if TYPE_CHECKING:\n    import mlconv.c\n\ndef f():\n    import mlconv.c\n"},
            [],
        ),
    ],
)
def test_local_import_check_catches(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    """The check itself, on small trees: it flags exactly the local imports of modules that
    are loaded anyway."""
    for path, text in {"c.py": "def g():\n    pass\n", **files}.items():
        (tmp_path / path).write_text(text)
    problems = hoistable_local_imports(tmp_path)
    assert [p.split(", which")[0] for p in problems] == expected, problems
