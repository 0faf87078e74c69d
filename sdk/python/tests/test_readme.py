"""The README's field reference names every field of the contract."""

from __future__ import annotations

import dataclasses
import os
import unittest

from hearth_agent import contract

_README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


class FieldReferenceTest(unittest.TestCase):
    def test_every_field_is_in_the_reference(self) -> None:
        with open(_README, encoding="utf-8") as f:
            readme = f.read()
        _, _, ref = readme.partition("\n## Field reference\n")
        self.assertTrue(ref, "the README has no Field reference section")
        ref, _, _ = ref.partition("\n## ")
        classes = [c for c in vars(contract).values() if isinstance(c, type) and dataclasses.is_dataclass(c)]
        self.assertGreaterEqual(len(classes), 10)
        for cls in classes:
            _, found, section = ref.partition(f"\n### {cls.__name__}\n")
            self.assertTrue(found, f"no section for {cls.__name__}")
            section, _, _ = section.partition("\n### ")
            for fld in dataclasses.fields(cls):
                self.assertIn(f"| `{fld.name}` |", section, f"{cls.__name__}.{fld.name} is not in the reference")


if __name__ == "__main__":
    unittest.main()
