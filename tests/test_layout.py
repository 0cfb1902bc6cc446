"""The shape of the packages: no import circle among the lab's modules, no module over 600 lines, nothing of a
research folder in the wheel.

Every import of a ``yacht_lab`` module, at its top or inside a function, is an edge of the graph; the graph has no
cycle (a module that needs another's name imports it, and that one never imports back). A module past 600 lines
holds several concerns: it is cut along them.
"""

from __future__ import annotations

import ast

import pytest
from helpers import REPO

PACKAGES = {"yacht_env": REPO / "yacht_env", "yacht_agents": REPO / "agents", "yacht_lab": REPO / "yacht_lab"}
MAX_LINES = 600


def lab_imports() -> dict[str, set[str]]:
    """Each ``yacht_lab`` module (dotted name) and the ``yacht_lab`` modules it imports, wherever in it."""
    modules = {}
    for path in sorted((REPO / "yacht_lab").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            graph[name] |= {target for target in targets if target in modules and target != name}
    return graph


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


def test_the_lab_has_no_import_cycle():
    graph = lab_imports()
    assert "yacht_lab.config" in graph["yacht_lab.training"]  # the walk sees the imports
    assert "yacht_lab.model" in graph["yacht_lab.distill"]
    assert cycle(graph) is None, " -> ".join(cycle(graph))


def test_the_cycle_finder_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_trainers_stand_apart_and_the_schema_and_tasks_below_the_league():
    graph = lab_imports()
    assert (
        "yacht_lab.training" not in graph["yacht_lab.distill"]
        and "yacht_lab.distill" not in graph["yacht_lab.training"]
    )
    for low in ("yacht_lab.schema", "yacht_lab.config", "yacht_lab.tasks"):
        assert "yacht_lab.league" not in graph[low]


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
