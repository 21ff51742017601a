"""The raw CDR codecs of the hot paths against rclpy's own serializer (every alignment case)."""

import math
import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header

from std_msgs.msg import MultiArrayDimension

from hil_common.cdr import (CdrError, Float64ArrayEncoder, JointStateDecoder, decode_float64_array, decode_header,
                            decode_pose_stamped, decode_wrench_stamped, encode_header)


@pytest.mark.parametrize('frame_id', ['', 'a', 'ab', 'abc', 'abcd', 'servicer_ft_sensor', 'x' * 13])
def test_wrench_stamped_decodes_as_rclpy_serialized_it(frame_id):
    msg = WrenchStamped()
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = -3, 999_999_999, frame_id
    values = [1.5, -2.25, 3e5, -4e-9, 5.0, -6.125]
    (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z,
     msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = values
    sec, nanosec, frame, wrench = decode_wrench_stamped(serialize_message(msg))
    assert (sec, nanosec, frame) == (-3, 999_999_999, frame_id)
    np.testing.assert_array_equal(wrench, values)


@pytest.mark.parametrize('frame_id', ['', 'a', 'ab', 'abc', 'abcd', 'slave_base', 'x' * 13])
def test_pose_stamped_decodes_as_rclpy_serialized_it(frame_id):
    from geometry_msgs.msg import PoseStamped

    msg = PoseStamped()
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 7, 5, frame_id
    values = [1.5, -2.25, 3e5, -0.5, 0.25, -4e-9, 0.8125]
    p, q = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z, q.x, q.y, q.z, q.w = values
    sec, nanosec, frame, pose = decode_pose_stamped(serialize_message(msg))
    assert (sec, nanosec, frame) == (7, 5, frame_id)
    np.testing.assert_array_equal(pose, values)
    with pytest.raises(CdrError, match='pose beyond the buffer'):
        decode_pose_stamped(serialize_message(msg)[:-8])


@pytest.mark.parametrize('names', [[], ['a'], ['ab', 'c'], [f'iiwa_joint_{i}' for i in range(1, 8)],
                                   ['joint_a1', 'x', 'yz_', 'abcd', 'e', 'fghij']])
@pytest.mark.parametrize('frame_id', ['', 'base', 'abc'])
@pytest.mark.parametrize('with_velocity', [True, False])
def test_joint_state_decodes_as_rclpy_serialized_it(names, frame_id, with_velocity):
    n = len(names)
    msg = JointState(name=names, position=[0.1 * i - 1.0 for i in range(n)],
                     velocity=[2.0 - 0.3 * i for i in range(n)] if with_velocity else [], effort=[7.0] * n)
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 12, 345, frame_id
    decode = JointStateDecoder()
    for _ in range(2):                   # the second time from the names' cache
        sec, nanosec, got_names, position, velocity = decode(serialize_message(msg))
        assert (sec, nanosec, got_names) == (12, 345, tuple(names))
        np.testing.assert_array_equal(position, msg.position)
        np.testing.assert_array_equal(velocity, msg.velocity)
    # the same names after a longer frame id (the names' cache compared at another offset), new values
    msg.header.frame_id, msg.position = frame_id + '_longer', [0.5 * i for i in range(n)]
    sec, nanosec, got_names, position, velocity = decode(serialize_message(msg))
    assert got_names == tuple(names)
    np.testing.assert_array_equal(position, msg.position)
    np.testing.assert_array_equal(velocity, msg.velocity)
    msg.name = list(reversed(names))     # new names are decoded again
    assert decode(serialize_message(msg))[2] == tuple(reversed(names))


@pytest.mark.parametrize('n', [1, 2, 6, 7])
def test_float64_array_encodes_what_rclpy_reads(n):
    encode = Float64ArrayEncoder(n)
    for values in (np.arange(n) * 0.5 - 1.0, np.full(n, -3e-300)):
        msg = deserialize_message(encode(values), Float64MultiArray)
        np.testing.assert_array_equal(msg.data, values)
        assert list(msg.layout.dim) == [] and msg.layout.data_offset == 0


@pytest.mark.parametrize('frame_id', ['', 'a', 'trace'])
def test_header_encodes_what_rclpy_reads(frame_id):
    msg = deserialize_message(encode_header(1_795_000_000, 123_456_789, frame_id), Header)
    assert (msg.stamp.sec, msg.stamp.nanosec, msg.frame_id) == (1_795_000_000, 123_456_789, frame_id)


def test_malformed_buffers_raise_cdr_errors():
    good = serialize_message(WrenchStamped())
    for bad in (good[:30], b'\x00\x00\x00\x00' + good[4:], b'', good[:12] + b'\xff\xff\xff\x7f' + good[16:]):
        with pytest.raises(CdrError):
            decode_wrench_stamped(bad)
    js = serialize_message(JointState(name=['a', 'b'], position=[1.0, 2.0], velocity=[0.0, 0.0]))
    for cut in (10, 30, len(js) - 12):          # (the effort, at the end, is not read)
        with pytest.raises(CdrError):
            JointStateDecoder()(js[:cut])


@pytest.mark.parametrize('dims', [0, 1, 2])
@pytest.mark.parametrize('n', [0, 1, 6])
def test_float64_array_decodes_as_rclpy_serialized_it(dims, n):
    msg = Float64MultiArray(data=[0.25 * i - 1.0 for i in range(n)])
    msg.layout.dim = [MultiArrayDimension(label='ab'[:k + 1], size=k + 3, stride=7) for k in range(dims)]
    msg.layout.data_offset = 5
    np.testing.assert_array_equal(decode_float64_array(serialize_message(msg)), msg.data)


@pytest.mark.parametrize('frame_id', ['', 'xy', 'trace'])
def test_header_decodes_as_rclpy_serialized_it(frame_id):
    msg = Header(frame_id=frame_id)
    msg.stamp.sec, msg.stamp.nanosec = 1_795_000_001, 5
    assert decode_header(serialize_message(msg))[:3] == (1_795_000_001, 5, frame_id)


@pytest.mark.parametrize('frame_id, child_frame_id', [('orbit', 'client_com'), ('', ''), ('abc', 'de'), ('o', 'child_x')])
def test_odometry_and_pose_stamped_encode_what_rclpy_reads(frame_id, child_frame_id):
    """The hot path's decimated state and table pose as raw CDR (every alignment of the frame ids)."""
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry

    from hil_common.cdr import OdometryEncoder, PoseStampedEncoder
    rng = np.random.default_rng(len(frame_id) + 7 * len(child_frame_id))
    odometry, pose_stamped = OdometryEncoder(frame_id, child_frame_id), PoseStampedEncoder(frame_id)
    for k in range(3):
        pose, twist = rng.normal(size=7), rng.normal(size=6)
        msg = deserialize_message(odometry(1_795_000_000 + k, 123_456_789, pose, twist), Odometry)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1_795_000_000 + k, 123_456_789)
        assert (msg.header.frame_id, msg.child_frame_id) == (frame_id, child_frame_id)
        p, o, v, w = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist.linear, msg.twist.twist.angular
        np.testing.assert_array_equal([p.x, p.y, p.z, o.x, o.y, o.z, o.w], pose)
        np.testing.assert_array_equal([v.x, v.y, v.z, w.x, w.y, w.z], twist)
        assert not np.any(msg.pose.covariance) and not np.any(msg.twist.covariance)
        msg = deserialize_message(pose_stamped(7, 8 + k, pose), PoseStamped)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (7, 8 + k, frame_id)
        p, o = msg.pose.position, msg.pose.orientation
        np.testing.assert_array_equal([p.x, p.y, p.z, o.x, o.y, o.z, o.w], pose)


@pytest.mark.parametrize('frame_id, child_frame_id', [('orbit', 'client_com'), ('', ''), ('abc', 'de'), ('o', 'child_x'),
                                                      ('abcd', 'abcdefg')])
def test_odometry_decodes_as_rclpy_serialized_it(frame_id, child_frame_id):
    """The client's state as the fused servicer takes it (every alignment of the frame ids, random covariances
    that must be skipped); a truncated buffer is refused."""
    from nav_msgs.msg import Odometry

    from hil_common.cdr import decode_odometry
    rng = np.random.default_rng(3 + len(frame_id) + 11 * len(child_frame_id))
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 1_795_000_001, 42, frame_id
    msg.child_frame_id = child_frame_id
    pose, twist = rng.normal(size=7), rng.normal(size=6)
    p, o, v, w = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist.linear, msg.twist.twist.angular
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = map(float, pose)
    v.x, v.y, v.z, w.x, w.y, w.z = map(float, twist)
    msg.pose.covariance = rng.normal(size=36).tolist()
    msg.twist.covariance = rng.normal(size=36).tolist()
    buf = serialize_message(msg)
    sec, nanosec, frame, child, got_pose, got_twist = decode_odometry(buf)
    assert (sec, nanosec, frame, child) == (1_795_000_001, 42, frame_id, child_frame_id)
    np.testing.assert_array_equal(got_pose, pose)
    np.testing.assert_array_equal(got_twist, twist)
    for cut in (len(buf) - 8, len(buf) // 2, 10):
        with pytest.raises(CdrError):
            decode_odometry(buf[:cut])


def test_a_pose_from_its_decoded_values_is_the_pose_from_its_message():
    """pose_from_xyzquat (the raw path) against pose_from_msg (rclpy's message), bit for bit, an unnormalised
    quaternion included; non-finite values and a zero quaternion are refused."""
    from geometry_msgs.msg import Pose

    from hil_common.conversions import pose_from_msg, pose_from_xyzquat
    from hil_common.errors import InputError
    rng = np.random.default_rng(5)
    for _ in range(5):
        values = np.r_[rng.normal(size=3), 3.0 * rng.normal(size=4)]
        msg = Pose()
        msg.position.x, msg.position.y, msg.position.z = map(float, values[:3])
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = map(float, values[3:])
        np.testing.assert_array_equal(pose_from_xyzquat(values).homogeneous, pose_from_msg(msg).homogeneous)
        assert abs(np.linalg.det(pose_from_xyzquat(values).rotation) - 1.0) < 1e-12
    with pytest.raises(InputError, match='non-finite'):
        pose_from_xyzquat([0, 0, math.inf, 0, 0, 0, 1])
    with pytest.raises(InputError, match='zero quaternion'):
        pose_from_xyzquat([0, 0, 0, 0, 0, 0, 0])


def test_a_raw_joint_state_stream_reads_in_the_expected_order():
    """JointStateReader: decoded and put in the expected joints' order; no velocities give dq None; a missing
    joint or a non-finite position gives q None."""
    from hil_common.cdr import JointStateReader
    read = JointStateReader(('a', 'b', 'c'))
    msg = JointState(name=['c', 'a', 'b'], position=[3.0, 1.0, 2.0], velocity=[0.3, 0.1, 0.2])
    q, dq = read(serialize_message(msg))
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(dq, [0.1, 0.2, 0.3])
    msg.velocity = []
    q, dq = read(serialize_message(msg))
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    assert dq is None
    msg.position = [3.0, math.nan, 2.0]
    assert read(serialize_message(msg))[0] is None
    assert read(serialize_message(JointState(name=['a', 'b'], position=[1.0, 2.0])))[0] is None
    with pytest.raises(CdrError):
        read(b'\x00\x01\x00\x00\x01')


@pytest.mark.parametrize('frame_id', ['', 'a', 'servicer_base_com'])
def test_twist_stamped_encodes_what_rclpy_reads(frame_id):
    from geometry_msgs.msg import TwistStamped

    from hil_common.cdr import TwistStampedEncoder
    twist = np.array([0.1, -0.2, 0.3, -1e-3, 2e-3, -3e-3])
    msg = deserialize_message(TwistStampedEncoder(frame_id)(5, 6, twist), TwistStamped)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (5, 6, frame_id)
    v, w = msg.twist.linear, msg.twist.angular
    np.testing.assert_array_equal([v.x, v.y, v.z, w.x, w.y, w.z], twist)
