"""Polled subscriptions over loopback DDS: no executor takes their messages, the node takes them all, in
order, under its namespace and remappings, with KEEP_LAST's depth, as raw CDR or as messages."""

import contextlib
import time

import pytest
import rclpy
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray, Int32

from hil_common.errors import ConfigError
from hil_common.polled import PolledSubscription
from hil_common.ros_testing import executor_maker


@contextlib.contextmanager
def two_nodes(executor_kind: str, cli_args=()):
    """A listening node (namespace ``/lab``, ``cli_args``) spun by ``executor_kind``, and a talking node."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    listener = rclpy.create_node('listener', namespace='/lab', context=ctx,
                                 cli_args=['--ros-args', *cli_args] if cli_args else None)
    talker = rclpy.create_node('talker', namespace='/lab', context=ctx)
    executor = executor_maker(executor_kind)(context=ctx)
    executor.add_node(listener)
    executor.add_node(talker)
    try:
        yield listener, talker, executor
    finally:
        executor.shutdown()
        listener.destroy_node()
        talker.destroy_node()
        ctx.try_shutdown()


def spin_for(executor, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.01)


def wait_matched(executor, publisher, subscription, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not (publisher.get_subscription_count() and subscription.get_publisher_count()):
        assert time.monotonic() < deadline, 'the polled subscription never matched the publisher'
        executor.spin_once(timeout_sec=0.02)


@pytest.mark.parametrize('executor_kind', ['single', 'events', 'waitset'])
def test_the_executor_leaves_the_messages_to_the_node_which_takes_them_all_in_order(executor_kind):
    with two_nodes(executor_kind) as (listener, talker, executor):
        polled = PolledSubscription(listener, Int32, 'counts', depth=10, raw=False)
        # an ordinary subscription on the same node and topic: proof that the executor did spin and deliver
        delivered = []
        listener.create_subscription(Int32, 'counts', lambda m: delivered.append(m.data), 10)
        pub = talker.create_publisher(Int32, 'counts', 10)
        wait_matched(executor, pub, polled)
        for k in range(7):
            pub.publish(Int32(data=k))
        spin_for(executor, 0.5)                      # the executor runs: it must not take the polled ones
        assert delivered == list(range(7)), delivered
        assert [m.data for m in polled.take_all()] == list(range(7))
        assert polled.take_all() == [] and polled.taken == 7
        # the subscription is the listener's, under its namespace: what `ros2 node info` shows
        infos = listener.get_subscriptions_info_by_topic('/lab/counts')
        assert sorted((i.node_name, i.node_namespace) for i in infos) == [('listener', '/lab')] * 2
        polled.destroy()


def test_keep_last_keeps_the_newest_depth_messages_and_raw_gives_cdr_bytes():
    with two_nodes('events') as (listener, talker, executor):
        polled = PolledSubscription(listener, Float64MultiArray, 'samples', depth=3)       # raw by default
        pub = talker.create_publisher(Float64MultiArray, 'samples', 10)
        wait_matched(executor, pub, polled)
        for k in range(8):
            pub.publish(Float64MultiArray(data=[float(k), -0.5 * k]))
        spin_for(executor, 0.3)
        taken = polled.take_all()
        assert all(isinstance(b, bytes) for b in taken)
        assert [list(deserialize_message(b, Float64MultiArray).data) for b in taken] == \
            [[5.0, -2.5], [6.0, -3.0], [7.0, -3.5]]
        polled.destroy()


def test_the_nodes_remappings_apply_and_a_bad_depth_is_refused_by_name():
    with two_nodes('events', cli_args=('-r', 'counts:=/elsewhere/counts')) as (listener, talker, executor):
        polled = PolledSubscription(listener, Int32, 'counts', raw=False)
        assert polled.topic_name == '/elsewhere/counts'
        pub = talker.create_publisher(Int32, '/elsewhere/counts', 10)
        wait_matched(executor, pub, polled)
        pub.publish(Int32(data=42))
        spin_for(executor, 0.2)
        assert [m.data for m in polled.take_all()] == [42]
        with pytest.raises(ConfigError, match="'counts'.*depth"):
            PolledSubscription(listener, Int32, 'counts', depth=0)
        polled.destroy()


def test_take_latest_gives_the_newest_value_once_and_none_until_another_arrives():
    """The live view and the OBSW read fast streams at their own rate: the newest message, none twice."""
    with two_nodes('single') as (listener, talker, executor):
        polled = PolledSubscription(listener, Int32, 'joints', depth=1, raw=False)
        pub = talker.create_publisher(Int32, 'joints', 10)
        wait_matched(executor, pub, polled)
        assert polled.take_latest() is None
        for k in range(5):
            pub.publish(Int32(data=k))
        spin_for(executor, 0.3)
        assert polled.take_latest().data == 4
        assert polled.take_latest() is None
        pub.publish(Int32(data=11))
        spin_for(executor, 0.2)
        assert polled.take_latest().data == 11
        polled.destroy()


def test_a_best_effort_one_takes_from_reliable_and_best_effort_writers_a_reliable_one_from_reliable_only():
    """``best_effort`` (the servicer's sample loop reads the twin's ``/clock`` so, as rclpy's time source does): it
    matches a reliable writer (the lab twin's) and a best-effort one (another simulator's); a reliable reader does
    not match a best-effort writer, and gets nothing from it."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    with two_nodes('events') as (listener, talker, executor):
        polled = PolledSubscription(listener, Int32, 'clock', raw=False, best_effort=True)
        reliable = PolledSubscription(listener, Int32, 'clock', raw=False)
        pub_reliable = talker.create_publisher(Int32, 'clock', 10)
        pub_best_effort = talker.create_publisher(Int32, 'clock', QoSProfile(
            depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        deadline = time.monotonic() + 10.0
        while polled.get_publisher_count() < 2 or pub_reliable.get_subscription_count() < 2:
            assert time.monotonic() < deadline, 'not matched'
            spin_for(executor, 0.05)
        spin_for(executor, 0.2)
        assert reliable.get_publisher_count() == 1        # the best-effort writer does not match it
        assert pub_best_effort.get_subscription_count() == 1
        pub_reliable.publish(Int32(data=1))
        pub_best_effort.publish(Int32(data=2))
        spin_for(executor, 0.3)
        assert sorted(m.data for m in polled.take_all()) == [1, 2]
        assert [m.data for m in reliable.take_all()] == [1]
        polled.destroy()
        reliable.destroy()
