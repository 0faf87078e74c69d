"""Unit tests of hearth_agent, run in-process over the real protocol (Harness).

python3 -m unittest discover -s tests -t .   (from sdk/python)
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import os
import tempfile
import threading
import unittest

from hearth_agent import (
    Agent,
    CancelledError,
    Denied,
    HearthError,
    Callbacks,
    HostError,
    Info,
    Kind,
    Outcome,
    PermanentError,
    Result,
    RunCallbacks,
    StateNotSupportedError,
    Task,
    Tools,
    ToolUse,
)
from hearth_agent import _log, _tls, _wire, server
from hearth_agent.testing import ConformanceError, Harness, check_agent, deny_all


class ToolsAgent(Agent):
    """Uses every tool on a workspace, as its prompt says."""

    def __init__(self, root: str) -> None:
        self.root = root

    def describe(self) -> Info:
        return Info(name="tools", version="0.1.0", capacity=2)

    def run(self, task: Task, cb: Callbacks) -> Result:
        t = Tools(cb, self.root)
        out = []
        for step in task.prompt.split(";"):
            verb, _, arg = step.partition(":")
            if verb == "read":
                out.append(t.read_text(arg))
            elif verb == "write":
                path, _, text = arg.partition("=")
                t.write(path, text)
            elif verb == "edit":
                path, _, rest = arg.partition("=")
                old, _, new = rest.partition(">")
                t.edit(path, old, new)
            elif verb == "list":
                out.append(",".join(e.name for e in t.list(arg)))
            elif verb == "search":
                out.append(",".join(f"{m.path}:{m.line}" for m in t.search(arg, "TODO", glob="*.py")))
            elif verb == "exec":
                r = t.exec("sh", "-c", arg)
                out.append(f"{r.exit_code}:{r.stdout.decode().strip()}")
        return Result(output="|".join(out))


class ToolsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "pkg", ".git"))
        with open(os.path.join(self.dir, "pkg", "a.py"), "w") as f:
            f.write("x = 1\n# TODO: more\n")
        with open(os.path.join(self.dir, "pkg", "b.txt"), "w") as f:
            f.write("TODO not python\n")
        with open(os.path.join(self.dir, "pkg", ".git", "c.py"), "w") as f:
            f.write("# TODO hidden\n")

    def test_each_tool_asks_does_and_reports(self) -> None:
        with Harness(ToolsAgent(self.dir)) as h:
            res = h.run(Task(id="t1", prompt="write:new.py=print(1);edit:new.py=1>2;read:new.py;list:pkg;search:pkg;exec:echo hi"))
            self.assertEqual(res.output, "print(2)|.git,a.py,b.txt|pkg/a.py:2|0:hi")
            log = h.recorder.log("t1")
            calls = [e.call for e in log if e.call is not None]
            uses = [e.use for e in log if e.use is not None]
            self.assertEqual([c.tool for c in calls], ["Write", "Edit", "Read", "List", "Search", "Exec"])
            self.assertEqual([u.tool for u in uses], ["Write", "Edit", "Read", "List", "Search", "Exec"])
            for c, u in zip(calls, uses):
                self.assertEqual(c.call_id, u.call_id)
                self.assertEqual(u.outcome, Outcome.OK)
                self.assertEqual(c.kind, u.kind)
            self.assertEqual(uses[4].kind, Kind.SEARCH)
            self.assertEqual(uses[4].paths, ["pkg/", "pkg/a.py"])
            self.assertEqual(calls[4].input, {"path": "pkg", "pattern": "TODO", "glob": "*.py"})

    def test_a_failing_tool_is_reported_as_an_error(self) -> None:
        with Harness(ToolsAgent(self.dir)) as h:
            with self.assertRaises(HostError) as cm:
                h.run(Task(id="t1", prompt="read:missing.py"))
            self.assertIn("FileNotFoundError", str(cm.exception))
            (u,) = h.recorder.tool_uses("t1")
            self.assertEqual(u.outcome, Outcome.ERROR)
            self.assertIn("missing.py", u.error)

    def test_a_denied_tool_does_nothing(self) -> None:
        with Harness(ToolsAgent(self.dir), policy=deny_all) as h:
            with self.assertRaises(HostError) as cm:
                h.run(Task(id="t1", prompt="write:new.py=x"))
            self.assertIn('Write new.py was denied by guard "sdktest-deny-all": sdktest denies every tool use: Write', str(cm.exception))
            self.assertFalse(os.path.exists(os.path.join(self.dir, "new.py")))
            (u,) = h.recorder.tool_uses("t1")
            self.assertEqual((u.outcome, u.error), (Outcome.DENIED, "sdktest denies every tool use: Write"))


class Scripted(Agent):
    def __init__(self) -> None:
        self.saw_cancel = threading.Event()
        self.waiting = threading.Event()

    def describe(self) -> Info:
        return Info(name="scripted", version="1")

    def run(self, task: Task, cb: Callbacks) -> Result:
        if task.prompt == "permanent":
            raise PermanentError("bad input")
        if task.prompt == "boom":
            raise RuntimeError("boom")
        if task.prompt == "nooutcome":
            try:
                cb.report(ToolUse(tool="Read", outcome=None))  # type: ignore[arg-type]
            except HearthError:
                pass  # ignored on purpose: the task fails anyway
            return Result(output="went on")
        if task.prompt == "wait":
            self.waiting.set()
            if cb.wait(30):
                self.saw_cancel.set()
            cb.raise_if_cancelled()
        if task.prompt == "state":
            assert isinstance(cb, RunCallbacks)
            cb.state("x")
        if task.prompt == "context":
            return Result(output=f"{task.context}|{task.feedback}|{task.upstream[0].artifact.key_decisions}")
        return Result(output="ok")


class ProtocolTest(unittest.TestCase):
    def test_errors_keep_their_kind(self) -> None:
        with Harness(Scripted()) as h:
            with self.assertRaises(PermanentError) as cm:
                h.run(Task(id="", prompt="permanent"))
            self.assertIn("bad input", str(cm.exception))
            with self.assertRaises(HostError) as cm2:
                h.run(Task(id="", prompt="boom"))
            self.assertEqual(cm2.exception.code, "UNKNOWN")
            self.assertIn("RuntimeError: boom", str(cm2.exception))
            with self.assertRaises(StateNotSupportedError):
                h.export_state()

    def test_a_report_without_an_outcome_fails_the_task(self) -> None:
        with Harness(Scripted()) as h:
            with self.assertRaises(PermanentError) as cm:
                h.run(Task(id="t1", prompt="nooutcome"))
            self.assertIn('tool use "Read" has no outcome', str(cm.exception))
            self.assertEqual(h.recorder.tool_uses("t1"), [])

    def test_cancellation_reaches_the_agent(self) -> None:
        a = Scripted()
        with Harness(a) as h:
            cancel = threading.Event()
            t = threading.Thread(target=lambda: self.assertRaises(CancelledError, h.run, Task(id="t1", prompt="wait"), 30, cancel))
            t.start()
            self.assertTrue(a.waiting.wait(10))
            cancel.set()
            t.join()
            self.assertTrue(a.saw_cancel.wait(10), "the agent's cb.wait did not wake on cancellation")

    def test_run_calls_outside_a_run_are_permanent(self) -> None:
        with Harness(Scripted()) as h:
            with self.assertRaises(PermanentError) as cm:
                h.run(Task(id="t1", prompt="state", run="run-1"))
            self.assertIn("read run state", str(cm.exception))

    def test_context_comes_beside_the_prompt(self) -> None:
        from hearth_agent import ContextArtifact, Upstream

        up = Upstream(task="a", version=2, created_at=datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc), artifact=ContextArtifact(key_decisions=["k"]))
        with Harness(Scripted()) as h:
            res = h.run(Task(id="t1", prompt="context", context="C", feedback="F", upstream=[up]))
            self.assertEqual(res.output, "C|F|['k']")


class ConformanceTest(unittest.TestCase):
    def test_a_conforming_agent_passes(self) -> None:
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "a.py"), "w") as f:
            f.write("# TODO\n")
        results = check_agent(lambda: ToolsAgent(d), [Task(id="", prompt="read:a.py;search:.")])
        self.assertEqual(
            [r.name for r in results],
            ["Describe", "tasks", "context beside the prompt", "asks first", "denied tool uses", "cancelled context", "concurrent tasks", "state"],
        )

    def test_violations_are_named_by_check(self) -> None:
        class Sneaky(Agent):
            def describe(self) -> Info:
                return Info(name="two words", version="")

            def run(self, task: Task, cb: Callbacks) -> Result:
                cb.report(ToolUse(tool="Read", kind=Kind.READ, paths=[".env"], outcome=Outcome.OK))
                return Result(output="x")

        with self.assertRaises(ConformanceError) as cm:
            check_agent(Sneaky, [Task(id="", prompt="go")])
        msg = str(cm.exception)
        for want in ["Describe: Info.name 'two words' contains whitespace", "Describe: Info.version is empty", "asks first: task 0 ('go'): tool use Read ['.env'] was reported without a CheckToolUse"]:
            self.assertIn(want, msg)


    def test_a_check_that_could_not_run_fails(self) -> None:
        class Silent(Agent):
            def describe(self) -> Info:
                return Info(name="silent", version="1")

            def run(self, task: Task, cb: Callbacks) -> Result:
                return Result(output="hello")

        with self.assertRaises(ConformanceError) as cm:
            check_agent(Silent, [Task(id="", prompt="go")])
        msg = str(cm.exception)
        for want in ["asks first: could not run: no task used a tool", "denied tool uses: could not run: no task used a tool"]:
            self.assertIn(want, msg)


class WireTest(unittest.TestCase):
    def test_negotiation(self) -> None:
        self.assertEqual(server.negotiate("1,2"), 2)
        self.assertEqual(server.negotiate("2"), 2)
        self.assertEqual(server.negotiate("1"), 2)  # the host refuses it, naming both sides
        self.assertEqual(server.handshake_line(2, "unix", "/tmp/p", ""), "1|2|unix|/tmp/p|grpc|")

    def test_vouch_options(self) -> None:
        # The Go SDK's bounds (sdk/plugin vouchParams): a ping after
        # max(1 s, vouch/2) of silence, answered within the rest.
        self.assertEqual(
            dict(server.vouch_options("1.25s")),
            {"grpc.keepalive_time_ms": 1000, "grpc.keepalive_timeout_ms": 250, "grpc.keepalive_permit_without_calls": 1},
        )
        self.assertEqual(dict(server.vouch_options("1m0s"))["grpc.keepalive_timeout_ms"], 30000)
        self.assertEqual(dict(server.vouch_options("1s"))["grpc.keepalive_timeout_ms"], 100)
        for unset in ("", "0", "-3s", "soon"):
            self.assertEqual(server.vouch_options(unset), [], unset)
        with self.assertRaisesRegex(ValueError, "offset 2"):
            server.parse_go_duration("-1x")

    def test_times_round_trip(self) -> None:
        t = datetime.datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=datetime.timezone.utc)
        self.assertEqual(_wire.from_unix_nano(_wire.unix_nano(t)), t)
        self.assertEqual(_wire.unix_nano(None), 0)
        self.assertIsNone(_wire.from_unix_nano(0))

    def test_tls_material(self) -> None:
        cert, key, der = _tls.self_signed()
        self.assertEqual(len(_tls.split_pem(cert + key + cert)), 3)
        r, w = os.pipe()
        os.write(w, cert + key)
        os.close(w)
        with self.assertRaisesRegex(_tls.TLSError, "holds 2 PEM blocks, want 3"):
            _tls.from_pipe(str(r))
        with self.assertRaisesRegex(_tls.TLSError, "is not a file descriptor"):
            _tls.from_pipe("x")
        from cryptography import x509

        c = x509.load_der_x509_certificate(der)
        self.assertEqual(c.public_key().curve.name, "secp256r1")  # type: ignore[union-attr]
        self.assertEqual(base64.b64decode(base64.b64encode(der)), der)

    def test_log_lines_are_hclog_json(self) -> None:
        rec = logging.LogRecord("agent", logging.WARNING, __file__, 1, "found %d", (3,), None)
        rec.hearth_fields = {"task": "t1", "n": 2}
        line = json.loads(_log.HclogFormatter().format(rec))
        self.assertEqual((line["@level"], line["@message"], line["task"], line["n"]), ("warn", "found 3", "t1", 2))
        self.assertEqual(_log.level_from_env("debug"), logging.DEBUG)
        self.assertEqual(_log.level_from_env(""), logging.INFO)


if __name__ == "__main__":
    unittest.main()
