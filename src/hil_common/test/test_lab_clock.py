"""The lab clock's readings (hil_common.lab_clock): read from rclpy's clock handle, they are what rclpy's
``Clock.now()`` gives, on the simulated clock (``/clock``, here its override) and on the system clock."""

import time

import rclpy
from rclpy.parameter import Parameter
from rclpy.time import Time

from hil_common.lab_clock import clock_ns, lab_seconds


def test_readings_from_the_clock_handle_are_rclpys_on_the_simulated_and_the_system_clock():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        sim = rclpy.create_node('lab_clock_sim', context=ctx,
                                parameter_overrides=[Parameter('use_sim_time', value=True)])
        wall = rclpy.create_node('lab_clock_wall', context=ctx)
        clock = sim.get_clock()
        read_ns, read_s = clock_ns(sim), lab_seconds(sim)
        for ns in (0, 1, 123_456_789_012, 4_000_000_000_000_000_001):
            clock.set_ros_time_override(Time(nanoseconds=ns, clock_type=clock.clock_type))
            assert read_ns() == clock.now().nanoseconds == ns
            assert read_s() == ns * 1e-9
        before = wall.get_clock().now().nanoseconds
        reading = clock_ns(wall)()
        after = wall.get_clock().now().nanoseconds
        assert before <= reading <= after                  # the system clock, as rclpy reads it
        assert lab_seconds(wall) is time.monotonic         # off the simulated clock: monotonic
        sim.destroy_node()
        wall.destroy_node()
    finally:
        ctx.try_shutdown()
