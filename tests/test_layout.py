"""The shape of the packages: no import circle, no private name used across modules, no module over 600 lines,
nothing of a research folder in the wheel.

Every import of a module of ``yacht_env``, ``yacht_agents`` or ``yacht_lab``, at its top, inside a function or under
``TYPE_CHECKING``, is an edge of one graph; the graph has no cycle (a module that needs another's name imports it, and
that one never imports back). A name with a leading underscore belongs to the module that defines it: another module
that needs it asks for a public name. A module past 600 lines holds several concerns: it is cut along them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from helpers import REPO

PACKAGES = {"yacht_env": REPO / "yacht_env", "yacht_agents": REPO / "agents", "yacht_lab": REPO / "yacht_lab"}
MAX_LINES = 600

#: pgx's convention, not a private name: a pgx ``State``'s own fields start with an underscore (pgx's
#: ``_step_count``, ``_x``), and the JAX faces' checker reads the core's table in ``YachtPgx``'s states as pgx's
#: ``api_test`` reads those.
PGX_STATE_FIELDS = {("yacht_env.jax.conformance", "_game")}


@functools.cache
def modules() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of the three packages: its dotted name (a package's is its ``__init__``'s), path and tree."""
    found = {}
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            parts = (package, *path.relative_to(root).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = (path, ast.parse(path.read_text()))
    return found


def imported_from(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The dotted module a ``from ... import`` in module ``name`` (at ``path``) reads, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = name.split(".")[: len(name.split(".")) - node.level + (path.name == "__init__.py")]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(name: str, path: Path, tree: ast.Module, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (at ``path``) imports, wherever in it (at its top, inside a
    function, under ``TYPE_CHECKING``): ``from p import m`` of a module ``m`` is an edge to ``p.m`` alone (``p`` is
    loaded first whatever the importer: a parent package is no dependency of that import).
    """
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            source = imported_from(name, path, node)
            submodules = {f"{source}.{alias.name}" for alias in node.names} & known
            names = {alias.name for alias in node.names} - {module.rsplit(".", 1)[1] for module in submodules}
            targets |= submodules | ({source} if names else set())
    return {target for target in targets if target in known and target != name}


def imports() -> dict[str, set[str]]:
    """Each module of the three packages (dotted name) and the modules of the three it imports (:func:`imports_of`)."""
    found = modules()
    return {name: imports_of(name, path, tree, set(found)) for name, (path, tree) in found.items()}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (its modules in order, the first repeated at the end), or ``None``."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_packages_have_no_import_cycle():
    graph = imports()
    assert cycle(graph) is None, " -> ".join(cycle(graph))


def test_the_import_walk_sees_every_kind_of_import():
    source = """
from typing import TYPE_CHECKING
import pkg.a
from pkg import b, CONSTANT
from . import c
from .d import name
if TYPE_CHECKING:
    from pkg.e import Type
def f():
    from pkg.f import g
"""
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.f", "pkg.sub"}
    edges = imports_of("pkg.sub", Path("pkg/sub.py"), ast.parse(source), known)
    assert edges == {"pkg.a", "pkg.b", "pkg", "pkg.c", "pkg.d", "pkg.e", "pkg.f"}  # pkg: for CONSTANT
    assert imports_of("pkg", Path("pkg/__init__.py"), ast.parse("from .a import x"), known) == {"pkg.a"}
    graph = imports()
    assert "yacht_lab.training.config" in graph["yacht_lab.training.sb3.ppo"]  # the walk sees the three packages
    assert "yacht_env.rules" in graph["yacht_env.encoding"] and "yacht_env" not in graph["yacht_env.encoding"]
    assert "yacht_env.rules.dice" in graph["yacht_env.rules.picks"]
    assert {"yacht_agents.base", "yacht_env.encoding"} <= graph["yacht_agents.win"]


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(found: dict[str, tuple[Path, ast.Module]]) -> dict[tuple[str, str], int]:
    """``(module, name)``: the line where a module of ``found`` uses a private name of another module of ``found``.

    Two forms: ``from m import _name`` (a module of the packages, relative imports resolved), and ``x._name`` where
    ``x`` is not ``self`` or ``cls`` and ``_name`` is defined (a function, class, global, attribute or argument) by
    another module and not by this one: a module's own classes may read each other's private attributes, and a
    name only other libraries define (``_replace`` of a named tuple) is theirs.
    """
    defined = {}
    for name, (_, tree) in found.items():
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
        defined[name] = {n for n in names if is_private(n)}
    anywhere = set().union(*defined.values())
    uses = {}
    for name, (path, tree) in found.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and imported_from(name, path, node) in found:
                for alias in node.names:
                    if is_private(alias.name):
                        uses.setdefault((name, alias.name), node.lineno)
            elif isinstance(node, ast.Attribute) and is_private(node.attr):
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                if node.attr in anywhere and node.attr not in defined[name]:
                    uses.setdefault((name, node.attr), node.lineno)
    return uses


def test_no_module_uses_another_modules_private_names():
    """The three packages and the scripts at the top of the repository. The tests and benchmarks are left out: a test
    may pin a module's internals (and breaks, saying so, when they change), and a benchmark times them."""
    found = dict(modules())
    for script in sorted(REPO.glob("*.py")):
        found[script.stem] = (script, ast.parse(script.read_text()))
    uses = private_uses(found)
    left = {use: line for use, line in uses.items() if use not in PGX_STATE_FIELDS}
    assert left == {}, [f"{module}:{line} uses {name}" for (module, name), line in sorted(left.items())]


def test_the_private_name_check_sees_both_forms():
    found = {
        "pkg.a": (Path("pkg/a.py"), ast.parse("_TABLE = 1\nclass A:\n    def _hidden(self):\n        self._x = 1")),
        "pkg.b": (Path("pkg/b.py"), ast.parse("from pkg.a import _TABLE, A\nfrom . import a\nA()._hidden()")),
        "pkg.c": (Path("pkg/c.py"), ast.parse("from .a import _TABLE\nimport pkg.a\nprint(pkg.a._x, t._replace())")),
        "pkg.d": (Path("pkg/d.py"), ast.parse("class D:\n    def _hidden(self):\n        return D()._hidden()")),
    }
    uses = private_uses(found)
    assert set(uses) == {("pkg.b", "_TABLE"), ("pkg.b", "_hidden"), ("pkg.c", "_TABLE"), ("pkg.c", "_x")}


def test_the_tests_shared_helpers_live_in_helpers_only():
    """``REPO`` and ``run_script`` are defined once, in ``tests/helpers.py``; every test file imports them."""
    spelled = "Path(__file__).resolve()" + ".parents[1]"  # in two parts: not this file's own spelling
    for path in sorted((REPO / "tests").glob("test_*.py")):
        text = path.read_text()
        assert spelled not in text, f"{path.name} spells REPO out: import it from helpers"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                assert node.name != "run_script", f"{path.name} defines run_script: import it from helpers"
            elif isinstance(node, ast.Assign):
                names = {target.id for target in node.targets if isinstance(target, ast.Name)}
                assert "REPO" not in names, f"{path.name} defines REPO: import it from helpers"


def test_the_cycle_finder_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_trainers_stand_apart_and_the_schema_and_tasks_below_the_league():
    graph = imports()
    assert (
        "yacht_lab.training.sb3.ppo" not in graph["yacht_lab.training.sb3.distill"]
        and "yacht_lab.training.sb3.distill" not in graph["yacht_lab.training.sb3.ppo"]
    )
    for low in ("yacht_lab.training.schema", "yacht_lab.training.config", "yacht_lab.training.sb3.tasks"):
        assert "yacht_lab.training.sb3.league" not in graph[low]


#: The lab's jobs, each a folder, and the jobs each may import (besides itself and the shared modules at the lab's top):
#: ``table`` stands alone, ``measure`` reads ``table``'s game record, ``training`` may measure (its curves evaluate),
#: ``sweep`` may use both, and the command-line programs stand on all of them.
JOBS = {
    "table": set(),
    "measure": {"table"},
    "training": {"measure", "table"},
    "sweep": {"training", "measure", "table"},
    "scripts": {"training", "measure", "sweep", "table"},
}
#: The modules at the lab's top that the jobs share; they import no job.
SHARED = {"yacht_lab", "yacht_lab.__main__", "yacht_lab.ray_cluster"}
#: The trainer families under ``training/``: neither imports the other.
FAMILIES = ("yacht_lab.training.sb3", "yacht_lab.training.jax", "yacht_lab.training.search")


def job_of(module: str) -> str | None:
    """The job folder of a module of ``yacht_lab`` (``training`` for ``yacht_lab.training.sb3.ppo``), or ``None``."""
    parts = module.split(".")
    return parts[1] if parts[0] == "yacht_lab" and len(parts) > 1 and parts[1] in JOBS else None


def lab_import_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of ``graph`` that crosses the lab's job folders against :data:`JOBS`, or leaves the shared
    modules for a job, or joins the two trainer families."""
    wrong = []
    for module, targets in sorted(graph.items()):
        if not module.startswith("yacht_lab"):
            continue
        job = job_of(module)
        for target in sorted(t for t in targets if t.startswith("yacht_lab")):
            other = job_of(target)
            if other is None:
                continue
            if job is None and module in SHARED and module not in ("yacht_lab", "yacht_lab.__main__"):
                wrong.append(f"{module} -> {target}: a shared module imports no job")
            elif job is not None and other != job and other not in JOBS[job]:
                wrong.append(f"{module} -> {target}: {job} may not import {other}")
            family = next((f for f in FAMILIES if module.startswith(f + ".") or module == f), None)
            if family and any(target.startswith(f) for f in FAMILIES if f != family):
                wrong.append(f"{module} -> {target}: one trainer family imports another")
    return wrong


def test_the_lab_is_one_folder_per_job_and_its_imports_run_one_way():
    top = {
        path.name
        for path in (REPO / "yacht_lab").iterdir()
        if path.name not in ("__init__.py", "__main__.py", "__pycache__")
        and (path.suffix == ".py" or (path / "__init__.py").is_file())
    }
    assert top == {*JOBS, *(name.split(".")[-1] + ".py" for name in SHARED - {"yacht_lab", "yacht_lab.__main__"})}
    assert len(top) <= 8, sorted(top)
    for job in JOBS:
        doc = ast.get_docstring(modules()[f"yacht_lab.{job}"][1])
        assert doc, f"yacht_lab/{job}/__init__.py says what it holds and what it may import"
    assert lab_import_violations(imports()) == []


def test_the_job_rule_sees_a_wrong_import():
    graph = {
        "yacht_lab.table.game": {"yacht_lab.measure.report"},
        "yacht_lab.measure.evaluation": {"yacht_lab.table.record", "yacht_lab.training.config"},
        "yacht_lab.training.sb3.ppo": {"yacht_lab.measure.evaluation", "yacht_lab.training.jax.ppo"},
        "yacht_lab.sweep.run": {"yacht_lab.training.config", "yacht_lab.measure.report", "yacht_lab.ray_cluster"},
        "yacht_lab.ray_cluster": {"yacht_lab.sweep.run"},
    }
    assert lab_import_violations(graph) == [
        "yacht_lab.measure.evaluation -> yacht_lab.training.config: measure may not import training",
        "yacht_lab.ray_cluster -> yacht_lab.sweep.run: a shared module imports no job",
        "yacht_lab.table.game -> yacht_lab.measure.report: table may not import measure",
        "yacht_lab.training.sb3.ppo -> yacht_lab.training.jax.ppo: one trainer family imports another",
    ]


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_package_module_is_over_600_lines(package):
    long = {
        path.relative_to(REPO).as_posix(): lines
        for path in PACKAGES[package].rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_research_folder_is_packaged():
    """The wheel holds the three packages only (``tests/test_packaging.py`` builds it, in the slow set): pyproject
    names no other package, and no ``research`` one."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = project["tool"]["setuptools"]["packages"]
    assert {name.split(".")[0] for name in packages} == set(PACKAGES)
    assert not any("research" in name for name in packages)
    assert not any("research" in str(path) for path in project["tool"]["setuptools"]["package-dir"].values())
