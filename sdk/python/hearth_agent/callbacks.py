"""The agent's callbacks: the host as an agent sees it during one task.

``Callbacks`` are what ``Agent.run`` is given: the pre-tool-use question
(``check``), tool-use reports (``report``, over one client stream per task,
acknowledged as durable before the task's result goes back), progress, a
logger, and the task's cancellation. A task that belongs to a run is given
``RunCallbacks``, which also reach the run's state, checkpoints, files and
chunk progress: check with ``isinstance(cb, RunCallbacks)``.
"""

from __future__ import annotations

import json
import os
import logging
import queue
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Optional, TypeVar

import grpc

from . import _wire, errors
from ._pb import agent_pb2 as pb
from .contract import File, Progress, ToolCall, ToolUse, Verdict
from .trace import Span, TaskTracer, current_traceparent

_M = TypeVar("_M")

# How close to its deadline a task must be for a cancelled host call to
# count as the deadline passing (the Go SDK's deadlineSlack).
_DEADLINE_SLACK = 0.05


def new_id(prefix: str) -> str:
    """A fresh ID such as "call-9f2c...", as the Go SDK's sdk.NewID makes."""
    return f"{prefix}-{os.urandom(8).hex()}"


class CallbacksStub:
    """The host's callbacks (service hearth.agent.v1.Host) on one channel."""

    def __init__(self, channel: grpc.Channel) -> None:
        def unary(name: str, req: Any, resp: Any) -> grpc.UnaryUnaryMultiCallable:
            return channel.unary_unary(
                f"/hearth.agent.v1.Host/{name}",
                request_serializer=req.SerializeToString,
                response_deserializer=resp.FromString,
            )

        self.check_tool_use = unary("CheckToolUse", pb.ToolCall, pb.Verdict)
        self.progress = unary("Progress", pb.ProgressReport, pb.ProgressAck)
        self.get_state = unary("GetState", pb.StateRequest, pb.StateValue)
        self.set_state = unary("SetState", pb.StateValue, pb.StateAck)
        self.checkpoint = unary("Checkpoint", pb.CheckpointRequest, pb.CheckpointAck)
        self.files = unary("Files", pb.FilesRequest, pb.FileList)
        self.chunks = unary("Chunks", pb.ChunksRequest, pb.ChunkList)
        self.mark_chunk = unary("MarkChunk", pb.ChunkMark, pb.ChunkAck)
        self.tool_uses = channel.stream_unary(
            "/hearth.agent.v1.Host/ToolUses",
            request_serializer=pb.ToolUse.SerializeToString,
            response_deserializer=pb.ToolUsesAck.FromString,
        )


def _drain(q: "queue.SimpleQueue[Optional[pb.ToolUse]]") -> Iterator[pb.ToolUse]:
    while True:
        m = q.get()
        if m is None:
            return
        yield m


class Callbacks:
    """The agent's callbacks to the host during one task. Every method is safe to call from any thread.

    The calls raise the SDK's errors: CancelledError once the task is
    cancelled, PermanentError when the host refused for good,
    ConnectionLostError when the host went away.
    """

    def __init__(
        self,
        rpc: Optional[CallbacksStub],
        task_id: str,
        logger: logging.LoggerAdapter[logging.Logger],
        deadline: Optional[float] = None,
        calls: Optional[CallbacksStub] = None,
        close_calls: Optional[Callable[[], None]] = None,
        tracer: Optional[TaskTracer] = None,
    ) -> None:
        # rpc carries the tool-use stream; calls, when given, the unary
        # calls, on a channel that close_calls closes on cancellation.
        # tracer records the agent's spans when the task is traced.
        self._rpc = rpc
        self._tracer = tracer
        self._calls = calls if calls is not None else rpc
        self._close_calls = close_calls
        self._task_id = task_id
        self._logger = logger
        self._deadline = deadline  # time.monotonic() value, or None
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._queue: Optional["queue.SimpleQueue[Optional[pb.ToolUse]]"] = None
        self._stream: Optional[grpc.Future] = None
        self._stream_err: Optional[errors.HearthError] = None
        self._sent = 0
        self._ended = False
        self._refused: Optional[errors.ReportRefusedError] = None

    # --- cancellation -------------------------------------------------

    @property
    def task_id(self) -> str:
        """The ID of the task this host belongs to."""
        return self._task_id

    @property
    def cancelled(self) -> bool:
        """True once the host cancelled the task or its deadline passed."""
        if self._cancel.is_set():
            return True
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self._cancel.set()
            return True
        return False

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking when the task is cancelled.

        Returns True when the task is cancelled: use it in place of
        time.sleep in an agent's loops.
        """
        remaining = self.time_remaining()
        if remaining is not None and (timeout is None or remaining < timeout):
            if self._cancel.wait(remaining):
                return True
            return self.cancelled
        return self._cancel.wait(timeout)

    def time_remaining(self) -> Optional[float]:
        """Seconds left before the task's deadline; None without one."""
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - time.monotonic())

    def raise_if_cancelled(self) -> None:
        """Raise CancelledError (DeadlineExceededError) if the task is over."""
        if not self.cancelled:
            return
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise errors.DeadlineExceededError(f"task {self._task_id}: its deadline passed")
        raise errors.CancelledError(f"task {self._task_id} was cancelled")

    def _cancel_now(self) -> None:
        """Called by the server when the host cancels the task's call (or it ends)."""
        self._cancel.set()
        if self._close_calls is not None:
            self._close_calls()

    # --- calls --------------------------------------------------------

    def _call(self, op: str, method: grpc.UnaryUnaryMultiCallable, request: Any) -> Any:
        if self._calls is None:
            raise errors.NotAttachedError(f"{op}: no host attached to this agent")
        self.raise_if_cancelled()
        # Inside one of the agent's spans, the call carries its context, so
        # that what the host records of it (hearth.pre_tool_use) hangs
        # from that span, as the Go SDK's calls do.
        tp = current_traceparent(self._tracer)
        try:
            # A blocking call: a future costs a thread hop, twice the round
            # trip. A cancellation closes the task's channel, which ends it.
            if tp:
                return method(request, timeout=self.time_remaining(), metadata=(("traceparent", tp),))
            return method(request, timeout=self.time_remaining())
        except grpc.RpcError as e:
            if self._cancel.is_set():
                self.raise_if_cancelled()
            raise self._error(op, e) from None
        except ValueError:
            # Calling on a channel already closed by a cancellation.
            if self._cancel.is_set():
                self.raise_if_cancelled()
            raise

    def _error(self, op: str, e: grpc.RpcError) -> errors.HearthError:
        code = e.code() if isinstance(e, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = (e.details() if isinstance(e, grpc.Call) else None) or str(e)
        remaining = self.time_remaining()
        return _wire.error_from_status(
            op, code, details, cancelled=self.cancelled, near_deadline=remaining is not None and remaining < _DEADLINE_SLACK
        )

    def check(self, call: ToolCall) -> Verdict:
        """Ask the host before a tool use. Do not make the call when denied.

        A call without a call_id is given one (new_id("call")): report the
        use with the same call_id.
        """
        if not call.call_id:
            call.call_id = new_id("call")
        m = _wire.tool_call_to_wire(self._task_id, call)
        v = self._call("check tool use", self._calls.check_tool_use if self._calls else _none, m)
        return _wire.verdict_from_wire(v)

    def report(self, use: ToolUse) -> None:
        """Report a tool use the agent made (or was denied), on the task's stream.

        It returns once the report is queued on the stream; the task's result
        goes back only after the host acknowledged every report as durable.
        A report without an outcome is refused (ReportRefusedError), and the
        task fails even if the agent catches the error.
        """
        if self._rpc is None:
            raise errors.NotAttachedError("report tool use: no host attached to this agent")
        problem = _wire.check_use(use)
        kind = ""
        if problem is None:
            try:
                kind = _wire.kind_name(use.kind, f'tool use "{use.tool}"')
            except errors.ReportRefusedError as e:
                problem = str(e)
        if problem is not None:
            err = errors.ReportRefusedError(f"task {self._task_id}: {problem}")
            with self._lock:
                if self._refused is None:
                    self._refused = err
            raise err
        at = _wire.unix_nano(use.at) if use.at is not None else time.time_ns()
        m = _wire.tool_use_to_wire(self._task_id, use, kind, at)
        with self._lock:
            if self._stream_err is not None:
                raise self._stream_err
            if self._ended:
                raise errors.HearthError(f"task {self._task_id} has returned; a tool use reported after it is not recorded")
            if self._stream is None:
                self._queue = queue.SimpleQueue()
                self._stream = self._rpc.tool_uses.future(_drain(self._queue))
            elif self._stream.done():
                # The host ended the stream early: it refused a report.
                self._stream_err = self._stream_failure("report tool use")
                raise self._stream_err
            assert self._queue is not None
            self._queue.put(m)
            self._sent += 1

    def _stream_failure(self, op: str) -> errors.HearthError:
        assert self._stream is not None
        try:
            self._stream.result()
        except grpc.RpcError as e:
            return self._error(op, e)
        except grpc.FutureCancelledError:
            return errors.CancelledError(f"{op}: the stream was cancelled")
        return errors.HearthError(f"{op}: the host ended the tool-use stream early")

    def _close(self) -> tuple[int, Optional[errors.HearthError]]:
        """Ends the task's stream and waits for the host's acknowledgement."""
        with self._lock:
            self._ended = True
            stream, q, err = self._stream, self._queue, self._stream_err
            self._stream = None
        if stream is None or q is None:
            return 0, err
        if err is not None:
            stream.cancel()
            return 0, err
        q.put(None)
        try:
            ack: pb.ToolUsesAck = stream.result()
        except grpc.RpcError as e:
            return 0, self._error("close tool-use stream", e)
        if ack.count != self._sent:
            return ack.count, errors.HearthError(f"host acknowledged {ack.count} tool uses, {self._sent} were sent")
        return ack.count, None

    def _refused_report(self) -> Optional[errors.ReportRefusedError]:
        with self._lock:
            return self._refused

    def progress(self, fraction: float, message: str = "", cost: float = 0.0) -> None:
        """Tell the host how far the task has come and what it has cost so far."""
        p = Progress(fraction=fraction, message=message, cost=cost)
        self._call(
            "report progress",
            self._calls.progress if self._calls else _none,
            pb.ProgressReport(task_id=self._task_id, fraction=p.fraction, message=p.message, cost=p.cost),
        )

    def span(self, name: str, attributes: Optional[Mapping[str, Any]] = None) -> Span:
        """A span of the agent's own in the task's trace, as a context manager.

        ``with cb.span("plan", {"files": 3}) as span: ...``. It is a child
        of the span open around it (in this thread or asyncio task), else
        of the task's span; it reaches the host's trace backend through
        the host, before the task's result. When the host does not trace
        or the task is not sampled it records nothing
        (``span.recording`` is False). hearth_agent.trace says more.
        """
        return Span(self._tracer, name, attributes)

    def _flush_spans(self) -> None:
        """Sends the spans the task ended to the host."""
        if self._tracer is not None:
            self._tracer.flush()

    @property
    def logger(self) -> logging.LoggerAdapter[logging.Logger]:
        """A logger whose lines reach the host's log, named by session and task.

        Extra fields go in ``extra``: ``cb.logger.info("found", extra={"files": 3})``.
        """
        return self._logger


def _none(*_: Any, **__: Any) -> Any:
    raise errors.NotAttachedError("no host attached to this agent")


class RunCallbacks(Callbacks):
    """The callbacks of a task that belongs to a run (Task.run is set)."""

    def state(self, section: str) -> Any:
        """One top-level section of the run's state document, decoded; None when unset.

        Section "" returns every section the agent may read, as a dict.
        Reading a section the agent does not own raises NotOwnerError.
        """
        v = self._call(
            "read run state", self._calls.get_state if self._calls else _none, pb.StateRequest(task_id=self._task_id, section=section)
        )
        if not v.value_json:
            return None
        return json.loads(v.value_json)

    def set_state(self, section: str, value: Any) -> None:
        """Replace one section with ``value`` encoded as JSON; None deletes it.

        Returns once the write is durable. A section the agent does not own
        for writing raises NotOwnerError.
        """
        try:
            b = b"" if value is None else json.dumps(value).encode()
        except (TypeError, ValueError) as e:
            raise errors.PermanentError(f'state section "{section}": value is not JSON-encodable: {e}') from None
        self._call(
            "write run state",
            self._calls.set_state if self._calls else _none,
            pb.StateValue(task_id=self._task_id, section=section, value_json=b),
        )

    def checkpoint(self, label: str) -> int:
        """Checkpoint the run now; returns its number once durable."""
        ack = self._call(
            "checkpoint", self._calls.checkpoint if self._calls else _none, pb.CheckpointRequest(task_id=self._task_id, label=label)
        )
        return int(ack.checkpoint)

    def files(self) -> list[File]:
        """The files attached to the run (read them in place)."""
        m = self._call("list run files", self._calls.files if self._calls else _none, pb.FilesRequest(task_id=self._task_id))
        return _wire.files_from_wire(m)

    def done_chunks(self, file: str) -> list[int]:
        """The chunks of ``file`` already marked done, in increasing order."""
        m = self._call(
            "read chunk progress", self._calls.chunks if self._calls else _none, pb.ChunksRequest(task_id=self._task_id, file=file)
        )
        return list(m.done)

    def mark_chunk(self, file: str, chunk: int) -> None:
        """Record that ``chunk`` of ``file`` is done; returns once durable."""
        if not 0 <= chunk <= 2**31 - 1:
            raise errors.PermanentError(f"chunk {chunk} of {file}: chunks are numbered from 0 to {2**31 - 1}")
        self._call(
            "mark chunk done",
            self._calls.mark_chunk if self._calls else _none,
            pb.ChunkMark(task_id=self._task_id, file=file, chunk=chunk),
        )
