"""A scripted Python agent for the Go tests of the Python SDK (python_test.go).

Its prompt is steps separated by ";", each "verb" or "verb:arg", as for
the Go test agent (internal/testagent): echo:X, read:PATH, tool:PATH (the
Tools helper's read, in the workspace), pid, sleep:SECONDS, hang,
crash, fail:MSG, permanent:MSG, progress:F, wait:FILE, touch:FILE
(creates it), seen, child,
traceparent (the task's trace context, as the host sent it), span:NAME
(opens a span of the agent's, attributes hearth.test.step=NAME and
hearth.test.n=1, around the steps up to its endspan), endspan,
failspan:NAME (a span left by an exception),
checks:N (N questions, their p50/p99 round trip in metrics), tools:N (N
reports of one tool use), cancelled (waits for cancellation, then says
so in the file named by HEARTH_TEST_CANCELLED), unasked:PATH (reports a
read it never asked about), nooutcome, ignoredenial:PATH (reads and
reports as done even when denied). HEARTH_TEST_MODE changes the whole
program: garbage (prints a line that is not a handshake), hang (never
answers), exit (fails at start), ignoreshutdown (never stops when asked),
noparentwatch (outlives its host), ignorecancel (its tasks never see a
cancellation).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hearth_agent import (  # noqa: E402
    Agent,
    ContextArtifact,
    Callbacks,
    Info,
    Kind,
    Outcome,
    PermanentError,
    Result,
    RunCallbacks,
    Span,
    StateExporter,
    Task,
    Tools,
    ToolCall,
    ToolUse,
    new_id,
    serve,
)


class Scripted(Agent, StateExporter):
    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._seen: list[str] = []

    def describe(self) -> Info:
        return Info(name="scripted", version="0.1.0", description="Runs the steps of its prompt.", technologies=["python"], capacity=self._capacity)

    def export_state(self) -> bytes:
        with self._lock:
            return json.dumps({"seen": self._seen}).encode()

    def import_state(self, state: bytes) -> None:
        data = json.loads(state)
        if not isinstance(data, dict) or not isinstance(data.get("seen"), list):
            raise ValueError("state is not the scripted agent's")
        with self._lock:
            self._seen = [str(s) for s in data["seen"]]

    def run(self, task: Task, cb: Callbacks) -> Result:
        out: list[str] = []
        res = Result()
        art = ContextArtifact()
        spans: list[Span] = []
        for step in task.prompt.split(";"):
            verb, _, arg = step.strip().partition(":")
            if verb == "":
                continue
            elif verb == "span":
                spans.append(cb.span(arg, {"hearth.test.step": arg, "hearth.test.n": 1}).__enter__())
            elif verb == "endspan":
                spans.pop().__exit__(None, None, None)
            elif verb == "failspan":
                try:
                    with cb.span(arg):
                        raise ValueError(f"{arg} failed")
                except ValueError:
                    pass
            elif verb == "echo":
                out.append(arg)
            elif verb in ("read", "ignoredenial"):
                call = ToolCall(tool="Read", kind=Kind.READ, paths=[arg], input={"file_path": arg})
                v = cb.check(call)
                use = ToolUse(tool="Read", kind=Kind.READ, paths=[arg], call_id=call.call_id, outcome=Outcome.OK)
                if not v.allow and verb == "read":
                    use.outcome, use.error = Outcome.DENIED, v.reason
                    out.append(f"denied {arg}: {v.reason}")
                else:
                    with self._lock:
                        self._seen.append(arg)
                    art.modified_files.append(arg)
                cb.report(use)
            elif verb == "tool":
                try:
                    out.append(Tools(cb, os.getcwd()).read_text(arg).strip())
                except Exception as e:  # Denied, or a missing file
                    out.append(f"{type(e).__name__}: {e}")
            elif verb == "unasked":
                cb.report(ToolUse(tool="Read", kind=Kind.READ, paths=[arg], call_id=new_id("call"), outcome=Outcome.OK))
            elif verb == "nooutcome":
                cb.report(ToolUse(tool="Read", kind=Kind.READ, paths=["x.py"], outcome=None))  # type: ignore[arg-type]
            elif verb in ("set", "get", "checkpoint"):
                if not isinstance(cb, RunCallbacks):
                    raise PermanentError(f"scripted: step {verb!r} needs a task of a run")
                if verb == "set":
                    section, _, value = arg.partition("=")
                    cb.set_state(section, json.loads(value))
                elif verb == "get":
                    out.append(json.dumps(cb.state(arg), sort_keys=True))
                else:
                    out.append(f"checkpoint={cb.checkpoint(arg)}")
            elif verb == "log":
                cb.logger.warning(arg, extra={"step": "log"})
            elif verb == "pid":
                out.append(str(os.getpid()))
            elif verb == "traceparent":
                out.append("traceparent=" + task.trace_context.get("traceparent", ""))
            elif verb == "sleep":
                if cb.wait(float(arg)):
                    cb.raise_if_cancelled()
            elif verb == "hang":
                threading.Event().wait()
            elif verb == "crash":
                os._exit(2)
            elif verb == "fail":
                raise RuntimeError(arg)
            elif verb == "permanent":
                raise PermanentError(arg)
            elif verb == "progress":
                cb.progress(float(arg), message=step)
            elif verb == "wait":
                while not os.path.exists(arg):
                    if cb.wait(0.005):
                        cb.raise_if_cancelled()
            elif verb == "touch":
                open(arg, "w").close()
            elif verb == "cancelled":
                cb.wait()
                with open(os.environ["HEARTH_TEST_CANCELLED"], "w") as f:
                    f.write(f"cancelled={cb.cancelled}")
                cb.raise_if_cancelled()
            elif verb == "seen":
                with self._lock:
                    out.append(",".join(self._seen))
            elif verb == "child":
                p = subprocess.Popen(["sleep", "300"], preexec_fn=os.setpgrp if arg == "own" else None)
                out.append(str(p.pid))
            elif verb == "checks":
                # The same question as the Go test agent's (testagent.BenchCall).
                n = int(arg)
                bench = "services/billing/internal/ledger/reconcile/batch_00.go"
                call = ToolCall(tool="Read", kind=Kind.READ, paths=[bench], input={"file_path": bench}, call_id="call-0123456789abcdef")
                rtts = []
                for _ in range(n):
                    start = time.perf_counter_ns()
                    cb.check(call)
                    rtts.append(time.perf_counter_ns() - start)
                rtts.sort()
                res.metrics["p50_ns"] = float(rtts[n // 2])
                res.metrics["p99_ns"] = float(rtts[n * 99 // 100])
            elif verb == "tools":
                # The same report as the Go test agent's (testagent.FloodToolUse).
                n = int(arg)
                paths = [f"services/billing/internal/ledger/reconcile/batch_{i:02d}.go" for i in range(8)]
                call = ToolCall(tool="Grep", kind=Kind.READ, paths=paths, call_id="call-0123456789abcdef")
                v = cb.check(call)
                use = ToolUse(
                    tool="Grep",
                    kind=Kind.READ,
                    paths=paths,
                    call_id=call.call_id,
                    outcome=Outcome.OK,
                    technologies=["go"],
                    duration=0.0015,
                    at=datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc),
                )
                if not v.allow:
                    use.outcome, use.error, n = Outcome.DENIED, v.reason, 1
                for _ in range(n):
                    cb.report(use)
            elif verb == "context":
                out.append(task.context)
            elif verb == "upstream":
                out.append(",".join(f"{u.task}@{u.version}" for u in task.upstream))
            else:
                raise PermanentError(f"scripted: unknown step {verb!r}")
        res.output = " ".join(out)
        res.artifact = art
        return res


def main() -> None:
    mode = os.environ.get("HEARTH_TEST_MODE", "")
    if mode == "garbage":
        print("hello from a program that is not a plugin", flush=True)
        time.sleep(3600)
    elif mode == "hang":
        time.sleep(3600)
    elif mode == "exit":
        sys.stderr.write("boom: cannot read settings.toml\n")
        sys.exit(1)
    elif mode == "wrongversion":
        import hearth_agent.server as s

        s.PROTOCOL_VERSION = 99
    elif mode == "ignoreshutdown":
        import hearth_agent._services as svc

        orig = svc.handlers

        def patched(agent: Any, broker: Any, stdio: Any, shutdown: Any) -> Any:
            return orig(agent, broker, stdio, lambda: None)

        svc.handlers = patched
        signal_ignore()
    elif mode == "ignorecancel":
        import hearth_agent.callbacks as h

        h.Callbacks._cancel_now = lambda self: None  # type: ignore[assignment]
    elif mode == "noparentwatch":
        import hearth_agent.server as s

        s.watch_parent = lambda ppid, every=0.2: None
        s._set_death_signal = lambda: None
        # Nor does it check its parent after the handshake.
        def stay() -> None:
            pass

        s._orphaned = stay  # type: ignore[assignment]
    serve(Scripted(int(os.environ.get("HEARTH_TEST_CAPACITY", "1"))))


def signal_ignore() -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)


if __name__ == "__main__":
    main()
