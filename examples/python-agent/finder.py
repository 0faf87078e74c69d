"""finder: a hearth agent in Python that searches a tree and summarizes what it found.

The prompt is a regular expression (Python syntax), such as "TODO|FIXME";
the task's hinted directories are where to look (the whole workspace
without hints). The answer groups the matching lines by file, by marker
(the text the expression matched) and by language. Every search goes
through hearth_agent.Tools, so hearth is asked first (a guard can deny
it) and told after (the session's fingerprint learns the directories and
files), and the session remembers what it found: a second task on the
same files is answered from a warm session.
"""

from __future__ import annotations

import collections
import json
import os
import re
import threading

from hearth_agent import (
    Agent,
    ContextArtifact,
    Denied,
    Callbacks,
    Info,
    PermanentError,
    Result,
    StateExporter,
    Task,
    Tools,
    serve,
)

LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".sh": "shell",
    ".html": "html",
    ".css": "css",
}


def language(path: str) -> str:
    """The language of a file, by its extension ("other" when unknown)."""
    return LANGUAGES.get(os.path.splitext(path)[1].lower(), "other")


class Finder(Agent, StateExporter):
    """Searches the hinted directories for the prompt's expression."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Every file this session found a match in, and how many: what it
        # knows, carried over when the session is rehydrated.
        self._known: dict[str, int] = {}

    def describe(self) -> Info:
        return Info(
            name="finder",
            version="0.1.0",
            description="Searches a tree for a regular expression and summarizes the matches by file, marker and language.",
            technologies=["python"],
            capacity=2,
        )

    def run(self, task: Task, cb: Callbacks) -> Result:
        try:
            pattern = re.compile(task.prompt)
        except re.error as e:
            raise PermanentError(f"the prompt {task.prompt!r} is not a regular expression: {e}") from None
        tools = Tools(cb)
        dirs = task.hints.directories or ["."]
        by_file: collections.Counter[str] = collections.Counter()
        by_marker: collections.Counter[str] = collections.Counter()
        by_language: collections.Counter[str] = collections.Counter()
        denied: list[str] = []
        for i, d in enumerate(dirs):
            cb.raise_if_cancelled()
            try:
                matches = tools.search(d, task.prompt)
            except Denied as e:
                # Nothing was searched; say so rather than fail the task.
                denied.append(f"{d}: {e.reason}")
                continue
            for m in matches:
                by_file[m.path] += 1
                found = pattern.search(m.text)
                by_marker[found.group(0) if found else task.prompt] += 1
                by_language[language(m.path)] += 1
            cb.progress((i + 1) / len(dirs), message=f"searched {d}")
        with self._lock:
            known_before = sum(1 for f in by_file if f in self._known)
            self._known.update(by_file)
        lines = [f"{sum(by_file.values())} matches of {task.prompt!r} in {len(by_file)} files ({known_before} already known to this session)"]
        for f, n in sorted(by_file.items()):
            lines.append(f"  {f}: {n}")
        if by_marker:
            lines.append("markers: " + ", ".join(f"{k} {v}" for k, v in by_marker.most_common()))
        if by_language:
            lines.append("languages: " + ", ".join(f"{k} {v}" for k, v in by_language.most_common()))
        for d in denied:
            lines.append(f"denied: {d}")
        art = ContextArtifact(
            key_decisions=[f"searched {', '.join(dirs)} for {task.prompt!r}"],
            potential_gotchas=[f"{f} has {n} matches of {task.prompt!r}" for f, n in by_file.most_common(3)],
        )
        return Result(output="\n".join(lines), metrics={"matches": float(sum(by_file.values()))}, artifact=art)

    def export_state(self) -> bytes:
        with self._lock:
            return json.dumps({"known": self._known}).encode()

    def import_state(self, state: bytes) -> None:
        data = json.loads(state)
        if not isinstance(data, dict) or not isinstance(data.get("known"), dict):
            raise ValueError("not a finder session's state")
        with self._lock:
            self._known = {str(k): int(v) for k, v in data["known"].items()}


if __name__ == "__main__":
    serve(Finder())
