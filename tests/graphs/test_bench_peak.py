"""The benches' peak memory is the child's own, not the size of the process measuring it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from postel_bench.peak import Measured

SLEEPER = "import time; time.sleep(30)"


def test_a_small_child_of_a_big_parent_reads_small() -> None:
    ballast = bytearray(300 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # touched, so it is resident
    measured = Measured([sys.executable, "-c", "pass"])
    code, peak_mb = measured.wait()
    assert code == 0
    assert 1.0 < peak_mb < 100.0, peak_mb
    del ballast


def test_the_child_grows_and_the_figure_follows() -> None:
    grow = "b = bytearray(200 * 1024 * 1024); b[::4096] = b'\\x01' * len(b[::4096])"
    code, peak_mb = Measured([sys.executable, "-c", grow]).wait()
    assert code == 0
    assert peak_mb > 200.0, peak_mb


def test_exit_status_output_and_sigint_pass_through() -> None:
    failing = Measured(
        [sys.executable, "-c", "import sys; print('said'); sys.exit(3)"], stdout=subprocess.PIPE
    )
    out, _ = failing.process.communicate()
    assert out.decode().strip() == "said"
    assert failing.wait()[0] == 3

    sleeping = Measured([sys.executable, "-c", SLEEPER])
    time.sleep(0.5)
    sleeping.send_signal(signal.SIGINT)
    code, _ = sleeping.wait()
    assert code == -signal.SIGINT
