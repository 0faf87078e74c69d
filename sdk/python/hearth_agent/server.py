"""serve(agent): everything a hearth host expects of a plugin process.

The exchange is docs/protocol.md's: go-plugin's handshake (the magic
cookie, protocol version negotiation, one line on stdout naming the
socket), hearth's mutual TLS, the Agent service beside go-plugin's broker,
controller, stdio and health services, JSON log lines on stderr, and a
parent watch: a Python plugin never outlives its host.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import signal
import sys
import threading
import time
from typing import NoReturn, Union

import grpc

from . import _log, _services, _tls
from .aio import AsyncAgent, as_agent
from .contract import Agent

MAGIC_COOKIE_KEY = "HEARTH_AGENT_PLUGIN"
MAGIC_COOKIE_VALUE = "7d1f0c2b-hearth-agent"
CORE_PROTOCOL_VERSION = 1
PROTOCOL_VERSION = 2
"""The hearth agent protocol version this SDK serves (the Go SDK's plugin.ProtocolVersion)."""

# How often the plugin checks that its host is alive (the Go SDK's
# parentPollInterval): the parent-death signal usually ends it first.
PARENT_POLL = 0.2

VOUCH_ENV = "HEARTH_PLUGIN_VOUCH"
"""How long the plugin goes on without hearing from its host (the Go SDK's plugin.EnvVouch).

A duration in Go's syntax ("1.25s", "1m0s"), which a host of a cluster
sets a third of its lease TTL. The plugin's gRPC server pings the host
once the connection has been silent for about half of it and closes the
connection when the host has not answered by the end of it: the task's
call is then cancelled (``cb.cancelled``, ``cb.wait`` wakes), and an
agent that honours cancellation stops. A host that is paused (SIGSTOP, a
VM pause) cannot answer, so its plugins stop their work before its lease
expires and another host may run the task (docs/cluster.md, "Fencing").
Unset, a plugin waits for its host however long it is paused.
"""

# gRPC's least interval between a server's pings (the Go SDK's minPingTime).
_MIN_PING = 1.0

_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_NUMBER = re.compile(r"[0-9]*(?:\.[0-9]*)?")
_GO_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in ``text``, a duration in Go's syntax (time.ParseDuration).

    Raises ValueError, naming the text, for anything Go would refuse.
    """
    s = text
    sign, signed = 1.0, 0
    if s[:1] in ("+", "-"):
        sign, signed = (-1.0 if s[0] == "-" else 1.0), 1
        s = s[1:]
    if s == "0":
        return 0.0
    if s == "":
        raise ValueError(f"invalid duration {text!r}: empty")
    total, pos = 0.0, 0
    while pos < len(s):
        m = _GO_PART.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            num = _GO_NUMBER.match(s, pos)
            at, want = (pos, "a number") if num is None or num.group() in ("", ".") else (num.end(), "a unit (ns, us, ms, s, m, h)")
            raise ValueError(f"invalid duration {text!r} at offset {signed + at}: want {want}")
        total += float(m.group(1)) * _GO_UNITS[m.group(2)]
        pos = m.end()
    if total * 1e9 >= 2**63:
        raise ValueError(f"invalid duration {text!r}: longer than Go's time.Duration holds (about 292 years)")
    return sign * total


def vouch_options(vouch: str) -> list[tuple[str, object]]:
    """The gRPC server options that close a silent host's connection within ``vouch``.

    The same bounds as the Go SDK's: a ping after ``max(1 s, vouch/2)`` of
    silence, answered within the rest of ``vouch`` (at least 100 ms). An
    unset, unreadable or non-positive ``vouch`` gives none: the plugin
    waits for its host.
    """
    try:
        d = parse_go_duration(vouch) if vouch else 0.0
    except ValueError:
        return []
    if d <= 0:
        return []
    ping = max(_MIN_PING, d / 2)
    timeout = max(d - ping, 0.1)
    return [
        ("grpc.keepalive_time_ms", int(ping * 1000)),
        ("grpc.keepalive_timeout_ms", int(timeout * 1000)),
        # Ping while no call is open too, as Go's server does.
        ("grpc.keepalive_permit_without_calls", 1),
    ]


# Threads serving calls: a session's tasks (up to its capacity), the
# host's Describe, ExportState and health checks beside them, and the two
# long-lived streams (broker, stdio). Threads are made only when needed.
_WORKERS = 64

NOT_BY_HAND = """\
This program is a hearth agent plugin: a hearth host starts it and talks to
it over gRPC. It is not meant to be run by hand.

  - to run tasks on it, name it in an agent block of hearth.hcl
    (command = ["python3", "agent.py"]) and use `hearth run` or `hearth submit`;
  - to check it keeps the agent contract, run `hearth agents test -- python3 agent.py`.
"""


def negotiate(offered: str) -> int:
    """The protocol version to speak, from the host's PLUGIN_PROTOCOL_VERSIONS.

    The newest version this SDK serves that the host offers; when it offers
    none of them, this SDK's own, which the host then refuses with an error
    naming both sides.
    """
    for v in offered.split(","):
        v = v.strip()
        # ASCII digits only: str.isdigit admits "²", which int() refuses.
        if v.isascii() and v.isdigit() and int(v) == PROTOCOL_VERSION:
            return PROTOCOL_VERSION
    return PROTOCOL_VERSION


def handshake_line(version: int, network: str, address: str, cert: str) -> str:
    """go-plugin's handshake line: core|app|network|address|protocol|cert."""
    return f"{CORE_PROTOCOL_VERSION}|{version}|{network}|{address}|grpc|{cert}"


def _set_death_signal() -> None:
    # The host starts a plugin with SIGKILL as its parent-death signal; a
    # Python plugin asks for SIGTERM instead and handles it by killing its
    # process group, so that the processes the agent started die with it
    # (a SIGKILL would end the plugin alone). The host stops its plugins
    # with the controller's Shutdown, never with SIGTERM. The setting
    # belongs to the thread that makes it, and the main thread holds the
    # host's SIGKILL: it must run there. serve() calls it once the
    # handshake is out (ctypes costs milliseconds of cold start); the
    # host's SIGKILL covers the plugin until then.
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def _orphaned() -> NoReturn:
    # A plugin started by a hearth host leads its own process group:
    # killing the group also takes the processes the agent started.
    if os.getpgrp() == os.getpid():
        try:
            os.killpg(os.getpid(), signal.SIGKILL)
        except OSError:
            pass
    os._exit(3)


def watch_parent(ppid: int, every: float = PARENT_POLL) -> None:
    """Ends the process once the one that started it is no longer its parent."""
    if ppid <= 1:
        _orphaned()
    while True:
        time.sleep(every)
        if os.getppid() != ppid:
            _orphaned()


def _socket_path() -> str:
    # tempfile and secrets would cost tens of milliseconds of imports.
    d = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(d, f"plugin-py-{os.getpid()}-{os.urandom(4).hex()}")


def serve(agent: Union[Agent, AsyncAgent]) -> NoReturn:
    """Serve ``agent`` as a hearth agent plugin. It never returns.

    An asyncio agent (hearth_agent.aio.AsyncAgent) is served the same
    way. It is the whole main of an agent program::

        if __name__ == "__main__":
            serve(MyAgent())

    Run by hand rather than by a hearth host, it explains so and exits with
    status 1.
    """
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write(NOT_BY_HAND)
        sys.exit(1)
    ppid = os.getppid()
    # SIGTERM is handled from the start; the parent-death signal is asked
    # for once the handshake is out.
    signal.signal(signal.SIGTERM, lambda signum, frame: _orphaned())
    threading.Thread(target=watch_parent, args=(ppid,), name="hearth-parent-watch", daemon=True).start()
    # A terminal's Ctrl-C reaches the whole process group; the host decides
    # when its plugins stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    logger = _log.setup(sys.stderr)
    version = negotiate(os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(PROTOCOL_VERSION)))
    try:
        tls = _tls.from_environment()
    except _tls.TLSError as e:
        sys.stderr.write(f"hearth agent: cannot set up TLS with the host: {e}\n")
        sys.exit(1)

    broker = _services.Broker(tls)
    stdio = _services.Stdio()
    done = threading.Event()
    service = _services.AgentService(as_agent(agent), broker, logger)
    server = grpc.server(
        concurrent.futures.ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="hearth-rpc"),
        handlers=_services.handlers(service, broker, stdio, done.set),
        options=[("grpc.max_receive_message_length", 2**31 - 1), ("grpc.max_send_message_length", 2**31 - 1)]
        + vouch_options(os.environ.get(VOUCH_ENV, "")),
    )
    path = _socket_path()
    if tls is not None:
        creds = grpc.ssl_server_credentials([(tls.key_pem, tls.cert_pem)], root_certificates=tls.peer_pem, require_client_auth=True)
        server.add_secure_port("unix:" + path, creds)
    else:
        server.add_insecure_port("unix:" + path)
    server.start()

    out = sys.stdout
    out.write(handshake_line(version, "unix", path, tls.handshake_cert if tls else "") + "\n")
    out.flush()
    # From here on, what the agent prints goes to go-plugin's stdio stream:
    # the host's reader of stdout is done with it.
    sys.stdout = _services.StdioWriter(stdio)  # type: ignore[assignment]
    logger.debug("plugin address", extra={"hearth_fields": {"network": "unix", "address": path}})
    _set_death_signal()
    if os.getppid() != ppid:
        _orphaned()

    # The main thread waits in short steps so that signals are handled.
    while not done.wait(1.0):
        pass
    server.stop(0.5).wait()
    service.close()
    stdio.close()
    try:
        os.unlink(path)
    except OSError:
        pass
    sys.stderr.flush()
    # Threads still running an agent's task must not keep the process.
    os._exit(0)


