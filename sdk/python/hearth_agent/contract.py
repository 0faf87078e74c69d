"""The hearth agent contract in Python: what an agent is, and what it sees.

The same contract as the Go SDK's package ``sdk`` (sdk/agent.go), in
Python's idiom: an agent subclasses ``Agent``, describes itself with an
``Info`` and runs a ``Task`` to a ``Result``; while it runs it talks to the
host through its ``Callbacks`` (hearth_agent.callbacks). An agent whose
session can be rehydrated also subclasses ``StateExporter``.
"""

from __future__ import annotations

import abc
import datetime
import enum
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:
    from .callbacks import Callbacks


class Outcome(enum.IntEnum):
    """How a tool use ended. Every report says so: there is no default."""

    OK = 1
    """The tool use happened and worked."""
    ERROR = 2
    """The tool use was made and failed."""
    DENIED = 3
    """The host denied it (Callbacks.check), and it was not made."""

    def __str__(self) -> str:
        return self.name.lower()


class Kind(str, enum.Enum):
    """What a tool did, and so what the paths of its call and use mean.

    Any kind takes a path that ends in "/" as a directory. See
    docs/protocol.md ("Tool kinds").
    """

    READ = "read"
    """Read files; paths are files."""
    WRITE = "write"
    """Wrote or edited files; paths are files."""
    LIST = "list"
    """Listed directories; paths are directories."""
    SEARCH = "search"
    """Searched directories; with files among the paths, directories end in "/"."""
    EXEC = "exec"
    """Ran a command; paths are the files it named, not the program."""
    OTHER = "other"
    """None of the above; paths are files."""

    def __str__(self) -> str:
        return self.value


@dataclass
class Info:
    """Describes an agent.

    Whether it exports its session's state is not said here: the SDK tells
    the host when the agent subclasses StateExporter.
    """

    name: str
    """One word, such as "finder"."""
    version: str
    """The agent's own version, such as "0.1.0"."""
    description: str = ""
    """What the agent does, in a sentence."""
    technologies: list[str] = field(default_factory=list)
    """Technologies the agent handles ("python"); informational."""
    capacity: int = 1
    """How many tasks one session runs at once."""


@dataclass
class Hints:
    """What a task will touch, relative to the session's workspace."""

    files: list[str] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    technologies: list[str] = field(default_factory=list)


@dataclass
class ContextArtifact:
    """What a finished task learned, chained to the tasks that depend on it."""

    key_decisions: list[str] = field(default_factory=list)
    """Choices later tasks must keep."""
    modified_files: list[str] = field(default_factory=list)
    """Files the task changed."""
    new_patterns: list[str] = field(default_factory=list)
    """Conventions the task introduced."""
    potential_gotchas: list[str] = field(default_factory=list)
    """Traps the task found for those who come after."""

    def empty(self) -> bool:
        """True when the artifact carries no knowledge."""
        return not (self.key_decisions or self.modified_files or self.new_patterns or self.potential_gotchas)


@dataclass
class Upstream:
    """What one upstream task learned, and where and when."""

    task: str
    """The upstream task's name in its pipeline."""
    version: int = 1
    """1 for its first output, more once it was sent back and ran again."""
    session: str = ""
    created_at: Optional[datetime.datetime] = None
    artifact: ContextArtifact = field(default_factory=ContextArtifact)


@dataclass
class Task:
    """One unit of work."""

    id: str
    """Unique per task; the host sets it."""
    prompt: str = ""
    """Exactly as written in the pipeline or submitted: never rewritten."""
    run: str = ""
    """The run the task belongs to; then its callbacks are RunCallbacks."""
    name: str = ""
    """The task's name in its pipeline."""
    session: str = ""
    """The session the task runs on."""
    hints: Hints = field(default_factory=Hints)
    upstream: list[Upstream] = field(default_factory=list)
    """What the tasks this one depends on learned, nearest first."""
    context: str = ""
    """``upstream`` rendered as one Markdown block, or ""."""
    feedback: str = ""
    """Why the task was sent back or revisited; "" normally."""
    idempotency_key: str = ""
    """The same on every attempt: do outside side effects once with it."""
    attempt: int = 1
    """1 on the first try, more on retries."""
    metadata: dict[str, str] = field(default_factory=dict)
    trace_context: dict[str, str] = field(default_factory=dict)
    """The W3C trace context of the task's span on the host ("traceparent",
    and "tracestate" when there is one), when the host traces; empty
    otherwise. ``cb.span("plan")`` starts a span in it, relayed through
    the host (hearth_agent.trace); an agent with OpenTelemetry's own SDK
    may extract it with its TraceContextTextMapPropagator instead.
    """


@dataclass
class Result:
    """What a task produced."""

    output: str = ""
    """The task's answer, as text."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Numbers the host's quality gates can check ("quality", "word_count")."""
    cost: float = 0.0
    """In the unit the run's budget uses."""
    artifact: ContextArtifact = field(default_factory=ContextArtifact)
    """What the task learned, for the tasks that depend on it."""


@dataclass
class ToolCall:
    """A tool use the agent is about to make: the question to the host."""

    tool: str
    """The tool's name: "Read", "Edit", "Grep", "parse"."""
    kind: Optional[Kind] = None
    """What the tool will do; None means unknown (the host guesses by name)."""
    paths: list[str] = field(default_factory=list)
    """Paths the tool will touch, relative to the workspace or absolute."""
    input: Optional[Mapping[str, Any]] = None
    """The tool's input, a JSON object, for guards that look at it."""
    call_id: str = ""
    """Ties the report to the question; the SDK makes one when empty."""

    def input_json(self) -> bytes:
        """The input encoded as the host receives it (b"" without one)."""
        if self.input is None:
            return b""
        return json.dumps(self.input, separators=(",", ":")).encode()


@dataclass
class ToolUse:
    """One tool use the agent made: the report to the host.

    ``outcome`` is required: a report that does not say how its tool use
    ended would count as a success, so the SDK refuses it (and fails the
    task), as the Go SDK does.
    """

    tool: str
    outcome: Outcome
    kind: Optional[Kind] = None
    paths: list[str] = field(default_factory=list)
    technologies: list[str] = field(default_factory=list)
    """Beyond those the host infers from the files' extensions."""
    error: str = ""
    """Why it failed or was denied."""
    duration: float = 0.0
    """Seconds the tool use took."""
    cost: float = 0.0
    call_id: str = ""
    """The call_id of the question that preceded it."""
    at: Optional[datetime.datetime] = None
    """When it happened; the SDK sets it when None."""


@dataclass
class Verdict:
    """The host's answer to a ToolCall."""

    allow: bool
    reason: str = ""
    """Why the call was denied."""
    guard: str = ""
    """The guard that denied it."""


@dataclass
class Progress:
    """How far a task has come and what it has cost so far."""

    fraction: float
    """Of the task done, in [0, 1]."""
    message: str = ""
    cost: float = 0.0


@dataclass
class File:
    """A file attached to a run: read it in place, never write it."""

    name: str
    path: str
    sha256: str
    size: int


class Agent(abc.ABC):
    """The contract every hearth agent implements.

    One instance serves one session (one plugin process). ``run`` may be
    called from several threads at once, up to the capacity ``describe``
    declares; ``describe`` may be called at any time.
    """

    @abc.abstractmethod
    def describe(self) -> Info:
        """Say who the agent is. Called once per session, right after start."""

    @abc.abstractmethod
    def run(self, task: Task, cb: "Callbacks") -> Result:
        """Carry out one task and return its result.

        Ask the host before each tool use and report it after (the Tools
        helpers do both). Return promptly, or raise CancelledError, once
        ``cb.cancelled`` is true.
        """


class StateExporter(abc.ABC):
    """Implemented by agents whose session can be rehydrated.

    The host exports the state before it retires a session and imports it
    into a fresh process when the matcher picks the dormant session again.
    The bytes are opaque to hearth.
    """

    @abc.abstractmethod
    def export_state(self) -> bytes:
        """Return the session's state."""

    @abc.abstractmethod
    def import_state(self, state: bytes) -> None:
        """Restore state exported by an earlier session, before its first task.

        Malformed state raises an exception; it never crashes the process.
        """
