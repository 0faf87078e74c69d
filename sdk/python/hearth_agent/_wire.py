"""Translation between the SDK's dataclasses and the protobuf wire.

Nothing else in the package touches agent_pb2 message fields. The mapping
follows the Go SDK's sdk/plugin/wire.go field for field.
"""

from __future__ import annotations

import datetime
from typing import Iterable, Optional

import grpc

from . import errors
from ._pb import agent_pb2 as pb
from .contract import (
    ContextArtifact,
    File,
    Hints,
    Info,
    Kind,
    Outcome,
    Result,
    Task,
    ToolCall,
    ToolUse,
    Upstream,
    Verdict,
)

_OUTCOMES = {Outcome.OK: pb.OUTCOME_OK, Outcome.ERROR: pb.OUTCOME_ERROR, Outcome.DENIED: pb.OUTCOME_DENIED}
_FROM_OUTCOMES = {v: k for k, v in _OUTCOMES.items()}


def unix_nano(t: Optional[datetime.datetime]) -> int:
    """Nanoseconds since the epoch; 0 for None. A naive time is taken as UTC."""
    if t is None:
        return 0
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    delta = t - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def from_unix_nano(n: int) -> Optional[datetime.datetime]:
    """The inverse of unix_nano, in UTC (to the microsecond)."""
    if n == 0:
        return None
    return datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=n // 1000)


def info_to_wire(i: Info, exports_state: bool) -> pb.Info:
    return pb.Info(
        name=i.name,
        version=i.version,
        description=i.description,
        technologies=list(i.technologies),
        capacity=i.capacity,
        exports_state=exports_state,
    )


def info_from_wire(m: pb.Info) -> Info:
    return Info(
        name=m.name,
        version=m.version,
        description=m.description,
        technologies=list(m.technologies),
        capacity=m.capacity,
    )


def artifact_to_wire(a: ContextArtifact) -> Optional[pb.Artifact]:
    if a.empty():
        return None
    return pb.Artifact(
        key_decisions=list(a.key_decisions),
        modified_files=list(a.modified_files),
        new_patterns=list(a.new_patterns),
        potential_gotchas=list(a.potential_gotchas),
    )


def artifact_from_wire(m: pb.Artifact) -> ContextArtifact:
    # source_session and created_unix_nano are version 1 only: not read.
    return ContextArtifact(
        key_decisions=list(m.key_decisions),
        modified_files=list(m.modified_files),
        new_patterns=list(m.new_patterns),
        potential_gotchas=list(m.potential_gotchas),
    )


def task_from_wire(m: pb.Task) -> Task:
    return Task(
        id=m.id,
        run=m.run_id,
        name=m.name,
        prompt=m.prompt,
        session=m.session_id,
        hints=Hints(
            files=list(m.hints.files),
            directories=list(m.hints.directories),
            technologies=list(m.hints.technologies),
        ),
        upstream=[
            Upstream(
                task=u.task,
                version=u.version,
                session=u.session_id,
                created_at=from_unix_nano(u.created_unix_nano),
                artifact=artifact_from_wire(u.artifact),
            )
            for u in m.upstream
        ],
        context=m.context,
        feedback=m.feedback,
        idempotency_key=m.idempotency_key,
        attempt=m.attempt,
        metadata=dict(m.metadata),
    )


def task_to_wire(t: Task) -> pb.Task:
    m = pb.Task(
        id=t.id,
        run_id=t.run,
        name=t.name,
        prompt=t.prompt,
        session_id=t.session,
        hints=pb.Hints(
            files=list(t.hints.files),
            directories=list(t.hints.directories),
            technologies=list(t.hints.technologies),
        ),
        context=t.context,
        feedback=t.feedback,
        idempotency_key=t.idempotency_key,
        attempt=t.attempt,
        metadata=dict(t.metadata),
    )
    for u in t.upstream:
        mu = m.upstream.add(task=u.task, version=u.version, session_id=u.session, created_unix_nano=unix_nano(u.created_at))
        a = artifact_to_wire(u.artifact)
        if a is not None:
            mu.artifact.CopyFrom(a)
    return m


def result_to_wire(r: Result, tool_uses: int) -> pb.RunResponse:
    m = pb.RunResponse(output=r.output, metrics=dict(r.metrics), cost=r.cost, tool_uses=tool_uses)
    a = artifact_to_wire(r.artifact)
    if a is not None:
        m.artifact.CopyFrom(a)
    return m


def result_from_wire(m: pb.RunResponse) -> Result:
    return Result(output=m.output, metrics=dict(m.metrics), cost=m.cost, artifact=artifact_from_wire(m.artifact))


def kind_name(kind: Optional[Kind], what: str) -> str:
    """The wire form of a kind; a value that is not a Kind is refused."""
    if kind is None:
        return ""
    if not isinstance(kind, Kind):
        try:
            return Kind(kind).value
        except ValueError:
            raise errors.ReportRefusedError(
                f"{what} has an unknown kind {kind!r}: use one of the hearth_agent.Kind members, or None"
            ) from None
    return kind.value


def check_use(u: ToolUse) -> Optional[str]:
    """What the SDK refuses to send, as a message; None when the use is fine."""
    if u.outcome is None:
        return f'tool use "{u.tool}" has no outcome: set ToolUse.outcome to Outcome.OK, Outcome.ERROR or Outcome.DENIED'
    if u.outcome not in _OUTCOMES:
        return f'tool use "{u.tool}" has an unknown outcome {u.outcome!r}: set ToolUse.outcome to Outcome.OK, Outcome.ERROR or Outcome.DENIED'
    return None


def tool_use_to_wire(task_id: str, u: ToolUse, kind: str, at_nano: int) -> pb.ToolUse:
    return pb.ToolUse(
        task_id=task_id,
        call_id=u.call_id,
        tool=u.tool,
        paths=list(u.paths),
        technologies=list(u.technologies),
        outcome=_OUTCOMES[Outcome(u.outcome)],
        error=u.error,
        duration_nanos=int(u.duration * 1e9),
        cost=u.cost,
        at_unix_nano=at_nano,
        kind=kind,
    )


def tool_use_from_wire(m: pb.ToolUse) -> ToolUse:
    """Decodes a report; OUTCOME_UNSPECIFIED comes back as outcome 0, not an Outcome."""
    outcome = _FROM_OUTCOMES.get(m.outcome)
    return ToolUse(
        tool=m.tool,
        outcome=outcome if outcome is not None else 0,  # type: ignore[arg-type]
        kind=Kind(m.kind) if m.kind in Kind._value2member_map_ else None,
        paths=list(m.paths),
        technologies=list(m.technologies),
        error=m.error,
        duration=m.duration_nanos / 1e9,
        cost=m.cost,
        call_id=m.call_id,
        at=from_unix_nano(m.at_unix_nano),
    )


def tool_call_to_wire(task_id: str, c: ToolCall) -> pb.ToolCall:
    return pb.ToolCall(
        task_id=task_id,
        call_id=c.call_id,
        tool=c.tool,
        paths=list(c.paths),
        input_json=c.input_json(),
        kind=kind_name(c.kind, f'tool call "{c.tool}"'),
    )


def tool_call_from_wire(m: pb.ToolCall) -> ToolCall:
    import json

    inp = json.loads(m.input_json) if m.input_json else None
    return ToolCall(
        tool=m.tool,
        kind=Kind(m.kind) if m.kind in Kind._value2member_map_ else None,
        paths=list(m.paths),
        input=inp,
        call_id=m.call_id,
    )


def verdict_from_wire(m: pb.Verdict) -> Verdict:
    return Verdict(allow=m.allow, reason=m.reason, guard=m.guard)


def files_from_wire(m: pb.FileList) -> list[File]:
    return [File(name=f.name, path=f.path, sha256=f.sha256, size=f.size) for f in m.files]


def files_to_wire(fs: Iterable[File]) -> pb.FileList:
    return pb.FileList(files=[pb.RunFile(name=f.name, path=f.path, sha256=f.sha256, size=f.size) for f in fs])


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    """The gRPC status an exception raised by an agent goes back as.

    The inverse of error_from_status; the mapping is the Go SDK's toStatus.
    """
    msg = str(exc) or type(exc).__name__
    if isinstance(exc, errors.DeadlineExceededError):
        return grpc.StatusCode.DEADLINE_EXCEEDED, msg
    if isinstance(exc, errors.CancelledError):
        return grpc.StatusCode.CANCELLED, msg
    if isinstance(exc, errors.NotOwnerError):
        return grpc.StatusCode.PERMISSION_DENIED, msg
    if isinstance(exc, errors.PermanentError):
        return grpc.StatusCode.FAILED_PRECONDITION, msg
    if isinstance(exc, errors.StateNotSupportedError):
        return grpc.StatusCode.UNIMPLEMENTED, msg
    if isinstance(exc, errors.HearthError):
        return grpc.StatusCode.UNKNOWN, msg
    return grpc.StatusCode.UNKNOWN, f"{type(exc).__name__}: {msg}"


def error_from_status(
    op: str, code: grpc.StatusCode, msg: str, cancelled: bool = False, near_deadline: bool = False, state_call: bool = False
) -> errors.HearthError:
    """Turns a failed call's status into the SDK's exception of its kind.

    ``cancelled`` says the task itself was cancelled, ``near_deadline`` that
    its deadline was at hand: the host's copy of the deadline can fire a
    moment before the task's own. ``state_call`` says the call was an
    agent's ExportState or ImportState, whose UNIMPLEMENTED means the agent
    does not export state.
    """
    if code in (grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED):
        if near_deadline or code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return errors.DeadlineExceededError(f"{op}: {msg}")
        return errors.CancelledError(f"{op}: {msg}")
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return errors.PermanentError(f"{op}: {msg}")
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return errors.NotOwnerError(f"{op}: {msg}")
    if code == grpc.StatusCode.UNAVAILABLE:
        return errors.ConnectionLostError(f"{op}: {msg}")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return errors.StateNotSupportedError(f"{op}: {msg}") if state_call else errors.HostError(op, code.name, msg)
    return errors.HostError(op, code.name, msg)
