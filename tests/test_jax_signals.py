"""Signals during a JAX run's start-up: whenever SIGTERM comes (an import, JAX's garbage-collection callback, the
run context's steps, a compilation), ``train.py`` ends in one line with status 143 and leaves no run folder. Skipped
without jax.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("optax")
pytest.importorskip("gymnax")

from helpers import TINY_PPO, merged, write_config  # noqa: E402

TINY_JAX = merged(TINY_PPO, {"jax": {"seeds": 2}})  # test_jax_ppo.py's tiny run

# Runs train.py as `python train.py ARGS` would, with SIGTERM sent to the process at one moment of its start-up:
# "import:M" when module M is first imported, "gc" inside JAX's first garbage-collection callback once train.py handles
# SIGTERM (where an exception a handler raises is swallowed), "call:MODULE:NAME" at the start of that function.
SIGTERM_AT = """
import gc, importlib, os, runpy, signal, sys, threading

moment, sys.argv = sys.argv[1], sys.argv[2:]


def kill():
    os.kill(os.getpid(), signal.SIGTERM)


if moment.startswith("import:"):
    class At:
        def find_spec(self, name, path=None, target=None):
            if name == moment[len("import:"):]:
                sys.meta_path.remove(self)
                kill()
            return None

    sys.meta_path.insert(0, At())
elif moment == "gc":
    import jax  # registers its callback
    gc.set_threshold(50)  # collections all through start-up, the script's own imports included
    (index,) = [i for i, f in enumerate(gc.callbacks) if f.__name__ == "_xla_gc_callback"]
    original = gc.callbacks[index]

    def once(*args):
        # Armed once train.py handles SIGTERM: a collection can come while the script itself is still being imported,
        # before any program can, where the signal's default ends the process (-15) whatever the program does.
        armed = signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)
        if armed and threading.current_thread() is threading.main_thread() and gc.callbacks[index] is once:
            gc.callbacks[index] = original
            kill()  # the handler runs here, inside the callback
        original(*args)

    gc.callbacks[index] = once
else:
    _, module, name = moment.split(":")
    owner = importlib.import_module(module)
    real = getattr(owner, name)

    def first_killed(*args, **kwargs):
        kill()
        return real(*args, **kwargs)

    setattr(owner, name, first_killed)
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize(
    "moment",
    [
        "import:jax",
        "gc",
        "call:yacht_lab.training.run_context:claim_run_folder",
        "call:yacht_lab.training.jax.ppo:make_trainer",
        "call:yacht_lab.training.jax.ppo:start_params",
        pytest.param("import:optax", marks=pytest.mark.slow),
        pytest.param("call:yacht_lab.training.jax.ppo:check_memory", marks=pytest.mark.slow),
    ],
)
def test_sigterm_during_a_jax_runs_start_up_ends_it_in_one_line_exit_143(tmp_path, moment):
    config = write_config(tmp_path / "c.yaml", merged(TINY_JAX, {"jax": {"seeds": 1}}))
    args = ["--config", str(config), "--output-dir", str(tmp_path / "runs"), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", SIGTERM_AT, moment, "train.py", *args],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode, done.stdout) == (143, ""), done.stderr
    # At a safe point, or by the watchdog when none comes within two seconds (compiling): the same line.
    assert done.stderr == "train.py: interrupted (SIGTERM): quit at once, without saving\n"
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())
