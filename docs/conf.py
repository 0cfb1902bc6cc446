"""Sphinx configuration of the yacht-rl documentation (``python -m sphinx -W --keep-going -b html docs <out>``).

No network: no intersphinx. The API reference is written at build time: every module of ``yacht_env``,
``yacht_agents`` and ``yacht_lab`` found by walking the packages (``pkgutil``) gets an ``automodule``, so modules
added or split later appear without editing the docs; a package that re-exports its modules' names (its
``__all__``, as ``yacht_env.rules`` does) is documented module by module, and a reference through the package
(``yacht_env.rules.Rules``) goes to the module that documents the name. The environment pages ``docs/envs/*.md``
are generated from the envs' docstrings by ``docs/_scripts/gen_env_pages.py`` (and checked by
``tests/test_docs.py``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
import shutil
import sys
from pathlib import Path

from sphinx.ext.autodoc.mock import ismock, mock

import yacht_env

DOCS = Path(__file__).resolve().parent
API_DIR = DOCS / "_api"  # written at build time, ignored by git
PACKAGES = ("yacht_env", "yacht_agents", "yacht_lab")

project = "yacht-rl"
author = "the yacht-rl authors"
copyright = "the yacht-rl authors"  # noqa: A001 - Sphinx's name
release = version = yacht_env.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_scripts", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4  # links such as training.md#the-recipe-the-dice-odds-in-the-network
suppress_warnings = ["myst.header"]  # the generated env pages start at ## under their title, as the docstrings do

html_theme = "furo"
html_title = f"yacht-rl {release}"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_inherit_docstrings = False  # Gymnasium's and SB3's own docstrings are theirs to render
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# The libraries beyond the core dependencies (numpy, gymnasium) that a module imports at its top, from every extra
# but docs (pyspiel is the openspiel extra's): mocked where they are not installed, so the docs extra alone builds the
# site. This file's own imports of the modules (the API pages, the re-exports) go through the same mock (``_import``).
autodoc_mock_imports = [
    name
    for name in (
        "flax",
        "gymnax",
        "jax",
        "matplotlib",
        "mctx",
        "optax",
        "pettingzoo",
        "pgx",
        "pyspiel",
        "ray",
        "rich",
        "rliable",
        "sb3_contrib",
        "scipy",
        "stable_baselines3",
        "starlette",
        "torch",
        "tqdm",
        "uvicorn",
        "yaml",
    )
    if importlib.util.find_spec(name) is None
]


def _import(name: str):
    """``importlib.import_module(name)`` with the libraries of ``autodoc_mock_imports`` mocked, as autodoc imports."""
    with mock(autodoc_mock_imports):
        return importlib.import_module(name)


def modules(package: str) -> list[str]:
    """The package and every module under it, sorted (private ``_x`` modules and ``__main__`` left out)."""
    root = _import(package)
    found = [package]
    with mock(autodoc_mock_imports):  # walk_packages imports the subpackages
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if not any(part.startswith("_") for part in info.name.split(".")[1:]):
                found.append(info.name)
    return sorted(found)


def write_api_pages(app) -> None:
    """``docs/_api/<package>.md``: one ``automodule`` per module of each package, found when the docs are built."""
    shutil.rmtree(API_DIR, ignore_errors=True)
    API_DIR.mkdir()
    for package in PACKAGES:
        lines = [f"# `{package}`", ""]
        for name in modules(package):
            lines += [f"## `{name}`", "", "```{eval-rst}", f".. automodule:: {name}", "```", ""]
        (API_DIR / f"{package}.md").write_text("\n".join(lines))


@functools.cache
def reexports() -> dict[str, list[str]]:
    """``yacht_env.rules.Rules`` -> ``["yacht_env.rules.presets.Rules"]``: each name a package re-exports (its
    ``__all__``) and where its modules hold that very object: the API pages document a name only where it is defined,
    once, and a reference may name it through the package."""
    found = {}
    for package in PACKAGES:
        names = modules(package)
        for name in names:
            module = _import(name)
            if not hasattr(module, "__path__"):
                continue
            for attr in getattr(module, "__all__", ()):
                value = getattr(module, attr)
                found[f"{name}.{attr}"] = [
                    f"{inner}.{attr}"
                    for inner in names
                    if inner.startswith(f"{name}.") and getattr(sys.modules[inner], attr, None) is value
                ]
    return found


def resolve_reexports(app, env, node, contnode):
    """A Python reference left unresolved that names a re-exported object through its package
    (``yacht_env.rules.Rules.num_actions``, or ``Rules`` in a docstring of ``yacht_env.rules`` or of one of its
    modules) resolves to where the object is documented."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"].removesuffix("()")
    module = node.get("py:module") or ""
    parts = module.split(".") if module else []
    targets = [target] + [f"{'.'.join(parts[:i])}.{target}" for i in range(len(parts), 0, -1)]
    for name in targets:
        for alias, homes in reexports().items():
            if name != alias and not name.startswith(f"{alias}."):
                continue
            documented = [home + name[len(alias) :] for home in homes if home + name[len(alias) :] in domain.objects]
            if len(documented) == 1:
                return domain.resolve_xref(
                    env, node["refdoc"], app.builder, node["reftype"], documented[0], node, contnode
                )
    return None


def _env_pages() -> dict[str, str]:
    """Object path (``yacht_env.env.YachtEnv``) -> the env page generated from its docstring."""
    spec = importlib.util.spec_from_file_location("gen_env_pages", DOCS / "_scripts" / "gen_env_pages.py")
    module = sys.modules["gen_env_pages"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {page.obj.replace(":", "."): f"/envs/{page.slug}" for page in module.PAGES}


ENV_PAGES = _env_pages()
_MARKDOWN_HEADING = re.compile(r"^## \S")


def markdown_docstrings(app, what, name, obj, options, lines) -> None:
    """An env docstring is Markdown in PettingZoo's layout: its page shows it; here its first line and a link.

    A command's ``Usage:`` block (the scripts' module docstrings) is shown as a literal block.
    """
    for i in reversed(range(len(lines))):
        if lines[i].strip() == "Usage:" and i + 1 < len(lines) and lines[i + 1].startswith(" "):
            lines[i : i + 1] = [lines[i].replace("Usage:", "Usage::"), ""]
    if not any(_MARKDOWN_HEADING.match(line) for line in lines):
        return
    first = lines[0] if lines else ""
    page = ENV_PAGES.get(name)
    lines[:] = [first, "", f"The full reference is the page :doc:`{page}`." if page else ""]


def skip_mocked(app, what, name, obj, skip, options):
    """Skips a member that is only a mock where its library is not installed (a method of a class made by a mocked
    decorator, such as ``YachtPgx``'s state under pgx's ``dataclass``): there is nothing of it to document.
    """
    if ismock(obj):
        return True
    if inspect.isfunction(obj):  # a method of a class that a mocked decorator replaced by a mock
        owner, _, member = obj.__qualname__.partition(".")
        module = sys.modules.get(obj.__module__)
        if member and ismock(getattr(module, owner, None)):
            return True
    return None


def setup(app) -> None:
    app.connect("autodoc-skip-member", skip_mocked)
    app.connect("builder-inited", write_api_pages)
    app.connect("autodoc-process-docstring", markdown_docstrings)
    app.connect("missing-reference", resolve_reexports)
