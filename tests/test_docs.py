"""Every example of the README and of the docs runs, and no documented command line is stale.

The rules, for ``README.md`` and every ``docs/**/*.md`` (not the build output ``docs/_build/`` nor the API pages
``docs/_api/`` written at build time):

* Each fenced ``python`` block is executed in-process, in a fresh namespace, with a new temporary directory as
  the working directory. A block whose first line starts with ``>>>`` is run as a doctest (its shown output
  must match). A block right after the HTML comment ``<!-- docs-test: skip (reason) -->`` is not run; the
  reason says why (fragments of another project's script, a library outside the test extra). A block after
  ``<!-- docs-test: slow -->`` takes over 10 s and is marked ``slow``. An example that trains keeps its budget
  tiny in the example itself. A block that needs an optional library which is not installed (torch, the SB3
  libraries, PettingZoo, TorchRL, Ray's RLlib, JAX and its libraries) is skipped, as the torch-free CI runs are.
* The integration pages' Python blocks (``docs/integrations.md``, ``docs/multiagent-training.md``) run a second
  time on a family preset, Yahtzee (45 actions, 69 floats): every env and agent they build takes
  ``rules="yahtzee"`` unless the example names its own rules (``Yacht-v0`` and ``YachtVersus-v0`` through their
  registered kwargs, the PettingZoo ``env``/``parallel_env``, ``YachtSB3VecEnv``, ``ppo_config`` and
  ``make_agent`` through a default), so a size written into an example instead of read from the env fails.
* Each fenced ``bash``, ``console``, ``sh`` or ``shell`` block is read line by line (``\\`` continuations
  joined, ``#`` comments dropped, a ``$`` prompt removed, split at ``&&``, ``||``, ``|`` and ``;``). Every
  command that invokes one of the project's command-line programs, ``python train.py`` / ``evaluate.py`` /
  ``play.py`` / ``sweep.py`` / ``web.py``, ``yacht-train`` / ``yacht-evaluate`` / ``yacht-play`` / ``yacht-sweep`` /
  ``yacht-web``, ``python -m yacht_lab <train|evaluate|play|sweep|web>`` or ``python -m yacht_env.duel``, is
  checked by running that program's argument parser (``parse_args(argv)`` of the top-level script, the same program
  as the console command; the two-player solve's own parser) on its arguments, in a temporary working directory:
  an unknown or malformed flag fails. Every other command (``pip``, ``pytest``, ``ray``, ``printf``, the
  ``benchmarks/`` scripts, another project's script) is not checked.
* Other blocks (``text``, ``yaml``, ...) are not run.

Besides, the environment pages ``docs/envs/*.md`` must be exactly what ``docs/_scripts/gen_env_pages.py`` writes
from the envs' docstrings (run that script after editing a docstring), and every row of the comparison tables of
``docs/results.md`` gives the median and the mean, each beside its % of the optimal median or mean, which is that ratio.
"""

from __future__ import annotations

import doctest
import functools
import importlib
import importlib.util
import inspect
import itertools
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import gymnasium
import pytest
from helpers import REPO

DOCS = REPO / "docs"
SKIP_MARK = re.compile(r"<!--\s*docs-test:\s*skip\b(.*?)-->")
SLOW_MARK = re.compile(r"<!--\s*docs-test:\s*slow\s*-->")
FENCE = re.compile(r"^(`{3,})\s*([\w-]*)[^\n]*$")
SHELL_LANGUAGES = {"bash", "console", "sh", "shell"}
# The project's programs: every name a documented line may use, mapped to the top-level script that runs it.
SCRIPTS = ("train", "evaluate", "play", "sweep", "web")
PROGRAMS = {f"{name}.py": name for name in SCRIPTS} | {f"yacht-{name}": name for name in SCRIPTS}
OPTIONAL = {"torch", "stable_baselines3", "sb3_contrib", "pettingzoo", "torchrl", "tensordict", "rich", "ray"}
OPTIONAL |= {"jax", "optax", "pgx", "gymnax", "flax", "mctx"}  # the jax extra (docs/jax.md)
INTEGRATION_PAGES = (DOCS / "integrations.md", DOCS / "multiagent-training.md")
FAMILY_PRESET = "yahtzee"
# What the integration pages build envs and agents with, besides gymnasium.make / make_vec of the registered ids.
BUILDERS = (
    ("yacht_env.multiplayer", "env"),
    ("yacht_env.multiplayer", "parallel_env"),
    ("yacht_env.sb3", "YachtSB3VecEnv"),
    ("yacht_env.rllib", "ppo_config"),
    ("yacht_agents", "make_agent"),
)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    skip: str | None  # the reason, when marked skip
    slow: bool

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def markdown_files() -> list[Path]:
    pages = [p for p in sorted(DOCS.rglob("*.md")) if not {"_build", "_api"} & set(p.relative_to(DOCS).parts)]
    return [REPO / "README.md", *pages]


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, with the docs-test mark of the line before each."""
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i].strip())
        if not match:
            i += 1
            continue
        fence, language = match.groups()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), len(lines))
        before = lines[i - 1] if i else ""
        skip = SKIP_MARK.search(before)
        reason = (skip.group(1).strip(" ()") or "marked skip") if skip else None
        code = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(path, i + 1, language.lower(), code, reason, bool(SLOW_MARK.search(before))))
        i = end + 1
    return found


ALL_BLOCKS = [block for path in markdown_files() for block in blocks(path)]


def params(language_test, pages: tuple[Path, ...] | None = None) -> list:
    return [
        pytest.param(block, id=block.id, marks=[pytest.mark.slow] if block.slow else [])
        for block in ALL_BLOCKS
        if language_test(block.language) and (pages is None or block.path in pages)
    ]


def test_the_docs_have_examples():
    """The collection itself: the README and the pages are found, with Python examples and documented commands."""
    files = {block.path for block in ALL_BLOCKS}
    assert REPO / "README.md" in files and DOCS / "envs" / "yacht.md" in files
    assert sum(block.language == "python" for block in ALL_BLOCKS) >= 15
    assert len(commands_of([b for b in ALL_BLOCKS if b.language in SHELL_LANGUAGES])) >= 20


@pytest.mark.parametrize("block", params(lambda language: language == "python"))
def test_python_example_runs(block: Block, tmp_path, monkeypatch):
    run_python_block(block, tmp_path, monkeypatch)


@pytest.mark.parametrize("block", params(lambda language: language == "python", INTEGRATION_PAGES))
def test_integration_example_runs_on_a_family_preset(block: Block, tmp_path, monkeypatch):
    """The integration examples read every size from the env: they run unchanged on Yahtzee."""
    default_rules(monkeypatch, FAMILY_PRESET)
    run_python_block(block, tmp_path, monkeypatch)


def test_the_family_preset_has_other_sizes_than_yacht():
    """What makes the test above bite: Yahtzee's action count and observation length are not Yacht's."""
    importlib.import_module("yacht_env")  # registers Yacht-v0
    yacht, family = (gymnasium.make("Yacht-v0", rules=rules) for rules in ("standard", FAMILY_PRESET))
    assert family.action_space.n != yacht.action_space.n
    assert family.observation_space.shape != yacht.observation_space.shape


def default_rules(monkeypatch, rules: str) -> None:
    """Every env and agent built through the registered ids and :data:`BUILDERS` takes ``rules`` unless given one."""
    importlib.import_module("yacht_env")  # registers the ids
    for env_id in ("Yacht-v0", "YachtVersus-v0"):
        monkeypatch.setitem(gymnasium.registry[env_id].kwargs, "rules", rules)
    for module_name, name in BUILDERS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:  # an optional library: the examples that need it are skipped
            continue
        monkeypatch.setattr(module, name, with_default_rules(getattr(module, name), rules))


def with_default_rules(build, rules: str):
    """``build`` with ``rules`` as its default: a ``rules`` the caller passes (by keyword or position) wins."""
    parameters = list(inspect.signature(build).parameters)
    position = parameters.index("rules") if "rules" in parameters else None

    @functools.wraps(build)
    def call(*args, **kwargs):
        if "rules" not in kwargs and (position is None or len(args) <= position):
            kwargs["rules"] = rules
        return build(*args, **kwargs)

    return call


def run_python_block(block: Block, tmp_path, monkeypatch) -> None:
    if block.skip:
        pytest.skip(block.skip)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    try:
        if block.code.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(block.code, {}, block.id, str(block.path), block.line)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, out=lambda text: None)
            results = runner.summarize(verbose=False)
            if results.failed:  # run again to show what differed
                runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
                report = []
                runner.run(test, out=report.append)
                pytest.fail("".join(report))
        else:
            exec(compile(block.code, block.id, "exec"), {"__name__": "__docs_example__"})
    except ModuleNotFoundError as error:
        if error.name and error.name.split(".")[0] in OPTIONAL:
            pytest.skip(f"needs {error.name}, which is not installed")
        raise


def commands_of(shell_blocks: list[Block]) -> list[tuple[Block, str, list[str]]]:
    """``(block, script, argv)`` of every command in these blocks that invokes one of the project's programs."""
    found = []
    for block in shell_blocks:
        text = re.sub(r"\\\n", " ", block.code)
        for line in text.splitlines():
            line = re.sub(r"^\s*\$\s", "", line)
            lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
            lexer.whitespace_split = True
            tokens, command = list(lexer), []
            for token in [*tokens, ";"]:
                if token in {"&&", "||", "|", ";", "&"}:
                    program = program_of(command)
                    if program:
                        found.append((block, *program))
                    command = []
                else:
                    command.append(token)
    return found


def program_of(command: list[str]) -> tuple[str, list[str]] | None:
    """The project's program a command runs and its arguments, or ``None`` for any other command."""
    if not command:
        return None
    if command[0] in PROGRAMS:
        return PROGRAMS[command[0]], command[1:]
    if re.fullmatch(r"python(3(\.\d+)?)?", command[0]) and len(command) > 1:
        if command[1] in PROGRAMS:
            return PROGRAMS[command[1]], command[2:]
        if command[1:3] == ["-m", "yacht_lab"] and len(command) > 3 and command[3] in SCRIPTS:
            return command[3], command[4:]
        if command[1:3] == ["-m", "yacht_env.duel"]:
            return "yacht_env.duel", command[3:]
    return None


def command_params() -> list:
    shell = [block for block in ALL_BLOCKS if block.language in SHELL_LANGUAGES]
    return [
        pytest.param(script, argv, id=f"{block.id}:{script} {' '.join(argv)}"[:150])
        for block, script, argv in commands_of(shell)
    ]


def script(name: str):
    """The top-level script ``name.py`` (``train``, ...), a thin alias of the console command of that name."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    spec = importlib.util.spec_from_file_location(f"_docs_script_{name}", REPO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("name", "argv"), command_params())
def test_documented_command_line_parses(name: str, argv: list[str], tmp_path, monkeypatch, capsys):
    # Run from a folder of its own, with the repository's benchmark folders: a command documented to write a
    # committed figure (benchmarks/win/ratings_standard.json) runs from the repository root.
    for folder in (REPO / "benchmarks").rglob("*"):
        if folder.is_dir() and "__pycache__" not in folder.parts:
            (tmp_path / folder.relative_to(REPO)).mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(tmp_path)
    try:
        if name == "yacht_env.duel":  # the two-player solve's command
            importlib.import_module("yacht_env.duel.__main__")._parser().parse_args(argv)
        else:
            script(name).parse_args(argv)
    except SystemExit as exit:
        if exit.code:
            pytest.fail(f"{name}: {' '.join(argv)!r} is refused by its parser: {capsys.readouterr().err.strip()}")


def number(cell: str) -> float | None:
    """The first number of a table cell (``**98.4%** (...)`` -> 98.4), or ``None`` for ``-`` / ``not given``."""
    match = re.search(r"\d[\d,]*(\.\d+)?", cell.replace("**", ""))
    return float(match.group(0).replace(",", "")) if match else None


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def comparison_tables(path: Path) -> list[tuple[list[str], list[list[str]]]]:
    """``(header, rows)`` of each Markdown table of ``path`` whose first column is ``agent``."""
    lines = path.read_text().splitlines()
    return [
        (cells(line), [cells(row) for row in itertools.takewhile(lambda row: row.startswith("|"), lines[i + 2 :])])
        for i, line in enumerate(lines)
        if line.startswith("| agent |")
    ]


def test_the_results_tables_set_each_median_and_mean_against_its_own_optimum():
    """docs/results.md: every row of a comparison gives the median and the mean, each with its % of the optimal
    median or mean (a published median is never set against the optimal mean), and each % is that ratio."""
    tables = comparison_tables(DOCS / "results.md")
    assert len(tables) >= 2
    for header, rows in tables:
        median = next((i for i, name in enumerate(header) if name == "median"), None)
        assert median is not None, f"a comparison without medians: {header}"
        mean = header.index("mean score [95% CI]")
        for value, percent in ((median, median + 1), (mean, mean + 1)):
            assert header[percent].startswith(f"% of optimal {header[value].split()[0]}"), header
            optimum = number(header[percent])
            for row in rows:
                shown, ratio = number(row[value]), number(row[percent])
                assert (shown is None) == (ratio is None), f"{row[0]}: {row[value]!r} beside {row[percent]!r}"
                if shown is not None:
                    tolerance = 1.0 if "about" in row[percent] else 0.05 + 1e-9  # the % is rounded to 0.1
                    assert abs(ratio - 100 * shown / optimum) <= tolerance, f"{row[0]}: {row[value]} / {optimum}"


def test_env_pages_are_generated_from_the_docstrings():
    """docs/envs/*.md are what docs/_scripts/gen_env_pages.py writes: edit the docstring, then run the script."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("pettingzoo")
    spec = importlib.util.spec_from_file_location("gen_env_pages", DOCS / "_scripts" / "gen_env_pages.py")
    module = sys.modules["gen_env_pages"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pages = module.render_pages()
    assert sorted(pages) == sorted((DOCS / "envs").glob("*.md"))
    stale = [str(path.relative_to(REPO)) for path, text in pages.items() if path.read_text() != text]
    assert not stale, f"stale env pages {stale}: run python docs/_scripts/gen_env_pages.py"


def hidden_lines(text: str) -> list[int]:
    """The 1-based numbers of the lines that MyST reads and the built page does not show, outside code fences.

    A line whose first non-space character is ``%`` (a MyST comment: it also ends the paragraph it sits in; stricter
    than MyST for a ``%`` that starts an indented code block, which is better rephrased anyway), the text after a
    ``+++`` block break (metadata) and a front matter block (a page that opens with ``---``). A ``(label)=`` target
    or a ``%`` inside a line are what they seem; an HTML comment is hidden on purpose (a note to the authors, a
    docs-test mark), as in any Markdown.
    """
    lines = text.splitlines()
    hidden, fence = [], None
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), len(lines) - 1)
        hidden = list(range(1, end + 2))
    for number, line in enumerate(lines, 1):
        if number in hidden:
            continue
        stripped = line.strip()
        if fence:  # inside a ``` or ~~~ fence: shown as written, up to a closing run of the same character
            fence = None if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence) else fence
            continue
        if opening := re.match(r"`{3,}|~{3,}", stripped):
            fence = opening.group()
        elif stripped.startswith("%") or (stripped.startswith("+++") and stripped.strip("+ ")):
            hidden.append(number)
    return hidden


MYST_SAMPLES = [  # (a page, the lines MyST does not show)
    ("A sentence, then\n% of the games\nwon.\n", [2]),
    ("- an item\n\n    % of a list\n", [3]),
    ("---\ntitle: a front matter\n---\nshown\n", [1, 2, 3]),
    ('shown\n\n+++ {"a": 1}\n\nshown too\n', [3]),
    ("```text\n% in a fence\n```\n~~~\n% here too\n~~~\n", []),
    ("50 % of the games\n(a-label)=\n# A title\n", []),
]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_line_of_the_docs_shows_on_the_built_page(path):
    """No sentence of a page vanishes in the MyST build (a line starting with ``%`` is a MyST comment)."""
    hidden = hidden_lines(path.read_text())
    lines = path.read_text().splitlines()
    assert not hidden, "MyST hides: " + "; ".join(f"line {n}: {lines[n - 1]!r}" for n in hidden)


@pytest.mark.parametrize(("page", "hidden"), MYST_SAMPLES)
def test_the_hidden_lines_are_the_lines_myst_hides(page, hidden):
    assert hidden_lines(page) == hidden
    mdit = pytest.importorskip("myst_parser.parsers.mdit")
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig

    parser = mdit.create_md_parser(MdParserConfig(enable_extensions={"colon_fence", "deflist"}), RendererHTML)
    html = parser.render(page)
    shown = re.sub(r"<!--.*?-->|<[^>]*>", " ", html, flags=re.S)
    for number, line in enumerate(page.splitlines(), 1):
        words = re.findall(r"[a-z]{2,}", line)
        if words and not re.match(r"\s*(```|~~~)", line):  # a fence's own lines are markup
            assert all(w in shown for w in words) != (number in hidden), (number, line, html)


def _installs_from_an_index(command: str) -> bool:
    """Whether a ``pip install`` command asks an index for yacht-rl itself (``yacht-rl``, ``"yacht-rl[jax]"``), which
    is not published: a clone installs ``-e .`` (or ``-e ".[EXTRA]"``), a wheel by its path. The generic
    ``yacht-rl[EXTRA]`` of Install's note on adding an extra to an installed yacht-rl is not a command to copy."""
    words = [word.strip("\"'") for word in command.split()]
    return any(re.fullmatch(r"yacht[-_]rl(\[(?!EXTRA\])[^\]]*\])?", word, flags=re.I) for word in words)


def test_every_documented_install_works_from_a_clone_or_a_wheel():
    """``pip install "yacht-rl[jax]"`` failed for a new user (yacht-rl is not on PyPI): every install line of the
    README and the docs, in a shell block or inline, installs from the clone or from a built wheel."""
    found = []
    for path in markdown_files():
        text = path.read_text()
        fenced = [b.code for b in blocks(path) if b.language in SHELL_LANGUAGES]
        inline = re.findall(r"`(pip install [^`]*)`", re.sub(r"```.*?```", "", text, flags=re.S))
        commands = [line for code in fenced for line in code.splitlines() if "pip install" in line] + inline
        found += [f"{path.relative_to(REPO)}: {c}" for c in commands if _installs_from_an_index(c.split("#")[0])]
    assert not found, "\n".join(found)
    assert _installs_from_an_index('pip install "yacht-rl[jax]"') and _installs_from_an_index("pip install yacht-rl")
    assert not _installs_from_an_index('pip install -e ".[jax]"') and not _installs_from_an_index("pip install rejax")


def test_the_two_player_example_names_its_best_action_for_what_it_is(capsys, tmp_path, monkeypatch):
    """``docs/two-players.md`` once called action 34, a pick of the Yacht box, the "best first keep"."""
    monkeypatch.chdir(tmp_path)
    (block,) = [b for b in blocks(DOCS / "two-players.md") if b.language == "python" and "q_values" in b.code]
    exec(compile(block.code, str(block.path), "exec"), {})
    assert capsys.readouterr().out.splitlines()[-1] == "best first action: 34 (score yacht), 0.944889"
