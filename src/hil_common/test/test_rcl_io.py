"""Compiled takes and publishes on rcl (hil_common.rcl_io) over loopback DDS, held to the readable codecs
(hil_common.cdr's JointStateReader, hil_admittance's JointPicker, Float64ArrayEncoder) and to rclpy's own
serializer: every joint-state case the readers judge, names that change between messages, malformed buffers,
more messages than one call takes, and rcl's refusal after a shutdown."""

import ctypes
import math
import time

import numpy as np
import pytest
import rclpy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from hil_admittance.node_common import JointPicker
from hil_common import rcl_io
from hil_common.cdr import CdrError, Float64ArrayEncoder, JointStateDecoder, JointStateReader
from hil_common.errors import StartError
from hil_common.polled import PolledSubscription

ORDER = ('j2', 'j0', 'j1')      # the node's joint order


@pytest.fixture()
def node():
    assert rcl_io.available() == '', rcl_io.available()
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('rcl_io_test', context=ctx)
    try:
        yield node
    finally:
        node.destroy_node()
        ctx.try_shutdown()


def wait_for(predicate, timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.01)


def matched(pub, sub):
    wait_for(lambda: pub.get_subscription_count() > 0 and sub.get_publisher_count() > 0)


def cases():
    """(name, JointState) covering what the readers judge; the stamp tells them apart."""
    out = []

    def js(names, position, velocity, sec):
        m = JointState(name=list(names), position=[float(v) for v in position], velocity=[float(v) for v in velocity])
        m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id = sec, 1000 * sec + 7, 'base'
        return m
    out.append(('in order', js(('j0', 'j1', 'j2'), [0.0, 1.0, 2.0], [10.0, 11.0, 12.0], 1)))
    out.append(('same names again', js(('j0', 'j1', 'j2'), [0.5, 1.5, 2.5], [10.5, 11.5, 12.5], 2)))
    out.append(('permuted, an extra joint', js(('x', 'j2', 'j1', 'j0'), [9.0, 2.0, 1.0, 0.0], [9, 12, 11, 10], 3)))
    out.append(('a missing joint', js(('j0', 'j1'), [0.0, 1.0], [0.0, 0.0], 4)))
    out.append(('no velocities', js(('j0', 'j1', 'j2'), [0.0, 1.0, 2.0], [], 5)))
    out.append(('a NaN position', js(('j0', 'j1', 'j2'), [0.0, math.nan, 2.0], [0.0, 0.0, 0.0], 6)))
    out.append(('an infinite velocity', js(('j0', 'j1', 'j2'), [0.0, 1.0, 2.0], [0.0, math.inf, 0.0], 7)))
    out.append(('fewer positions than names', js(('j2', 'j0', 'j1', 'x'), [2.0, 0.0, 1.0], [1, 2, 3, 4], 8)))
    out.append(('a NaN of another joint', js(('j0', 'j1', 'j2', 'x'), [0.0, 1.0, 2.0, math.nan], [0, 0, 0, 0], 9)))
    out.append(('a name that only starts like one', js(('j0', 'j1', 'j20'), [0.0, 1.0, 2.0], [0, 0, 0], 10)))
    out.append(('back to the first names', js(('j0', 'j1', 'j2'), [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], 11)))
    return out


def test_joint_states_decode_as_the_readable_readers_judge_them(node):
    polled = PolledSubscription(node, JointState, 'rcl_io/joints', 100)
    stream = rcl_io.JointStateStream(polled.handle, ORDER, depth=50)
    pub = node.create_publisher(JointState, 'rcl_io/joints', 100)
    matched(pub, polled)
    messages = cases()
    for _, msg in messages:
        pub.publish(msg)
    got = 0
    deadline = time.monotonic() + 10.0
    rows = []
    while got < len(messages) and time.monotonic() < deadline:
        n = stream.take()
        rows += [(stream.stamps[k].copy(), int(stream.flags[k]), reading, stream.whole(k))
                 for k, reading in enumerate(stream.readings(n))]
        got += n
        time.sleep(0.01)
    assert got == len(messages), got
    reader, picker, decode = JointStateReader(ORDER), JointPicker(ORDER), JointStateDecoder()
    for (what, msg), (stamp, flags, (q, dq, malformed), whole) in zip(messages, rows):
        buf = serialize_message(msg)
        assert tuple(stamp) == (msg.header.stamp.sec, msg.header.stamp.nanosec), what
        assert malformed == '', what
        q_ref, dq_ref = reader(buf)                     # the table's reader
        assert (q is None) == (q_ref is None) and (dq is None) == (dq_ref is None), what
        if q_ref is not None:
            assert np.array_equal(q, q_ref), what
        if dq_ref is not None:
            assert np.array_equal(dq, dq_ref), what
        _, _, names, position, velocity = decode(buf)
        picked = picker(names, position, velocity)        # the arm's picker
        assert whole == (picked is not None), what
        if picked is not None:
            assert np.array_equal(q, picked[0]) and np.array_equal(dq, picked[1]), what
    # the cases above cover every outcome (a check of the test itself)
    outcomes = {(f & rcl_io.Q_OK != 0, f & rcl_io.DQ_OK != 0, f & rcl_io.POSITIONS_FULL != 0) for _, f, _, _ in rows}
    assert {(True, True, True), (False, True, True), (True, False, True), (True, True, False)} <= outcomes, outcomes
    stream.release()
    polled.destroy()


def test_malformed_buffers_are_flagged_where_the_readable_decoder_raises(node):
    polled = PolledSubscription(node, JointState, 'rcl_io/bad', 100)
    stream = rcl_io.JointStateStream(polled.handle, ORDER, depth=50)
    pub = node.create_publisher(JointState, 'rcl_io/bad', 100)
    matched(pub, polled)
    good = serialize_message(JointState(name=['j0', 'j1', 'j2'], position=[1.0, 2.0, 3.0], velocity=[0.0] * 3))
    bad = [b'\x01\x00\x00\x00' + good[4:],                    # big-endian encapsulation
           good[:14],                                          # cut in the header
           good[:12] + b'\x00\x00\x00\x00' + good[16:],        # a frame_id of length 0
           good[:40],                                          # cut in the names
           good[:-30]]                                         # cut in the velocities
    for buf in bad:
        with pytest.raises(CdrError):
            JointStateDecoder()(buf)
        pub.publish(buf)
    pub.publish(good)
    rows, last_q = [], None
    deadline = time.monotonic() + 10.0
    while len(rows) < len(bad) + 1 and time.monotonic() < deadline:
        n = stream.take()
        for flags, (q, dq, malformed) in zip(stream.flags[:n], stream.readings(n)):
            rows.append(int(flags))
            assert (malformed != '') == bool(flags & rcl_io.MALFORMED) and (q is None) == bool(malformed)
            last_q = q if q is not None else last_q
        time.sleep(0.01)
    assert len(rows) == len(bad) + 1, rows
    assert all(f & rcl_io.MALFORMED for f in rows[:-1]), rows
    assert [rcl_io.malformed_reason(f) for f in rows[:-1]] == [
        'not little-endian CDR', 'buffer too short', 'bad string', 'names beyond the buffer',
        'sequence beyond the buffer'], rows
    assert rows[-1] == rcl_io.Q_OK | rcl_io.DQ_OK | rcl_io.POSITIONS_FULL     # and the stream goes on
    assert np.array_equal(last_q, [3.0, 1.0, 2.0])
    stream.release()
    polled.destroy()


def test_one_call_takes_at_most_its_rows_and_the_next_takes_the_rest_in_order(node):
    polled = PolledSubscription(node, JointState, 'rcl_io/many', 100)
    stream = rcl_io.JointStateStream(polled.handle, ORDER, depth=5)          # 10 rows
    pub = node.create_publisher(JointState, 'rcl_io/many', 100)
    matched(pub, polled)
    for k in range(25):
        pub.publish(JointState(name=list(ORDER), position=[float(k)] * 3, velocity=[0.0] * 3))
    time.sleep(0.3)
    seen = []
    for _ in range(4):
        n = stream.take()
        assert n <= 10
        seen += [stream.q[k, 0] for k in range(n)]
    assert seen == [float(k) for k in range(25)], seen
    assert stream.taken == 25
    stream.release()
    polled.destroy()


def test_a_message_larger_than_the_take_buffer_grows_it_and_decodes(node):
    """rcl grows the serialized message's buffer (rcutils' allocator) for a message beyond its 1024 bytes: the
    compiled call reads the grown buffer, and names too long to keep are worked out for every message."""
    polled = PolledSubscription(node, JointState, 'rcl_io/big', 10)
    stream = rcl_io.JointStateStream(polled.handle, ORDER)
    pub = node.create_publisher(JointState, 'rcl_io/big', 10)
    matched(pub, polled)
    names = [f'padding_joint_with_a_long_name_{k:04d}' for k in range(150)] + list(ORDER)
    msg = JointState(name=names, position=[float(k) for k in range(len(names))], velocity=[0.5] * len(names))
    assert len(serialize_message(msg)) > 4096 + 1024         # beyond the buffer and the kept names' 4096 bytes
    for _ in range(2):
        pub.publish(msg)
    got = []
    wait_for(lambda: got.extend(stream.readings(stream.take())) or len(got) >= 2)
    for q, dq, malformed in got:
        assert malformed == '' and np.array_equal(q, [150.0, 151.0, 152.0]) and np.array_equal(dq, [0.5] * 3)
    stream.release()
    polled.destroy()


def test_the_compiled_command_is_the_readable_encoders_bytes_and_is_refused_after_a_shutdown():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('rcl_io_pub_test', context=ctx)
    try:
        pub = node.create_publisher(Float64MultiArray, 'rcl_io/cmd', 10)
        raw = PolledSubscription(node, Float64MultiArray, 'rcl_io/cmd', 10, raw=True)
        matched(pub, raw)
        sender = rcl_io.Float64ArrayPublisher(pub, 4)
        values = np.array([1.0, -2.5, math.pi, 1e300])
        sender.publish(values)
        received = []
        wait_for(lambda: received.extend(raw.take_all()) or received)
        assert received == [Float64ArrayEncoder(4)(values)]
        with pytest.raises(CdrError):
            sender.publish(np.zeros(3))
        ctx.try_shutdown()
        with pytest.raises(StartError, match='context is invalid'):
            sender.publish(values)
        raw.destroy()
    finally:
        node.destroy_node()
        ctx.try_shutdown()


def test_without_librcl_the_nodes_run_on_through_rclpy_and_say_so(monkeypatch):
    warnings = []
    assert rcl_io.use_compiled_io(True, warnings.append) and rcl_io.use_compiled_io(False, warnings.append) is False
    assert warnings == []
    monkeypatch.setattr(rcl_io, '_WHY_NOT', 'librcl.so or librcutils.so is not loaded in this process')
    assert rcl_io.use_compiled_io(True, warnings.append) is False
    assert warnings == ['compiled_io: librcl.so or librcutils.so is not loaded in this process; taking and sending '
                        'through rclpy']
    with pytest.raises(StartError, match='not loaded'):
        rcl_io.JointStateStream(None, ORDER)


def test_the_compiled_wait_wakes_on_a_sample_and_on_its_guard_condition_and_else_times_out(node):
    """``rcl_io.wait`` on a wait set of its own (the compiled sample loop's): a timeout with nothing ready, the guard
    condition alone, the subscription alone, both; then the wrist wrench taken in compiled code as rclpy sent it."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.guard_condition import GuardCondition

    polled = PolledSubscription(node, WrenchStamped, 'rcl_io/wrench', 10)
    guard = GuardCondition(None, None, context=node.context)      # on no executor
    wait_set = rcl_io.WaitSet(node.context, 1, 1)
    subs = np.array([int(polled.handle.pointer)], dtype=np.int64)
    guards = np.array([int(guard.handle.pointer)], dtype=np.int64)
    ready = wait_set.ready
    t0 = time.monotonic()
    assert rcl_io.wait(wait_set.words, subs, guards, 50_000_000, ready) == rcl_io.RCL_RET_TIMEOUT
    assert time.monotonic() - t0 >= 0.045 and list(ready) == [0, 0]
    guard.trigger()
    assert rcl_io.wait(wait_set.words, subs, guards, 5_000_000_000, ready) == rcl_io.RCL_RET_OK
    assert list(ready) == [0, 1]
    assert rcl_io.wait(wait_set.words, subs, guards, 1_000_000, ready) == rcl_io.RCL_RET_TIMEOUT  # reported once
    pub = node.create_publisher(WrenchStamped, 'rcl_io/wrench', 10)
    matched(pub, polled)
    sent = WrenchStamped()
    sent.header.stamp.sec, sent.header.stamp.nanosec, sent.header.frame_id = -3, 999_999_999, 'wrist_ft'
    sent.wrench.force.x, sent.wrench.force.z, sent.wrench.torque.y = 1.5, -2.25, 1e-3
    pub.publish(sent)
    assert rcl_io.wait(wait_set.words, subs, guards, 5_000_000_000, ready) == rcl_io.RCL_RET_OK
    assert list(ready) == [1, 0]
    pub.publish(sent)
    guard.trigger()             # the first sample still waits to be taken: both ready
    assert rcl_io.wait(wait_set.words, subs, guards, 5_000_000_000, ready) == rcl_io.RCL_RET_OK
    assert list(ready) == [1, 1]
    message, info = rcl_io.SerializedMessage(), np.zeros(64, dtype=np.uint64)
    expected, taken = serialize_message(sent), []

    def take() -> bool:
        n = rcl_io.take_serialized(int(polled.handle.pointer), message.words, info)
        if n > 0:
            taken.append(np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(int(message.words[0]))).tobytes())
        return len(taken) == 2
    wait_for(take)
    assert taken == [expected, expected]
    assert rcl_io.take_serialized(int(polled.handle.pointer), message.words, info) == 0
    message.release()
    wait_set.release()
    polled.destroy()


def _decode_wrench(buf: bytes):
    stamp, frame, wrench = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64), np.zeros(6)
    code = rcl_io.decode_wrench(np.frombuffer(buf, dtype=np.uint8), len(buf), stamp, frame, wrench,
                                np.zeros(8, dtype=np.uint8))
    return code, (int(stamp[0]), int(stamp[1]), buf[frame[0]:frame[0] + frame[1]].decode(), wrench)


def test_compiled_wrench_and_float64_array_decode_as_the_readable_decoders_and_refuse_what_they_refuse():
    """``decode_wrench`` and ``decode_float64_array`` against hil_common.cdr's readable decoders on rclpy's own
    serializations (random values, frame ids of every alignment, array layouts with dimensions) and on every
    truncation of them; ``write_stamp`` against ``encode_header``."""
    from geometry_msgs.msg import WrenchStamped
    from std_msgs.msg import MultiArrayDimension

    from hil_common.cdr import decode_float64_array, decode_wrench_stamped, encode_header

    rng = np.random.default_rng(17)
    refused = 0
    for k in range(12):
        m = WrenchStamped()
        m.header.stamp.sec, m.header.stamp.nanosec = int(rng.integers(-2**31, 2**31)), int(rng.integers(0, 10**9))
        m.header.frame_id = 'f' * k
        values = rng.normal(size=6) * 10.0 ** rng.integers(-3, 5)
        (m.wrench.force.x, m.wrench.force.y, m.wrench.force.z, m.wrench.torque.x, m.wrench.torque.y,
         m.wrench.torque.z) = values
        buf = serialize_message(m)
        for cut in [len(buf), *range(0, len(buf), 3)]:
            part = buf[:cut]
            code, got = _decode_wrench(part)
            try:
                want = decode_wrench_stamped(part)
            except CdrError:
                assert code & rcl_io.MALFORMED, (k, cut, got)
                refused += 1
                continue
            assert code == 0, (k, cut, rcl_io.malformed_reason(code))
            assert got[:3] == want[:3] and np.array_equal(got[3], want[3]) and np.array_equal(want[3], values)
        a = Float64MultiArray(data=list(rng.normal(size=k)))
        a.layout.dim = [MultiArrayDimension(label='x' * (j + k % 3), size=j, stride=2 * j) for j in range(k % 4)]
        a.layout.data_offset = k
        buf = serialize_message(a)
        for cut in [len(buf), *range(0, len(buf), 3)]:
            part = buf[:cut]
            out = np.full(16, np.nan)
            n = rcl_io.decode_float64_array(np.frombuffer(part, dtype=np.uint8), len(part), out,
                                            np.zeros(8, dtype=np.uint8))
            try:
                want = decode_float64_array(part)
            except CdrError:
                assert n < 0 and -n & rcl_io.MALFORMED, (k, cut, n)
                refused += 1
                continue
            assert n == len(want) and np.array_equal(out[:n], want), (k, cut, n)
    assert refused > 100
    header = np.frombuffer(bytearray(encode_header(0, 0)), dtype=np.uint8)
    for sec, nanosec in [(0, 0), (-1, 1), (2**31 - 1, 999_999_999), (-2**31, 5)]:
        rcl_io.write_stamp(header, sec, nanosec)
        assert header.tobytes() == encode_header(sec, nanosec)


def test_several_subscriptions_are_taken_in_one_call_as_rclpys_bytes_in_order(node):
    """``SerializedTakes`` on two polled subscriptions of different types: nothing waiting gives zero counts; then
    each subscription's messages, oldest first and at most its rows per call (the rest at the next call), are the
    messages sent (rclpy's deserializer on the bytes); a message longer than a row is counted with its length
    negated, not copied."""
    from geometry_msgs.msg import WrenchStamped

    arrays = PolledSubscription(node, Float64MultiArray, 'rcl_io/takes_a', 100)
    wrenches = PolledSubscription(node, WrenchStamped, 'rcl_io/takes_b', 100)
    takes = rcl_io.SerializedTakes([arrays.handle, wrenches.handle], depth=3, capacity=256)     # 6 rows each
    assert list(takes.take()) == [0, 0]
    pub_a = node.create_publisher(Float64MultiArray, 'rcl_io/takes_a', 100)
    pub_b = node.create_publisher(WrenchStamped, 'rcl_io/takes_b', 100)
    matched(pub_a, arrays)
    matched(pub_b, wrenches)
    sent_a = [Float64MultiArray(data=[float(k)] * (1 + k % 4)) for k in range(8)]
    sent_a.append(Float64MultiArray(data=[1.0] * 40))             # 320 doubles' bytes: longer than a row
    sent_b = []
    for k in range(4):
        w = WrenchStamped()
        w.header.frame_id, w.header.stamp.sec = 'sensor' * (k + 1), k
        w.wrench.force.x, w.wrench.torque.z = float(k), -float(k)
        sent_b.append(w)
    for m in sent_a:
        pub_a.publish(m)
    for m in sent_b:
        pub_b.publish(m)
    got_a, got_b, lengths = [], [], []
    deadline = time.monotonic() + 10.0
    while len(got_a) < len(sent_a) or len(got_b) < len(sent_b):
        assert time.monotonic() < deadline, (len(got_a), len(got_b))
        counts = takes.take().copy()
        assert counts[0] <= 6 and counts[1] <= 6
        got_a += [takes.message(0, k) for k in range(counts[0])]
        lengths += [int(takes.lengths[0, k]) for k in range(counts[0])]
        got_b += [takes.message(1, k) for k in range(counts[1])]
        time.sleep(0.01)
    # the same messages (rclpy's deserializer on the taken bytes; the bytes of its own serializer differ from the
    # wire's only in their alignment padding, which it leaves uninitialised), and as long
    assert [deserialize_message(b, Float64MultiArray) for b in got_a[:-1]] == sent_a[:-1]
    assert [len(b) for b in got_a[:-1]] == [len(serialize_message(m)) for m in sent_a[:-1]]
    assert got_a[-1] is None and lengths[-1] == -len(serialize_message(sent_a[-1]))
    assert [deserialize_message(b, WrenchStamped) for b in got_b] == sent_b
    assert [len(b) for b in got_b] == [len(serialize_message(m)) for m in sent_b]
    assert list(takes.take()) == [0, 0]
    takes.release()
    arrays.destroy()
    wrenches.destroy()


def test_wrenches_are_taken_in_one_call_as_the_readable_decoder_reads_them_their_frame_checked(node):
    """``WrenchStream`` on a polled subscription (the wrist's): the messages, oldest first and at most its rows per
    call, decoded as ``hil_common.cdr.decode_wrench_stamped`` decodes rclpy's serialization of them; a frame_id that
    is neither empty nor the expected one flagged (one that only starts like it, or is a prefix of it, too) and
    readable for the node's message; a malformed buffer flagged with the readable decoder's reason; a stream that
    expects no frame takes every frame."""
    from geometry_msgs.msg import WrenchStamped

    from hil_common.cdr import decode_wrench_stamped

    polled = PolledSubscription(node, WrenchStamped, 'rcl_io/wrist', 100)
    stream = rcl_io.WrenchStream(polled.handle, 'wrist_ft', depth=3)             # 6 rows a call
    assert stream.take() == 0
    pub = node.create_publisher(WrenchStamped, 'rcl_io/wrist', 100)
    matched(pub, polled)
    rng = np.random.default_rng(3)
    sent = []
    for k, frame in enumerate(['wrist_ft', '', 'other', 'wrist_ft_', 'wrist', 'wrist_fu', 'wrist_ft', 'x' * 300]):
        m = WrenchStamped()
        m.header.frame_id = frame
        m.header.stamp.sec, m.header.stamp.nanosec = int(rng.integers(-2**31, 2**31)), int(rng.integers(0, 10**9))
        (m.wrench.force.x, m.wrench.force.y, m.wrench.force.z, m.wrench.torque.x, m.wrench.torque.y,
         m.wrench.torque.z) = rng.normal(size=6) * 10.0 ** k
        sent.append(serialize_message(m))
    sent.insert(3, serialize_message(WrenchStamped())[:30])         # a wrench cut short
    for buf in sent:
        pub.publish(buf)
    rows = []
    deadline = time.monotonic() + 10.0
    while len(rows) < len(sent):
        assert time.monotonic() < deadline, len(rows)
        n = stream.take()
        assert n <= 6
        rows += [(int(stream.flags[k]), tuple(stream.stamps[k]), stream.frame(k), stream.wrench[k].copy())
                 for k in range(n)]
        time.sleep(0.01)
    assert stream.taken == len(sent) and stream.take() == 0
    for buf, (flags, stamp, frame, wrench) in zip(sent, rows):
        try:
            sec, nanosec, want_frame, want = decode_wrench_stamped(buf)
        except CdrError as exc:
            assert flags & rcl_io.MALFORMED and rcl_io.malformed_reason(flags) == str(exc), (flags, exc)
            continue
        assert stamp == (sec, nanosec) and np.array_equal(wrench, want)
        assert frame == want_frame[:rcl_io.WrenchStream.FRAME_BYTES]
        assert flags == (0 if want_frame in ('', 'wrist_ft') else rcl_io.FRAME_OTHER), (want_frame, flags)
    assert sum(f & rcl_io.MALFORMED != 0 for f, *_ in rows) == 1
    assert sum(f == rcl_io.FRAME_OTHER for f, *_ in rows) == 5
    any_frame, flags = rcl_io.WrenchStream(polled.handle), []
    for buf in sent[4:6]:               # frames 'wrist_ft_' and 'wrist', flagged above
        pub.publish(buf)

    def take() -> bool:
        flags.extend(int(f) for f in any_frame.flags[:any_frame.take()])
        return len(flags) == 2
    wait_for(take)
    assert flags == [0, 0]
    stream.release()
    any_frame.release()
    polled.destroy()


def test_serialized_messages_go_out_in_one_call_as_their_encoders_bytes_the_stamped_ones_stamped(node):
    """``SerializedPublishers``: messages refilled in their encoders' buffers (a PoseStamped, an Odometry and a
    Float64MultiArray, as the servicer hot path's decimated ones) are sent by one compiled call, each as its
    encoder's bytes, the stamped ones with the call's stamp (a negative ``sec`` too) and the other untouched."""
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry

    from hil_common.cdr import OdometryEncoder, PoseStampedEncoder

    topics = (('rcl_io/pose', PoseStamped, PoseStampedEncoder('nominal')),
              ('rcl_io/state', Odometry, OdometryEncoder('orbit', 'base')),
              ('rcl_io/values', Float64MultiArray, Float64ArrayEncoder(3)))
    entries, subs = [], []
    for topic, msg_type, encoder in topics:
        pub = node.create_publisher(msg_type, topic, 10)
        subs.append(PolledSubscription(node, msg_type, topic, 10, raw=True))
        matched(pub, subs[-1])
        entries.append((pub, encoder.fields()[0], msg_type is not Float64MultiArray))
    sender = rcl_io.SerializedPublishers(entries)
    rng = np.random.default_rng(3)
    for sec, nanosec in ((1_795_000_001, 999_999_999), (-3, 7)):
        pose, state, values = rng.normal(size=7), rng.normal(size=85), rng.normal(size=3)
        topics[0][2].fields()[1][:] = pose
        topics[1][2].fields()[1][:] = state
        topics[2][2].fields()[1][:] = values
        sender.publish(sec, nanosec)
        received = [[] for _ in subs]
        wait_for(lambda: all(r.extend(s.take_all()) or r for r, s in zip(received, subs)))
        assert received[0] == [topics[0][2](sec, nanosec, pose)]
        assert received[1] == [topics[1][2](sec, nanosec, state[:7], state[43:49])]
        assert received[2] == [Float64ArrayEncoder(3)(values)]
        msg = deserialize_message(received[1][0], Odometry)       # and rclpy reads the stamp
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
        assert msg.header.frame_id == 'orbit' and msg.child_frame_id == 'base'
    for sub in subs:
        sub.destroy()


def test_the_twins_clock_is_taken_in_one_call_its_newest_time_kept_and_a_malformed_one_counted(node):
    """``take_clock`` (the servicer's sample loop under ``use_sim_time``) on a polled ``/clock``: nothing waiting
    leaves the time; then every ``rosgraph_msgs/Clock`` waiting is taken and the newest time kept, in nanoseconds as
    rclpy's ``Time`` gives it, an older one arriving after it ignored (a clock never goes back), a malformed message
    counted and skipped."""
    from rclpy.time import Time
    from rosgraph_msgs.msg import Clock

    polled = PolledSubscription(node, Clock, 'rcl_io/clock', 100)
    message, info, newest = rcl_io.SerializedMessage(), np.zeros(64, dtype=np.uint64), np.zeros(2, dtype=np.int64)
    pointer = int(polled.handle.pointer)
    assert rcl_io.take_clock(pointer, message.words, info, newest) == 0 and list(newest) == [0, 0]
    pub = node.create_publisher(Clock, 'rcl_io/clock', 100)
    matched(pub, polled)
    times = [(12, 999_999_999), (13, 0), (2**31 - 1, 5), (7, 1)]         # the last older than the one before
    for sec, nanosec in times:
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = sec, nanosec
        pub.publish(msg)
    pub.publish(b'\x00\x01\x00\x00\x07')                                 # raw CDR, too short for a time
    taken = 0
    deadline = time.monotonic() + 10.0
    while taken < len(times) + 1:
        assert time.monotonic() < deadline, taken
        n = rcl_io.take_clock(pointer, message.words, info, newest)
        assert n >= 0
        taken += n
        time.sleep(0.01)
    assert newest[0] == Time(seconds=2**31 - 1, nanoseconds=5).nanoseconds and newest[1] == 1, list(newest)
    message.release()
    polled.destroy()
