"""The lab clock's readings (hil_common.lab_clock): read from rclpy's clock handle, they are what rclpy's
``Clock.now()`` gives, on the simulated clock (``/clock``, here its override) and on the system clock."""

import contextlib
import time

import rclpy
from rclpy.parameter import Parameter
from rclpy.time import Time

from hil_common.lab_clock import clock_ns, lab_seconds


@contextlib.contextmanager
def sim_and_wall():
    """Two nodes on one context: one with ``use_sim_time`` (its clock overridden by hand, as ``/clock`` does), one on
    the system clock."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        sim = rclpy.create_node('lab_clock_sim', context=ctx,
                                parameter_overrides=[Parameter('use_sim_time', value=True)])
        wall = rclpy.create_node('lab_clock_wall', context=ctx)
        yield sim, wall
        sim.destroy_node()
        wall.destroy_node()
    finally:
        ctx.try_shutdown()


def test_readings_from_the_clock_handle_are_rclpys_on_the_simulated_and_the_system_clock():
    with sim_and_wall() as (sim, wall):
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


def test_a_measurements_time_is_its_stamp_on_the_simulated_clock_and_its_arrival_on_the_wall_clock():
    """``measurement_seconds`` (the nodes' Python) and ``policy_kernel.measurement_time`` (the fused servicer's compiled
    loop) are one rule written twice: on the simulated clock a positive stamp is the time, an unstamped message (0) the
    arrival; on the wall clock always the arrival (a driver's stamps are another host's clock). Both agree on each
    case; the queue kept is 2 s of a 250 Hz robot on the simulated clock, 10 on the wall clock."""
    from hil_common.lab_clock import joint_states_depth, measurement_seconds
    from hil_common.policy_kernel import measurement_time

    with sim_and_wall() as (sim, wall):
        sim.get_clock().set_ros_time_override(Time(nanoseconds=12_500_000_000, clock_type=sim.get_clock().clock_type))
        at_sim, at_wall = measurement_seconds(sim), measurement_seconds(wall)
        for sec, nanosec in ((12, 496_000_000), (12, 504_000_000), (3, 0), (0, 0)):
            stamp = sec + 1e-9 * nanosec
            expected = stamp if stamp > 0.0 else 12.5
            assert at_sim(stamp) == expected == measurement_time(sec, nanosec, True, 12.5), (sec, nanosec)
            before = time.monotonic()
            got = at_wall(stamp)
            assert before <= got <= time.monotonic()
            assert measurement_time(sec, nanosec, False, 12.5) == 12.5
        assert joint_states_depth(sim) == 500 and joint_states_depth(wall) == 10
