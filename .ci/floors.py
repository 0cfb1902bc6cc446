"""The declared floor of every requirement of some extras, as pip constraints: `python .ci/floors.py jax`.

Each `name>=X` of pyproject.toml's dependencies and of the extras named (and of the extras they name, `yacht-rl[...]`)
becomes `name==X`, one a line, for `pip install -c`: .ci/run installs each extra at its floors with them, so that a
floor that no longer installs or works fails CI instead of a user's install. A requirement without a floor (six) is
left to pip. OVERRIDES replaces a floor that CI cannot install here, each with its reason.
"""

import re
import sys
from pathlib import Path

import tomllib

# torch: the floor's wheel on PyPI (2.3) is a multi-GB CUDA build; the CI machine has a small CPU build of 2.13.0.
OVERRIDES = {"torch": "torch==2.13.0"}
FLOOR = re.compile(r"^\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)\s*(?:[,;].*)?$")
SELF = re.compile(r"^\s*yacht-rl\[([^\]]+)\]\s*$")


def floors(project: dict, extras: list[str]) -> dict[str, str]:
    """``{name: constraint}`` for the base dependencies and ``extras`` (recursively)."""
    optional = project["optional-dependencies"]
    found: dict[str, str] = {}
    seen: set[str] = set()
    todo = [("", project["dependencies"])] + [(extra, None) for extra in extras]
    while todo:
        extra, requirements = todo.pop(0)
        if requirements is None:
            if extra in seen:
                continue
            if extra not in optional:
                sys.exit(f".ci/floors.py: no extra {extra!r} in pyproject.toml")
            seen.add(extra)
            requirements = optional[extra]
        for requirement in requirements:
            nested = SELF.match(requirement)
            if nested:
                todo += [(name.strip(), None) for name in nested.group(1).split(",")]
                continue
            match = FLOOR.match(requirement)
            if match:
                name = match.group(1).lower().replace("_", "-")
                found[name] = OVERRIDES.get(name, f"{name}=={match.group(3)}")
    return found


def main() -> None:
    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    print("\n".join(sorted(floors(project, sys.argv[1:]).values())))


if __name__ == "__main__":
    main()
