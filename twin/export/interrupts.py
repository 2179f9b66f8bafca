"""Interrupts and writes: a signal never cuts a flush or the final write in half.

Two pieces:

- :func:`deferred_signals` holds SIGINT and SIGTERM while a block runs (a Zarr flush, the final
  write) and delivers them, in order, to the handlers that were there before once it ends.
- :class:`StopRequests` is the handler of a whole command: while *armed* (the run is stepping) a
  signal raises :class:`KeyboardInterrupt` at once; once disarmed (the final write) it is only
  recorded, and the command honours it after the write.

Both act only in the main thread (where Python delivers signals); elsewhere they do nothing, so
the same writers work in Dask workers and server threads.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

#: The signals that ask a run to stop.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _deliver(signum: int, handler) -> None:
    """Hand a held signal to ``handler`` as the kernel would have."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_IGN:
        return
    elif signum == signal.SIGINT:  # SIG_DFL for SIGINT in Python: KeyboardInterrupt
        raise KeyboardInterrupt
    else:  # default action (terminate): deliver it again now that nobody holds it
        os.kill(os.getpid(), signum)


@contextlib.contextmanager
def deferred_signals(signums=STOP_SIGNALS):
    """Hold ``signums`` while the block runs; deliver them afterwards.

    Yields the list of signals received so far (it fills while the block runs), so the block can
    note that a stop was asked for (e.g. mark a result ``interrupted``). Nested blocks deliver
    to the outer one, which delivers when it ends. Outside the main thread this does nothing.
    """
    received: list[int] = []
    if not _in_main_thread():
        yield received
        return

    def hold(signum, frame):
        received.append(signum)

    previous = {}
    try:
        for s in signums:
            previous[s] = signal.signal(s, hold)
        yield received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(received):
            _deliver(s, previous.get(s, signal.SIG_DFL))


class StopRequests:
    """SIGINT/SIGTERM handler of a command that runs, then writes.

    Use as a context manager around the whole command. While :attr:`armed` a signal raises
    :class:`KeyboardInterrupt` (the driver stops after its current step, keeping what was
    recorded); after :meth:`disarm` signals are only counted in :attr:`received`, so the final
    write completes and the command then exits as interrupted.
    """

    def __init__(self):
        self.armed = True
        self.received: list[int] = []
        self._previous: dict = {}

    def __enter__(self):
        if _in_main_thread():
            for s in STOP_SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
        return False

    def _handle(self, signum, frame):
        self.received.append(signum)
        if self.armed:
            raise KeyboardInterrupt

    def disarm(self) -> None:
        """From now on only record signals."""
        self.armed = False

    @property
    def requested(self) -> bool:
        """A stop was asked for."""
        return bool(self.received)
