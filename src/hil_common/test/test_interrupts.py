"""Issue 15 item 7: Ctrl-C while a node is still importing or building gives no KeyboardInterrupt traceback.

The motion-table node is interrupted once its package is imported (Pinocchio, which the package
imports after its ``__init__``, is mapped into the process) at a few moments of its start-up:
every time it must end with exit code 0 and print no traceback.
"""

import signal
import time

import pytest

from hil_common.interrupts import is_executable_of
from hil_common.ros_testing import start_node


def _mapped(pid: int, needle: str) -> bool:
    try:
        with open(f'/proc/{pid}/maps') as f:
            return needle in f.read()
    except OSError:
        return False


@pytest.mark.parametrize('after_s', [0.0, 0.3, 0.8])
def test_sigint_during_start_up_is_quiet(after_s):
    proc = start_node('hil_motion_table', 'motion_table_node')
    try:
        deadline = time.monotonic() + 30.0
        while not _mapped(proc.pid, 'pinocchio') and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(after_s)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert 'Traceback' not in out and 'KeyboardInterrupt' not in out, out
    assert proc.returncode == 0, out


def test_only_the_package_executables_get_the_quiet_handler():
    assert not is_executable_of('hil_common')          # pytest is not a node executable
