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
        options=[("grpc.max_receive_message_length", 2**31 - 1), ("grpc.max_send_message_length", 2**31 - 1)],
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


