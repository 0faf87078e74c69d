"""Randomized tests of what the SDK parses from outside: the host's
environment and TLS pipe, and protobuf messages off the wire. atheris, a
coverage-guided fuzzer, is not packaged by Debian; these run a fixed
number of seeded random inputs, mutations of valid ones included, and
hold each parser to its contract: an answer or the error it documents,
never another exception.
"""

from __future__ import annotations

import os
import random
import unittest
from typing import Any, Callable

from hearth_agent import _tls, _wire, server, trace
from hearth_agent._pb import agent_pb2 as pb

ROUNDS = 2000


def mutate(rng: random.Random, b: bytes) -> bytes:
    out = bytearray(b)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(3)
        i = rng.randrange(len(out) + 1)
        if op == 0 and out:
            del out[min(i, len(out) - 1)]
        elif op == 1:
            out.insert(i, rng.randrange(256))
        elif out:
            out[min(i, len(out) - 1)] = rng.randrange(256)
    return bytes(out)


class FuzzTest(unittest.TestCase):
    def test_negotiate_any_offer(self) -> None:
        rng = random.Random(1)
        seeds = ["1,2", "2", "1", "", " 2 , 1", "99", "2,2,2", "x", "\u00b2"]
        for _ in range(ROUNDS):
            s = mutate(rng, rng.choice(seeds).encode()).decode("latin-1")
            self.assertEqual(server.negotiate(s), server.PROTOCOL_VERSION)

    def test_vouch_any_text(self) -> None:
        # HEARTH_PLUGIN_VOUCH: seconds or ValueError from the parser, and
        # options or none (the plugin waits for its host) from serve's
        # reading of it; sdk/python/vouch_test.go holds the parser to Go's.
        rng = random.Random(26)
        seeds = ["1.25s", "4s", "1m0s", "0", "-1s", "", ".5ms", "1h2m3.5s", "1\u00b5s", "x"]
        for _ in range(ROUNDS):
            text = mutate(rng, rng.choice(seeds).encode()).decode("utf-8", "replace")
            try:
                self.assertIsInstance(server.parse_go_duration(text), float)
            except ValueError:
                pass
            opts = server.vouch_options(text)
            self.assertIn(len(opts), (0, 3), text)

    def test_traceparent_any_text(self) -> None:
        # The task's traceparent, from the host's metadata: a parse is
        # either None or IDs that are not all zero, of W3C's lengths.
        rng = random.Random(4)
        seeds = ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "01-" + "a" * 32 + "-" + "b" * 16 + "-00-x", ""]
        for _ in range(ROUNDS):
            s = mutate(rng, rng.choice(seeds).encode()).decode("latin-1")
            p = trace.parse_traceparent(s)
            if p is not None:
                self.assertEqual((len(p[0]), len(p[1])), (16, 8), s)
                self.assertTrue(any(p[0]) and any(p[1]), s)
                self.assertIsNotNone(trace.TaskTracer.for_task({"traceparent": s}, {}, lambda r: None) if p[2] else p, s)

    def test_tls_pipe_any_bytes(self) -> None:
        rng = random.Random(2)
        cert, key, _ = _tls.self_signed()
        valid = cert + key + cert
        for _ in range(ROUNDS // 10):
            b = mutate(rng, valid) if rng.random() < 0.8 else rng.randbytes(rng.randrange(64))
            r, w = os.pipe()
            os.write(w, b)
            os.close(w)
            try:
                m = _tls.from_pipe(str(r))
            except _tls.TLSError:
                continue
            self.assertEqual(len(_tls.split_pem(m.cert_pem + m.key_pem + m.peer_pem)), 3)

    def test_wire_messages_any_bytes(self) -> None:
        rng = random.Random(3)
        task = pb.Task(id="t", prompt="p", hints=pb.Hints(files=["a.py"]), metadata={"k": "v"})
        task.upstream.add(task="u", version=2, created_unix_nano=1_700_000_000_000_000_000)
        use = pb.ToolUse(task_id="t", tool="Read", outcome=pb.OUTCOME_OK, kind="read", at_unix_nano=123)
        call = pb.ToolCall(task_id="t", tool="Read", kind="read", input_json=b'{"file_path": "a.py"}')
        cases: list[tuple[Any, Callable[[Any], object]]] = [
            (task, _wire.task_from_wire),
            (use, _wire.tool_use_from_wire),
            (call, _wire.tool_call_from_wire),
        ]
        for _ in range(ROUNDS):
            for msg, decode in cases:
                b = mutate(rng, msg.SerializeToString())
                try:
                    m = type(msg).FromString(b)
                except Exception as e:  # protobuf's DecodeError
                    self.assertEqual(type(e).__name__, "DecodeError")
                    continue
                try:
                    decode(m)
                except ValueError:
                    # json.JSONDecodeError and UnicodeDecodeError of a
                    # tool call's input: the recorder answers with an error.
                    self.assertIs(decode, _wire.tool_call_from_wire)
                except OverflowError:
                    # A time beyond datetime's range.
                    pass


if __name__ == "__main__":
    unittest.main()
