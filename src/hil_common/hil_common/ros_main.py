"""The one ``main`` of every node: network profile, init, parameter errors, clean shutdown.

``run_node(factory, name)`` applies the loopback-only DDS profile (unless
``HIL_NETWORK=lab``) before ``rclpy.init``, builds the node with ``factory()``, turns a
:class:`hil_common.params.ParameterError` into a one-line message naming the parameter
and exit code 2, spins, and shuts down cleanly on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
import sys
from typing import Callable

from hil_common.network import apply_network_profile, describe
from hil_common.params import ParameterError


def run_node(factory: Callable[[], object], name: str, args=None) -> int:
    apply_network_profile()
    import rclpy
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=args)
    # SIGTERM (what a launcher sends) ends the node like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: rclpy.try_shutdown())
    try:
        node = factory()
    except ParameterError as exc:
        print(f'{name}: {exc}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    node.get_logger().info(describe())
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
