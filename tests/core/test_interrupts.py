"""A timeout or signal that lands while a command is being started is held until the command
is registered for cleanup, then ends the run as usual."""

from __future__ import annotations

import os
import signal
import time

import pytest

from oiexec.core.errors import Interrupted, RunTimedOut
from oiexec.core.interrupts import uninterruptible
from oiexec.runner.signals import deadline_alarm, interrupt_signals


def test_a_timeout_inside_the_section_is_raised_when_it_ends() -> None:
    finished = False
    with pytest.raises(RunTimedOut), deadline_alarm(time.monotonic() + 0.02):
        with uninterruptible():
            time.sleep(0.2)  # the alarm fires here
            finished = True
        pytest.fail("the held timeout was not raised at the end of the section")
    assert finished


def test_sigterm_inside_the_section_is_held_and_outside_it_is_immediate() -> None:
    steps: list[str] = []
    with pytest.raises(Interrupted) as caught, interrupt_signals(), uninterruptible():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        steps.append("registered")
    assert steps == ["registered"] and caught.value.exit_code == 143
    with pytest.raises(Interrupted), interrupt_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
        steps.append("not reached")
    assert steps == ["registered"]
