"""Ctrl-C (SIGINT) and SIGTERM in a training process: handlers that only take note, acted on at safe points.

Python runs a signal's handler between two bytecodes of the main thread, wherever it is: inside an import, or inside
a garbage-collection callback (JAX registers one, ``jax._src.lib._xla_gc_callback``), where an exception raised by the
handler is printed as "Exception ignored" and swallowed, so the signal is lost and the run goes on. So the handlers
here only take note (:class:`StopFlag`), and the process acts on the note where that is safe: :meth:`StopFlag.check`,
which the run context calls between the steps of a run (and ``train.py`` between its own), raises :class:`Abort`
there. A signal that must end the process at once and is not acted on within :attr:`StopFlag.GRACE` seconds (the main
thread is inside a long native call: a compilation, a compiled update, an import) is acted on by a watchdog thread,
which ends the process with one line.

Only the standard library is imported: ``train.py`` takes the signals with it before it imports the project.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from typing import Any

__all__ = ["Abort", "StopFlag"]

#: What the watchdog prints by default when it ends the process (``name``: the signal's).
LONG_CALL_LINE = "interrupted ({name}) inside a long call: quit at once, without saving"


class Abort(KeyboardInterrupt):
    """SIGINT or SIGTERM that stops at once, without saving: one before training starts, or a second one."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StopFlag:
    """SIGINT/SIGTERM handling of a run (or a whole ``train.py``), for the length of a ``with`` block.

    The handlers only take note. Before :meth:`arm` (the model is being built: nothing worth saving yet) a signal is an
    abort; once armed, the first signal only sets :attr:`requested` (and :attr:`signum`), which the trainer polls
    between updates, so that an update is never cut and the run saves a checkpoint, and a second one is an abort. An
    abort is raised as :class:`Abort` by :meth:`check`, at the next safe point (the atomic writes leave no half-written
    file behind).

    A watchdog thread sees every signal too (through :func:`signal.set_wakeup_fd`); when an abort has not been raised
    within :data:`GRACE` seconds (the main thread is inside one long native call, or between two safe points far
    apart), it calls ``on_abort``, prints one line (``line``, formatted with the signal's ``name``) and ends the process
    with status 128 + the signal's number (130, 143).

    Args:
        on_abort: Called by the watchdog before it ends the process (a run that never started removes its folder).
        line: What the watchdog prints, ``{name}`` the signal's name (default: the line of the flag this one is entered
            inside, ``train.py``'s in a run it starts, or :data:`LONG_CALL_LINE`).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    #: Seconds the main thread has to raise an abort at a safe point before the watchdog ends the process.
    GRACE = 2.0
    #: The flags whose handlers the main thread entered, innermost last (``train.py``'s, then its run's): an abort noted
    #: by an outer one before the inner was entered is raised at the inner one's safe points too.
    _stack: list[StopFlag] = []
    #: Held while an abort is raised or the process ended, so that only one of the two happens.
    _lock = threading.Lock()
    _ending = False

    def __init__(self, on_abort=None, line: str | None = None) -> None:
        self.requested = False
        self.armed = False
        #: The signal that asked the run to stop (``None``: none did).
        self.signum: int | None = None
        #: The signal of an abort not raised yet (``None``: none).
        self.aborting: int | None = None
        self._on_abort, self._line = on_abort, line
        self._previous: dict[int, Any] = {}
        self._wakeup: tuple[Any, Any, int] | None = None
        self._done = threading.Event()  # an abort raised, or the block left: the watchdog has nothing to do

    def __enter__(self) -> StopFlag:
        # Signal handlers belong to the main thread; elsewhere (a Ray Tune trial runs train() in a thread of its
        # worker) the owner of the thread stops the run, and nothing is installed.
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
            if self._line is None:
                self._line = StopFlag._stack[-1]._line if StopFlag._stack else LONG_CALL_LINE
            self._watch()
            StopFlag._stack.append(self)
        return self

    def arm(self) -> None:
        """From now on a first signal only asks to stop (training has started)."""
        self.armed = True

    def _handle(self, signum: int, frame) -> None:
        # Only take note: this may run inside an import or a garbage-collection callback (module docstring).
        if not self.armed or self.requested:
            if self.aborting is None:
                self.aborting = signum
        else:
            self.requested, self.signum = True, signum

    def check(self) -> None:
        """A safe point: raises the abort a signal asked for, if any.

        Raises:
            Abort: a signal before :meth:`arm`, or a second one.
        """
        flags = [self, *(flag for flag in reversed(StopFlag._stack) if flag is not self)]
        signum = next((flag.aborting for flag in flags if flag.aborting is not None), None)
        if signum is None:
            return
        with StopFlag._lock:
            ending = StopFlag._ending
            for flag in flags:
                flag._done.set()
        if ending:  # a watchdog is ending the process this very moment: let it
            threading.Event().wait()
        raise Abort(signum)

    def _watch(self) -> None:
        """Starts the watchdog (class docstring) on a socket that receives each signal's number."""
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        try:
            previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError):  # no wakeup descriptor here: the handlers alone
            reader.close()
            writer.close()
            return
        self._wakeup = (reader, writer, previous)
        threading.Thread(target=self._watchdog, args=(reader,), name="yacht-lab-stop-watchdog", daemon=True).start()

    def _watchdog(self, reader) -> None:
        seen = 0
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data or self._done.is_set():
                return
            for signum in data:
                if signum not in self.SIGNALS:
                    continue
                seen += 1
                if (seen >= 2 or not self.armed) and not self._done.wait(self.GRACE):
                    with StopFlag._lock:
                        if self._done.is_set():
                            return
                        StopFlag._ending = True
                    self._end_process(signum)

    def _end_process(self, signum: int) -> None:
        for flag in reversed(StopFlag._stack):  # the innermost first: a run that never started removes its folder
            if flag._on_abort is not None:
                with contextlib.suppress(Exception):
                    flag._on_abort()
        print((self._line or LONG_CALL_LINE).format(name=signal.Signals(signum).name), file=sys.stderr, flush=True)
        os._exit(128 + signum)

    def __exit__(self, *exc) -> None:
        with StopFlag._lock:
            self._done.set()
        if self in StopFlag._stack:
            StopFlag._stack.remove(self)
        if self._wakeup is not None:
            reader, writer, previous = self._wakeup
            with contextlib.suppress(ValueError, OSError):
                signal.set_wakeup_fd(previous)
            writer.close()
            reader.close()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
