"""Tests of hearth_agent.aio: asyncio agents, in-process over the real protocol."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import threading
import unittest

from hearth_agent import CancelledError, Denied, Info, Result, Task
from hearth_agent.aio import AsyncAgent, AsyncCallbacks, AsyncStateExporter, AsyncTools
from hearth_agent.testing import Harness, check_agent, deny_all


class AsyncFinder(AsyncAgent, AsyncStateExporter):
    """Reads the files its prompt names and counts its tasks, on one loop;
    "gather:N" waits until N tasks are on the loop at once; "sleep" waits
    for its cancellation."""

    def __init__(self, root: str, capacity: int = 1) -> None:
        self.root = root
        self.capacity = capacity
        self.tasks = 0
        self.loops: set[int] = set()
        self._in = 0
        self._all: asyncio.Event | None = None

    async def describe(self) -> Info:
        return Info(name="async-finder", version="0.1.0", capacity=self.capacity)

    async def run(self, task: Task, cb: AsyncCallbacks) -> Result:
        self.tasks += 1
        self.loops.add(id(asyncio.get_running_loop()))
        tools = AsyncTools(cb, self.root)
        out = []
        for step in task.prompt.split(";"):
            verb, _, arg = step.partition(":")
            if verb == "read":
                try:
                    out.append((await tools.read_text(arg)).strip())
                except Denied as e:
                    out.append(f"denied: {e.reason}")
            elif verb == "gather":
                if self._all is None:
                    self._all = asyncio.Event()
                self._in += 1
                if self._in == int(arg):
                    self._all.set()
                await asyncio.wait_for(self._all.wait(), 5)
                out.append("together")
            elif verb == "sleep":
                await asyncio.sleep(60)
        return Result(output=" ".join(out))

    async def export_state(self) -> bytes:
        return json.dumps({"tasks": self.tasks}).encode()

    async def import_state(self, state: bytes) -> None:
        self.tasks = json.loads(state)["tasks"]


class AsyncAgentTest(unittest.TestCase):
    def setUp(self) -> None:
        self.root = tempfile.mkdtemp()
        with open(os.path.join(self.root, "a.txt"), "w") as f:
            f.write("alpha\n")

    def test_runs_and_reports_through_the_host(self) -> None:
        with Harness(AsyncFinder(self.root)) as h:
            res = h.run(Task(id="t1", prompt="read:a.txt"))
            self.assertEqual(res.output, "alpha")
            uses = h.recorder.tool_uses("t1")
            self.assertEqual([(u.tool, u.paths, u.outcome.name) for u in uses], [("Read", ["a.txt"], "OK")])
        with Harness(AsyncFinder(self.root), policy=deny_all) as h:
            self.assertTrue(h.run(Task(id="t2", prompt="read:a.txt")).output.startswith("denied: "))

    def test_tasks_share_one_loop_at_once(self) -> None:
        agent = AsyncFinder(self.root, capacity=4)
        with Harness(agent) as h:
            results: list[str] = []
            threads = [threading.Thread(target=lambda i=i: results.append(h.run(Task(id=f"g{i}", prompt="gather:4")).output)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(results, ["together"] * 4)
            self.assertEqual(len(agent.loops), 1)

    def test_cancellation_cancels_the_coroutine(self) -> None:
        with Harness(AsyncFinder(self.root)) as h:
            with self.assertRaises(CancelledError):
                h.run(Task(id="t3", prompt="sleep"), timeout=0.5)

    def test_state_round_trips(self) -> None:
        with Harness(AsyncFinder(self.root)) as h:
            h.run(Task(id="t4", prompt="read:a.txt"))
            state = h.export_state()
        fresh = AsyncFinder(self.root)
        with Harness(fresh) as h:
            h.import_state(state)
            self.assertEqual(fresh.tasks, 1)

    def test_keeps_the_contract(self) -> None:
        check_agent(lambda: AsyncFinder(self.root, capacity=2), [Task(id="", prompt="read:a.txt")])


if __name__ == "__main__":
    unittest.main()
