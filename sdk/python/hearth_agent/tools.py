"""Tools: the common tools an agent uses, each done the honest way in one call.

Each method asks the host (``Callbacks.check``, with a fresh call ID, the tool's
kind and its paths), raises ``Denied`` without doing anything when the host
says no, does the work, and reports it (``Callbacks.report``, with the same call
ID, kind and paths, Outcome.OK or Outcome.ERROR, and how long it took). A
denied call is reported too, with Outcome.DENIED. The same tools, names and
kinds as the Go SDK's sdk.Tools.

Guards stop what an agent asks about; they cannot stop an agent's own code
from calling the operating system. Tools make asking the default.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

from . import errors
from .contract import Kind, Outcome, ToolCall, ToolUse
from .callbacks import Callbacks, new_id

_T = TypeVar("_T")
_Entries = list["os.DirEntry[str]"]


@dataclass
class Match:
    """One line a search matched."""

    path: str
    """The file, as the directory searched was named, joined with its path below it."""
    line: int
    """The line's number, from 1."""
    text: str
    """The line, without its line ending."""


@dataclass
class ExecResult:
    """What a command run by Tools.exec printed and how it exited."""

    stdout: bytes
    stderr: bytes
    exit_code: int


_Matches = list[Match]
_Paths = list[str]


def _death_signal() -> Optional[Callable[[], None]]:
    """What a command's child runs between fork and exec: the command dies
    with the plugin, as the Go SDK's sdk.Command arranges (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here, not at import: it costs cold start

    libc = ctypes.CDLL(None, use_errno=True)

    def die_with_parent() -> None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return die_with_parent


class Tools:
    """The tools of one task. Make one per task: a task's Callbacks are its own.

    Paths are given to the host as the agent named them (a relative path
    stays relative: the host reads it against the session's workspace,
    where an agent's root normally is); the work resolves a relative path
    against ``root`` ("" means the current directory).
    """

    def __init__(self, cb: Callbacks, root: str = "") -> None:
        self._cb = cb
        self._root = root

    def _resolve(self, p: str) -> str:
        if os.path.isabs(p) or not self._root:
            return p
        return os.path.join(self._root, p)

    def _use(
        self,
        tool: str,
        kind: Kind,
        paths: list[str],
        input: dict[str, Any],
        work: Callable[[], tuple[_T, Optional[list[str]]]],
    ) -> _T:
        call = ToolCall(tool=tool, kind=kind, paths=paths, input=input, call_id=new_id("call"))
        v = self._cb.check(call)
        use = ToolUse(tool=tool, kind=kind, paths=paths, call_id=call.call_id, outcome=Outcome.DENIED)
        if not v.allow:
            use.error = v.reason
            self._cb.report(use)
            raise errors.Denied(tool, paths, v.guard, v.reason)
        start = time.monotonic()
        try:
            value, reported = work()
        except Exception as e:
            use.duration = time.monotonic() - start
            use.outcome, use.error = Outcome.ERROR, str(e) or type(e).__name__
            self._cb.report(use)
            raise
        use.duration = time.monotonic() - start
        if reported is not None:
            use.paths = reported
        use.outcome = Outcome.OK
        self._cb.report(use)
        return value

    def read(self, path: str) -> bytes:
        """The contents of the file at ``path`` (tool "Read", Kind.READ)."""

        def work() -> tuple[bytes, None]:
            with open(self._resolve(path), "rb") as f:
                return f.read(), None

        return self._use("Read", Kind.READ, [path], {"file_path": path}, work)

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """``read``, decoded."""
        return self.read(path).decode(encoding, errors="replace")

    def write(self, path: str, data: bytes | str) -> None:
        """Replace the contents of the file at ``path`` (tool "Write", Kind.WRITE)."""
        b = data.encode() if isinstance(data, str) else data

        def work() -> tuple[None, None]:
            with open(self._resolve(path), "wb") as f:
                f.write(b)
            return None, None

        self._use("Write", Kind.WRITE, [path], {"file_path": path, "content": b.decode(errors="replace")}, work)

    def edit(self, path: str, old: str, new: str) -> None:
        """Replace ``old``, which must occur exactly once, with ``new`` (tool "Edit", Kind.WRITE)."""

        def work() -> tuple[None, None]:
            if not old:
                raise ValueError(f"edit {path}: the text to replace is empty; name text that occurs exactly once")
            file = self._resolve(path)
            with open(file, encoding="utf-8") as f:
                s = f.read()
            n = s.count(old)
            if n != 1:
                raise ValueError(
                    f"edit {path}: the text to replace occurs {n} times; it must occur exactly once (include more of its surroundings)"
                )
            with open(file, "w", encoding="utf-8") as f:
                f.write(s.replace(old, new, 1))
            return None, None

        self._use("Edit", Kind.WRITE, [path], {"file_path": path, "old_string": old, "new_string": new}, work)

    def list(self, dir: str) -> _Entries:
        """The entries of directory ``dir``, sorted by name (tool "List", Kind.LIST)."""

        def work() -> tuple[_Entries, None]:
            with os.scandir(self._resolve(dir)) as it:
                return sorted(it, key=lambda e: e.name), None

        return self._use("List", Kind.LIST, [dir], {"path": dir}, work)

    def search(self, dir: str, pattern: str, glob: str = "", max_matches: int = 0) -> _Matches:
        """The lines matching regular expression ``pattern`` (Python syntax) in the files under ``dir``.

        Tool "Search", Kind.SEARCH. Files are searched in lexical order of
        path; directories whose names start with "." below ``dir`` (.git)
        and files that look binary (a NUL byte in their first 8000 bytes)
        are skipped. ``glob`` limits the search to files whose base name
        matches it ("*.py"); ``max_matches`` stops it after that many. The
        host is asked about ``dir``; the use is reported with ``dir``
        (ending in "/") and the files that matched.
        """
        import fnmatch

        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"search {dir}: pattern {pattern!r}: {e}") from None
        input: dict[str, Any] = {"path": dir, "pattern": pattern}
        if glob:
            input["glob"] = glob

        def work() -> tuple[_Matches, _Paths]:
            root = self._resolve(dir)
            if not os.path.isdir(root):
                raise FileNotFoundError(f"search {dir}: no such directory")
            matches: _Matches = []
            files: _Paths = []
            for cur, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    if glob and not fnmatch.fnmatchcase(name, glob):
                        continue
                    full = os.path.join(cur, name)
                    if not os.path.isfile(full) or os.path.islink(full):
                        continue
                    rel = os.path.relpath(full, root).replace(os.sep, "/")
                    named = dir.rstrip("/") + "/" + rel if dir not in ("", ".") else rel
                    found = _search_file(full, named, rx, max_matches - len(matches) if max_matches else 0)
                    if found:
                        files.append(named)
                        matches.extend(found)
                    if max_matches and len(matches) >= max_matches:
                        return matches, [dir.rstrip("/") + "/"] + files
            return matches, [dir.rstrip("/") + "/"] + files

        return self._use("Search", Kind.SEARCH, [dir], input, work)

    def exec(self, name: str, *args: str, timeout: Optional[float] = None) -> ExecResult:
        """Run program ``name`` with ``args`` in the root directory (tool "Exec", Kind.EXEC).

        The command dies with the plugin. A command that ran and exited
        non-zero is not an error: ``exit_code`` says so. One that could not
        start, or ran past ``timeout`` or the task's deadline, raises. The
        paths the host sees are the arguments that name existing files.
        """
        paths = [a for a in args if a and not a.startswith("-") and os.path.isfile(self._resolve(a))]
        argv = [name, *args]
        remaining = self._cb.time_remaining()
        if remaining is not None and (timeout is None or remaining < timeout):
            timeout = remaining

        import subprocess

        preexec = _death_signal()

        def work() -> tuple[ExecResult, None]:
            p = subprocess.run(
                argv,
                cwd=self._root or None,
                capture_output=True,
                timeout=timeout,
                preexec_fn=preexec,
                stdin=subprocess.DEVNULL,
            )
            return ExecResult(stdout=p.stdout, stderr=p.stderr, exit_code=p.returncode), None

        return self._use("Exec", Kind.EXEC, paths, {"command": " ".join(argv), "argv": argv}, work)


def _search_file(path: str, named: str, rx: re.Pattern[str], limit: int) -> list[Match]:
    with open(path, "rb") as f:
        b = f.read()
    if b"\x00" in b[:8000]:
        return []
    out: list[Match] = []
    for i, line in enumerate(b.decode("utf-8", errors="replace").split("\n")):
        line = line.removesuffix("\r")
        if rx.search(line):
            out.append(Match(path=named, line=i + 1, text=line))
            if limit and len(out) >= limit:
                break
    return out
