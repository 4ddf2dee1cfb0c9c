"""How a runtime runs its event loop: SIGTERM unwinds like Ctrl-C, and children are watched cheaply."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, stoppable by SIGTERM, with agents' exits watched through pidfds."""
    with terminate_as_interrupt():
        _watch_children_by_pidfd()
        return asyncio.run(coroutine)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt (when nobody else handles SIGTERM).

    Agents run in sessions of their own, so the default SIGTERM (die at once, no cleanup) would
    orphan them; unwinding instead runs the cleanup that kills their process groups.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _watch_children_by_pidfd() -> None:
    """Before Python 3.12 asyncio starts a thread per child process to wait for it; a debate starts
    dozens at once, and those threads sit on the critical path (docs/benchmarks-history.md). A pidfd
    watcher (Linux 5.3+) needs none. Python 3.12 and later choose it by themselves."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return
    asyncio.set_child_watcher(asyncio.PidfdChildWatcher())
