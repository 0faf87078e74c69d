"""The Python code README.md shows runs, as shown."""

from __future__ import annotations

import os
import re
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ReadmeTest(unittest.TestCase):
    def test_readme_code_runs(self) -> None:
        with open(os.path.join(HERE, "README.md")) as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertEqual(len(blocks), 2, "README.md's Python blocks changed")
        ns: dict[str, object] = {"__name__": "readme"}
        cwd = os.getcwd()
        os.chdir(os.path.join(HERE, "tests"))
        try:
            for b in blocks:
                exec(compile(b, "README.md", "exec"), ns)
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    unittest.main()
