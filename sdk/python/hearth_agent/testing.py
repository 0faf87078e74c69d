"""A test kit for Python agent authors, in the spirit of the Go SDK's sdktest.

``Harness`` serves an agent in this process over the real protocol (the
same gRPC services, broker and SDK code that carry a plugin process) and
plays the host with a ``Recorder``, which answers the agent's tool
questions with a policy and records every question and report.
``check_agent`` runs the conformance checks, under the names Go's
sdktest.Checks gives them, from pytest or unittest::

    import unittest
    from hearth_agent import Task
    from hearth_agent.testing import Harness, check_agent

    class FinderTest(unittest.TestCase):
        def test_contract(self) -> None:
            check_agent(Finder, [Task(id="", prompt="TODO")])

        def test_search(self) -> None:
            with Harness(Finder()) as h:
                res = h.run(Task(id="t1", prompt="TODO"))
                self.assertIn("TODO", res.output)
                self.assertEqual(h.recorder.tool_uses("t1")[0].tool, "Search")

The checks that need a plugin process (shutdown, host crash) run with
``hearth agents test -- python3 agent.py``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import grpc

from . import _wire, errors
from ._pb import agent_pb2 as pb
from ._pb import grpc_broker_pb2
from ._services import AgentService, Broker, Stdio, handlers
from .aio import AsyncAgent, _Bridge, as_agent
from .contract import Agent, ContextArtifact, Info, Result, Task, ToolCall, ToolUse, Upstream, Verdict
from .callbacks import new_id

# The harness's logger when none is given: the agent's log lines are dropped,
# as sdktest's null logger drops them.
_quiet = logging.getLogger("hearth_agent.testing")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False

Policy = Callable[[str, ToolCall], Verdict]
"""Answers a task's tool question: (task ID, call) -> Verdict."""


def allow_all(task_id: str, call: ToolCall) -> Verdict:
    """The policy that allows every tool use."""
    return Verdict(allow=True)


def deny_all(task_id: str, call: ToolCall) -> Verdict:
    """The policy that denies every tool use, as a guard would."""
    return Verdict(allow=False, guard="sdktest-deny-all", reason=f"sdktest denies every tool use: {call.tool}")


@dataclass
class Entry:
    """One question or report of a task, in arrival order: one of call, use is set."""

    call: Optional[ToolCall] = None
    verdict: Optional[Verdict] = None
    use: Optional[ToolUse] = None


class Recorder:
    """A host that records what agents ask and report, per task. Thread-safe."""

    def __init__(self, policy: Optional[Policy] = None) -> None:
        self._policy = policy or allow_all
        self._lock = threading.Lock()
        self._log: dict[str, list[Entry]] = {}
        self._progress: dict[str, list[tuple[float, str, float]]] = {}
        # Called with each question before it is answered: the
        # cancellation check holds one with it.
        self._hold: Optional[Callable[[str, grpc.ServicerContext], None]] = None

    def set_policy(self, policy: Optional[Policy]) -> None:
        """Answer later questions with ``policy`` (None allows all)."""
        with self._lock:
            self._policy = policy or allow_all

    def log(self, task_id: str) -> list[Entry]:
        """The task's questions and reports in the order they arrived."""
        with self._lock:
            return list(self._log.get(task_id, []))

    def tool_uses(self, task_id: str) -> list[ToolUse]:
        """The tool uses reported for a task."""
        return [e.use for e in self.log(task_id) if e.use is not None]

    def calls(self, task_id: str) -> list[tuple[ToolCall, Verdict]]:
        """The task's questions and their answers."""
        return [(e.call, e.verdict) for e in self.log(task_id) if e.call is not None and e.verdict is not None]

    def progress(self, task_id: str) -> list[tuple[float, str, float]]:
        """The task's progress reports: (fraction, message, cost)."""
        with self._lock:
            return list(self._progress.get(task_id, []))

    # The Host service, as the host serves it on the broker connection.

    def _check(self, m: pb.ToolCall, context: grpc.ServicerContext) -> pb.Verdict:
        call = _wire.tool_call_from_wire(m)
        with self._lock:
            policy, hold = self._policy, self._hold
        if hold is not None:
            hold(m.task_id, context)
        v = policy(m.task_id, call)
        with self._lock:
            self._log.setdefault(m.task_id, []).append(Entry(call=call, verdict=v))
        return pb.Verdict(allow=v.allow, reason=v.reason, guard=v.guard)

    def _tool_uses(self, requests: Iterator[pb.ToolUse], context: grpc.ServicerContext) -> pb.ToolUsesAck:
        n = 0
        for m in requests:
            if m.outcome == pb.OUTCOME_UNSPECIFIED:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f'tool use "{m.tool}" of task {m.task_id} has no outcome (OUTCOME_UNSPECIFIED): every report says how its tool use ended',
                )
            with self._lock:
                self._log.setdefault(m.task_id, []).append(Entry(use=_wire.tool_use_from_wire(m)))
            n += 1
        return pb.ToolUsesAck(count=n)

    def _progress_report(self, m: pb.ProgressReport, context: grpc.ServicerContext) -> pb.ProgressAck:
        with self._lock:
            self._progress.setdefault(m.task_id, []).append((m.fraction, m.message, m.cost))
        return pb.ProgressAck()

    def _not_in_run(self, m: object, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the recorder runs no runs: run calls are for a task whose run is set")

    def _handler(self) -> grpc.GenericRpcHandler:
        def unary(fn: Callable[..., object], req: type, resp: type) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)  # type: ignore[attr-defined]

        return grpc.method_handlers_generic_handler(
            "hearth.agent.v1.Host",
            {
                "CheckToolUse": unary(self._check, pb.ToolCall, pb.Verdict),
                "Progress": unary(self._progress_report, pb.ProgressReport, pb.ProgressAck),
                "ToolUses": grpc.stream_unary_rpc_method_handler(
                    self._tool_uses, request_deserializer=pb.ToolUse.FromString, response_serializer=pb.ToolUsesAck.SerializeToString
                ),
                "GetState": unary(self._not_in_run, pb.StateRequest, pb.StateValue),
                "SetState": unary(self._not_in_run, pb.StateValue, pb.StateAck),
                "Checkpoint": unary(self._not_in_run, pb.CheckpointRequest, pb.CheckpointAck),
                "Files": unary(self._not_in_run, pb.FilesRequest, pb.FileList),
                "Chunks": unary(self._not_in_run, pb.ChunksRequest, pb.ChunkList),
                "MarkChunk": unary(self._not_in_run, pb.ChunkMark, pb.ChunkAck),
            },
        )


class Harness:
    """An agent served in this process over the real protocol, with a Recorder as its host.

    Use it as a context manager, or call close().
    """

    def __init__(self, agent: Union[Agent, AsyncAgent], policy: Optional[Policy] = None, logger: Optional[logging.Logger] = None) -> None:
        agent = as_agent(agent)
        self._agent = agent
        self.recorder = Recorder(policy)
        self.session = new_id("session")
        self._dir = tempfile.mkdtemp(prefix="hearth-harness-")
        agent_sock = os.path.join(self._dir, "agent")
        host_sock = os.path.join(self._dir, "host")
        log = logger or _quiet
        self._broker = Broker(None)
        self._service = AgentService(agent, self._broker, log)
        self._agent_server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="harness-agent"))
        for h in handlers(self._service, self._broker, Stdio(), lambda: None):
            self._agent_server.add_generic_rpc_handlers((h,))
        self._agent_server.add_insecure_port("unix:" + agent_sock)
        self._host_server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="harness-host"))
        self._host_server.add_generic_rpc_handlers((self.recorder._handler(),))
        self._host_server.add_insecure_port("unix:" + host_sock)
        self._agent_server.start()
        self._host_server.start()
        self._channel = grpc.insecure_channel("unix:" + agent_sock)
        # The host names its callbacks' connection on the broker, as a
        # hearth host does, and attaches.
        self._broker.offer(grpc_broker_pb2.ConnInfo(service_id=1, network="unix", address=host_sock))

        def unary(name: str, req: type, resp: type) -> grpc.UnaryUnaryMultiCallable:
            return self._channel.unary_unary(
                f"/hearth.agent.v1.Agent/{name}",
                request_serializer=req.SerializeToString,  # type: ignore[attr-defined]
                response_deserializer=resp.FromString,  # type: ignore[attr-defined]
            )

        self._describe = unary("Describe", pb.DescribeRequest, pb.Info)
        self._attach = unary("Attach", pb.AttachRequest, pb.AttachResponse)
        self._run = unary("Run", pb.RunRequest, pb.RunResponse)
        self._export = unary("ExportState", pb.ExportStateRequest, pb.SessionState)
        self._import = unary("ImportState", pb.SessionState, pb.ImportStateResponse)
        self._call("attach", self._attach, pb.AttachRequest(host_broker_id=1, session_id=self.session), 30.0)
        self.exports_state = self._call("describe", self._describe, pb.DescribeRequest(), 30.0).exports_state

    def _call(self, op: str, method: grpc.UnaryUnaryMultiCallable, req: object, timeout: Optional[float]) -> Any:
        try:
            return method(req, timeout=timeout)
        except grpc.RpcError as e:
            raise _wire.error_from_status(op, e.code(), e.details() or "", state_call=op.endswith(" state")) from None

    def describe(self, timeout: float = 30.0) -> Info:
        """The agent's Describe, over the wire."""
        return _wire.info_from_wire(self._call("describe", self._describe, pb.DescribeRequest(), timeout))

    def run(self, task: Task, timeout: Optional[float] = 30.0, cancel: Optional[threading.Event] = None) -> Result:
        """Run ``task`` on the agent. An empty task ID or session is filled in.

        Setting ``cancel`` cancels the call, as a host cancels a task.
        Failures raise the SDK's errors (PermanentError, CancelledError, ...).
        """
        if not task.id:
            task = replace(task, id=new_id("task"))
        if not task.session:
            task = replace(task, session=self.session)
        req = pb.RunRequest(task=_wire.task_to_wire(task))
        fut = self._run.future(req, timeout=timeout)
        if cancel is not None:
            ev = cancel

            def cancel_when_set() -> None:
                # Ends with the call, cancelled or not.
                while not ev.wait(0.05):
                    if fut.done():
                        return
                fut.cancel()

            threading.Thread(target=cancel_when_set, daemon=True).start()
        try:
            return _wire.result_from_wire(fut.result())
        except grpc.FutureCancelledError:
            raise errors.CancelledError(f"run task {task.id}: cancelled") from None
        except grpc.RpcError as e:
            raise _wire.error_from_status(f"run task {task.id}", e.code(), e.details() or "") from None

    def export_state(self, timeout: float = 30.0) -> bytes:
        m = self._call("export state", self._export, pb.ExportStateRequest(), timeout)
        return bytes(m.data)

    def import_state(self, state: bytes, timeout: float = 30.0) -> None:
        self._call("import state", self._import, pb.SessionState(data=state), timeout)

    def close(self) -> None:
        """Disconnect and stop the agent's and the recorder's servers."""
        self._channel.close()
        self._service.close()
        self._agent_server.stop(None).wait()
        self._host_server.stop(None).wait()
        if isinstance(self._agent, _Bridge):
            self._agent.close()  # an asyncio agent's loop
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "Harness":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class CheckResult:
    """One check's outcome: it passed when ``errors`` is empty."""

    name: str
    description: str
    errors: list[str] = field(default_factory=list)


class ConformanceError(AssertionError):
    """Raised by check_agent: lists every violation, by check."""

    def __init__(self, agent: str, results: Sequence[CheckResult]) -> None:
        lines = [f"agent {agent!r} breaks the hearth agent contract:"]
        for r in results:
            for e in r.errors:
                lines.append(f"  {r.name}: {e}")
        super().__init__("\n".join(lines))
        self.results = list(results)


CALL_LIMIT = 30.0
CANCEL_LIMIT = 5.0

_UPSTREAM = [
    Upstream(
        task="earlier",
        version=1,
        session="session-sdktest",
        artifact=ContextArtifact(
            key_decisions=["Used the standard library only."],
            modified_files=["notes.md"],
            potential_gotchas=['# headings and "quotes" in context must not confuse the agent'],
        ),
    )
]
_CONTEXT = (
    '# Context from Previous Steps\nThe following context was learned from the "earlier" session:\n\n'
    "- **Key Decision:** Used the standard library only.\n- **Modified:** notes.md\n\n*Use this knowledge to maintain consistency.*\n"
)
_FEEDBACK = "The evaluate step's quality gate sent this work back: say more."


def _same_call(c: ToolCall, u: ToolUse) -> bool:
    if c.call_id and c.call_id == u.call_id:
        return True
    return c.tool == u.tool and sorted(c.paths) == sorted(u.paths)


def _describe_task(t: Task) -> str:
    if t.name:
        return t.name
    p = t.prompt if len(t.prompt) <= 40 else t.prompt[:40] + "..."
    return repr(p)


_NO_TOOL_USE = (
    "could not run: no task used a tool, so {} was never seen; give tasks that make the agent use one "
    "(tasks that name files or directories: hearth agents test without --task, --file and --dir makes such tasks over files of its own)"
)


def run_checks(new_agent: Callable[[], Union[Agent, AsyncAgent]], tasks: Sequence[Task]) -> tuple[str, list[CheckResult]]:
    """Runs the conformance checks; returns the agent's name and each check's result.

    The checks and their names are Go's sdktest.Checks that apply in-process:
    Describe, tasks, context beside the prompt, asks first, denied tool
    uses, cancelled context, concurrent tasks, state.
    """
    if not tasks:
        raise ValueError("check_agent needs at least one task the agent should complete")
    with Harness(new_agent()) as h:
        info = h.describe()
        exports = h.exports_state
    results: list[CheckResult] = []

    def check(name: str, description: str) -> CheckResult:
        r = CheckResult(name, description)
        results.append(r)
        return r

    # Describe
    r = check("Describe", "Describe names the agent (one word) and its version, and declares a capacity of 0 or more.")
    if not info.name:
        r.errors.append("Info.name is empty; name the agent")
    elif any(c.isspace() for c in info.name):
        r.errors.append(f"Info.name {info.name!r} contains whitespace; use a single word such as {'-'.join(info.name.split())!r}")
    if not info.version:
        r.errors.append('Info.version is empty; give the agent a version such as "0.1.0"')
    if info.capacity < 0:
        r.errors.append(f"Info.capacity is {info.capacity}; use 0 or 1 for one task at a time, more for concurrent tasks")

    # tasks, asks first: every task once on a session that allows all.
    runs: list[tuple[Task, Optional[Result], Optional[BaseException], list[Entry]]] = []
    with Harness(new_agent()) as h:
        for i, t in enumerate(tasks):
            t = replace(t, id=f"conformance-{i}")
            try:
                res: Optional[Result] = h.run(t, timeout=CALL_LIMIT)
                err: Optional[BaseException] = None
            except Exception as e:
                res, err = None, e
            runs.append((t, res, err, h.recorder.log(t.id)))
    r = check(
        "tasks",
        "Every task succeeds through the plugin protocol and reports well-formed tool uses (a tool name, a known kind, an outcome, no empty path); its artifact has no blank item.",
    )
    for i, (t, res, err, log) in enumerate(runs):
        where = f"task {i} ({_describe_task(t)})"
        if err is not None:
            r.errors.append(f"{where}: run failed: {err}")
            continue
        for j, u in enumerate(e.use for e in log if e.use is not None):
            if not u.tool:
                r.errors.append(f"{where}: tool use {j} has no tool name")
            if any(not p.strip() for p in u.paths):
                r.errors.append(f"{where}: tool use {j} ({u.tool}) reports an empty path")
        assert res is not None
        a = res.artifact
        for name, items in (
            ("key_decisions", a.key_decisions),
            ("modified_files", a.modified_files),
            ("new_patterns", a.new_patterns),
            ("potential_gotchas", a.potential_gotchas),
        ):
            for k, item in enumerate(items):
                if not item.strip():
                    r.errors.append(f"{where}: Result.artifact.{name}[{k}] is blank; leave blank items out")

    r = check("context beside the prompt", "Every task succeeds when upstream context and feedback come beside its prompt (Task.upstream, Task.context, Task.feedback).")
    with Harness(new_agent()) as h:
        for i, t in enumerate(tasks):
            t = replace(t, id=f"context-{i}", upstream=_UPSTREAM, context=_CONTEXT, feedback=_FEEDBACK)
            try:
                h.run(t, timeout=CALL_LIMIT)
            except Exception as e:
                r.errors.append(
                    f"task {i} ({_describe_task(t)}): run failed: {e}; the prompt comes as written, with what earlier tasks learned beside it in Task.upstream and Task.context, and feedback in Task.feedback"
                )

    r = check("asks first", "Every tool use reported as done or failed follows a CheckToolUse with the same call ID, or with the same tool and paths.")
    if not any(log for (_, _, _, log) in runs):
        # A check that never saw what it checks has not passed.
        r.errors.append(_NO_TOOL_USE.format("whether the agent asks before a tool use"))
    for i, (t, _, _, log) in enumerate(runs):
        asked: list[ToolCall] = []
        for entry in log:
            if entry.call is not None:
                asked.append(entry.call)
                continue
            use = entry.use
            assert use is not None
            if use.outcome not in (1, 2):  # OK, ERROR
                continue
            if not any(_same_call(c, use) for c in asked):
                r.errors.append(
                    f"task {i} ({_describe_task(t)}): tool use {use.tool} {use.paths} was reported without a CheckToolUse before it; ask the host first, with the same call ID (Tools asks, does the work and reports in one call)"
                )

    r = check("denied tool uses", "With every tool use denied, Run returns, and no denied tool use (by call ID, or by tool and paths) is reported as done.")
    asked_any = False
    with Harness(new_agent(), policy=deny_all) as h:
        for i, t in enumerate(tasks):
            t = replace(t, id=f"denied-{i}")
            where = f"task {i} ({_describe_task(t)}) with every tool use denied"
            try:
                h.run(t, timeout=CALL_LIMIT)
            except errors.DeadlineExceededError:
                r.errors.append(f"{where}: run did not return within {CALL_LIMIT:g}s")
                continue
            except Exception:
                pass  # failing a task whose tools are denied is fine
            denied: list[ToolCall] = []
            for entry in h.recorder.log(t.id):
                if entry.call is not None:
                    if entry.verdict is not None and not entry.verdict.allow:
                        denied.append(entry.call)
                    continue
                du = entry.use
                assert du is not None
                if du.outcome in (1, 2) and any(_same_call(c, du) for c in denied):
                    r.errors.append(f"{where}: tool use {du.tool} {du.paths} was denied but reported as done; skip a denied call and report it with Outcome.DENIED")
            asked_any = asked_any or bool(denied)
    if not asked_any and not r.errors:
        r.errors.append(_NO_TOOL_USE.format("whether the agent honours a denial"))

    r = check("cancelled context", "Run returns within 5s of its task's cancellation, its held tool question given up.")
    _check_cancel(new_agent, tasks, r)

    r = check("concurrent tasks", "Capacity tasks run at once on one session, twice over, beside Describe and ExportState calls, and all succeed.")
    n = min(max(info.capacity, 1), 8)
    with Harness(new_agent()) as h:
        for rnd in range(2):
            stop = threading.Event()

            def beside() -> None:
                for _ in range(64):
                    if stop.is_set():
                        return
                    try:
                        h.describe()
                        if exports:
                            h.export_state()
                    except Exception as e:
                        r.errors.append(f"Describe or ExportState while tasks ran failed: {e}")
                        return

            bt = threading.Thread(target=beside)
            bt.start()
            with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
                futs = [pool.submit(h.run, replace(tasks[i % len(tasks)], id=f"concurrent-{rnd}-{i}"), CALL_LIMIT) for i in range(n)]
                for i, f in enumerate(futs):
                    try:
                        f.result()
                    except Exception as e:
                        r.errors.append(f"task {i + 1} of {n} running at once (capacity {info.capacity}) failed: {e}")
            stop.set()
            bt.join()

    r = check("state", "An agent that exports state is rehydrated into a fresh session that runs the first task, and malformed state is an error, not a crash.")
    if exports:
        with Harness(new_agent()) as h:
            try:
                h.run(replace(tasks[0], id="before-export"), timeout=CALL_LIMIT)
                state = h.export_state()
            except Exception as e:
                r.errors.append(f"the first task or ExportState failed: {e}")
                state = None
        if state is not None:
            with Harness(new_agent()) as fresh:
                try:
                    fresh.import_state(state)
                    fresh.run(replace(tasks[0], id="rehydrated"), timeout=CALL_LIMIT)
                except Exception as e:
                    r.errors.append(f"a rehydrated session failed the first task: {e}")
        with Harness(new_agent()) as garbage:
            try:
                garbage.import_state(b"\x00not state\xff")
            except errors.HearthError:
                pass
            except Exception as e:
                r.errors.append(f"malformed state broke the session: {e}; raise an error from import_state instead")
    return info.name, results


def _check_cancel(new_agent: Callable[[], Union[Agent, AsyncAgent]], tasks: Sequence[Task], r: CheckResult) -> None:
    asked = threading.Event()
    released = threading.Event()

    def hold(task_id: str, context: grpc.ServicerContext) -> None:
        # Holds the task's first question until the agent gives it up.
        if task_id != "cancel-held" or asked.is_set():
            return
        gone = threading.Event()
        if not context.add_callback(gone.set):
            gone.set()
        asked.set()
        gone.wait(CALL_LIMIT)
        released.set()

    with Harness(new_agent()) as h:
        h.recorder._hold = hold
        cancel = threading.Event()
        done = threading.Event()

        def run() -> None:
            try:
                h.run(replace(tasks[0], id="cancel-held"), timeout=CALL_LIMIT, cancel=cancel)
            except Exception:
                pass
            done.set()

        threading.Thread(target=run, daemon=True).start()
        while not asked.wait(0.01):
            if done.is_set():
                return  # the task asked no question: nothing to hold
        cancel.set()
        if not released.wait(CANCEL_LIMIT):
            r.errors.append(
                f"the agent did not give up its tool question within {CANCEL_LIMIT:g}s of its task's cancellation; let host calls be cancelled (the SDK does) and do not retry them once cb.cancelled is true"
            )
        if not done.wait(CANCEL_LIMIT):
            r.errors.append(f"run did not return within {CANCEL_LIMIT:g}s of its task's cancellation; check cb.cancelled in long loops and use cb.wait instead of time.sleep")
            return
        h.recorder._hold = None
        try:
            h.run(replace(tasks[0], id="after-cancel"), timeout=CALL_LIMIT)
        except Exception as e:
            r.errors.append(f"the session failed the next task after a cancellation: {e}")


def check_agent(new_agent: Callable[[], Union[Agent, AsyncAgent]], tasks: Sequence[Task]) -> list[CheckResult]:
    """Run the conformance checks; raise ConformanceError listing every violation.

    ``new_agent`` makes a fresh agent for each session the checks need;
    ``tasks`` are tasks the agent should complete. Returns the results
    when all pass.
    """
    name, results = run_checks(new_agent, tasks)
    if any(r.errors for r in results):
        raise ConformanceError(name, results)
    return results
