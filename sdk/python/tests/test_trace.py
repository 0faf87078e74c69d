"""Unit tests of hearth_agent.trace: the agent's spans, as the host is sent them.

The whole path (a real plugin, the host's relay, a real OTLP receiver) is
TestPythonAgentSpansJoinTheTaskTrace in sdk/python/trace_test.go.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import unittest
from typing import Any

from hearth_agent import Callbacks, trace
from hearth_agent.aio import AsyncCallbacks

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
SAMPLED = {"traceparent": f"00-{TRACE}-{PARENT}-01"}


def tracer(sent: list[Any], ctx: dict[str, str] = SAMPLED, **kw: Any) -> trace.TaskTracer:
    t = trace.TaskTracer.for_task(ctx, {"service.name": "hearth.test"}, sent.append, **kw)
    assert t is not None
    return t


def spans(sent: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for req in sent:
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                for s in ss.spans:
                    out[s.name] = s
    return out


class TraceparentTest(unittest.TestCase):
    def test_forms(self) -> None:
        self.assertEqual(trace.parse_traceparent(f"00-{TRACE}-{PARENT}-01"), (bytes.fromhex(TRACE), bytes.fromhex(PARENT), True))
        self.assertEqual(trace.parse_traceparent(f"00-{TRACE}-{PARENT}-00"), (bytes.fromhex(TRACE), bytes.fromhex(PARENT), False))
        # A later version may add fields; version 00 may not.
        self.assertIsNotNone(trace.parse_traceparent(f"01-{TRACE}-{PARENT}-01-extra"))
        for bad in [
            "",
            "garbage",
            f"00-{TRACE}-{PARENT}-01-extra",
            f"ff-{TRACE}-{PARENT}-01",
            f"00-{'0' * 32}-{PARENT}-01",
            f"00-{TRACE}-{'0' * 16}-01",
            f"00-{TRACE[:-2]}-{PARENT}-01",
            f"00-{TRACE}-{PARENT}zz-01",
            f"00-{TRACE}-{PARENT}-1",
            f"00-{TRACE.upper()}-{PARENT}-01",
            f"00-{TRACE[:2]} {TRACE[3:]}-{PARENT}-01",
        ]:
            self.assertIsNone(trace.parse_traceparent(bad), bad)

    def test_unsampled_or_absent_records_nothing(self) -> None:
        ctxs: list[dict[str, str]] = [{}, {"traceparent": f"00-{TRACE}-{PARENT}-00"}, {"traceparent": "nonsense"}]
        for ctx in ctxs:
            self.assertIsNone(trace.TaskTracer.for_task(ctx, {}, lambda r: None), ctx)


class SpanTest(unittest.TestCase):
    def cb(self, t: trace.TaskTracer | None) -> Callbacks:
        return Callbacks(None, "t1", logging.LoggerAdapter(logging.getLogger("test"), {}), tracer=t)

    def test_parents_attributes_and_errors(self) -> None:
        sent: list[Any] = []
        cb = self.cb(tracer(sent))
        with cb.span("outer", {"n": 3, "ok": True, "ratio": 0.5, "paths": ["a", "b"]}) as outer:
            self.assertTrue(outer.recording)
            with cb.span("inner") as inner:
                inner.add_event("found", {"files": 2})
        with self.assertRaises(ValueError):
            with cb.span("failed"):
                raise ValueError("boom")
        self.assertEqual(sent, [], "spans went before the task's end")
        cb._flush_spans()
        got = spans(sent)
        self.assertEqual(set(got), {"outer", "inner", "failed"})
        o, i, f = got["outer"], got["inner"], got["failed"]
        for s in (o, i, f):
            self.assertEqual(s.trace_id.hex(), TRACE)
            self.assertLessEqual(s.start_time_unix_nano, s.end_time_unix_nano)
        self.assertEqual(o.parent_span_id.hex(), PARENT)
        self.assertEqual(f.parent_span_id.hex(), PARENT)
        self.assertEqual(i.parent_span_id, o.span_id)
        self.assertNotEqual(i.span_id, o.span_id)
        attrs = {kv.key: kv.value for kv in o.attributes}
        self.assertEqual(attrs["n"].int_value, 3)
        self.assertTrue(attrs["ok"].bool_value)
        self.assertEqual(attrs["ratio"].double_value, 0.5)
        self.assertEqual([v.string_value for v in attrs["paths"].array_value.values], ["a", "b"])
        self.assertEqual(i.events[0].name, "found")
        self.assertEqual(f.status.code, 2)
        self.assertEqual(f.status.message, "ValueError: boom")
        self.assertEqual(o.flags & 0x2FF, 0x201, "outer: sampled, parent remote")
        self.assertEqual(i.flags & 0x2FF, 0x001, "inner: sampled, parent local")

    def test_untraced_span_is_a_no_op(self) -> None:
        cb = self.cb(None)
        with cb.span("x", {"n": 1}) as s:
            s.set_attribute("m", 2)
            self.assertFalse(s.recording)
            self.assertEqual(s.traceparent, "")
        cb._flush_spans()

    def test_bad_attributes_are_refused(self) -> None:
        cb = self.cb(None)
        for k, v in [("", 1), ("k", {"a": 1}), ("k", None), ("k", [1, object()])]:
            with self.assertRaises(TypeError):
                cb.span("x", {k: v})

    def test_batches_and_lost_exports(self) -> None:
        sent: list[Any] = []
        cb = self.cb(tracer(sent))
        for _ in range(trace.MAX_BATCH):
            with cb.span("s"):
                pass
        self.assertEqual(len(sent), 1, "a full batch is sent without waiting for the task's end")

        errors: list[BaseException] = []

        def fail(req: Any) -> None:
            raise RuntimeError("host gone")

        t = trace.TaskTracer.for_task(SAMPLED, {}, fail, errors.append)
        cb = self.cb(t)
        with cb.span("s"):
            pass
        cb._flush_spans()  # does not raise
        self.assertEqual([str(e) for e in errors], ["host gone"])

    def test_spans_in_threads_and_tasks_parent_on_their_own(self) -> None:
        sent: list[Any] = []
        cb = self.cb(tracer(sent))
        with cb.span("outer"):

            def work() -> None:
                with cb.span("in-thread"):
                    pass

            th = threading.Thread(target=work)
            th.start()
            th.join()

            async def main() -> str:
                acb = AsyncCallbacks(cb)

                async def child(name: str) -> None:
                    with acb.span(name):
                        await asyncio.sleep(0)
                        with acb.span(name + "-inner"):
                            await asyncio.sleep(0)

                await asyncio.gather(child("a"), child("b"))
                return trace.current_traceparent(cb._tracer)

            tp = asyncio.run(main())
        cb._flush_spans()
        got = spans(sent)
        # A new thread does not inherit the span open in the one that
        # started it; asyncio tasks do, and keep their own.
        self.assertEqual(got["in-thread"].parent_span_id.hex(), PARENT)
        self.assertEqual(got["a"].parent_span_id, got["outer"].span_id)
        self.assertEqual(got["a-inner"].parent_span_id, got["a"].span_id)
        self.assertEqual(got["b-inner"].parent_span_id, got["b"].span_id)
        self.assertEqual(tp, f"00-{TRACE}-{got['outer'].span_id.hex()}-01")


if __name__ == "__main__":
    unittest.main()
