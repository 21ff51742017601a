"""Stamps from seconds: the lab twin's simulated clock is published as stamps every 4 ms."""

from builtin_interfaces.msg import Time

from hil_common.conversions import seconds_to_stamp, stamp_to_seconds


def test_a_fraction_rounding_to_a_full_second_carries_into_the_seconds():
    stamp = Time()
    seconds_to_stamp(0.9999999999, stamp)
    assert (stamp.sec, stamp.nanosec) == (1, 0)
    seconds_to_stamp(1.5, stamp)
    assert (stamp.sec, stamp.nanosec) == (1, 500_000_000)


def test_stamps_of_a_4_ms_clock_never_go_back():
    stamp, t, last = Time(), 0.0, -1.0
    for _ in range(5000):           # 20 s of the twin's steps, accumulated as the twin does
        t += 0.004
        seconds_to_stamp(t, stamp)
        now = stamp_to_seconds(stamp)
        assert now > last and abs(now - t) < 1e-9
        last = now
