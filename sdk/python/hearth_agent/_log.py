"""Log lines in go-hclog's JSON format, on the real stderr.

A go-plugin host reads each stderr line of its plugin; a JSON object with
"@level", "@message" and "@timestamp" is filed as a log entry at that level
(its other keys as fields) under the agent's and session's names, as the Go
SDK's hclog lines are. Anything else on stderr (a traceback) is kept as
plain text, and shown when the plugin fails to start.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from typing import Any, MutableMapping, Optional, TextIO

ENV_LOG_LEVEL = "HEARTH_PLUGIN_LOG_LEVEL"

_LEVELS = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
_NAMES = {5: "trace", logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error", logging.CRITICAL: "error"}


def level_from_env(value: Optional[str] = None) -> int:
    """The logging level named by HEARTH_PLUGIN_LOG_LEVEL; info by default."""
    v = (os.environ.get(ENV_LOG_LEVEL, "") if value is None else value).strip().lower()
    return _LEVELS.get(v, logging.INFO)


class HclogFormatter(logging.Formatter):
    """Formats a record as one go-hclog JSON line."""

    def format(self, record: logging.LogRecord) -> str:
        t = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        out: dict[str, Any] = {
            "@level": _NAMES.get(record.levelno, "info"),
            "@message": record.getMessage(),
            "@timestamp": t.isoformat(timespec="microseconds"),
            "@module": record.name,
        }
        fields = getattr(record, "hearth_fields", None)
        if isinstance(fields, dict):
            for k, v in fields.items():
                out[str(k)] = v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out)


class FieldsAdapter(logging.LoggerAdapter[logging.Logger]):
    """A logger adapter whose ``extra`` (and each call's) become hclog fields."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        fields = dict(self.extra or {})
        fields.update(kwargs.pop("extra", None) or {})
        kwargs["extra"] = {"hearth_fields": fields}
        return msg, kwargs


def setup(stream: TextIO = sys.stderr, level: Optional[int] = None) -> logging.Logger:
    """The SDK's logger ("agent"), writing hclog JSON lines to ``stream``."""
    logger = logging.getLogger("agent")
    logger.handlers[:] = []
    h = logging.StreamHandler(stream)
    h.setFormatter(HclogFormatter())
    logger.addHandler(h)
    logger.setLevel(level_from_env() if level is None else level)
    logger.propagate = False
    return logger
