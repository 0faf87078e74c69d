"""hearth_agent: write hearth agents in Python.

An agent subclasses Agent (and StateExporter if its session can be
rehydrated), and its program's main is one call::

    from hearth_agent import Agent, Info, Result, Task, Callbacks, Tools, serve

    class Finder(Agent):
        def describe(self) -> Info:
            return Info(name="finder", version="0.1.0")

        def run(self, task: Task, cb: Callbacks) -> Result:
            tools = Tools(cb)
            matches = tools.search(".", task.prompt)
            return Result(output=f"{len(matches)} matches")

    if __name__ == "__main__":
        serve(Finder())

The contract is the Go SDK's (docs/protocol.md describes the wire);
hearth_agent.testing runs an agent in-process against a recording host and
checks it keeps the contract.
"""

from .contract import (
    Agent,
    ContextArtifact,
    File,
    Hints,
    Info,
    Kind,
    Outcome,
    Progress,
    Result,
    StateExporter,
    Task,
    ToolCall,
    ToolUse,
    Upstream,
    Verdict,
)
from .errors import (
    CancelledError,
    ConnectionLostError,
    DeadlineExceededError,
    Denied,
    HearthError,
    HostError,
    NotAttachedError,
    NotOwnerError,
    PermanentError,
    ReportRefusedError,
    StateNotSupportedError,
)
from .callbacks import Callbacks, RunCallbacks, new_id
from .server import PROTOCOL_VERSION, serve
from .tools import ExecResult, Match, Tools
from .trace import Span

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "CancelledError",
    "ConnectionLostError",
    "ContextArtifact",
    "DeadlineExceededError",
    "Denied",
    "ExecResult",
    "File",
    "HearthError",
    "Hints",
    "Callbacks",
    "HostError",
    "Info",
    "Kind",
    "Match",
    "NotAttachedError",
    "NotOwnerError",
    "Outcome",
    "PROTOCOL_VERSION",
    "PermanentError",
    "Progress",
    "ReportRefusedError",
    "Result",
    "RunCallbacks",
    "Span",
    "StateExporter",
    "StateNotSupportedError",
    "Task",
    "Tools",
    "ToolCall",
    "ToolUse",
    "Upstream",
    "Verdict",
    "new_id",
    "serve",
]
