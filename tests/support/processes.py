"""Looking at and freezing child processes through /proc, for the signal tests.

A test that signals a process "while it is busy" freezes it first (SIGSTOP) at a point it can
observe, sends the signal, then continues it (SIGCONT): the signal then always lands at that
point, however fast the machine is. Sleeping and hoping the process is still busy is how the
earlier signal tests came to skip, or fail, on a faster machine.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path


def workers_of(pid: int) -> set[int]:
    """The pids of ``pid``'s children (empty once it has ended)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return {int(c) for c in path.read_text().split()}
    except OSError:  # the process has ended
        return set()


def state_of(pid: int) -> str:
    """The one-letter state in ``/proc/PID/stat`` ("" once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


def send_each(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:  # it has ended
            pass


def catches(pid: int, signum: int) -> bool:
    """Whether ``pid`` has a handler installed for ``signum`` (the SigCgt mask of /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def wait_stopped(pids: set[int], timeout: float = 5.0) -> bool:
    """Wait until every pid is stopped (SIGSTOP takes effect asynchronously)."""
    until = time.time() + timeout
    while time.time() < until:
        if all(state_of(pid) in ("t", "T") for pid in pids):
            return True
        time.sleep(0.002)
    return False


def freeze_when(pid: int, ready: Callable[[], bool], timeout: float = 90.0) -> bool:
    """Poll ``ready()`` tightly; the moment it holds, stop ``pid``. False if it never held.

    The caller checks afterwards that the process is still alive and ``ready()`` still holds:
    the window between the poll and the stop is microseconds, against runs of a second or more.
    """
    deadline = time.time() + timeout
    while time.time() < deadline and state_of(pid) not in ("", "Z"):
        if ready():
            os.kill(pid, signal.SIGSTOP)
            return wait_stopped({pid})
        time.sleep(0.0005)
    return False
