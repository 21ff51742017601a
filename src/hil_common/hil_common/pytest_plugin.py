"""pytest plugin (registered through the ``pytest11`` entry point of hil_common).

Loaded by pytest wherever hil_common is installed (our venv, ``colcon test``), before
any test module is imported. It makes every test run DDS-safe:

* the loopback-only Fast DDS profile (``FASTRTPS_DEFAULT_PROFILES_FILE``), always; a test
  run never uses the lab network, whatever ``HIL_NETWORK`` says;
* its own ``ROS_DOMAIN_ID`` (from ``HIL_TEST_DOMAIN_ID`` if set, else drawn from the
  process id), so concurrent runs on one machine do not see each other's topics;
* ``MUJOCO_GL=egl`` (unless set), so offscreen rendering works headless whichever test
  imports MuJoCo first;
* Python's SIGINT handler, if the run inherited SIGINT ignored (a suite started as a background
  job of a script): the Ctrl-C tests send SIGINT to processes they start, which inherit the
  ignored disposition otherwise (and then never stop: the run hung in ``test_orphans``);
* in a pytest-xdist worker (``./dev test``'s first part, the files ``tools/test_groups.py`` calls
  parallel): ``rclpy.init`` and binding a fixed (non-zero) port raise :class:`ParallelGroupError`, so a
  file sorted into that part by mistake fails by name instead of sharing DDS or an RDT port with a
  test beside it.
"""

from __future__ import annotations

import os
import signal

from hil_common.network import MODE_ENV, apply_network_profile

# Fast DDS maps domains to UDP ports 7400 + 250 * domain; keep well inside the valid range.
_DOMAIN_RANGE = (1, 100)


def test_domain_id(pid: int | None = None) -> int:
    """Pick this run's ROS domain: explicit ``HIL_TEST_DOMAIN_ID`` or one derived from the pid."""
    explicit = os.environ.get('HIL_TEST_DOMAIN_ID')
    if explicit:
        return int(explicit)
    lo, hi = _DOMAIN_RANGE
    return lo + (os.getpid() if pid is None else pid) % (hi - lo + 1)


class ParallelGroupError(RuntimeError):
    """A test run beside another (an xdist worker) started ROS or bound a fixed port."""


def _guard_parallel_worker() -> None:
    import socket

    import rclpy

    def refuse(what):
        raise ParallelGroupError(f'{what} in a test that runs beside another (pytest-xdist worker '
                                 f"{os.environ.get('PYTEST_XDIST_WORKER')}): tools/test_groups.py must put its "
                                 f'file in the serial part (add a mark to SERIAL_MARKS)')

    rclpy.init = lambda *args, **kwargs: refuse('rclpy.init')
    bind = socket.socket.bind

    def guarded_bind(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple) and address[1] != 0:
            refuse(f'binding port {address[1]}')
        return bind(sock, address)

    socket.socket.bind = guarded_bind


def pytest_configure(config):  # noqa: D103 - pytest hook
    if os.environ.get('PYTEST_XDIST_WORKER'):
        _guard_parallel_worker()
    os.environ[MODE_ENV] = 'loopback'
    apply_network_profile()
    os.environ['ROS_DOMAIN_ID'] = str(test_domain_id())
    # MuJoCo picks its GL backend at first import, whichever test module imports it first:
    # headless offscreen rendering needs EGL.
    os.environ.setdefault('MUJOCO_GL', 'egl')
    os.environ.setdefault('ROS_LOG_DIR', os.path.join(str(config.rootpath), '.pytest_cache', 'ros_log'))
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_report_header(config):  # noqa: D103 - pytest hook
    return (f"hil: loopback-only DDS profile {os.environ.get('FASTRTPS_DEFAULT_PROFILES_FILE')}, "
            f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID')}")
