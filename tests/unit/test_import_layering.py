"""The layering written in docs/architecture.md ("Layering"), checked over the source tree with ast.

Every import counts, also one inside a function: a lazy import still ties two subpackages together.
Two more rules: no cycle between subpackages, and `kafkaops.testing` (the test doubles, not in the
wheel) is imported only inside functions (never when a module is imported), and only by the dev
commands and the demos.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import kafkaops

SOURCE = Path(kafkaops.__file__).resolve().parent

# top-level modules that import nothing of kafkaops, which every layer may import (`@frozen`)
FOUNDATION = frozenset({"frozen"})
# subpackage (or top-level module) -> the subpackages it may import; keep in step with the table in
# docs/architecture.md
ALLOWED: Mapping[str, frozenset[str]] = {
    "frozen": frozenset(),
    "resources": FOUNDATION,
    "kafka": FOUNDATION,
    "reconcile": FOUNDATION | {"resources", "kafka"},
    "snapshot": FOUNDATION | {"resources", "kafka", "reconcile"},
    "k8s": FOUNDATION | {"resources", "kafka", "reconcile"},
    "fleet": FOUNDATION | {"resources", "kafka", "reconcile", "snapshot", "testing"},
    "cli": FOUNDATION | {"resources", "kafka", "reconcile", "snapshot", "k8s", "fleet", "testing"},
    "testing": FOUNDATION | {"resources", "kafka"},
    "demo": FOUNDATION | {"resources", "cli", "testing"},
    "__main__": FOUNDATION | {"cli"},
}
# who may import the test doubles at all (inside functions only): the dev commands and the demos
TESTING_IMPORTERS = ("kafkaops.cli.", "kafkaops.demo", "kafkaops.fleet.demo")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. kafkaops.cli.main
    target: str  # the imported module, e.g. kafkaops.reconcile.plan
    line: int
    at_import_time: bool  # False: inside a function, or under `if TYPE_CHECKING:`

    @property
    def where(self) -> str:
        return f"{self.module} (line {self.line})"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(root: Path, module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    # `from kafkaops import demo` / `from . import plan`: a name may be a module of its own
    path = root.parent.joinpath(*prefix.split("."))
    modules = [f"{prefix}.{a.name}" for a in node.names
               if (path / a.name).is_dir() or (path / f"{a.name}.py").is_file()]
    return modules if len(modules) == len(node.names) else [prefix, *modules]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(root: Path) -> Iterator[Import]:
    """Every import of a `kafkaops` module in the tree under root (a package directory)."""
    top = root.name
    for path in sorted(root.rglob("*.py")):
        module = module_name(root, path)
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, at_import_time: bool) -> Iterator[Import]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    yield from visit(child, False)
                elif isinstance(child, ast.If) and _is_type_checking(child):
                    yield from visit(child, False)
                elif isinstance(child, ast.Import):
                    for alias in child.names:
                        if alias.name == top or alias.name.startswith(top + "."):
                            yield Import(module, alias.name, child.lineno, at_import_time)
                elif isinstance(child, ast.ImportFrom):
                    for target in _resolve(root, module, is_package, child):
                        if target == top or target.startswith(top + "."):
                            yield Import(module, target, child.lineno, at_import_time)
                else:
                    yield from visit(child, at_import_time)

        yield from visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), True)


def layer(root: Path, module: str) -> str | None:
    """The subpackage (or top-level module) a module belongs to; None for the root package and
    for names that are not modules of the tree (e.g. `kafkaops.__version__`)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    first = parts[1]
    if (root / first).is_dir() or (root / f"{first}.py").is_file():
        return first
    return None


def violations(root: Path, allowed: Mapping[str, frozenset[str]]) -> list[str]:
    found: list[str] = []
    edges: dict[str, dict[str, Import]] = {}
    for imp in imports(root):
        source, target = layer(root, imp.module), layer(root, imp.target)
        if source is None or target is None or source == target:
            continue
        edges.setdefault(source, {}).setdefault(target, imp)
        if source not in allowed:
            found.append(f"{imp.where}: subpackage {source!r} is not in the layering table")
        elif target not in allowed[source]:
            found.append(f"{imp.where} imports {imp.target}: {source}/ may import only "
                         f"{', '.join(sorted(allowed[source])) or 'nothing of kafkaops'}")
        if target == "testing":
            if imp.at_import_time:
                found.append(f"{imp.where} imports the test doubles ({imp.target}) when it is imported: "
                             "import them inside the function that needs them")
            if not imp.module.startswith(TESTING_IMPORTERS) and imp.module not in TESTING_IMPORTERS:
                found.append(f"{imp.where} imports the test doubles ({imp.target}): only the dev "
                             "commands and the demos may")
    found.extend(_cycles(edges))
    return found


def _cycles(edges: Mapping[str, Mapping[str, Import]]) -> list[str]:
    found: list[str] = []
    seen: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(edges.get(node, {})):
            if nxt in path:
                cycle = path[path.index(nxt):] + [nxt]
                key = tuple(sorted(cycle[:-1]))
                if key not in seen:
                    seen.add(key)
                    how = "; ".join(edges[a][b].where + f" imports {edges[a][b].target}"
                                    for a, b in zip(cycle, cycle[1:]))
                    found.append(f"import cycle {' -> '.join(cycle)}: {how}")
            else:
                walk(nxt, path + [nxt])

    for start in sorted(edges):
        walk(start, [start])
    return found


def test_the_source_tree_follows_the_layering() -> None:
    assert list(imports(SOURCE)), "no imports found: the checker is looking in the wrong place"
    assert violations(SOURCE, ALLOWED) == []


def test_the_layering_table_is_documented() -> None:
    doc = (SOURCE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in ALLOWED:
        if name in FOUNDATION:
            assert f"| `{name}.py`" in doc, f"{name}.py missing from the layering table in docs/architecture.md"
        elif name not in ("demo", "__main__"):
            assert f"| `{name}/`" in doc, f"{name}/ missing from the layering table in docs/architecture.md"


# --- the checker itself finds what it must find (on a small tree written here) ------------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    root = tmp_path / "kafkaops"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for directory in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        (directory / "__init__.py").touch()
    return root


def test_the_checker_finds_a_forbidden_import_and_a_cycle(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "kafka/admin.py": "from ..reconcile import plan\n",  # relative, upwards: kafka -> reconcile
        "reconcile/plan.py": "def later():\n    from kafkaops.kafka.admin import AdminClient\n",
    })
    found = violations(root, ALLOWED)
    assert any("kafkaops.kafka.admin (line 1) imports kafkaops.reconcile" in f and "kafka/ may import only frozen" in f
               for f in found), found
    assert any(f.startswith("import cycle kafka -> reconcile -> kafka") for f in found), found


def test_the_checker_finds_test_doubles_imported_at_import_time(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "demo.py": "from kafkaops.testing.stack import start_dev_cluster\n",
        "fleet/demo.py": "def run():\n    from kafkaops.testing import stack\n",
        "fleet/pipeline.py": "def run():\n    from kafkaops.testing import stack\n",
        "cli/dev.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kafkaops.testing import fake\n",
        "testing/stack.py": "",
    })
    found = violations(root, ALLOWED)
    assert [f for f in found if "kafkaops.demo (line 1)" in f and "when it is imported" in f], found
    assert [f for f in found if "kafkaops.fleet.pipeline (line 2)" in f and "only the dev commands" in f], found
    assert not [f for f in found if "kafkaops.fleet.demo" in f or "kafkaops.cli.dev" in f], found


@pytest.mark.parametrize("source, expected", [
    ("from . import plan", "kafkaops.reconcile.plan"),
    ("from .plan import x", "kafkaops.reconcile.plan"),
    ("from ..kafka import admin", "kafkaops.kafka.admin"),
])
def test_relative_imports_are_resolved(tmp_path: Path, source: str, expected: str) -> None:
    root = _tree(tmp_path, {"reconcile/engine.py": source + "\n", "reconcile/plan.py": "", "kafka/admin.py": ""})
    targets = {i.target for i in imports(root) if i.module == "kafkaops.reconcile.engine"}
    assert expected in targets, targets


def test_every_subpackage_has_its_readme() -> None:
    """docs/architecture.md: each subpackage's README says what it owns, what it may import and where
    to start reading."""
    missing = [p.name for p in SOURCE.iterdir()
               if p.is_dir() and (p / "__init__.py").is_file() and not (p / "README.md").is_file()]
    assert missing == []
    for name in ALLOWED:
        if (SOURCE / name).is_dir():
            text = (SOURCE / name / "README.md").read_text(encoding="utf-8")
            assert "import" in text, f"{name}/README.md does not say what it may import"
