"""The lag monitor's native watchdog (src/lagwatch.rs) on its own: it calls a thread
that waits for events idle and never asks it anything, asks a busy one to turn, and
reports one that neither waits nor answers, once per stall."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from veter._core import LagWatch


def wait_until(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def watch_threads() -> int:
    """Native watchdog threads alive in this process (they are not Python threads)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    return names.count("veter-lag-watch")


def wchan(tid: int) -> str:
    """Where the thread sleeps in the kernel ("do_epoll_wait"), or "0"."""
    with open(f"/proc/self/task/{tid}/wchan") as file:
        return file.read()


linux_only = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/task/<tid>/syscall")


@contextmanager
def thread_doing(work: Callable[[threading.Event], None]) -> Iterator[int]:
    """Runs ``work(stop)`` in a thread; yields the thread's native id."""
    stop = threading.Event()
    started = threading.Event()
    ident: list[int] = []

    def run() -> None:
        ident.append(threading.get_native_id())
        started.set()
        work(stop)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(5)
    try:
        yield ident[0]
    finally:
        stop.set()
        thread.join(5)


@contextmanager
def waiting_in_epoll() -> Iterator[int]:
    """A thread waiting in epoll_wait until the context ends (an idle loop); its id."""
    wake_r, wake_w = os.pipe()

    def wait(stop: threading.Event) -> None:
        poller = select.epoll()
        poller.register(wake_r, select.EPOLLIN)
        try:
            poller.poll()  # until woken: never out of the wait while watched
        finally:
            poller.close()

    try:
        with thread_doing(wait) as tid:
            try:
                wait_until(lambda: "epoll" in wchan(tid), timeout=5)
                yield tid
            finally:
                os.write(wake_w, b"x")
    finally:
        os.close(wake_r)
        os.close(wake_w)


def sleeping(stop: threading.Event) -> None:
    while not stop.is_set():
        time.sleep(0.01)


@linux_only
def test_an_idle_loop_is_neither_asked_nor_reported() -> None:
    stalls: list[float] = []
    with waiting_in_epoll() as tid:
        watch = LagWatch(0.1, 0.02, tid, stalls.append)
        try:
            time.sleep(0.4)  # twenty periods of watching an idle thread
        finally:
            watch.stop()
    assert stalls == []
    assert watch.pings == 0


def test_a_blocked_loop_is_reported_once_per_stall() -> None:
    stalls: list[float] = []
    with thread_doing(sleeping) as tid:
        watch = LagWatch(0.1, 0.02, tid, stalls.append)
        try:
            wait_until(lambda: len(stalls) == 1, timeout=5)
            time.sleep(0.2)  # still blocked: no second report
        finally:
            watch.stop()
    assert len(stalls) == 1
    assert stalls[0] >= 0.1
    assert watch.pings == 1


def test_a_busy_loop_that_answers_is_not_reported() -> None:
    stalls: list[float] = []
    with thread_doing(sleeping) as tid:
        watch = LagWatch(0.1, 0.02, tid, stalls.append)
        fd = watch.fileno()
        try:

            def answer_pings(stop: threading.Event) -> None:
                poller = select.poll()
                poller.register(fd, select.POLLIN)
                while not stop.is_set():
                    if poller.poll(10):
                        watch.answer()

            with thread_doing(answer_pings):
                wait_until(lambda: watch.pings >= 5, timeout=5)
        finally:
            watch.stop()
    assert stalls == []


@linux_only
def test_stopping_closes_its_socket_and_its_thread() -> None:
    before = watch_threads()
    watch = LagWatch(0.1, 0.02, threading.get_native_id(), lambda stalled: None)
    fd = watch.fileno()
    wait_until(lambda: watch_threads() == before + 1, timeout=5)  # it names itself once running
    watch.stop()
    watch.stop()  # twice is fine
    watch.answer()  # after stopping: nothing to read, no error
    with pytest.raises(OSError, match="Bad file descriptor"):
        select.select([fd], [], [], 0)
    assert watch_threads() == before


@pytest.mark.parametrize(("threshold", "period"), [(0, 0.1), (0.1, 0), (-1, 0.1), (float("inf"), 0.1)])
def test_bad_timings_are_refused(threshold: float, period: float) -> None:
    with pytest.raises(ValueError, match="positive seconds"):
        LagWatch(threshold, period, 1, lambda stalled: None)
