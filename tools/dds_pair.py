"""A ROS 2 publisher/subscriber pair for the network check (tools/check_dds_loopback.sh).

``python dds_pair.py pub SECONDS`` publishes std_msgs/String at 20 Hz for SECONDS.
``python dds_pair.py sub SECONDS`` counts what it receives and exits 0 if it got any.
The environment decides the transport: under ./dev the loopback-only profile applies.
"""

import sys
import time

import rclpy
from std_msgs.msg import String


def main() -> int:
    role, seconds = sys.argv[1], float(sys.argv[2])
    rclpy.init()
    node = rclpy.create_node(f'hil_ddscheck_{role}')
    received = []
    if role == 'pub':
        pub = node.create_publisher(String, 'hil_ddscheck', 10)
        node.create_timer(0.05, lambda: pub.publish(String(data='hil network check')))
    else:
        node.create_subscription(String, 'hil_ddscheck', received.append, 10)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    if role == 'sub':      # said before the shutdown, which the check kills if it hangs
        print(f'subscriber received {len(received)} messages', flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0 if role == 'pub' or received else 1


if __name__ == '__main__':
    sys.exit(main())
