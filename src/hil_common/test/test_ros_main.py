"""run_node over real DDS: SIGTERM and SIGINT end a node cleanly (exit 0, no traceback),
also while its timer callbacks publish at a high rate."""

import os
import signal
import subprocess
import sys
import time

import pytest
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.srv import ListParameters

from hil_common.ros_testing import die_with_parent, spin_until, start_node, test_node


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT])
def test_a_publishing_node_stops_cleanly_on_a_signal(sig):
    with test_node('probe_ros_main') as (node, executor):
        got = []
        node.create_subscription(PoseStamped, 'client/table/pose_cmd', got.append, 10)
        proc = start_node('hil_admittance', 'client_admittance_node', 'rate_hz:=1000.0')
        try:
            # start-up on a loaded machine can take tens of seconds: a wait for an event, not a judgement
            assert spin_until(executor, lambda: len(got) > 20, 60.0), 'node did not come up'
        finally:
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert 'Traceback' not in out and 'RCLError' not in out, out


IDLE_NODE = """
import rclpy.node
from geometry_msgs.msg import PoseStamped
from hil_common.ros_main import run_node

def idle():
    node = rclpy.node.Node('idle_probe')
    node.create_subscription(PoseStamped, 'nobody_publishes_this', lambda m: None, 10)
    return node

raise SystemExit(run_node(idle, 'idle_probe'))
"""


def _start_script(code: str, **env) -> subprocess.Popen:
    """A Python node script as its own process group, dying with this test process."""
    return subprocess.Popen([sys.executable, '-u', '-c', code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, **env}, preexec_fn=die_with_parent(os.getpid()),
                            process_group=0)


def _answer_once_then_sigterm(proc: subprocess.Popen) -> str:
    """Wait until the idle node answers one service call (its executor spins), then SIGTERM it: its output."""
    try:
        with test_node('probe_idle') as (node, executor):
            # it answers a service call only once its executor spins; then it waits again, idle
            client = node.create_client(ListParameters, '/idle_probe/list_parameters')
            assert client.wait_for_service(timeout_sec=60.0), 'the idle node did not come up'
            future = client.call_async(ListParameters.Request())
            assert spin_until(executor, future.done, 60.0), 'the idle node does not spin'
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail('the idle node did not stop within 30 s of SIGTERM: the signal did not wake its executor')
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return out


BUSY_NODE = """
import time
import rclpy.node
from std_msgs.msg import String
from hil_common.ros_main import run_node

def busy():
    node = rclpy.node.Node('busy_probe')
    pub = node.create_publisher(String, 'busy_probe/out', 10)
    msg = String(data='x')
    def tick():
        end = time.perf_counter() + 0.0008
        while time.perf_counter() < end:      # where a raising SIGINT handler would run, and a publish
            pub.publish(msg)                  # would meet the context that the signal shut down
    node.create_timer(0.001, tick)
    node.get_logger().info('busy')
    return node

raise SystemExit(run_node(busy, 'busy_probe'))
"""


def test_sigint_during_a_callback_is_not_reported_as_a_callback_exception():
    """SIGINT while a timer callback runs and publishes, in a process whose SIGINT handler is Python's default
    (a node of a package without ``quiet_interrupts``, or a script). The events executor logged
    ``[FATAL] Exception in 'timers' callback`` with the callback's frames, though the node still exited 0
    (seen at every stop of the launch graphs), for two causes: the signal raised as ``KeyboardInterrupt``
    inside the callback, and a publish after rclpy's handler had shut the context down. The callback is
    busy 80 % of the time, and the node is stopped five times."""
    for _ in range(5):
        proc = _start_script(BUSY_NODE)
        try:
            line = proc.stdout.readline()
            assert 'busy' in line, line
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, line + out
        assert 'FATAL' not in out and 'Error occurred at' not in out and 'Traceback' not in out, line + out


def test_a_mostly_idle_node_stops_promptly_on_sigterm():
    """A node with nothing to do (no timer, no message: its executor waits with no timeout) must
    stop on SIGTERM: the signal must wake the executor. If it did not, the node would never stop
    (not "a timer period late"), so the bound (30 s, for a loaded machine) discriminates."""
    proc = _start_script(IDLE_NODE)
    out = _answer_once_then_sigterm(proc)
    assert proc.returncode == 0, out
    assert 'Traceback' not in out, out


def test_with_hil_profile_dir_a_node_writes_its_profile_when_stopped(tmp_path):
    """The measuring aid of docs/performance.md: the node's spin loop profiled, written at its stop."""
    proc = _start_script(IDLE_NODE, HIL_PROFILE_DIR=str(tmp_path))
    out = _answer_once_then_sigterm(proc)
    assert proc.returncode == 0, out
    written = list(tmp_path.glob(f'idle_probe.{proc.pid}.prof'))
    assert written and 'profile written to' in out, out
    import pstats
    functions = {name for _, _, name in pstats.Stats(str(written[0])).stats}
    assert '_list_parameters_callback' in functions, sorted(functions)[:40]   # the service call it answered


HANGING_CLOSE_NODE = """
import threading
import rclpy.node
from hil_common.ros_main import run_node

class Hangs(rclpy.node.Node):
    def close(self):
        print('closing', flush=True)
        threading.Event().wait()          # a shutdown that never finishes

raise SystemExit(run_node(lambda: Hangs('hanging_probe'), 'hanging_probe'))
"""


def test_a_node_whose_shutdown_hangs_is_killed_with_its_stacks_in_its_output():
    """stop_processes: SIGINT, then SIGTERM, then (before SIGKILL) the stack-dump signal, so the
    report of a hung node says where it hung (here: in ``close``). Without the dump the output
    would end at 'closing' and the test fails."""
    from hil_common.ros_testing import stop_processes

    proc = _start_script(HANGING_CLOSE_NODE)
    try:
        with test_node('probe_hanging') as (node, executor):
            client = node.create_client(ListParameters, '/hanging_probe/list_parameters')
            assert client.wait_for_service(timeout_sec=60.0), 'the node did not come up'
        stop_processes([proc], timeout_s=2.0)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, out)
    dump = out[out.find('closing'):]
    assert 'most recent call first' in dump and 'in close' in dump, out


def test_only_a_failed_message_conversion_inside_a_take_is_survived():
    """run_node goes on after rclpy fails to convert one taken message (seen under load in a
    wall-clock run: obsw_controller died mid-capture); any other RuntimeError still ends the node."""
    from hil_common.ros_main import failed_take

    def _take_subscription():
        raise RuntimeError("Unable to convert call argument '0' to Python object")

    def spin_once(fn):
        fn()

    for fn, expected in ((_take_subscription, True), (lambda: (_ for _ in ()).throw(RuntimeError('x')), False)):
        try:
            spin_once(fn)
        except RuntimeError as exc:
            assert failed_take(exc) is expected
    try:
        raise RuntimeError("Unable to convert call argument '0' to Python object")    # not in a take
    except RuntimeError as exc:
        assert not failed_take(exc)


def test_a_failed_conversion_waits_for_the_shutdown_that_may_have_caused_it():
    """With the events executor a SIGINT that lands in a message conversion surfaces from spin_once
    (no Python frame names the take), sometimes before rclpy's handler has shut the context down:
    run_node then waits up to SHUTDOWN_GRACE_S for the shutdown instead of reporting a crash."""
    import threading
    import time

    from hil_common.ros_main import SHUTDOWN_GRACE_S, failed_conversion, shutting_down

    class Context:
        def __init__(self):
            self.up = True

        def ok(self):
            return self.up

    assert failed_conversion(RuntimeError("Unable to convert call argument '0' to Python object"))
    assert not failed_conversion(RuntimeError('x')) and not failed_conversion(None)
    ctx = Context()
    assert not shutting_down(ctx, wait=False)
    t0 = time.monotonic()
    assert not shutting_down(ctx, wait=True)                  # no shutdown follows: a crash, after the grace
    assert time.monotonic() - t0 >= SHUTDOWN_GRACE_S
    timer = threading.Timer(0.1, lambda: setattr(ctx, 'up', False))
    timer.start()
    t0 = time.monotonic()
    assert shutting_down(ctx, wait=True)                      # the shutdown follows 0.1 s later
    assert time.monotonic() - t0 < SHUTDOWN_GRACE_S
    timer.join()
