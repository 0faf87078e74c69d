"""An agent's own spans, joined into its task's trace and relayed through the host.

The Go SDK does this with OpenTelemetry's SDK; Debian has no OpenTelemetry
for Python, so this is a small tracer of the SDK's own that sends the same
records over the same path: OTLP's ExportTraceServiceRequest
(opentelemetry-proto's definitions, loaded into a descriptor pool of this
module's own) on the plugin's connection to its host, which serves OTLP's
TraceService there and uploads what it gets with its own exporter. The
agent needs no network, no backend credentials and no OpenTelemetry
package::

    def run(self, task: Task, cb: Callbacks) -> Result:
        with cb.span("plan", {"files": 3}) as span:
            ...
            span.set_attribute("steps", 2)

A span is a child of the span open around it in the same thread or
asyncio task, else of the task's span (Task.trace_context); a check made
inside one is asked under it, so the host's hearth.pre_tool_use span hangs
from it. Spans go to the host when the task ends, before its result (and
in batches of MAX_BATCH while it runs). When the host does not trace, or
the task is not sampled, a span records nothing and costs next to
nothing; its context manager still works.
"""

from __future__ import annotations

import contextvars
import os
import re
import threading
import time
from importlib import resources
from types import TracebackType
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# MAX_BATCH is how many ended spans wait before they are sent without
# waiting for the task's end.
MAX_BATCH = 512

# EXPORT_TIMEOUT bounds one export to the host: a host that does not take
# the spans costs the spans, not the task (the Go SDK's flushTimeout).
EXPORT_TIMEOUT = 2.0

# The attribute values OTLP carries.
AttributeValue = Union[str, bool, int, float, Sequence[str], Sequence[bool], Sequence[int], Sequence[float]]


def _classes() -> dict[str, Any]:
    fds = descriptor_pb2.FileDescriptorSet.FromString(resources.files(__package__).joinpath("_pb/otlp_trace.binpb").read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    names = {
        "Request": "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest",
        "Response": "opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse",
    }
    out: dict[str, Any] = {}
    for k, full in names.items():
        d = pool.FindMessageTypeByName(full)
        get = getattr(message_factory, "GetMessageClass", None)
        out[k] = get(d) if get is not None else message_factory.MessageFactory(pool).GetPrototype(d)
    return out


_pb = _classes()
ExportRequest = _pb["Request"]
ExportResponse = _pb["Response"]

# The export method of OTLP's TraceService, as the host serves it beside
# its callbacks.
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

# OTLP's enum values (trace.proto).
_KIND_INTERNAL = 1
_STATUS_ERROR = 2
_FLAG_SAMPLED = 1

SCOPE = "hearth_agent"


# A traceparent: version, trace ID, span ID, flags, lower-case hex; a
# later version may add fields after a dash.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?", re.DOTALL)


def parse_traceparent(tp: str) -> Optional[tuple[bytes, bytes, bool]]:
    """The trace ID, span ID and sampled flag of a W3C traceparent; None if it is not one."""
    m = _TRACEPARENT.fullmatch(tp.strip())
    if m is None or m[1] == "ff" or (m[1] == "00" and m[5] is not None):
        return None
    trace_id, span_id, flags = bytes.fromhex(m[2]), bytes.fromhex(m[3]), int(m[4], 16)
    if not any(trace_id) or not any(span_id):
        return None
    return trace_id, span_id, bool(flags & _FLAG_SAMPLED)


def _value(pbv: Any, v: Any) -> None:
    # bool before int: True is an int in Python.
    if isinstance(v, bool):
        pbv.bool_value = v
    elif isinstance(v, int):
        pbv.int_value = v
    elif isinstance(v, float):
        pbv.double_value = v
    elif isinstance(v, str):
        pbv.string_value = v
    elif isinstance(v, (bytes, bytearray)):
        pbv.bytes_value = bytes(v)
    elif isinstance(v, (list, tuple)):
        arr = pbv.array_value
        arr.SetInParent()
        for e in v:
            _value(arr.values.add(), e)
    else:
        pbv.string_value = str(v)


def _check_attribute(key: Any, value: Any) -> None:
    if not isinstance(key, str) or not key:
        raise TypeError(f"span attribute key {key!r}: keys are non-empty strings")
    scalars = (str, bool, int, float)
    if isinstance(value, scalars):
        return
    if isinstance(value, (list, tuple)) and all(isinstance(e, scalars) for e in value):
        return
    raise TypeError(f"span attribute {key!r}: {type(value).__name__} is not a str, bool, int, float or a list of them")


class Span:
    """One span of the agent's: a context manager, and what it records.

    Ended by leaving its ``with`` block; an exception that leaves it marks
    the span an error (with the exception's type and message) and goes on.
    Its methods are safe to call from any thread. A span of a task that is
    not traced records nothing (``recording`` is False).
    """

    def __init__(self, tracer: Optional["TaskTracer"], name: str, attributes: Optional[Mapping[str, Any]]) -> None:
        self.name = name
        self._tracer = tracer
        self._lock = threading.Lock()
        self._attrs: dict[str, Any] = {}
        self._events: list[tuple[str, int, dict[str, Any]]] = []
        self._error: Optional[str] = None
        self._start = 0
        self._ended = False
        self._token: Optional[contextvars.Token[Optional[Span]]] = None
        self.trace_id = b""
        self.span_id = b""
        self.parent_id = b""
        self._remote_parent = False
        for k, v in (attributes or {}).items():
            self.set_attribute(k, v)

    @property
    def recording(self) -> bool:
        """True when the span will reach the host."""
        return self._tracer is not None

    @property
    def traceparent(self) -> str:
        """The span's W3C traceparent, "" when it records nothing."""
        if self._tracer is None:
            return ""
        return f"00-{self.trace_id.hex()}-{self.span_id.hex()}-01"

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        """Set one attribute (a str, bool, int, float, or a list of one of them)."""
        _check_attribute(key, value)
        with self._lock:
            self._attrs[key] = list(value) if isinstance(value, (list, tuple)) else value

    def add_event(self, name: str, attributes: Optional[Mapping[str, Any]] = None) -> None:
        """Note something that happened now, within the span."""
        for k, v in (attributes or {}).items():
            _check_attribute(k, v)
        with self._lock:
            self._events.append((name, time.time_ns(), dict(attributes or {})))

    def set_error(self, message: str) -> None:
        """Mark the span failed, with why."""
        with self._lock:
            self._error = message

    def __enter__(self) -> "Span":
        t = self._tracer
        self._start = time.time_ns()
        if t is not None:
            parent = _current.get()
            if parent is not None and parent._tracer is t:
                self.trace_id, self.parent_id = parent.trace_id, parent.span_id
            else:
                self.trace_id, self.parent_id = t.trace_id, t.parent_id
                self._remote_parent = True
            self.span_id = _span_id()
        self._token = _current.set(self)
        return self

    def __exit__(self, typ: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        end = time.time_ns()
        if self._token is not None:
            try:
                _current.reset(self._token)
            except ValueError:
                # Left in another context than it was entered in (a
                # generator's, a thread's): the span still ends.
                pass
        if exc is not None:
            self.set_error(f"{type(exc).__name__}: {exc}")
        with self._lock:
            if self._ended:
                return
            self._ended = True
        if self._tracer is not None:
            self._tracer._ended(self, end)

    def _to_wire(self, m: Any, end: int) -> None:
        with self._lock:
            m.trace_id, m.span_id, m.parent_span_id = self.trace_id, self.span_id, self.parent_id
            m.name = self.name
            m.kind = _KIND_INTERNAL
            # Sampled; whether the parent is in another process (the
            # task's span, on the host) is known (0x100), and if it is (0x200).
            m.flags = 0x100 | _FLAG_SAMPLED | (0x200 if self._remote_parent else 0)
            m.start_time_unix_nano, m.end_time_unix_nano = self._start, end
            for k, v in self._attrs.items():
                kv = m.attributes.add()
                kv.key = k
                _value(kv.value, v)
            for name, at, attrs in self._events:
                e = m.events.add()
                e.name, e.time_unix_nano = name, at
                for k, v in attrs.items():
                    kv = e.attributes.add()
                    kv.key = k
                    _value(kv.value, v)
            if self._error is not None:
                m.status.code = _STATUS_ERROR
                m.status.message = self._error


# _current is the span open in this thread or asyncio task.
_current: contextvars.ContextVar[Optional[Span]] = contextvars.ContextVar("hearth_agent_span", default=None)


def current_traceparent(tracer: Optional["TaskTracer"]) -> str:
    """The traceparent of the span open here, if it is one of tracer's; "" otherwise."""
    s = _current.get()
    if tracer is None or s is None or s._tracer is not tracer:
        return ""
    return s.traceparent


def _span_id() -> bytes:
    while True:
        b = os.urandom(8)
        if any(b):
            return b


class TaskTracer:
    """The spans of one task: started under its span, sent to the host in batches.

    ``export`` sends one ExportTraceServiceRequest (it is the host's
    TraceService Export, with a timeout); a failure loses those spans,
    never the task.
    """

    def __init__(
        self,
        trace_id: bytes,
        parent_id: bytes,
        resource: Mapping[str, str],
        export: Callable[[Any], None],
        on_error: Optional[Callable[[BaseException], None]] = None,
    ) -> None:
        self.trace_id, self.parent_id = trace_id, parent_id
        self._resource = dict(resource)
        self._export = export
        self._on_error = on_error
        self._lock = threading.Lock()
        self._ended_spans: list[tuple[Span, int]] = []
        self.sent = 0

    @classmethod
    def for_task(
        cls,
        trace_context: Mapping[str, str],
        resource: Mapping[str, str],
        export: Callable[[Any], None],
        on_error: Optional[Callable[[BaseException], None]] = None,
    ) -> Optional["TaskTracer"]:
        """The tracer of a task with trace_context; None when it is not sampled (nothing to record)."""
        p = parse_traceparent(trace_context.get("traceparent", ""))
        if p is None or not p[2]:
            return None
        return cls(p[0], p[1], resource, export, on_error)

    def _ended(self, span: Span, end: int) -> None:
        with self._lock:
            self._ended_spans.append((span, end))
            full = len(self._ended_spans) >= MAX_BATCH
        if full:
            self.flush()

    def flush(self) -> None:
        """Send the spans ended so far."""
        with self._lock:
            batch, self._ended_spans = self._ended_spans, []
        if not batch:
            return
        req = ExportRequest()
        rs = req.resource_spans.add()
        for k, v in self._resource.items():
            kv = rs.resource.attributes.add()
            kv.key = k
            kv.value.string_value = v
        ss = rs.scope_spans.add()
        ss.scope.name = SCOPE
        for span, end in batch:
            span._to_wire(ss.spans.add(), end)
        try:
            self._export(req)
            with self._lock:
                self.sent += len(batch)
        except Exception as e:  # noqa: BLE001 - spans are best effort
            if self._on_error is not None:
                self._on_error(e)
