"""The floor under the Python SDK's cold start, for BenchmarkPythonColdStart:
a plugin written straight against grpcio, without hearth_agent. It does
the least a hearth host accepts: reads hearth's TLS pipe, serves Describe
and the health check over TLS on a Unix socket, writes the handshake line,
and exits when asked to shut down (or when its host kills it).
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import sys
import threading
from typing import Any

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hearth_agent", "_pb"))
import agent_pb2  # type: ignore[import]  # noqa: E402
import grpc_controller_pb2  # type: ignore[import]  # noqa: E402
import health_pb2  # type: ignore[import]  # noqa: E402


def main() -> None:
    with os.fdopen(int(os.environ["HEARTH_PLUGIN_TLS_FD"]), "rb") as f:
        cert, key, peer = re.findall(rb"-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----\n?", f.read(), re.S)
    done = threading.Event()

    def unary(fn: Any, req: Any, resp: Any) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    def describe(req: Any, ctx: Any) -> agent_pb2.Info:
        return agent_pb2.Info(name="raw", version="1", capacity=1)

    def shutdown(req: Any, ctx: Any) -> grpc_controller_pb2.Empty:
        done.set()
        return grpc_controller_pb2.Empty()

    def health(req: Any, ctx: Any) -> health_pb2.HealthCheckResponse:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)

    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler("hearth.agent.v1.Agent", {"Describe": unary(describe, agent_pb2.DescribeRequest, agent_pb2.Info)}),
            grpc.method_handlers_generic_handler("plugin.GRPCController", {"Shutdown": unary(shutdown, grpc_controller_pb2.Empty, grpc_controller_pb2.Empty)}),
            grpc.method_handlers_generic_handler(
                "grpc.health.v1.Health", {"Check": unary(health, health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse)}
            ),
        )
    )
    path = f"/tmp/plugin-raw-{os.getpid()}"
    server.add_secure_port("unix:" + path, grpc.ssl_server_credentials([(key, cert)], root_certificates=peer, require_client_auth=True))
    server.start()
    print(f"1|2|unix|{path}|grpc|", flush=True)
    done.wait()
    server.stop(0)
    os.unlink(path)
    os._exit(0)


if __name__ == "__main__":
    main()
