"""structlog configuration: bound with job_id, message_id and worker; rendered for a person
(structlog's console renderer) when the stream is a terminal, as JSON lines otherwise, unless
POSTEL_LOG_FORMAT names one."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TextIO

import structlog

_open_files: list[TextIO] = []


def configure_logging(level: str = "INFO", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """Log to `stream` (stderr when None); `fmt` is `json`, `console` or `auto` (console
    exactly when the stream is a terminal)."""
    out = stream if stream is not None else sys.stderr
    terminal = out.isatty()
    console = fmt == "console" or (fmt == "auto" and terminal)
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=terminal)
        if console
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    # arq logs every job start/finish at INFO through stdlib logging; postel's own events
    # carry that information, so keep arq to warnings.
    logging.basicConfig(level=logging.WARNING, stream=out, force=True)
    logging.getLogger("arq").setLevel(logging.WARNING)


def log_to_file(path: Path, level: str = "INFO") -> None:
    """Append JSON log lines to `path` instead of stderr (the demo's terminal shows its own
    trace); the file stays open for the rest of the process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    file = path.open("a", encoding="utf-8", buffering=1)
    _open_files.append(file)
    configure_logging(level, "json", file)
