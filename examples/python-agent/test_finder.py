"""Tests of the finder agent, in-process over the real protocol."""

from __future__ import annotations

import os
import unittest

from hearth_agent import Task
from hearth_agent.testing import Harness, check_agent, deny_all

from finder import Finder, language

HERE = os.path.dirname(os.path.abspath(__file__))


class FinderTest(unittest.TestCase):
    def setUp(self) -> None:
        os.chdir(HERE)

    def test_summarizes_by_file_marker_and_language(self) -> None:
        with Harness(Finder()) as h:
            res = h.run(Task(id="t1", prompt="TODO|FIXME", hints=_hints("sample/app", "sample/web")))
            self.assertIn("5 matches of 'TODO|FIXME' in 3 files (0 already known to this session)", res.output)
            self.assertIn("  sample/app/main.py: 2", res.output)
            self.assertIn("markers: TODO 3, FIXME 2", res.output)
            self.assertIn("languages: python 3, javascript 2", res.output)
            uses = h.recorder.tool_uses("t1")
            self.assertEqual([u.tool for u in uses], ["Search", "Search"])
            self.assertEqual(uses[0].paths[0], "sample/app/")
            # A second task on the same files: the session knows them.
            res = h.run(Task(id="t2", prompt="TODO", hints=_hints("sample/app")))
            self.assertIn("(2 already known to this session)", res.output)

    def test_a_denied_search_is_reported_not_made(self) -> None:
        with Harness(Finder(), policy=deny_all) as h:
            res = h.run(Task(id="t1", prompt="TODO", hints=_hints("sample/secrets")))
            self.assertIn("denied: sample/secrets: sdktest denies every tool use: Search", res.output)

    def test_keeps_the_contract(self) -> None:
        check_agent(Finder, [Task(id="", prompt="TODO", hints=_hints("sample/app"))])

    def test_language(self) -> None:
        self.assertEqual(language("a/b.PY"), "python")
        self.assertEqual(language("Makefile"), "other")


def _hints(*dirs: str):  # type: ignore[no-untyped-def]
    from hearth_agent import Hints

    return Hints(directories=list(dirs))


if __name__ == "__main__":
    unittest.main()
