"""The gRPC services a plugin serves, wired by hand so that they are typed.

The hearth Agent service (hearth.agent.v1.Agent) and go-plugin's own: the
broker (plugin.GRPCBroker), over which the host names the connection that
serves its callbacks; the controller (plugin.GRPCController), through which
it asks the plugin to shut down; stdio (plugin.GRPCStdio), which streams
what the agent prints; and the health check (grpc.health.v1.Health).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
import traceback
from typing import Any, Callable, Iterator, NoReturn, Optional

import grpc

from . import _wire, errors
from ._pb import agent_pb2 as pb
from ._pb import grpc_broker_pb2, grpc_controller_pb2, grpc_stdio_pb2, health_pb2
from ._log import FieldsAdapter
from ._tls import Material
from .contract import Agent, StateExporter
from .callbacks import Callbacks, CallbacksStub, RunCallbacks
from .trace import EXPORT_METHOD, EXPORT_TIMEOUT, ExportRequest, ExportResponse, TaskTracer

# How long Attach waits for the host to name its callbacks' connection on
# the broker stream (go-plugin's GRPCBroker.Dial waits as long).
BROKER_WAIT = 5.0

# More seconds than any deadline a host sets: a call without a deadline.
_NO_DEADLINE = 10 * 365 * 86400.0

_MAX_MESSAGE: list[tuple[str, object]] = [("grpc.max_receive_message_length", 2**31 - 1), ("grpc.max_send_message_length", 2**31 - 1)]


# _TRACE_HEADERS are the W3C Trace Context headers a task's Run carries.
_TRACE_HEADERS = ("traceparent", "tracestate")


class Dialer:
    """Makes channels to one go-plugin address ("unix", "/tmp/plugin123") with the plugin's TLS.

    Its channels share one credentials object, so gRPC's global
    subchannel pool gives them one connection: a channel per task costs no
    handshake, and closing it ends only that task's calls.
    """

    def __init__(self, network: str, address: str, tls: Optional[Material]) -> None:
        if network == "unix":
            self._target = "unix:" + address
        elif network == "tcp":
            self._target = address
        else:
            raise errors.ConnectionLostError(f"unknown broker address type {network!r} (address {address!r})")
        self._creds: Optional[grpc.ChannelCredentials] = None
        self._options: list[tuple[str, object]] = list(_MAX_MESSAGE)
        if tls is not None:
            self._creds = grpc.ssl_channel_credentials(root_certificates=tls.peer_pem, private_key=tls.key_pem, certificate_chain=tls.cert_pem)
            self._options.append(("grpc.ssl_target_name_override", "localhost"))

    def channel(self) -> grpc.Channel:
        if self._creds is None:
            return grpc.insecure_channel(self._target, options=self._options)
        return grpc.secure_channel(self._target, self._creds, options=self._options)


class Broker:
    """The plugin's side of go-plugin's broker: the connections the host offers, by ID."""

    def __init__(self, tls: Optional[Material]) -> None:
        self._tls = tls
        self._cond = threading.Condition()
        self._offers: dict[int, grpc_broker_pb2.ConnInfo] = {}

    def offer(self, info: grpc_broker_pb2.ConnInfo) -> None:
        with self._cond:
            self._offers[info.service_id] = info
            self._cond.notify_all()

    def dial(self, service_id: int, wait: float = BROKER_WAIT) -> Dialer:
        deadline = time.monotonic() + wait
        with self._cond:
            while service_id not in self._offers:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.ConnectionLostError(f"timeout waiting for connection info of broker id {service_id}")
                self._cond.wait(left)
            info = self._offers.pop(service_id)
        return Dialer(info.network, info.address, self._tls)

    def start_stream(self, requests: Iterator[grpc_broker_pb2.ConnInfo], context: grpc.ServicerContext) -> Iterator[grpc_broker_pb2.ConnInfo]:
        # The host sends what it serves; the plugin serves nothing over the
        # broker, so it never sends.
        for info in requests:
            self.offer(info)
        yield from ()


class Stdio:
    """What the agent prints to sys.stdout, for go-plugin's stdio stream.

    Bounded: when no host reads it, the oldest chunks are dropped, so that
    an agent that prints never blocks.
    """

    def __init__(self, limit: int = 1024) -> None:
        self._cond = threading.Condition()
        self._chunks: collections.deque[bytes] = collections.deque(maxlen=limit)
        self._closed = False

    def write(self, b: bytes) -> None:
        with self._cond:
            self._chunks.append(b)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def stream(self, request: grpc_controller_pb2.Empty, context: grpc.ServicerContext) -> Iterator[grpc_stdio_pb2.StdioData]:
        while context.is_active():
            with self._cond:
                while not self._chunks and not self._closed:
                    self._cond.wait(1.0)
                    if not context.is_active():
                        return
                if not self._chunks and self._closed:
                    return
                b = self._chunks.popleft()
            yield grpc_stdio_pb2.StdioData(channel=grpc_stdio_pb2.StdioData.STDOUT, data=b)


class StdioWriter:
    """A text stream that replaces sys.stdout once the handshake line is out."""

    encoding = "utf-8"

    def __init__(self, stdio: Stdio) -> None:
        self._stdio = stdio

    def write(self, s: str) -> int:
        if s:
            self._stdio.write(s.encode(self.encoding, errors="replace"))
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("the plugin's stdout is the host's stdio stream")


def _abort(context: grpc.ServicerContext, exc: BaseException) -> NoReturn:
    code, msg = _wire.status_of(exc)
    _abort_with(context, code, msg)


def _abort_with(context: grpc.ServicerContext, code: grpc.StatusCode, msg: str) -> NoReturn:
    context.abort(code, msg)
    raise AssertionError("unreachable: ServicerContext.abort raises")


class AgentService:
    """The Agent service: the author's Agent behind the wire."""

    def __init__(self, agent: Agent, broker: Broker, logger: logging.Logger) -> None:
        self._agent = agent
        self._broker = broker
        self._logger = logger
        self._lock = threading.Lock()
        self._channel: Optional[grpc.Channel] = None
        self._stub: Optional[CallbacksStub] = None
        self._dialer: Optional[Dialer] = None
        self._session = ""
        self._agent_name = ""
        # _export sends spans to the host's TraceService; None when the
        # host does not trace (it names no telemetry_service).
        self._export: Optional[grpc.UnaryUnaryMultiCallable] = None
        self._trace_service = ""

    def _failed(self, method: str, exc: BaseException) -> None:
        if not isinstance(exc, errors.HearthError):
            self._logger.error(
                "agent raised", extra={"hearth_fields": {"method": method, "error": f"{type(exc).__name__}: {exc}", "stack": traceback.format_exc()}}
            )

    def describe(self, request: pb.DescribeRequest, context: grpc.ServicerContext) -> pb.Info:
        try:
            info = self._agent.describe()
        except Exception as e:
            self._failed("describe", e)
            _abort(context, e)
        return _wire.info_to_wire(info, isinstance(self._agent, StateExporter))

    def attach(self, request: pb.AttachRequest, context: grpc.ServicerContext) -> pb.AttachResponse:
        try:
            dialer = self._broker.dial(request.host_broker_id)
            channel = dialer.channel()
        except errors.HearthError as e:
            _abort_with(context, grpc.StatusCode.UNAVAILABLE, f"dial host callbacks (broker id {request.host_broker_id}): {e}")
        with self._lock:
            # A host that retries Attach replaces the connection.
            if self._channel is not None:
                self._channel.close()
            self._channel = channel
            self._stub = CallbacksStub(channel)
            self._dialer = dialer
            self._session = request.session_id
            self._agent_name = request.agent
            self._trace_service = request.telemetry_service
            self._export = None
            if request.telemetry_service:
                self._export = channel.unary_unary(
                    EXPORT_METHOD, request_serializer=ExportRequest.SerializeToString, response_deserializer=ExportResponse.FromString
                )
        return pb.AttachResponse()

    def close(self) -> None:
        """Closes the connection to the host's callbacks."""
        with self._lock:
            if self._channel is not None:
                self._channel.close()
            self._channel, self._stub = None, None

    def run(self, request: pb.RunRequest, context: grpc.ServicerContext) -> pb.RunResponse:
        task = _wire.task_from_wire(request.task)
        # The host sends the task's span context as gRPC metadata, the way
        # OpenTelemetry's gRPC instrumentation does (W3C Trace Context).
        task.trace_context = {k: v for k, v in (context.invocation_metadata() or ()) if k in _TRACE_HEADERS and isinstance(v, str)}
        with self._lock:
            stub, session, dialer = self._stub, self._session, self._dialer
            export, service, agent_name = self._export, self._trace_service, self._agent_name
        # The task's calls go on a channel of its own, which a cancellation
        # closes: that ends the calls in flight, which a blocking call
        # cannot otherwise be. Its tool-use stream is on the session's
        # channel: reports made before a cancellation still count.
        task_channel = dialer.channel() if dialer is not None else None
        if not task.session:
            task.session = session
        remaining = context.time_remaining()
        # gRPC reports a call without a deadline as one in the far future.
        if remaining is not None and remaining > _NO_DEADLINE:
            remaining = None
        deadline = time.monotonic() + remaining if remaining is not None else None
        logger = FieldsAdapter(self._logger, {"session": task.session, "task": task.id})
        tracer: Optional[TaskTracer] = None
        if export is not None:
            # The resource the Go SDK gives a plugin's spans.
            resource = {"service.name": service, "hearth.agent": agent_name, "hearth.session.id": session}

            def send(req: Any, export: grpc.UnaryUnaryMultiCallable = export) -> None:
                export(req, timeout=EXPORT_TIMEOUT)

            def lost(e: BaseException) -> None:
                logger.warning("spans not sent to the host", extra={"hearth_fields": {"error": str(e)}})

            tracer = TaskTracer.for_task(task.trace_context, resource, send, lost)
        cb: Callbacks = (RunCallbacks if task.run else Callbacks)(
            stub,
            task.id,
            logger,
            deadline,
            calls=CallbacksStub(task_channel) if task_channel else None,
            close_calls=task_channel.close if task_channel else None,
            tracer=tracer,
        )
        # Called when the call ends, however: a cancellation by the host
        # reaches the agent's code through cb.cancelled and its calls.
        if not context.add_callback(cb._cancel_now):
            cb._cancel_now()
        run_err: Optional[BaseException] = None
        try:
            result = self._agent.run(task, cb)
        except Exception as e:
            self._failed("run", e)
            run_err = e
        # The agent's spans go before the result, as the Go SDK's do.
        cb._flush_spans()
        # The result goes back only after every tool-use report is durable
        # on the host, whether or not the task succeeded.
        acked, close_err = cb._close()
        if task_channel is not None:
            task_channel.close()
        if run_err is not None:
            if isinstance(run_err, errors.CancelledError) and remaining is not None and cb.time_remaining() == 0:
                run_err = errors.DeadlineExceededError(str(run_err))
            _abort(context, run_err)
        if close_err is not None:
            _abort_with(context, grpc.StatusCode.UNAVAILABLE, f"task {task.id}: tool-use reports were not acknowledged: {close_err}")
        refused = cb._refused_report()
        if refused is not None:
            _abort_with(context, grpc.StatusCode.FAILED_PRECONDITION, f"task {task.id}: a tool-use report was refused: {refused}")
        if not hasattr(result, "artifact"):
            _abort_with(context, grpc.StatusCode.UNKNOWN, f"task {task.id}: run returned {type(result).__name__}, want a hearth_agent.Result")
        return _wire.result_to_wire(result, acked)

    def summarize(self, request: pb.SummarizeRequest, context: grpc.ServicerContext) -> pb.Artifact:
        _abort_with(context, grpc.StatusCode.UNIMPLEMENTED, "Summarize is protocol version 1; this plugin speaks version 2")

    def export_state(self, request: pb.ExportStateRequest, context: grpc.ServicerContext) -> pb.SessionState:
        agent = self._agent
        if not isinstance(agent, StateExporter):
            _abort_with(context, grpc.StatusCode.UNIMPLEMENTED, "agent does not export session state")
        try:
            data = agent.export_state()
        except Exception as e:
            self._failed("export_state", e)
            _abort(context, e)
        return pb.SessionState(data=bytes(data))

    def import_state(self, request: pb.SessionState, context: grpc.ServicerContext) -> pb.ImportStateResponse:
        agent = self._agent
        if not isinstance(agent, StateExporter):
            _abort_with(context, grpc.StatusCode.UNIMPLEMENTED, "agent does not export session state")
        try:
            agent.import_state(request.data)
        except Exception as e:
            self._failed("import_state", e)
            _abort(context, e)
        return pb.ImportStateResponse()


def _unary(fn: Callable[[Any, grpc.ServicerContext], Any], req: Any, resp: Any) -> grpc.RpcMethodHandler:
    return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)


def handlers(
    agent: AgentService, broker: Broker, stdio: Stdio, shutdown: Callable[[], None]
) -> list[grpc.GenericRpcHandler]:
    """Every service a plugin serves."""

    def shutdown_handler(request: grpc_controller_pb2.Empty, context: grpc.ServicerContext) -> grpc_controller_pb2.Empty:
        shutdown()
        return grpc_controller_pb2.Empty()

    def health(request: health_pb2.HealthCheckRequest, context: grpc.ServicerContext) -> health_pb2.HealthCheckResponse:
        if request.service not in ("", "plugin"):
            _abort_with(context, grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)

    return [
        grpc.method_handlers_generic_handler(
            "hearth.agent.v1.Agent",
            {
                "Describe": _unary(agent.describe, pb.DescribeRequest, pb.Info),
                "Attach": _unary(agent.attach, pb.AttachRequest, pb.AttachResponse),
                "Run": _unary(agent.run, pb.RunRequest, pb.RunResponse),
                "Summarize": _unary(agent.summarize, pb.SummarizeRequest, pb.Artifact),
                "ExportState": _unary(agent.export_state, pb.ExportStateRequest, pb.SessionState),
                "ImportState": _unary(agent.import_state, pb.SessionState, pb.ImportStateResponse),
            },
        ),
        grpc.method_handlers_generic_handler(
            "plugin.GRPCBroker",
            {
                "StartStream": grpc.stream_stream_rpc_method_handler(
                    broker.start_stream,
                    request_deserializer=grpc_broker_pb2.ConnInfo.FromString,
                    response_serializer=grpc_broker_pb2.ConnInfo.SerializeToString,
                )
            },
        ),
        grpc.method_handlers_generic_handler(
            "plugin.GRPCController",
            {"Shutdown": _unary(shutdown_handler, grpc_controller_pb2.Empty, grpc_controller_pb2.Empty)},
        ),
        grpc.method_handlers_generic_handler(
            "plugin.GRPCStdio",
            {
                "StreamStdio": grpc.unary_stream_rpc_method_handler(
                    stdio.stream,
                    request_deserializer=grpc_controller_pb2.Empty.FromString,
                    response_serializer=grpc_stdio_pb2.StdioData.SerializeToString,
                )
            },
        ),
        grpc.method_handlers_generic_handler(
            "grpc.health.v1.Health",
            {"Check": _unary(health, health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse)},
        ),
    ]
