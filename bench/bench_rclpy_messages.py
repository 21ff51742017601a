"""rclpy's per-message cost against raw CDR (hil_common.cdr), for the fused hot paths' messages.

One process, one publisher and one subscription on loopback DDS, rclpy's events executor, the
best of three runs of 3000 messages each: the CPU time per message (publish + take + callback) with rclpy's message objects,
taking raw bytes (decoded by :mod:`hil_common.cdr`), publishing bytes (encoded by it), and both.
It is the bare relay the hot paths' figures compare with: what a message costs before any rule
runs. Printed, never asserted. ``./dev bench rclpy_messages``.
"""

from __future__ import annotations

import time

import numpy as np

N = 3000


def main(argv=None) -> None:
    from hil_common.network import apply_network_profile

    apply_network_profile()
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.experimental import EventsExecutor
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from hil_common.cdr import Float64ArrayEncoder, JointStateDecoder, decode_float64_array, decode_wrench_stamped

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('bench_rclpy_messages', context=ctx)
    executor = EventsExecutor(context=ctx)
    executor.add_node(node)
    wrench = WrenchStamped()
    wrench.header.frame_id = 'servicer_ft_sensor'
    joints = JointState(name=[f'iiwa_joint_{i}' for i in range(1, 8)], position=[0.1] * 7, velocity=[0.0] * 7)
    command = Float64MultiArray(data=[0.1] * 7)
    joint_decoder = JointStateDecoder()
    encode = Float64ArrayEncoder(7)
    q = np.full(7, 0.1)
    cases = [(WrenchStamped, wrench, decode_wrench_stamped, None),
             (JointState, joints, joint_decoder, None),
             (Float64MultiArray, command, decode_float64_array, lambda: encode(q))]
    print(f'CPU per message, publish + take + callback in one process (best of 3 x {N}, events executor):', flush=True)
    try:
        for kind, msg, decode, encoder in cases:
            figures = []
            for raw_take, raw_send in ((False, False), (True, False), (False, True), (True, True)):
                got = [0]

                def callback(m, decode=decode, raw_take=raw_take):
                    if raw_take:
                        decode(m)
                    got[0] += 1
                topic = f'bench_rclpy_messages/{kind.__name__}'
                sub = node.create_subscription(kind, topic, callback, 1000, raw=raw_take)
                pub = node.create_publisher(kind, topic, 1000)
                payload = serialize_message(msg) if raw_send and encoder is None else msg
                for _ in range(50):
                    executor.spin_once(timeout_sec=0.01)
                best = np.inf
                for _ in range(3):
                    got[0] = 0
                    t0 = time.process_time()
                    for i in range(N):
                        pub.publish(encoder() if raw_send and encoder is not None else payload)
                        while got[0] <= i:
                            executor.spin_once(timeout_sec=0.1)
                    best = min(best, (time.process_time() - t0) / N * 1e6)
                figures.append(best)
                node.destroy_subscription(sub)
                node.destroy_publisher(pub)
            print(f'  {kind.__name__:18s}: messages {figures[0]:5.1f} us, taken raw {figures[1]:5.1f} us, '
                  f'sent raw {figures[2]:5.1f} us, both raw {figures[3]:5.1f} us', flush=True)
    finally:
        executor.shutdown()
        node.destroy_node()
        ctx.try_shutdown()


if __name__ == '__main__':
    main()
