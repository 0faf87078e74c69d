"""hearth agents written with asyncio.

An asyncio agent subclasses ``AsyncAgent`` (and ``AsyncStateExporter`` if
its session can be rehydrated): the same contract as ``Agent``, with
coroutines. ``serve``, ``Harness`` and ``check_agent`` take it as they take
an ``Agent``::

    from hearth_agent import Info, Result, Task, serve
    from hearth_agent.aio import AsyncAgent, AsyncCallbacks, AsyncTools

    class Finder(AsyncAgent):
        async def describe(self) -> Info:
            return Info(name="finder", version="0.1.0", capacity=4)

        async def run(self, task: Task, cb: AsyncCallbacks) -> Result:
            tools = AsyncTools(cb)
            matches = await tools.search(".", task.prompt)
            return Result(output=f"{len(matches)} matches")

    if __name__ == "__main__":
        serve(Finder())

One event loop, in a thread of its own, runs every coroutine of the
session for its whole life: what an agent opens on it (an HTTP client, a
database pool) stays open between tasks, and up to the declared capacity
of tasks run on it at once. The host's calls (``check``, ``report``,
``progress``, a run's state) are blocking gRPC calls underneath; the
``AsyncCallbacks`` awaits them in the loop's default executor, so they
never block the loop. A task the host cancels has its coroutine cancelled:
``asyncio.CancelledError`` is raised at its next ``await``, and the task
ends as cancelled.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextvars
import logging
import os
import threading
from typing import Any, Awaitable, Callable, Mapping, Optional, TypeVar, Union

from . import errors
from .callbacks import Callbacks, RunCallbacks
from .contract import Agent, File, Info, Result, StateExporter, Task, ToolCall, ToolUse, Verdict
from .tools import ExecResult, Match, Tools
from .trace import Span

_T = TypeVar("_T")
# AsyncTools has a method named list: its annotations name these.
_Entries = list["os.DirEntry[str]"]
_Matches = list[Match]

# How often a running task's coroutine is checked against the host's
# cancellation: the sync callbacks learn of it from gRPC, not the loop.
_CANCEL_POLL = 0.05


class AsyncCallbacks:
    """The host as an asyncio agent sees it during one task: ``Callbacks``
    with every call awaited. ``RunCallbacks``' methods are here too, for a
    task of a run (``is_run``); on another task they raise NotAttachedError
    as the sync ones do."""

    def __init__(self, cb: Callbacks) -> None:
        self._cb = cb

    @property
    def sync(self) -> Callbacks:
        """The blocking callbacks underneath, for code that runs in a thread."""
        return self._cb

    @property
    def is_run(self) -> bool:
        """True for a task that belongs to a run."""
        return isinstance(self._cb, RunCallbacks)

    @property
    def task_id(self) -> str:
        return self._cb.task_id

    @property
    def cancelled(self) -> bool:
        """True once the host cancelled the task or its deadline passed."""
        return self._cb.cancelled

    @property
    def logger(self) -> logging.LoggerAdapter[logging.Logger]:
        return self._cb.logger

    def time_remaining(self) -> Optional[float]:
        return self._cb.time_remaining()

    def raise_if_cancelled(self) -> None:
        self._cb.raise_if_cancelled()

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        # In the coroutine's context: a call made inside one of the
        # agent's spans carries it (asyncio.to_thread does the same).
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(None, ctx.run, fn, *args)

    def span(self, name: str, attributes: Optional[Mapping[str, Any]] = None) -> Span:
        """Callbacks.span: ``with cb.span("plan"):`` (a plain ``with``; it does not block)."""
        return self._cb.span(name, attributes)

    async def check(self, call: ToolCall) -> Verdict:
        return await self._run(self._cb.check, call)

    async def report(self, use: ToolUse) -> None:
        await self._run(self._cb.report, use)

    async def progress(self, fraction: float, message: str = "", cost: float = 0.0) -> None:
        await self._run(self._cb.progress, fraction, message, cost)

    async def wait(self, timeout: Optional[float] = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking when the task is cancelled."""
        return await self._run(self._cb.wait, timeout)

    def _run_cb(self) -> RunCallbacks:
        if not isinstance(self._cb, RunCallbacks):
            raise errors.NotAttachedError(f"task {self._cb.task_id} is not part of a run")
        return self._cb

    async def state(self, section: str) -> Any:
        return await self._run(self._run_cb().state, section)

    async def set_state(self, section: str, value: Any) -> None:
        await self._run(self._run_cb().set_state, section, value)

    async def checkpoint(self, label: str) -> int:
        return await self._run(self._run_cb().checkpoint, label)

    async def files(self) -> list[File]:
        return await self._run(self._run_cb().files)

    async def done_chunks(self, file: str) -> list[int]:
        return await self._run(self._run_cb().done_chunks, file)

    async def mark_chunk(self, file: str, chunk: int) -> None:
        await self._run(self._run_cb().mark_chunk, file, chunk)


class AsyncTools:
    """``Tools`` with every tool awaited: each asks the host first, does the
    work and reports it, in the loop's default executor."""

    def __init__(self, cb: AsyncCallbacks, root: str = "") -> None:
        self._tools = Tools(cb.sync, root)

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        # In the coroutine's context: a call made inside one of the
        # agent's spans carries it (asyncio.to_thread does the same).
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(None, ctx.run, fn, *args)

    async def read(self, path: str) -> bytes:
        return await self._run(self._tools.read, path)

    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return await self._run(self._tools.read_text, path, encoding)

    async def write(self, path: str, data: Union[bytes, str]) -> None:
        await self._run(self._tools.write, path, data)

    async def edit(self, path: str, old: str, new: str) -> None:
        await self._run(self._tools.edit, path, old, new)

    async def list(self, dir: str) -> _Entries:
        return await self._run(self._tools.list, dir)

    async def search(self, dir: str, pattern: str, glob: str = "", max_matches: int = 0) -> _Matches:
        return await self._run(self._tools.search, dir, pattern, glob, max_matches)

    async def exec(self, name: str, *args: str, timeout: Optional[float] = None) -> ExecResult:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self._tools.exec(name, *args, timeout=timeout))


class AsyncAgent(abc.ABC):
    """The contract of an asyncio agent: ``Agent``'s, with coroutines.

    One instance serves one session; ``run`` may be awaited several times
    at once on the session's loop, up to the capacity ``describe``
    declares."""

    @abc.abstractmethod
    async def describe(self) -> Info:
        """Say who the agent is."""

    @abc.abstractmethod
    async def run(self, task: Task, cb: AsyncCallbacks) -> Result:
        """Carry out one task and return its result; ask before each tool
        use and report it (AsyncTools does both)."""


class AsyncStateExporter(abc.ABC):
    """Implemented by asyncio agents whose session can be rehydrated."""

    @abc.abstractmethod
    async def export_state(self) -> bytes:
        """Return the session's state."""

    @abc.abstractmethod
    async def import_state(self, state: bytes) -> None:
        """Restore state exported by an earlier session, before its first task."""


class _Bridge(Agent):
    """An AsyncAgent as the sync contract the server and the test kit call:
    each call runs its coroutine on the session's one loop and waits."""

    def __init__(self, agent: AsyncAgent) -> None:
        self._agent = agent
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hearth-asyncio", daemon=True)
        self._thread.start()

    def _wait(self, coro: Awaitable[_T], cb: Optional[Callbacks] = None) -> _T:
        fut: concurrent.futures.Future[_T] = asyncio.run_coroutine_threadsafe(_as_coroutine(coro), self._loop)
        while True:
            try:
                return fut.result(timeout=_CANCEL_POLL if cb is not None else None)
            except concurrent.futures.TimeoutError:
                assert cb is not None
                if cb.cancelled:
                    fut.cancel()
            except concurrent.futures.CancelledError:
                assert cb is not None
                cb.raise_if_cancelled()
                raise errors.CancelledError(f"task {cb.task_id} was cancelled")

    def describe(self) -> Info:
        return self._wait(self._agent.describe())

    def run(self, task: Task, cb: Callbacks) -> Result:
        return self._wait(self._agent.run(task, AsyncCallbacks(cb)), cb)

    def close(self) -> None:
        """Stops the session's loop, its tasks cancelled first (the test
        kit's sessions end in-process; a plugin's end with its process)."""

        async def drain() -> None:
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(drain(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class _StatefulBridge(_Bridge, StateExporter):
    def export_state(self) -> bytes:
        assert isinstance(self._agent, AsyncStateExporter)
        return self._wait(self._agent.export_state())

    def import_state(self, state: bytes) -> None:
        assert isinstance(self._agent, AsyncStateExporter)
        self._wait(self._agent.import_state(state))


async def _as_coroutine(aw: Awaitable[_T]) -> _T:
    return await aw


def as_agent(agent: Union[Agent, AsyncAgent]) -> Agent:
    """The Agent ``serve`` and the test kit run for agent: itself, or an
    AsyncAgent bridged onto a loop of its own."""
    if isinstance(agent, AsyncAgent):
        return _StatefulBridge(agent) if isinstance(agent, AsyncStateExporter) else _Bridge(agent)
    return agent
