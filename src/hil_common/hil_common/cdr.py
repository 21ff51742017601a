"""The hot paths' messages as raw CDR (plain Python, no rclpy): decode what they take, encode what they send.

rclpy turns every message it takes into Python objects and back: a ``WrenchStamped`` is six
Python constructors (the message, its header, stamp, wrench and two vectors), a robot command's
``data`` is checked element by element. Measured in one process on this machine (a publisher and
a subscription, CPU per message): ``WrenchStamped`` 35.8 us with messages, 13.1 us taken raw,
8.1 us raw both ways; ``JointState`` 24.8 / 12.5 us; ``Float64MultiArray`` 29.7 us, 14.8 us sent
raw. At 1 kHz, with two inputs and three outputs per sample, that is a tenth of a core for the
fused hot paths. So they subscribe with ``raw=True`` and publish bytes, through these codecs.

The layout is ROS 2's default: XCDR1 little endian (the 4-byte encapsulation ``00 01 00 00``),
each primitive aligned to its size counted from the end of that header, strings as a ``uint32``
length (with the NUL) and the bytes, sequences as a ``uint32`` count and the elements (aligned to
their size when there is one). ``test_cdr`` checks every codec against rclpy's own
``serialize_message``/``deserialize_message``. A buffer that is not what it should be raises
:class:`CdrError` (the node counts and drops it, as it does a malformed message).
"""

from __future__ import annotations

import struct

import numpy as np

HEADER = b'\x00\x01\x00\x00'          # CDR_LE
_BASE = 4                               # alignment counts from here

# A joint state's row flags, as hil_common.rcl_io's compiled decoder (JointStateStream) gives them per message
Q_OK = 1            # every joint of the node's order present, enough positions, all finite
DQ_OK = 2           # as many velocities as names, every one of the node's finite
POSITIONS_FULL = 4  # as many positions as names
#: a whole row: every joint's position and velocity, as many of each as names (JointPicker's judgement; the arm's)
WHOLE_ROW = Q_OK | DQ_OK | POSITIONS_FULL
MALFORMED = 8       # the buffer does not decode (see :data:`MALFORMED_REASONS`)
# A wrench's row flags (hil_common.rcl_io.WrenchStream): 0 (taken), MALFORMED as above, or
FRAME_OTHER = 16    # a frame_id that is neither empty nor the expected one
#: the decode error of a MALFORMED row, by the code in its flags' bits 8 and up: the texts of :class:`CdrError`
MALFORMED_REASONS = {1: 'not little-endian CDR', 2: 'bad string', 3: 'names beyond the buffer',
                     4: 'sequence beyond the buffer', 5: 'buffer too short', 6: 'wrench beyond the buffer'}


def malformed_reason(flags: int) -> str:
    """The decode error of a row whose flags have :data:`MALFORMED`."""
    return MALFORMED_REASONS.get(int(flags) >> 8, 'malformed')

_U32 = struct.Struct('<I')
_STAMP = struct.Struct('<iI')
_SIX = struct.Struct('<6d')
_SEVEN = struct.Struct('<7d')


class CdrError(ValueError):
    """A buffer that does not decode as the expected message."""


def _align(pos: int, size: int) -> int:
    return pos + (-(pos - _BASE) % size)


def _string(buf, pos: int) -> tuple[str, int]:
    (n,) = _U32.unpack_from(buf, pos)
    pos += 4
    end = pos + n
    if n == 0 or end > len(buf) or buf[end - 1] != 0:
        raise CdrError('bad string')
    return bytes(buf[pos:end - 1]).decode('utf-8', 'replace'), end


def _doubles(buf, pos: int) -> tuple[np.ndarray, int]:
    pos = _align(pos, 4)
    (n,) = _U32.unpack_from(buf, pos)
    pos += 4
    if n == 0:
        return np.zeros(0), pos
    pos = _align(pos, 8)
    end = pos + 8 * n
    if end > len(buf):
        raise CdrError('sequence beyond the buffer')
    return np.frombuffer(buf, dtype='<f8', count=n, offset=pos).copy(), end


def _check(buf) -> None:
    if len(buf) < 8 or bytes(buf[:4]) != HEADER:
        raise CdrError(f'not little-endian CDR ({bytes(buf[:4]).hex()})')


def decode_header(buf, pos: int = _BASE) -> tuple[int, int, str, int]:
    """``std_msgs/Header`` at ``pos``: ``(sec, nanosec, frame_id, end)``."""
    sec, nanosec = _STAMP.unpack_from(buf, pos)
    frame_id, end = _string(buf, pos + 8)
    return sec, nanosec, frame_id, end


def _stamped_doubles(buf, values: struct.Struct, what: str) -> tuple[int, int, str, np.ndarray]:
    """A header, then ``values`` (float64s) aligned to 8: ``(sec, nanosec, frame_id, values)``."""
    try:
        _check(buf)
        sec, nanosec, frame_id, pos = decode_header(buf)
        pos = _align(pos, 8)
        if pos + values.size > len(buf):
            raise CdrError(f'{what} beyond the buffer')
        return sec, nanosec, frame_id, np.array(values.unpack_from(buf, pos))
    except struct.error as exc:
        raise CdrError(str(exc)) from exc


def decode_wrench_stamped(buf) -> tuple[int, int, str, np.ndarray]:
    """``geometry_msgs/WrenchStamped`` -> ``(sec, nanosec, frame_id, [f; tau])``."""
    return _stamped_doubles(buf, _SIX, 'wrench')


def decode_pose_stamped(buf) -> tuple[int, int, str, np.ndarray]:
    """``geometry_msgs/PoseStamped`` -> ``(sec, nanosec, frame_id, [x, y, z, qx, qy, qz, qw])`` (the values of
    :func:`hil_common.conversions.pose_from_xyzquat`)."""
    return _stamped_doubles(buf, _SEVEN, 'pose')


class JointStateDecoder:
    """``sensor_msgs/JointState`` -> ``(sec, nanosec, names, position, velocity)``; the names are
    decoded again only when their bytes change (a robot sends the same names every time)."""

    def __init__(self):
        self._names_raw = b''
        self._names: tuple[str, ...] = ()

    def __call__(self, buf) -> tuple[int, int, tuple[str, ...], np.ndarray, np.ndarray]:
        try:
            _check(buf)
            sec, nanosec, _, pos = decode_header(buf)
            pos = _align(pos, 4)
            start = pos
            known = self._names_raw
            if known and buf[start:start + len(known)] == known:      # the same names as the last message
                return sec, nanosec, self._names, *self._values(buf, start + len(known))
            (count,) = _U32.unpack_from(buf, pos)
            pos += 4
            ends = pos
            for _ in range(count):                       # skip over the names to find their bytes
                ends = _align(ends, 4)
                (n,) = _U32.unpack_from(buf, ends)
                ends += 4 + n
            if ends > len(buf):
                raise CdrError('names beyond the buffer')
            raw = bytes(buf[start:ends])
            if raw != self._names_raw:
                names, p = [], pos
                for _ in range(count):
                    name, p = _string(buf, _align(p, 4))
                    names.append(name)
                self._names_raw, self._names = raw, tuple(names)
            return sec, nanosec, self._names, *self._values(buf, ends)
        except struct.error as exc:
            raise CdrError(str(exc)) from exc

    @staticmethod
    def _values(buf, pos: int) -> tuple[np.ndarray, np.ndarray]:
        """``position`` and ``velocity`` from the end of the names (``effort`` is not read)."""
        position, pos = _doubles(buf, pos)
        velocity, pos = _doubles(buf, pos)
        return position, velocity


class JointStateReader:
    """A raw ``sensor_msgs/JointState`` stream as ``(q, dq)`` in ``expected_names`` order
    (:class:`JointStateDecoder`, then :class:`hil_common.conversions.JointOrder`): ``q`` None when a joint is
    missing or a value is not finite, ``dq`` None also when the message has no velocities; :attr:`stamp_s` its
    header's stamp. Raises :class:`CdrError` for a buffer that does not decode."""

    def __init__(self, expected_names):
        from hil_common.conversions import JointOrder

        self._decode = JointStateDecoder()
        self._order = JointOrder(expected_names)
        self.stamp_s = 0.0                       # the header stamp of the last message read [s]

    def __call__(self, buf) -> tuple[np.ndarray | None, np.ndarray | None]:
        sec, nanosec, names, position, velocity = self._decode(buf)
        self.stamp_s = sec + 1e-9 * nanosec
        order = self._order
        return order(names, position), order(names, velocity) if len(velocity) == len(names) else None


class Float64ArrayEncoder:
    """``std_msgs/Float64MultiArray`` with an empty layout and ``data`` (a robot's forward command)."""

    def __init__(self, n: int):
        self.n = int(n)
        self._buf = bytearray(HEADER + struct.pack('<III', 0, 0, self.n) + bytes(4) + bytes(8 * self.n))
        self._data = np.frombuffer(self._buf, dtype='<f8', count=self.n, offset=20)

    def __call__(self, values) -> bytes:
        self._data[:] = values
        return bytes(self._buf)

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        """``(message bytes, data doubles)``: views of the message this encoder refills, for a compiled caller that
        writes the doubles and sends the bytes (``hil_common.rcl_io.SerializedPublishers``)."""
        return np.frombuffer(self._buf, dtype=np.uint8), self._data


class _StampedEncoder:
    """A stamped message of fixed frame ids and fixed-size float64 fields: the bytes built once, the stamp and
    the doubles written in place at each call (:class:`OdometryEncoder`, :class:`PoseStampedEncoder`)."""

    def __init__(self, frame_id: str, child_frame_id: str | None, doubles: int):
        buf = bytearray(HEADER + bytes(8) + _text(frame_id))
        if child_frame_id is not None:
            buf += bytes(_align(len(buf), 4) - len(buf)) + _text(child_frame_id)
        buf += bytes(_align(len(buf), 8) - len(buf))
        self._offset = len(buf)
        buf += bytes(8 * doubles)
        self._buf = buf
        self._doubles = np.frombuffer(self._buf, dtype='<f8', count=doubles, offset=self._offset)

    def _bytes(self, sec: int, nanosec: int) -> bytes:
        _STAMP.pack_into(self._buf, 4, sec, nanosec)
        return bytes(self._buf)

    def fields(self) -> tuple[np.ndarray, np.ndarray]:
        """``(message bytes, doubles)``: views of the message this encoder refills, for a compiled caller that writes
        the doubles (and the stamp, bytes 4-11) and sends the bytes (``hil_common.rcl_io.SerializedPublishers``)."""
        return np.frombuffer(self._buf, dtype=np.uint8), self._doubles


def _text(value: str) -> bytes:
    text = value.encode('utf-8') + b'\x00'
    return _U32.pack(len(text)) + text


class OdometryEncoder(_StampedEncoder):
    """``nav_msgs/Odometry`` with fixed frame ids and zero covariances: ``(sec, nanosec, pose, twist)`` with the
    pose as ``[x, y, z, qx, qy, qz, qw]`` and the twist ``[v; w]``."""

    def __init__(self, frame_id: str, child_frame_id: str):
        super().__init__(frame_id, child_frame_id, 7 + 36 + 6 + 36)
        self._pose, self._twist = self._doubles[:7], self._doubles[43:49]

    def __call__(self, sec: int, nanosec: int, pose_xyzquat, twist) -> bytes:
        self._pose[:] = pose_xyzquat
        self._twist[:] = twist
        return self._bytes(sec, nanosec)


class PoseStampedEncoder(_StampedEncoder):
    """``geometry_msgs/PoseStamped`` with a fixed frame id: ``(sec, nanosec, [x, y, z, qx, qy, qz, qw])``."""

    def __init__(self, frame_id: str):
        super().__init__(frame_id, None, 7)

    def __call__(self, sec: int, nanosec: int, pose_xyzquat) -> bytes:
        self._doubles[:] = pose_xyzquat
        return self._bytes(sec, nanosec)


class TwistStampedEncoder(_StampedEncoder):
    """``geometry_msgs/TwistStamped`` with a fixed frame id: ``(sec, nanosec, [v; w])``."""

    def __init__(self, frame_id: str):
        super().__init__(frame_id, None, 6)

    def __call__(self, sec: int, nanosec: int, twist) -> bytes:
        self._doubles[:] = twist
        return self._bytes(sec, nanosec)


_ODOMETRY_DOUBLES = 7 + 36 + 6 + 36        # pose (position, orientation), its covariance, twist, its covariance


def decode_odometry(buf) -> tuple[int, int, str, str, np.ndarray, np.ndarray]:
    """``nav_msgs/Odometry`` -> ``(sec, nanosec, frame_id, child_frame_id, pose, twist)``, the pose as
    ``[x, y, z, qx, qy, qz, qw]`` and the twist ``[v; w]`` (the covariances are skipped)."""
    try:
        _check(buf)
        sec, nanosec, frame_id, pos = decode_header(buf)
        child_frame_id, pos = _string(buf, _align(pos, 4))
        pos = _align(pos, 8)
        if pos + 8 * _ODOMETRY_DOUBLES > len(buf):
            raise CdrError('odometry beyond the buffer')
        values = np.frombuffer(buf, dtype='<f8', count=_ODOMETRY_DOUBLES, offset=pos)
        return sec, nanosec, frame_id, child_frame_id, values[:7].copy(), values[43:49].copy()
    except struct.error as exc:
        raise CdrError(str(exc)) from exc


def decode_float64_array(buf) -> np.ndarray:
    """``std_msgs/Float64MultiArray`` -> ``data`` (the layout's dimensions are skipped)."""
    try:
        _check(buf)
        (dims,) = _U32.unpack_from(buf, 4)
        pos = 8
        for _ in range(dims):                            # MultiArrayDimension: label, size, stride
            _, pos = _string(buf, _align(pos, 4))
            pos = _align(pos, 4) + 8
        pos = _align(pos, 4) + 4                         # data_offset
        data, _ = _doubles(buf, pos)
        return data
    except struct.error as exc:
        raise CdrError(str(exc)) from exc


def encode_header(sec: int, nanosec: int, frame_id: str = '') -> bytes:
    """``std_msgs/Header``."""
    text = frame_id.encode('utf-8') + b'\x00'
    return HEADER + _STAMP.pack(sec, nanosec) + _U32.pack(len(text)) + text
