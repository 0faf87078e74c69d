"""An asyncio Python agent for the Go tests: it reads the files its task
names (hearth_agent.aio.AsyncTools), keeps count of what it read as its
session's state, and answers with their sizes; a denied read is said in
the answer, not retried."""

from __future__ import annotations

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hearth_agent import Denied, Info, Result, Task, serve  # noqa: E402
from hearth_agent.aio import AsyncAgent, AsyncCallbacks, AsyncStateExporter, AsyncTools  # noqa: E402


class Reader(AsyncAgent, AsyncStateExporter):
    def __init__(self) -> None:
        self.read: set[str] = set()

    async def describe(self) -> Info:
        return Info(name="async-reader", version="0.1.0", capacity=2)

    async def run(self, task: Task, cb: AsyncCallbacks) -> Result:
        tools = AsyncTools(cb)

        async def one(path: str) -> str:
            try:
                data = await tools.read(path)
            except Denied as e:
                return f"{path}: denied ({e.reason})"
            self.read.add(path)
            return f"{path}: {len(data)} bytes"

        # The files are read at once, on the session's loop.
        lines = await asyncio.gather(*(one(f) for f in task.hints.files))
        return Result(output="\n".join(lines))

    async def export_state(self) -> bytes:
        return json.dumps(sorted(self.read)).encode()

    async def import_state(self, state: bytes) -> None:
        self.read = set(json.loads(state))


if __name__ == "__main__":
    serve(Reader())
