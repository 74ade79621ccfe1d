"""A child process's own peak memory, as the kernel counts it, whatever size the bench is.

`wait4`'s ru_maxrss for a child is not the child's own figure when the parent is big: a
child started by fork (or vfork) carries the parent's high-water mark through its exec, so a
bench running inside a 300 MB pytest process read 300 MB for every child. The fix is a small
launcher between them: `python -m postel_bench.peak REPORT -- COMMAND...` starts COMMAND,
passes SIGINT and SIGTERM on to it, reaps it with `wait4` and writes its ru_maxrss (in MB) to
the file REPORT. The launcher itself is a bare Python process, so what COMMAND inherits is
a few MB, not the bench's size. It exits as COMMAND did.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

FORWARDED = (signal.SIGINT, signal.SIGTERM)


class Measured:
    """A command started under the launcher; `wait()` gives its exit status and peak MB."""

    def __init__(self, command: Sequence[str], **popen: object) -> None:
        handle, report = tempfile.mkstemp(prefix="postel-peak-", suffix=".txt")
        os.close(handle)
        self._report = Path(report)
        launcher = [sys.executable, "-m", "postel_bench.peak", report, "--", *command]
        self.process = subprocess.Popen(launcher, **popen)  # type: ignore[call-overload]

    def send_signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self) -> tuple[int, float]:
        """(exit status, peak resident memory in MB) once the command has ended."""
        code = self.process.wait()
        try:
            text = self._report.read_text().strip()
        finally:
            self._report.unlink(missing_ok=True)
        if not text:
            raise RuntimeError(f"the launcher reported no peak for {self.process.args!r}")
        return code, float(text)


def _launch(report: str, command: list[str]) -> int:
    child = subprocess.Popen(command)
    for signum in FORWARDED:
        signal.signal(signum, lambda received, _frame: child.send_signal(received))
    _, status, usage = os.wait4(child.pid, 0)
    Path(report).write_text(f"{usage.ru_maxrss / 1024:.1f}\n")
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if len(arguments) < 3 or arguments[1] != "--":
        sys.exit("usage: python -m postel_bench.peak REPORT -- COMMAND...")
    code = _launch(arguments[0], arguments[2:])
    if code < 0:  # ended by a signal: end the same way, so the caller sees it
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)
