"""Errors of the hearth agent SDK, with the same kinds as the Go SDK's.

An agent raises them from ``run`` (or lets them through from a host call);
``serve`` sends each kind to the host as the gRPC code the Go SDK uses, so a
hearth host treats a Python agent's failure exactly as a Go one's:

==========================  =====================  ==========================
exception                   gRPC code              the host
==========================  =====================  ==========================
PermanentError              FAILED_PRECONDITION    does not retry the task
CancelledError              CANCELLED              the task was cancelled
DeadlineExceededError       DEADLINE_EXCEEDED      the task ran out of time
StateNotSupportedError      UNIMPLEMENTED          cannot rehydrate a session
NotOwnerError               PERMISSION_DENIED      fails the task for good
any other exception         UNKNOWN                may retry the task
==========================  =====================  ==========================
"""

from __future__ import annotations

from typing import Sequence


class HearthError(Exception):
    """The base of every error the SDK raises."""


class PermanentError(HearthError):
    """A task failure that retrying will not fix (bad input, a refused request).

    Raise it from ``run``; a host call that the host refused for good (a run
    call outside a run) raises it too.
    """


class CancelledError(HearthError):
    """The task was cancelled: the host no longer wants its result."""


class DeadlineExceededError(CancelledError):
    """The task's deadline passed. It is a kind of cancellation."""


class StateNotSupportedError(HearthError):
    """The agent does not export its session's state."""


class NotOwnerError(PermanentError):
    """A read or write of a run-state section the agent does not own."""


class ConnectionLostError(HearthError):
    """The connection to the host was lost in the middle of a call."""


class NotAttachedError(HearthError):
    """No host attached to this agent: the host does not follow the protocol."""


class HostError(HearthError):
    """A host call failed for a reason with no kind of its own.

    ``code`` is the gRPC status code's name ("UNKNOWN", "INVALID_ARGUMENT").
    """

    def __init__(self, op: str, code: str, message: str) -> None:
        super().__init__(f"{op}: {message} ({code})")
        self.op = op
        self.code = code
        self.message = message


class ReportRefusedError(PermanentError):
    """The SDK refused to send a tool-use report (no outcome, an unknown kind).

    The task fails with it even if the agent catches it: the session's
    context would miss what that tool use touched.
    """


class Denied(HearthError):
    """The host denied a tool use that a ``Tools`` method was asked to make.

    Nothing was done. ``guard`` names the guard that denied it and
    ``reason`` is its message.
    """

    def __init__(self, tool: str, paths: Sequence[str], guard: str, reason: str) -> None:
        what = tool
        if paths:
            what += " " + ", ".join(paths)
        by = f' by guard "{guard}"' if guard else ""
        super().__init__(f"{what} was denied{by}: {reason}")
        self.tool = tool
        self.paths = list(paths)
        self.guard = guard
        self.reason = reason
