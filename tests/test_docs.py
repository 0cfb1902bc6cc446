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

The README is the front door: under :data:`README_MAX_LINES` lines; its benchmark table is what ``python evaluate.py``
prints (a slow test runs it); each row of its table of results gives a figure, a command and the page that explains
it, and the page shows every number of the figure; the commands of the project's programs in that table are checked as
a shell block's are, and a ``benchmarks/`` script's options must be its own. No page takes a name Sphinx's HTML
builder writes at the top of the site (``search``, ``genindex``, ...: ``docs/search.md`` once lost its page to the
search page), and every page is reached from ``docs/index.md``'s toctrees.
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
from helpers import REPO, run_script

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
            line = re.sub(r"(^|\s)#.*$", "", line)  # a comment starts a word, as in bash: optimal#2 is a word
            lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
            lexer.commenters = ""
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
    shell = [block for block in ALL_BLOCKS if block.language in SHELL_LANGUAGES] + readme_result_commands()
    return [
        pytest.param(script, argv, id=f"{block.id}:{script} {' '.join(argv)}"[:150])
        for block, script, argv in commands_of(shell)
    ]


def number(cell: str) -> float | None:
    """The first number of a table cell (``**98.4%** (...)`` -> 98.4), or ``None`` for ``-`` / ``not given``."""
    match = re.search(r"\d[\d,]*(\.\d+)?", cell.replace("**", ""))
    return float(match.group(0).replace(",", "")) if match else None


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


README = REPO / "README.md"
README_MAX_LINES = 120


@dataclass(frozen=True)
class ResultRow:
    """A row of the README's table of results: ``| result | figure | command | docs |``."""

    line: int  # 1-based
    result: str
    figure: str
    commands: tuple[str, ...]  # the cell's inline code spans
    link: str  # the docs cell's link target, relative to the repository (docs/two-players.md#anchor)


def readme_results() -> list[ResultRow]:
    lines = README.read_text().splitlines()
    start = lines.index("| result | figure | command | docs |")
    rows = []
    for number, line in enumerate(lines[start + 2 :], start + 3):
        if not line.startswith("|"):
            break
        result, figure, command, docs = cells(line)
        links = re.findall(r"\]\(([^)]+)\)", docs)
        rows.append(ResultRow(number, result, figure, tuple(re.findall(r"`([^`]+)`", command)), *links[:1] or [""]))
    return rows


def readme_result_commands() -> list[Block]:
    """The commands of the README's table of results, each as a one-line shell block (checked as those are)."""
    return [
        Block(README, row.line, "bash", f"{command}\n", None, False)
        for row in readme_results()
        for command in row.commands
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


# The README, the front door: short, its results each with a figure, a command and a page.


def test_the_readme_stays_short():
    """The README is the front door (Gymnasium's, PettingZoo's and pgx's are its models): the detail is on the pages
    of docs/, the prose of the results on docs/results.md."""
    lines = README.read_text().splitlines()
    assert len(lines) < README_MAX_LINES, f"README.md has {len(lines)} lines: move the detail to a page of docs/"


def test_the_readme_has_its_table_of_results():
    rows = readme_results()
    assert len(rows) >= 10 and all(row.result for row in rows)


def figures(cell: str) -> list[str]:
    """The numbers of a figure as written (``98.8%`` -> ``98.8``, ``2,718,517``, ``0.493862``); a whole number alone,
    such as minutes or seeds, says too little to be looked up and is left out."""
    return re.findall(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+", cell)


def shows(text: str, figure: str) -> bool:
    """Whether ``text`` shows ``figure`` as a number of its own (98.8 is not in 98.85)."""
    return re.search(rf"(?<![\d.,]){re.escape(figure)}(?![\d]|[.,]\d)", text) is not None


def heading_anchors(path: Path) -> set[str]:
    """The anchors MyST makes of a page's headings (``myst_heading_anchors = 4``; GitHub's slugs), code fences left
    out (a ``#`` there is a comment)."""
    anchors, fence = set(), None
    for line in path.read_text().splitlines():
        if opening := re.match(r"\s*(`{3,}|~{3,})", line):
            fence = None if fence and opening.group(1).startswith(fence) else fence or opening.group(1)
            continue
        if not fence and (heading := re.match(r"#{1,4} (.+)", line)):
            title = heading.group(1).replace("`", "").strip().lower().replace(" ", "-")
            anchors.add(re.sub(r"[^\w\- ]", "", title))
    return anchors


def test_heading_anchors_are_myst_s(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n```python\n# a comment\n```\n\n## Ratings (`--ratings`)\n\n##### Too deep\n")
    assert heading_anchors(page) == {"a-title", "ratings---ratings"}
    slugs = pytest.importorskip("myst_parser.slugs")
    assert {slugs.github_slugify(title) for title in ("A title", "Ratings (--ratings)")} == heading_anchors(page)


@pytest.mark.parametrize("row", readme_results(), ids=lambda row: row.result)
def test_each_readme_result_has_a_command_and_the_page_that_shows_it(row: ResultRow):
    """A result of the README is a figure, the command that reproduces it and the page that explains it, which
    shows every number of the figure (the prose moved there, and stays there)."""
    assert row.figure and row.commands and row.link, row
    path, _, anchor = row.link.partition("#")
    page = REPO / path
    assert path.startswith("docs/") and page.is_file(), f"{row.result}: no page {row.link}"
    assert not anchor or anchor in heading_anchors(page), f"{row.result}: {path} has no heading #{anchor}"
    text = page.read_text()
    missing = [figure for figure in figures(row.figure) if not shows(text, figure)]
    assert figures(row.figure) and not missing, f"{row.result}: {path} does not show {missing}"
    for command in row.commands:
        words = shlex.split(command)
        if len(words) > 1 and words[1].startswith("benchmarks/"):
            source = (REPO / words[1]).read_text()
            unknown = [word for word in words[2:] if word.startswith("--") and f'"{word}"' not in source]
            assert not unknown, f"{row.result}: {words[1]} takes no {unknown}"
        else:  # its parser reads it: test_documented_command_line_parses
            assert program_of(words), f"{row.result}: {command!r} is neither a project program nor a benchmark"


def printed_table(out: str) -> tuple[float, list[str], dict[str, list[str]]]:
    """``evaluate.py``'s output: the optimal expected score, the agents and each statistic's values by its label (an
    interval's row is its statistic's label + `` 95% CI``), up to the mean points per category."""
    lines = out.splitlines()
    optimum = float(re.search(r"optimal expected score ([\d.]+)", lines[0]).group(1))
    start = next(i for i, line in enumerate(lines) if line.startswith(" ") and line.strip())
    agents, rows, label = lines[start].split(), {}, ""
    for line in itertools.takewhile(lambda line: not line.endswith(":"), lines[start + 1 :]):
        name, *values = re.split(r"\s{2,}", line.strip())
        label = f"{label} {name}" if name == "95% CI" else name
        rows[label] = values
    return optimum, agents, rows


@pytest.mark.slow
def test_the_readme_benchmark_table_is_what_evaluate_prints(tmp_path):
    """The README's benchmark table: what its quick start's ``python evaluate.py`` prints (10,000 games)."""
    pytest.importorskip("sb3_contrib")
    done = run_script("evaluate.py", "--no-progress", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    optimum, agents, printed = printed_table(done.stdout)
    lines = README.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| | random |"))
    assert cells(lines[start])[1:] == agents
    rows = [cells(line) for line in itertools.takewhile(lambda line: line.startswith("|"), lines[start + 2 :])]
    for label, *shown in rows:
        if label.startswith("% of optimal"):
            assert number(label) == optimum
            expected = printed["% of optimal"]
        elif label.endswith(" [95% CI]"):
            name = label.removesuffix(" [95% CI]")
            pairs = zip(printed[name], printed[f"{name} 95% CI"], strict=True)
            expected = [value if ci == "[0.00, 0.00]" else f"{value} {ci}" for value, ci in pairs]
        else:
            expected = printed[label]
        assert shown == expected, label
    assert [row[0] for row in rows] == [
        "mean score [95% CI]",
        f"% of optimal ({optimum:g})",
        "mean regret / game [95% CI]",
        "Yacht rate",
    ]


# The docs site: no page under a name Sphinx writes, every page in a toctree.

#: The pages Sphinx's HTML builder writes at the top of the site beside the docs' own (sphinx/builders/html:
#: ``gen_additional_pages``, ``write_genindex``, ``write_domain_indices``; the standard domain's labels ``genindex``,
#: ``modindex`` and ``search``): a page of the docs by one of these names is lost to Sphinx's, without a warning.
SPHINX_PAGES = {"search", "genindex", "genindex-all", "py-modindex", "opensearch"}
#: The split index's pages (``html_split_index``): ``genindex-A``, ``genindex-B``, ...
SPHINX_PAGE_PREFIXES = ("genindex-",)
#: The folders it writes at the top of the site: a page under one of them would be mixed with the builder's files.
SPHINX_FOLDERS = {"_static", "_sources", "_images", "_downloads"}


def docnames() -> list[str]:
    """Sphinx's names of the docs' pages (``search-agent``, ``envs/yacht``)."""
    return [path.relative_to(DOCS).with_suffix("").as_posix() for path in markdown_files() if path != README]


def takes_a_sphinx_name(name: str) -> bool:
    return name in SPHINX_PAGES or name.startswith(SPHINX_PAGE_PREFIXES) or name.split("/")[0] in SPHINX_FOLDERS


def test_no_docs_page_takes_a_name_sphinx_writes():
    """``docs/search.md`` was overwritten by Sphinx's search page: the search agent had no page on the site."""
    assert "index" in docnames() and "search-agent" in docnames()
    taken = [name for name in docnames() if takes_a_sphinx_name(name)]
    assert not taken, f"pages named as Sphinx's own (rename them): {taken}"
    assert all(map(takes_a_sphinx_name, ["search", "genindex", "genindex-Y", "py-modindex", "_images/a"]))


def test_the_names_sphinx_writes_are_all_listed():
    """The lists above hold every name the installed Sphinx's HTML builder writes at the top of the site (where Sphinx
    is installed: the docs extra): its pages, the standard domain's page labels and every built-in domain's indices."""
    pytest.importorskip("sphinx")
    from sphinx.application import builtin_extensions
    from sphinx.builders.html import StandaloneHTMLBuilder
    from sphinx.domains import Domain
    from sphinx.domains.std import StandardDomain

    source = inspect.getsource(StandaloneHTMLBuilder)
    pages = set(re.findall(r"handle_page\(\s*'([\w-]+)'", source))
    pages |= {docname for docname, *_ in StandardDomain.initial_data["labels"].values()}
    for extension in builtin_extensions:
        if extension.startswith("sphinx.domains."):
            for domain in vars(importlib.import_module(extension)).values():
                if isinstance(domain, type) and issubclass(domain, Domain) and domain is not Domain:
                    pages |= {f"{domain.name}-{index.name}" for index in domain.indices}
    folders = set(re.findall(r"outdir\W+'(_[a-z]+)'", source))
    assert {"search", "genindex", "py-modindex"} <= pages and "_static" in folders  # the source was read
    assert all(page in SPHINX_PAGES or page.startswith(SPHINX_PAGE_PREFIXES) for page in pages), pages
    assert folders <= SPHINX_FOLDERS, folders


def toctree(path: Path) -> list[str]:
    """The pages ``path``'s toctrees list, as Sphinx names them (from the docs' root)."""
    entries = []
    for body in re.findall(r"^```\{toctree\}[^\n]*\n(.*?)^```", path.read_text(), flags=re.S | re.M):
        for line in body.splitlines():
            if line.strip() and not line.startswith(":"):
                entries.append((path.parent / line.strip()).relative_to(DOCS).as_posix())
    return entries


def test_every_page_is_reached_from_the_index():
    """Each page of docs/ is in a toctree reached from index.md (the search agent's page included), and each entry
    of a toctree is a page (or one of the API pages the build writes, ``_api/``)."""
    assert "search-agent" in toctree(DOCS / "index.md")
    reached, todo = set(), ["index"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            page = DOCS / f"{name}.md"
            todo += toctree(page) if page.is_file() else []
    assert not set(docnames()) - reached, f"pages in no toctree: {sorted(set(docnames()) - reached)}"
    stray = {name for name in reached - set(docnames()) if not name.startswith("_api/")}
    assert not stray, f"toctree entries that are no page: {sorted(stray)}"
