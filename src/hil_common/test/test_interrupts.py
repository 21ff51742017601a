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


# A node process whose SIGINT lands while rclpy converts a received message (rclpy's C code calling
# the message's __init__). A handler that raised there broke the conversion: pybind11's "RuntimeError:
# Unable to convert call argument '0' to Python object" from take_message, exit code 1 and a
# traceback at the end of live-graph runs. From rclpy.init on, the quiet handler only notes the
# signal and rclpy's own handler ends the spin, so the conversion completes and its message is
# delivered, and the process exits cleanly.
_SIGINT_IN_CONVERSION = r'''
import os, signal, sys
from hil_common import interrupts
signal.signal(signal.SIGINT, interrupts._raise_interrupted)   # as in a node executable
from sensor_msgs.msg import JointState
from hil_common.ros_main import run_node
from rclpy.node import Node

original_init = JointState.__init__
def init_with_sigint(self, **kwargs):
    if not kwargs and not init_with_sigint.fired:   # the conversion builds it without arguments
        init_with_sigint.fired = True
        os.kill(os.getpid(), signal.SIGINT)          # a raising handler would run at the next bytecode, in here
        for _ in range(1000):
            pass
    original_init(self, **kwargs)
init_with_sigint.fired = False
JointState.__init__ = init_with_sigint

class Loop(Node):
    def __init__(self):
        super().__init__('sigint_in_conversion')
        self.pub = self.create_publisher(JointState, 'loop', 10)
        self.create_subscription(JointState, 'loop', self.on_message, 10)
        self.create_timer(0.01, lambda: self.pub.publish(JointState(name=['a'], position=[1.0])))

    def on_message(self, msg):
        if init_with_sigint.fired and not getattr(self, 'said', False):
            self.said = True
            print('delivered the message converted when the signal came', flush=True)

sys.exit(run_node(Loop, 'sigint_in_conversion'))
'''


def test_sigint_inside_a_message_conversion_is_a_clean_shutdown():
    import os
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, '-c', _SIGINT_IN_CONVERSION], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))
    out = proc.stdout + proc.stderr
    assert 'Traceback' not in out, out
    assert proc.returncode == 0, out
    assert 'delivered the message converted when the signal came' in out, out


def test_a_process_started_by_a_background_job_gets_the_default_sigint():
    """A demo started as a background job of a script has SIGINT ignored, and its children would
    inherit that (``stop_process`` asks nodes to stop with SIGINT). ``start_node``'s ``preexec_fn``
    (``die_with_parent``) gives them the default, so Python installs its KeyboardInterrupt handler;
    the control is the same child without it."""
    import os
    import subprocess
    import sys

    from hil_common.ros_testing import die_with_parent

    probe = [sys.executable, '-c', 'import signal; print(repr(signal.getsignal(signal.SIGINT)))']
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with_fix = subprocess.run(probe, preexec_fn=die_with_parent(os.getpid()), capture_output=True, text=True)
        without = subprocess.run(probe, capture_output=True, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert 'default_int_handler' in with_fix.stdout, with_fix
    assert 'SIG_IGN' in without.stdout, without


def test_a_sigint_inside_a_weakref_callback_is_noted_without_a_traceback():
    """The fresh-clone suite beside two busy loops: SIGINT 0.8 s into the motion-table node's start-up ran the quiet
    handler inside importlib's module-lock weakref callback, where Python cannot raise: it printed 'Exception ignored
    ... Traceback ... Interrupted' and went on (the node then ended cleanly on the noted interrupt). Here the signal
    is sent from such a callback: nothing is printed, the interrupt is noted, and the process goes on to exit 0;
    the control, the default unraisable hook, prints the traceback."""
    import subprocess
    import sys

    script = """
import gc, os, signal, sys, weakref
from hil_common import interrupts
assert interrupts.install_quiet_handler()
if sys.argv[1] == 'control':
    sys.unraisablehook = sys.__unraisablehook__
class Thing:
    pass
thing = Thing()
ref = weakref.ref(thing, lambda r: (os.kill(os.getpid(), signal.SIGINT), [k for k in range(100)]))
del thing
gc.collect()
print('went on; noted:', interrupts.interrupt_received(), flush=True)
"""
    quiet = subprocess.run([sys.executable, '-c', script, 'quiet'], capture_output=True, text=True, timeout=60)
    control = subprocess.run([sys.executable, '-c', script, 'control'], capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 0 and 'went on; noted: True' in quiet.stdout, quiet
    assert 'Traceback' not in quiet.stderr and 'Exception ignored' not in quiet.stderr, quiet.stderr
    assert 'Exception ignored' in control.stderr and 'Interrupted' in control.stderr, control


def test_an_error_an_interrupt_caused_ends_the_process_quietly():
    """The fresh-clone suite beside two busy loops: SIGINT 0.3 s into the motion-table node's start-up landed inside
    rclpy's C extension's initialisation, which turned the quiet handler's Interrupted into ``ImportError:
    initialization failed``: a traceback and exit code 1. Here SIGINT interrupts a function that turns it into an
    ImportError the same way: the process ends quietly with code 0. The controls: the same ImportError without the
    signal keeps its traceback and exit code 1, and so does one the interrupt did not cause."""
    import subprocess
    import sys

    script = """
import os, signal, sys, time
from hil_common import interrupts
assert interrupts.install_quiet_handler()
def extension_init():                 # what pybind11 does with an exception raised in a module's init
    try:
        if sys.argv[1] == 'signal':
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        else:
            raise ValueError('not an interrupt')
    except BaseException as exc:
        raise ImportError('initialization failed') from exc
if sys.argv[1] == 'unrelated':        # an interrupt was noted, but this error is not its
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except interrupts.Interrupted:
        pass
print('importing', flush=True)
extension_init()
"""
    runs = {case: subprocess.run([sys.executable, '-c', script, case], capture_output=True, text=True, timeout=60)
            for case in ('signal', 'error', 'unrelated')}
    quiet = runs['signal']
    assert quiet.returncode == 0 and 'importing' in quiet.stdout, quiet
    assert 'Traceback' not in quiet.stderr and 'ImportError' not in quiet.stderr, quiet.stderr
    for case in ('error', 'unrelated'):
        assert runs[case].returncode == 1, runs[case]
        assert 'ImportError: initialization failed' in runs[case].stderr, runs[case].stderr
