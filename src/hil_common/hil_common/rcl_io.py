"""Takes and publishes on rcl from compiled code: a hot path's inputs and outputs with no Python per message.

The fused servicer hot path takes two joint-state streams (the arm's, the table's) at each wrist sample and
sends two 1 kHz commands (the table's joints, the arm's efforts). Through rclpy each of these costs Python:
the take loop (:class:`hil_common.polled.PolledSubscription`) and rclpy's ``take_message`` with its tuple and
dict per message, the decoder (:class:`hil_common.cdr.JointStateDecoder`, :class:`~hil_common.conversions.JointOrder`),
the encoder and rclpy's ``publish``. Here each stream is one compiled call (Numba) that calls rcl's C functions
itself, on the handles rclpy created:

* :class:`JointStateStream` -- ``rcl_take_serialized_message`` until the subscription is empty, each
  ``sensor_msgs/JointState`` decoded in place (the layout of :mod:`hil_common.cdr`: XCDR1 little endian) and its
  positions and velocities picked in the node's joint order, with what :class:`~hil_common.cdr.JointStateReader`
  and :class:`hil_admittance.node_common.JointPicker` judge (a missing joint, too few or non-finite values, no
  velocities) as flags; the index of the node's joints among the message's is worked out again only when the
  names' bytes change;
* :class:`WrenchStream` -- the wrist's ``geometry_msgs/WrenchStamped`` the same way, its frame_id checked;
* :class:`SerializedTakes` -- the messages waiting on several subscriptions, as their bytes;
* :class:`Float64ArrayPublisher` -- a ``std_msgs/Float64MultiArray`` (empty layout) written into a buffer built
  once and sent with ``rcl_publish_serialized_message``.

The parts of a sample loop with no Python at all (issue 17; measured as ``bench_envisat``'s
``servicer_compiled_relay``), to be called from compiled code:

* :class:`WaitSet` and :func:`wait` -- an rcl wait set of one's own, waited on without the GIL (``rcl_wait``) for
  subscriptions no executor waits on and guard conditions (a loop's stop);
* :func:`take_serialized`, :func:`message_bytes`, :func:`publish_serialized` and :func:`fixed_message` -- any
  message as its CDR bytes, taken into a buffer rcl may grow or sent from one built once;
* :func:`decode_wrench`, :func:`decode_float64_array` and :func:`write_stamp` -- the wrist's and the OBSW's
  messages decoded, a header's stamp written, with :mod:`hil_common.cdr`'s layout and refusals;
* :func:`clock_now_ns` -- an rcl clock read (the node's ROS clock, ``/clock`` under ``use_sim_time``);
* :func:`take_clock` -- the lab twin's ``/clock`` taken by a loop itself (the newest time), so that a sample loop
  under ``use_sim_time`` reads the time of the step its sample came from without waiting for rclpy's time source.

The C functions are declared to Numba by name (:func:`_rcl_take`, :func:`_rcl_publish`, :func:`_rcl_wait`, ...)
and resolved in the
``librcl`` that rclpy loaded into this process (found in ``/proc/self/maps``), so the compiled code is cached on
disk like the rules' kernels (``./dev`` compiles it at install: ``python -m hil_common.rcl_io``). The readable
definitions stay in :mod:`hil_common.cdr`; ``test_rcl_io`` holds these to them and to rclpy's own serializer.
:func:`available` says why not when this process cannot use them (no ``librcl`` found): the nodes then take
and send through rclpy.

Only the thread that spins the node may call these (as with rclpy's own takes), or one thread of the node that
owns the entities it takes from and sends on (a wait set's loop); none after the node's handles are destroyed.
"""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

import numpy as np
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy  # noqa: F401 - loads librcl

from hil_common.cdr import (DQ_OK, FRAME_OTHER, HEADER, MALFORMED, MALFORMED_REASONS,  # noqa: F401 - rows'
                            POSITIONS_FULL, Q_OK, WHOLE_ROW, CdrError, malformed_reason)
from hil_common.errors import StartError
from hil_common.params import Param

RCL_RET_OK = 0
RCL_RET_SUBSCRIPTION_TAKE_FAILED = 401

# JointStateStream's flags per message, and their malformed reasons: hil_common.cdr's (plain-Python readers use them)
WRENCH_BEYOND = 6
RCL_RET_TIMEOUT = 2
# rcl_wait_set_t: (entities, count) for subscriptions, guard conditions, timers, clients, services, events; impl
WS_SUBSCRIPTIONS, WS_GUARD_CONDITIONS, WS_IMPL, WS_WORDS = 0, 2, 12, 13


def _loaded(name: str) -> str | None:
    """The path of the shared library ``name`` (e.g. ``librcl.so``) this process has loaded, or None."""
    try:
        maps = Path('/proc/self/maps').read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        path = line.split()[-1] if line.split() else ''
        if path.startswith('/') and Path(path).name == name:
            return path
    return None


_LIBRCL = _loaded('librcl.so')
_LIBRCUTILS = _loaded('librcutils.so')
_WHY_NOT = '' if _LIBRCL and _LIBRCUTILS else 'librcl.so or librcutils.so is not loaded in this process'

if not _WHY_NOT:
    import llvmlite.binding as _llvm
    from llvmlite import ir as _ir
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic

    _llvm.load_library_permanently(_LIBRCL)       # the same library rclpy uses: dlopen gives its handle
    _rcutils = ctypes.CDLL(_LIBRCUTILS)
    _rcl = ctypes.CDLL(_LIBRCL)

    _OPTS = dict(cache=True, nogil=True, fastmath=False, error_model='numpy')
    _I64 = _ir.IntType(64)

    def _rcl_call(symbol: str, n_args: int, null_last: bool = True):
        """The signature and code of a compiled call of rcl's ``rcl_ret_t symbol(word, ..., NULL)``: ``n_args``
        addresses (or 64-bit integers) given as integers, then NULL for its last pointer argument (an allocation or
        an index it may return) unless ``null_last`` is False (an intrinsic's return)."""
        def codegen(context, builder, signature, values):
            extra = [_ir.Constant(_I64, 0)] if null_last else []
            fnty = _ir.FunctionType(_ir.IntType(32), [_I64] * (n_args + len(extra)))
            fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
            return builder.call(fn, [*values, *extra])
        return types.int32(*([types.intp] * n_args)), codegen

    @intrinsic
    def _rcl_take(typingctx, subscription, message, info):
        """``rcl_take_serialized_message(subscription, message, info, NULL)`` (the addresses as integers)."""
        return _rcl_call('rcl_take_serialized_message', 3)

    @intrinsic
    def _rcl_publish(typingctx, publisher, message):
        """``rcl_publish_serialized_message(publisher, message, NULL)`` (the addresses as integers)."""
        return _rcl_call('rcl_publish_serialized_message', 2)

    @intrinsic
    def _rcl_wait_set_clear(typingctx, wait_set):
        """``rcl_wait_set_clear(wait_set)``."""
        return _rcl_call('rcl_wait_set_clear', 1, null_last=False)

    @intrinsic
    def _rcl_wait_set_add_subscription(typingctx, wait_set, subscription):
        """``rcl_wait_set_add_subscription(wait_set, subscription, NULL)``."""
        return _rcl_call('rcl_wait_set_add_subscription', 2)

    @intrinsic
    def _rcl_wait_set_add_guard_condition(typingctx, wait_set, guard_condition):
        """``rcl_wait_set_add_guard_condition(wait_set, guard_condition, NULL)``."""
        return _rcl_call('rcl_wait_set_add_guard_condition', 2)

    @intrinsic
    def _rcl_wait(typingctx, wait_set, timeout_ns):
        """``rcl_wait(wait_set, timeout_ns)`` (negative: wait until something is ready)."""
        return _rcl_call('rcl_wait', 2, null_last=False)

    @intrinsic
    def _rcl_clock_get_now(typingctx, clock, time_point):
        """``rcl_clock_get_now(clock, time_point)`` (the addresses as integers)."""
        return _rcl_call('rcl_clock_get_now', 2, null_last=False)

    @intrinsic
    def _words_at(typingctx, address):
        """A ``uint64*`` at ``address`` (for ``numba.carray``: the wait set's arrays of entity pointers)."""
        sig = types.CPointer(types.uint64)(types.intp)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], _I64.as_pointer())
        return sig, codegen

    @intrinsic
    def _bytes_at(typingctx, address):
        """A ``uint8*`` at ``address`` (for ``numba.carray``)."""
        sig = types.CPointer(types.uint8)(types.intp)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], _ir.IntType(8).as_pointer())
        return sig, codegen

    from numba import carray as _carray

    @njit(**_OPTS)
    def _u32(buf, pos):
        return np.uint32(buf[pos]) | (np.uint32(buf[pos + 1]) << 8) | (np.uint32(buf[pos + 2]) << 16) | \
            (np.uint32(buf[pos + 3]) << 24)

    @njit(**_OPTS)
    def _align(pos, size):
        return pos + (-(pos - 4) % size)

    @njit(**_OPTS)
    def _f64(buf, pos, scratch):
        """The little-endian double at ``pos``, through the 8-byte ``scratch`` (CDR aligns doubles from the
        stream's start, 4 bytes into the buffer: in memory they are not 8-aligned)."""
        for i in range(8):
            scratch[i] = buf[pos + i]
        return scratch.view(np.float64)[0]

    @njit(**_OPTS)
    def _little_endian_cdr(buf, n_buf):
        """The buffer starts with plain little-endian CDR's encapsulation (and is longer than it)."""
        return n_buf >= 8 and buf[0] == 0 and buf[1] == 1 and buf[2] == 0 and buf[3] == 0

    @njit(**_OPTS)
    def _header(buf, n_buf, stamp):
        """A message's leading ``std_msgs/Header`` (after the encapsulation): its stamp into ``stamp[0:2]``; returns
        where its frame_id ends (after the NUL), or ``-(MALFORMED | code << 8)``."""
        if not _little_endian_cdr(buf, n_buf):
            return -(MALFORMED | (1 << 8))
        if n_buf < 16:
            return -(MALFORMED | (5 << 8))
        stamp[0] = np.int32(_u32(buf, 4))
        stamp[1] = _u32(buf, 8)
        n = np.intp(_u32(buf, 12))                           # frame_id, with its NUL
        end = 16 + n
        if n == 0 or end > n_buf or buf[end - 1] != 0:
            return -(MALFORMED | (2 << 8))
        return end

    @njit(**_OPTS)
    def decode_joint_state(buf, n_buf, expected, expected_ends, known, known_len, index, needs, row_q, row_dq,
                           stamp, scratch):
        """One ``sensor_msgs/JointState`` in ``buf[:n_buf]``: its stamp into ``stamp[0:2]``, the positions and
        velocities of the ``expected`` names (their UTF-8 bytes back to back, ``expected_ends[i]`` the end of
        name ``i``) into ``row_q``, ``row_dq``. ``known[:known_len[0]]`` holds the names' bytes of the message
        the ``index`` (the expected names' positions among its names, -1: missing) and ``needs[0]`` (values
        a message must have) were worked out for; both are worked out again when a message's names differ.
        ``scratch``: 8 bytes of work space.
        Returns ``flags`` (:data:`Q_OK`, :data:`DQ_OK`, :data:`POSITIONS_FULL`) or ``MALFORMED | code << 8``."""
        end = _header(buf, n_buf, stamp)
        if end < 0:
            return -end
        pos = _align(end, 4)
        if pos + 4 > n_buf:
            return MALFORMED | (5 << 8)
        start = pos
        count = _u32(buf, pos)
        ends = pos + 4
        for _ in range(count):                               # the names' bytes
            ends = _align(ends, 4)
            if ends + 4 > n_buf:
                return MALFORMED | (3 << 8)
            ends += 4 + _u32(buf, ends)
            if ends > n_buf:
                return MALFORMED | (3 << 8)
        length = ends - start
        same = length == known_len[0] and length <= known.shape[0]
        if same:
            for i in range(length):
                if buf[start + i] != known[i]:
                    same = False
                    break
        if not same:                                         # new names: check them, find the expected ones
            p = start + 4
            for i in range(index.shape[0]):
                index[i] = -1
            for j in range(count):
                p = _align(p, 4)
                n = _u32(buf, p)
                p += 4
                if n == 0 or buf[p + n - 1] != 0:
                    return MALFORMED | (2 << 8)
                for i in range(index.shape[0]):
                    a = 0 if i == 0 else expected_ends[i - 1]
                    b = expected_ends[i]
                    if index[i] < 0 and b - a == n - 1:
                        equal = True
                        for c in range(n - 1):
                            if buf[p + c] != expected[a + c]:
                                equal = False
                                break
                        if equal:
                            index[i] = j
                p += n
            needs[0] = 0
            for i in range(index.shape[0]):
                if index[i] < 0:
                    needs[0] = -1
                    break
                needs[0] = max(needs[0], index[i] + 1)
            if length <= known.shape[0]:
                known[:length] = buf[start:ends]
                known_len[0] = length
            else:
                known_len[0] = -1                            # too long to keep: worked out for every message
        flags = 0
        pos = ends
        n_pos = n_vel = 0
        for which in range(2):                               # position, velocity
            pos = _align(pos, 4)
            if pos + 4 > n_buf:
                return MALFORMED | (5 << 8)
            m = _u32(buf, pos)
            pos += 4
            if m > 0:
                pos = _align(pos, 8)
                if pos + 8 * m > n_buf:
                    return MALFORMED | (4 << 8)
            row = row_q if which == 0 else row_dq
            ok = needs[0] >= 0 and needs[0] <= m
            if ok:
                for i in range(index.shape[0]):
                    v = _f64(buf, pos + 8 * index[i], scratch)
                    row[i] = v
                    if not np.isfinite(v):
                        ok = False
            if which == 0:
                n_pos = m
                if ok:
                    flags |= Q_OK
            else:
                n_vel = m
                if ok and m == count:
                    flags |= DQ_OK
            pos += 8 * m
        if n_pos == count:
            flags |= POSITIONS_FULL
        return flags

    @njit(**_OPTS)
    def take_joint_states(subscription, message, info, expected, expected_ends, known, known_len, index, needs,
                          q, dq, stamps, flags):
        """Every ``sensor_msgs/JointState`` waiting on the rcl ``subscription`` (its address), oldest first, at
        most ``q.shape[0]``: row ``k`` of ``q``, ``dq``, ``stamps`` (sec, nanosec) and ``flags`` as
        :func:`decode_joint_state` gives them. ``message`` is an ``rcl_serialized_message_t`` (as 8 words) that
        rcl may grow. Returns the count, or ``-(rcl's return)`` after an rcl error (the rows before it filled)."""
        taken = 0
        scratch = np.empty(8, dtype=np.uint8)
        while taken < q.shape[0]:
            n = take_serialized(subscription, message, info)
            if n <= 0:
                return taken if n == 0 else n
            buf = message_bytes(message)
            flags[taken] = decode_joint_state(buf, buf.shape[0], expected, expected_ends, known, known_len, index,
                                              needs, q[taken], dq[taken], stamps[taken], scratch)
            taken += 1
        return taken

    @njit(**_OPTS)
    def publish_float64_array(publisher, message, data, values):
        """``values`` into ``data`` (the message's doubles, a view of its buffer) and the message sent on the rcl
        ``publisher`` (its address): rcl's return."""
        for i in range(values.shape[0]):
            data[i] = values[i]
        return _rcl_publish(publisher, message.ctypes.data)

    @njit(**_OPTS)
    def publish_serialized(publisher, message):
        """The serialized message ``message`` (an ``rcl_serialized_message_t`` as 8 words) sent on the rcl
        ``publisher`` (its address): rcl's return."""
        return _rcl_publish(publisher, message.ctypes.data)

    @njit(**_OPTS)
    def wait(wait_set, subscriptions, guard_conditions, timeout_ns, ready):
        """Wait on the rcl wait set ``wait_set`` (its words, :class:`WaitSet`) for the rcl ``subscriptions`` and
        ``guard_conditions`` (their addresses) at most ``timeout_ns`` (negative: until one is ready). ``ready[i]``
        is 1 for each one ready, the subscriptions first, else 0. Returns rcl's return: ``RCL_RET_OK``,
        ``RCL_RET_TIMEOUT`` (nothing ready) or an error."""
        address = wait_set.ctypes.data
        n_sub = subscriptions.shape[0]
        for i in range(ready.shape[0]):
            ready[i] = 0
        ret = _rcl_wait_set_clear(address)
        for i in range(n_sub):
            if ret == RCL_RET_OK:
                ret = _rcl_wait_set_add_subscription(address, subscriptions[i])
        for i in range(guard_conditions.shape[0]):
            if ret == RCL_RET_OK:
                ret = _rcl_wait_set_add_guard_condition(address, guard_conditions[i])
        if ret == RCL_RET_OK:
            ret = _rcl_wait(address, timeout_ns)
        if ret != RCL_RET_OK:
            return ret
        if n_sub > 0:            # rcl_wait leaves the ready entities' addresses, NULL the others
            entries = _carray(_words_at(np.intp(wait_set[WS_SUBSCRIPTIONS])), (n_sub,))
            for i in range(n_sub):
                ready[i] = entries[i] != 0
        if guard_conditions.shape[0] > 0:
            entries = _carray(_words_at(np.intp(wait_set[WS_GUARD_CONDITIONS])), (guard_conditions.shape[0],))
            for i in range(guard_conditions.shape[0]):
                ready[n_sub + i] = entries[i] != 0
        return RCL_RET_OK

    @njit(**_OPTS)
    def clock_now_ns(clock, out):
        """The rcl clock ``clock``'s reading (its address: rclpy's ``Clock.handle.pointer``; a ROS clock reads the
        ``/clock`` override rclpy's time source sets under ``use_sim_time``, atomically) into ``out[0]`` [ns]: rcl's
        return."""
        return _rcl_clock_get_now(clock, out.ctypes.data)

    @njit(**_OPTS)
    def take_serialized(subscription, message, info):
        """One serialized message from the rcl ``subscription`` (its address) into ``message`` (an
        ``rcl_serialized_message_t`` as 8 words, which rcl may grow; its bytes: :func:`message_bytes`): its length,
        0 when none was waiting, or ``-(rcl's return)`` after an rcl error."""
        ret = _rcl_take(subscription, message.ctypes.data, info.ctypes.data)
        if ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED:
            return 0
        if ret != RCL_RET_OK:
            return -ret
        return np.intp(message[1])

    @njit(**_OPTS)
    def take_serialized_rows(subscriptions, message, info, rows, lengths, counts):
        """Every serialized message waiting on each rcl subscription ``subscriptions[s]`` (its address), oldest
        first, at most ``rows.shape[1]`` each: its bytes into ``rows[s, k]``, its length into ``lengths[s, k]``
        (``-length`` for one longer than a row: not copied), and ``counts[s]`` how many. ``message``: an
        ``rcl_serialized_message_t`` (8 words) that rcl may grow. Returns 0, or ``-(rcl's return)`` after an rcl
        error (the counts so far filled)."""
        capacity = rows.shape[2]
        for s in range(subscriptions.shape[0]):
            counts[s] = 0
        for s in range(subscriptions.shape[0]):
            for k in range(rows.shape[1]):
                ret = _rcl_take(subscriptions[s], message.ctypes.data, info.ctypes.data)
                if ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED:
                    break
                if ret != RCL_RET_OK:
                    return -ret
                n = np.intp(message[1])
                if n > capacity:
                    lengths[s, k] = -n
                else:
                    buf = _carray(_bytes_at(np.intp(message[0])), (n,))
                    for i in range(n):
                        rows[s, k, i] = buf[i]
                    lengths[s, k] = n
                counts[s] += 1
        return 0

    @njit(**_OPTS)
    def message_bytes(message):
        """The bytes of the serialized message ``message`` (8 words): a view of its buffer, its length long."""
        return _carray(_bytes_at(np.intp(message[0])), (np.intp(message[1]),))

    @njit(**_OPTS)
    def decode_wrench(buf, n_buf, stamp, frame, wrench, scratch):
        """One ``geometry_msgs/WrenchStamped`` in ``buf[:n_buf]`` (:func:`hil_common.cdr.decode_wrench_stamped`'s
        layout and refusals): its stamp into ``stamp[0:2]``, where its frame_id's bytes are (``frame[0]`` the first,
        ``frame[1]`` the count, no NUL), ``[f; tau]`` into ``wrench``. ``scratch``: 8 bytes of work space. Returns 0,
        or ``MALFORMED | code << 8`` (:data:`MALFORMED_REASONS`)."""
        end = _header(buf, n_buf, stamp)
        if end < 0:
            return -end
        frame[0] = 16
        frame[1] = end - 17
        pos = _align(end, 8)
        if pos + 48 > n_buf:
            return MALFORMED | (WRENCH_BEYOND << 8)
        for i in range(6):
            wrench[i] = _f64(buf, pos + 8 * i, scratch)
        return 0

    @njit(**_OPTS)
    def take_wrenches(subscription, message, info, expected_frame, wrench, stamps, frames, frame_lens, flags, scratch):
        """Every ``geometry_msgs/WrenchStamped`` waiting on the rcl ``subscription`` (its address), oldest first, at
        most ``wrench.shape[0]``, decoded as :func:`decode_wrench` does: row ``k`` of ``wrench`` (``[f; tau]``),
        ``stamps`` (sec, nanosec), ``frames`` (the frame_id's first bytes; ``frame_lens[k]`` its length) and ``flags``
        (0; ``MALFORMED | code << 8``; :data:`FRAME_OTHER` when ``expected_frame`` (bytes) is not empty and the
        frame_id is neither empty nor it). ``message``: an ``rcl_serialized_message_t`` (8 words) that rcl may grow.
        Returns the count, or ``-(rcl's return)`` after an rcl error (the rows before it filled)."""
        taken = 0
        frame = np.zeros(2, dtype=np.intp)
        while taken < wrench.shape[0]:
            n = take_serialized(subscription, message, info)
            if n <= 0:
                return taken if n == 0 else n
            buf = message_bytes(message)
            code = decode_wrench(buf, buf.shape[0], stamps[taken], frame, wrench[taken], scratch)
            frame_lens[taken] = 0
            if code == 0:
                length = frame[1]
                frame_lens[taken] = length
                for i in range(min(length, frames.shape[1])):
                    frames[taken, i] = buf[frame[0] + i]
                if expected_frame.shape[0] > 0 and length > 0:
                    same = length == expected_frame.shape[0]
                    i = 0
                    while same and i < length:
                        same = buf[frame[0] + i] == expected_frame[i]
                        i += 1
                    if not same:
                        code = FRAME_OTHER
            flags[taken] = code
            taken += 1
        return taken

    @njit(**_OPTS)
    def take_clock(subscription, message, info, newest):
        """Every ``rosgraph_msgs/Clock`` waiting on the rcl ``subscription`` (its address; the lab twin's ``/clock``),
        oldest first: ``newest[0]`` becomes the latest time among them and itself [ns] (a clock never goes back),
        ``newest[1]`` counts the malformed ones (not plain little-endian CDR, or shorter than a time). ``message``: an
        ``rcl_serialized_message_t`` (8 words) that rcl may grow. Returns how many were taken, or ``-(rcl's return)``
        after an rcl error."""
        taken = 0
        while True:
            n = take_serialized(subscription, message, info)
            if n <= 0:
                return taken if n == 0 else n
            taken += 1
            buf = message_bytes(message)
            if n < 12 or not _little_endian_cdr(buf, n):
                newest[1] += 1
                continue
            ns = np.int64(np.int32(_u32(buf, 4))) * 1_000_000_000 + np.int64(_u32(buf, 8))
            if ns > newest[0]:
                newest[0] = ns

    @njit(**_OPTS)
    def decode_float64_array(buf, n_buf, values, scratch):
        """One ``std_msgs/Float64MultiArray`` in ``buf[:n_buf]`` (:func:`hil_common.cdr.decode_float64_array`'s
        layout and refusals; the layout's dimensions skipped): its first ``values.shape[0]`` doubles into
        ``values``. Returns how many it has, or ``-(MALFORMED | code << 8)``."""
        if not _little_endian_cdr(buf, n_buf):
            return -(MALFORMED | (1 << 8))
        dims = _u32(buf, 4)
        pos = 8
        for _ in range(dims):                 # MultiArrayDimension: label, size, stride
            pos = _align(pos, 4)
            if pos + 4 > n_buf:
                return -(MALFORMED | (5 << 8))
            n = _u32(buf, pos)
            end = pos + 4 + n
            if n == 0 or end > n_buf or buf[end - 1] != 0:
                return -(MALFORMED | (2 << 8))
            pos = _align(end, 4) + 8
        pos = _align(pos, 4) + 4              # data_offset
        if pos + 4 > n_buf:
            return -(MALFORMED | (5 << 8))
        m = np.intp(_u32(buf, pos))
        pos += 4
        if m > 0:
            pos = _align(pos, 8)
            if pos + 8 * m > n_buf:
                return -(MALFORMED | (4 << 8))
        for i in range(min(m, values.shape[0])):
            values[i] = _f64(buf, pos + 8 * i, scratch)
        return m

    @njit(**_OPTS)
    def publish_all_stamped(publishers, messages, bufs, stamped, sec, nanosec):
        """The serialized messages ``messages[i]`` (``rcl_serialized_message_t`` rows over the byte arrays ``bufs``)
        sent on ``publishers[i]`` (addresses), in order, each whose ``stamped[i]`` is set stamped first
        (:func:`write_stamp`): rcl's first failure's return, else ``RCL_RET_OK``."""
        for i in range(publishers.shape[0]):
            if stamped[i]:
                write_stamp(bufs[i], sec, nanosec)
            ret = _rcl_publish(publishers[i], messages[i].ctypes.data)
            if ret != RCL_RET_OK:
                return ret
        return RCL_RET_OK

    @njit(**_OPTS)
    def write_stamp(buf, sec, nanosec):
        """A header's stamp written into the serialized message ``buf`` (a ``std_msgs/Header`` first: bytes 4-11)."""
        s, n = np.uint32(np.int64(sec) & 0xFFFFFFFF), np.uint32(nanosec)
        for i in range(4):
            buf[4 + i] = np.uint8((s >> np.uint32(8 * i)) & np.uint32(0xFF))
            buf[8 + i] = np.uint8((n >> np.uint32(8 * i)) & np.uint32(0xFF))


def available() -> str:
    """'' when this process can take and publish through :mod:`hil_common.rcl_io`, else why not."""
    return _WHY_NOT


#: The fused hot paths' switch between these compiled calls and rclpy (one definition for both nodes).
COMPILED_IO_PARAM = Param('compiled_io', True, 'Take the joint states and send the robot commands (and the arm\'s '
                          'efforts) through rcl from compiled code (hil_common.rcl_io: no Python per message); false: '
                          'through rclpy (also where librcl.so is not found, with a warning)')


def use_compiled_io(value: bool, warn) -> bool:
    """Whether a node with ``compiled_io`` = ``value`` takes and sends through these calls: not where this process
    cannot use them (no ``librcl.so`` found, e.g. another platform), which ``warn(text)`` then says; the node runs on
    through rclpy, as with ``compiled_io`` false."""
    if value and _WHY_NOT:
        warn(f'compiled_io: {_WHY_NOT}; taking and sending through rclpy')
        return False
    return bool(value)


def _rcl_error(what: str, ret: int) -> StartError:
    """rcl's error message for ``ret`` (then reset), as the error raised."""
    class _ErrorString(ctypes.Structure):          # rcutils_error_string_t, returned by value
        _fields_ = [('str', ctypes.c_char * 1024)]
    get = _rcutils.rcutils_get_error_string
    get.restype = _ErrorString
    text = get().str.decode('utf-8', 'replace')
    _rcutils.rcutils_reset_error()
    return StartError(f'{what} failed (rcl {ret}): {text}')


class _Allocator(ctypes.Structure):
    """``rcutils_allocator_t``."""
    _fields_ = [(name, ctypes.c_void_p) for name in ('allocate', 'deallocate', 'reallocate', 'zero_allocate', 'state')]


def _default_allocator() -> _Allocator:
    get_allocator = _rcutils.rcutils_get_default_allocator
    get_allocator.restype = _Allocator
    return get_allocator()


class SerializedMessage:
    """An ``rcl_serialized_message_t`` (``rcutils_uint8_array_t``: buffer, length, capacity, allocator) in a
    ``uint64[8]``, its buffer allocated by rcutils' default allocator (rcl grows it for a larger message)."""

    def __init__(self, capacity: int = 1024):
        self.words = np.zeros(8, dtype=np.uint64)
        allocator = _default_allocator()
        init = _rcutils.rcutils_uint8_array_init
        init.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        if init(self.words.ctypes.data, int(capacity), ctypes.addressof(allocator)) != 0:
            raise _rcl_error('allocating a serialized message', -1)

    def release(self) -> None:
        if self.words[0]:
            fini = _rcutils.rcutils_uint8_array_fini
            fini.argtypes = [ctypes.c_void_p]
            fini(self.words.ctypes.data)
            self.words[:] = 0


def fixed_message(buf: np.ndarray) -> np.ndarray:
    """An ``rcl_serialized_message_t`` (8 words) over the serialized bytes ``buf`` (a ``uint8`` array that must
    outlive it): buffer, length, capacity, no allocator (rcl never grows a message it sends)."""
    words = np.zeros(8, dtype=np.uint64)
    words[0] = buf.ctypes.data
    words[1] = words[2] = buf.shape[0]
    return words


class WaitSet:
    """An rcl wait set of one's own (``rcl_wait_set_t`` in :attr:`words`) for ``n_subscriptions`` subscriptions and
    ``n_guard_conditions`` guard conditions on rclpy's ``context``, waited on in compiled code (:func:`wait`,
    without the GIL). Its entities must be ones no executor waits on (:class:`hil_common.polled.PolledSubscription`,
    a guard condition not added to a node), and it must be released (:meth:`release`) before the context shuts
    down."""

    def __init__(self, context, n_subscriptions: int, n_guard_conditions: int):
        if _WHY_NOT:
            raise StartError(f'hil_common.rcl_io: {_WHY_NOT}')
        self.words = np.zeros(WS_WORDS, dtype=np.uint64)
        self._context = context
        init = _rcl.rcl_wait_set_init
        init.argtypes = [ctypes.c_void_p, *([ctypes.c_size_t] * 6), ctypes.c_void_p, _Allocator]
        init.restype = ctypes.c_int32
        with context.handle:
            ret = init(self.words.ctypes.data, int(n_subscriptions), int(n_guard_conditions), 0, 0, 0, 0,
                       int(context.handle.pointer), _default_allocator())
        if ret != RCL_RET_OK:
            raise _rcl_error('creating a wait set', ret)
        self.ready = np.zeros(int(n_subscriptions) + int(n_guard_conditions), dtype=np.int64)

    def release(self) -> None:
        if self.words[WS_IMPL]:
            fini = _rcl.rcl_wait_set_fini
            fini.argtypes = [ctypes.c_void_p]
            fini.restype = ctypes.c_int32
            fini(self.words.ctypes.data)
            self.words[:] = 0


class JointStateStream:
    """The joint states waiting on a subscription, taken and decoded in one compiled call
    (:func:`take_joint_states`) in ``joint_names`` order. ``subscription`` is rclpy's handle (a
    :class:`hil_common.polled.PolledSubscription`'s ``handle``), which must outlive this stream."""

    def __init__(self, subscription, joint_names, depth: int = 10):
        if _WHY_NOT:
            raise StartError(f'hil_common.rcl_io: {_WHY_NOT}')
        names = [name.encode('utf-8') for name in joint_names]
        self.joint_names = tuple(joint_names)
        self._handle = subscription
        self._pointer = int(subscription.pointer)
        self._expected = np.frombuffer(b''.join(names) or b'\0', dtype=np.uint8).copy()
        self._expected_ends = np.cumsum([len(name) for name in names]).astype(np.intp)
        self._known = np.zeros(4096, dtype=np.uint8)
        self._known_len = np.full(1, -1, dtype=np.intp)
        self._index = np.full(len(names), -1, dtype=np.intp)
        self._needs = np.full(1, -1, dtype=np.intp)
        rows = 2 * int(depth)
        self.q = np.zeros((rows, len(names)))
        self.dq = np.zeros((rows, len(names)))
        self.stamps = np.zeros((rows, 2), dtype=np.int64)
        self.flags = np.zeros(rows, dtype=np.int64)
        self._message = SerializedMessage()
        self._info = np.zeros(64, dtype=np.uint64)            # rmw_message_info_t (less than 100 bytes)
        self.taken = 0
        # the compiled call loaded now, not in a callback: on no subscription (rcl refuses; nothing is taken)
        if take_joint_states(0, self._message.words, self._info, self._expected, self._expected_ends, self._known,
                             self._known_len, self._index, self._needs, self.q, self.dq, self.stamps, self.flags) >= 0:
            raise StartError('hil_common.rcl_io: rcl took from no subscription')
        _rcutils.rcutils_reset_error()

    def take(self) -> int:
        """The messages waiting, decoded into rows ``0..n-1`` of :attr:`q`, :attr:`dq`, :attr:`stamps`,
        :attr:`flags`; returns ``n``. Raises :class:`hil_common.errors.StartError` with rcl's message on an rcl
        error (a take that failed for another reason than an empty subscription)."""
        n = take_joint_states(*self.take_args())
        if n < 0:
            raise _rcl_error('taking a joint state', -n)
        self.taken += n
        return n

    def take_args(self) -> tuple:
        """:func:`take_joint_states`' arguments for this stream (a compiled loop's: it takes as :meth:`take` does)."""
        return (self._pointer, self._message.words, self._info, self._expected, self._expected_ends, self._known,
                self._known_len, self._index, self._needs, self.q, self.dq, self.stamps, self.flags)

    def readings(self, n: int):
        """Rows ``0..n-1`` of the last :meth:`take` as a joint-state reader gives them: ``(q, dq, malformed)``, ``q``
        None unless :data:`Q_OK`, ``dq`` None unless :data:`DQ_OK` (copies), ``malformed`` the decode error ('' if
        none; then both None). :class:`hil_common.cdr.JointStateReader`'s judgement; the arm's picker also needs
        :data:`POSITIONS_FULL` (:meth:`whole`)."""
        for k in range(n):
            flags = int(self.flags[k])
            if flags & MALFORMED:
                yield None, None, malformed_reason(flags)
            else:
                yield (self.q[k].copy() if flags & Q_OK else None, self.dq[k].copy() if flags & DQ_OK else None, '')

    def whole(self, k: int) -> bool:
        """Row ``k`` has every joint's position and velocity, as many of each as names
        (:class:`hil_admittance.node_common.JointPicker`'s judgement)."""
        return int(self.flags[k]) & WHOLE_ROW == WHOLE_ROW

    def release(self) -> None:
        """Free the take buffer (when the node is destroyed)."""
        self._message.release()


class WrenchStream:
    """The wrenches waiting on a subscription (the wrist F/T's ``geometry_msgs/WrenchStamped``), taken and decoded in
    one compiled call (:func:`take_wrenches`; :func:`hil_common.cdr.decode_wrench_stamped`'s layout and refusals),
    their frame_id checked against ``frame_id`` ('' : any). ``subscription`` is rclpy's handle (a
    :class:`hil_common.polled.PolledSubscription`'s ``handle``), which must outlive this stream."""

    FRAME_BYTES = 256           # a frame_id's bytes kept per row (for the message naming a wrong one)

    def __init__(self, subscription, frame_id: str = '', depth: int = 10):
        if _WHY_NOT:
            raise StartError(f'hil_common.rcl_io: {_WHY_NOT}')
        self._handle = subscription
        self._pointer = int(subscription.pointer)
        self._expected = np.frombuffer(frame_id.encode('utf-8'), dtype=np.uint8).copy()
        rows = 2 * int(depth)
        self.wrench = np.zeros((rows, 6))
        self.stamps = np.zeros((rows, 2), dtype=np.int64)
        self.frames = np.zeros((rows, self.FRAME_BYTES), dtype=np.uint8)
        self.frame_lens = np.zeros(rows, dtype=np.intp)
        self.flags = np.zeros(rows, dtype=np.int64)
        self._scratch = np.zeros(8, dtype=np.uint8)
        self._message = SerializedMessage()
        self._info = np.zeros(64, dtype=np.uint64)            # rmw_message_info_t (less than 100 bytes)
        self.taken = 0
        # the compiled call loaded now, not in a callback: on no subscription (rcl refuses; nothing is taken)
        if self._take(0) >= 0:
            raise StartError('hil_common.rcl_io: rcl took from no subscription')
        _rcutils.rcutils_reset_error()

    def _take(self, pointer: int) -> int:
        return take_wrenches(pointer, *self.take_args()[1:])

    def take_args(self) -> tuple:
        """:func:`take_wrenches`' arguments for this stream (a compiled loop's: it takes as :meth:`take` does)."""
        return (self._pointer, self._message.words, self._info, self._expected, self.wrench, self.stamps, self.frames,
                self.frame_lens, self.flags, self._scratch)

    def take(self) -> int:
        """The wrenches waiting, decoded into rows ``0..n-1`` of :attr:`wrench`, :attr:`stamps`, :attr:`flags`;
        returns ``n``. Raises :class:`hil_common.errors.StartError` with rcl's message on an rcl error."""
        n = self._take(self._pointer)
        if n < 0:
            raise _rcl_error('taking a wrench', -n)
        self.taken += n
        return n

    def frame(self, k: int) -> str:
        """Row ``k``'s frame_id (as :func:`hil_common.cdr.decode_wrench_stamped` gives it; at most
        :attr:`FRAME_BYTES` bytes of it)."""
        n = min(int(self.frame_lens[k]), self.FRAME_BYTES)
        return self.frames[k, :n].tobytes().decode('utf-8', 'replace')

    def release(self) -> None:
        """Free the take buffer (when the node is destroyed)."""
        self._message.release()


class SerializedTakes:
    """The messages waiting on several subscriptions, taken as their serialized bytes in one compiled call
    (:func:`take_serialized_rows`): for polled inputs that are mostly empty at a sample (an empty take through
    rclpy costs its Python each time). ``subscriptions``: rclpy's handles (:class:`hil_common.polled.
    PolledSubscription`'s ``handle``), which must outlive this; ``depth``: at most so many per subscription and call;
    ``capacity``: the longest message kept (a longer one is counted, its length negative)."""

    def __init__(self, subscriptions, depth: int = 10, capacity: int = 4096):
        if _WHY_NOT:
            raise StartError(f'hil_common.rcl_io: {_WHY_NOT}')
        self._handles = tuple(subscriptions)
        self._pointers = np.array([int(h.pointer) for h in self._handles], dtype=np.int64)
        n = len(self._handles)
        self.rows = np.zeros((n, 2 * int(depth), int(capacity)), dtype=np.uint8)
        self.lengths = np.zeros((n, 2 * int(depth)), dtype=np.int64)
        self.counts = np.zeros(n, dtype=np.int64)
        self._message = SerializedMessage()
        self._info = np.zeros(64, dtype=np.uint64)            # rmw_message_info_t (less than 100 bytes)
        # the compiled call loaded now, not in a callback: on no subscription (nothing to take)
        take_serialized_rows(np.zeros(0, dtype=np.int64), self._message.words, self._info, self.rows, self.lengths,
                             self.counts)

    def take(self) -> np.ndarray:
        """Take what waits: :attr:`counts` (per subscription, in their order). Raises
        :class:`hil_common.errors.StartError` with rcl's message on an rcl error."""
        ret = take_serialized_rows(self._pointers, self._message.words, self._info, self.rows, self.lengths,
                                   self.counts)
        if ret < 0:
            raise _rcl_error('taking a message', -ret)
        return self.counts

    def message(self, s: int, k: int) -> bytes | None:
        """Message ``k`` of subscription ``s`` from the last :meth:`take`, as bytes; None if it was longer than a
        row."""
        n = int(self.lengths[s, k])
        return None if n < 0 else self.rows[s, k, :n].tobytes()

    def release(self) -> None:
        """Free the take buffer (when the node is destroyed)."""
        self._message.release()


class Float64ArrayPublisher:
    """``std_msgs/Float64MultiArray`` of ``n`` doubles (empty layout) sent on rclpy's publisher ``publisher``
    (``Publisher``; its handle must outlive this) from compiled code (:func:`publish_float64_array`)."""

    def __init__(self, publisher, n: int):
        if _WHY_NOT:
            raise StartError(f'hil_common.rcl_io: {_WHY_NOT}')
        self.n = int(n)
        self._publisher = publisher
        self._pointer = int(publisher.handle.pointer)
        self._buf = np.frombuffer(bytearray(HEADER + struct.pack('<III', 0, 0, self.n) + bytes(4) + bytes(8 * self.n)),
                                  dtype=np.uint8)
        self._data = self._buf[20:].view(np.float64)
        self._message = fixed_message(self._buf)
        # the compiled call loaded now, not in a callback: on no publisher (rcl refuses; nothing is sent)
        if publish_float64_array(0, self._message, self._data, np.zeros(self.n)) == RCL_RET_OK:
            raise StartError('hil_common.rcl_io: rcl published on no publisher')
        _rcutils.rcutils_reset_error()

    def publish_args(self, values) -> tuple:
        """:func:`publish_float64_array`'s arguments to send ``values`` (a compiled loop's: it sends as :meth:`publish`
        does, the array's values when it sends)."""
        return self._pointer, self._message, self._data, values

    def publish(self, values) -> None:
        """Send ``values`` (float64, ``n`` of them; C-contiguous). Raises :class:`hil_common.errors.StartError`
        with rcl's message when rcl refuses (e.g. its context shut down)."""
        values = np.ascontiguousarray(values, dtype=float)
        if values.shape != (self.n,):
            raise CdrError(f'expected {self.n} values, got shape {values.shape}')
        ret = publish_float64_array(self._pointer, self._message, self._data, values)
        if ret != RCL_RET_OK:
            raise _rcl_error(f'publishing on {self._publisher.topic_name}', ret)


class SerializedPublishers:
    """Messages already serialized into byte buffers that are kept and refilled (``hil_common.cdr``'s encoders'),
    sent on rclpy's publishers from compiled code, all in one call (:func:`publish_all_stamped`): ``(publisher,
    buffer, stamped)`` each, ``buffer`` a ``uint8`` array over the encoder's bytes (it must outlive this), ``stamped``
    whether it starts with a ``std_msgs/Header`` whose stamp each call writes."""

    def __init__(self, entries):
        if _WHY_NOT:
            raise StartError(f'hil_common.rcl_io: {_WHY_NOT}')
        self._publishers = [publisher for publisher, _, _ in entries]      # their handles outlive this
        self._pointers = np.array([int(p.handle.pointer) for p in self._publishers], dtype=np.int64)
        self._bufs = tuple(buf for _, buf, _ in entries)
        self._messages = np.stack([fixed_message(buf) for buf in self._bufs])
        self._stamped = np.array([bool(stamped) for _, _, stamped in entries])
        # the compiled call loaded now, not in a callback: on no publisher (rcl refuses; nothing is sent)
        if publish_all_stamped(np.zeros_like(self._pointers), self._messages, self._bufs, np.zeros_like(self._stamped),
                               0, 0) == RCL_RET_OK:
            raise StartError('hil_common.rcl_io: rcl published on no publisher')
        _rcutils.rcutils_reset_error()

    def publish_args(self) -> tuple:
        """:func:`publish_all_stamped`'s arguments before the stamp (a compiled loop's: it sends as :meth:`publish`
        does)."""
        return self._pointers, self._messages, self._bufs, self._stamped

    def publish(self, sec: int, nanosec: int, count: int | None = None) -> None:
        """Send every message (the first ``count``), the stamped ones stamped ``(sec, nanosec)``. Raises
        :class:`hil_common.errors.StartError` with rcl's message when rcl refuses (e.g. its context shut down)."""
        pointers, messages, bufs, stamped = self.publish_args()
        n = len(pointers) if count is None else count
        ret = publish_all_stamped(pointers[:n], messages[:n], bufs, stamped[:n], sec, nanosec)
        if ret != RCL_RET_OK:
            raise _rcl_error('publishing ' + ', '.join(p.topic_name for p in self._publishers), ret)


def warm_up() -> None:
    """Compile (or load) the kernels: a joint state and a command through a private topic on loopback, and a take of
    serialized messages."""
    import time

    import rclpy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from hil_common import cdr
    from hil_common.network import apply_network_profile
    from hil_common.polled import PolledSubscription

    apply_network_profile()
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node('hil_rcl_io_warm_up', context=context)
        polled = PolledSubscription(node, JointState, 'hil_rcl_io_warm_up/joints', 10)
        stream = JointStateStream(polled.handle, ['a', 'b'])
        pub = node.create_publisher(JointState, 'hil_rcl_io_warm_up/joints', 10)
        pub.publish(JointState(name=['b', 'a'], position=[2.0, 1.0], velocity=[0.0, 0.0]))
        deadline = time.monotonic() + 5.0
        while stream.take() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        takes = SerializedTakes([polled.handle])
        takes.take()
        takes.release()
        WrenchStream(polled.handle, 'a').release()      # (its take loaded where it is built)
        out = node.create_publisher(Float64MultiArray, 'hil_rcl_io_warm_up/out', 10)
        Float64ArrayPublisher(out, 2).publish(np.zeros(2))
        # (its call loaded where it is built) for four messages, as the servicer hot path sends its decimated ones
        SerializedPublishers([(out, cdr.Float64ArrayEncoder(1).fields()[0], False) for _ in range(4)])
        stream.release()
        polled.destroy()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    if _WHY_NOT:
        raise SystemExit(f'hil_common.rcl_io: {_WHY_NOT}')
    warm_up()
    print(f'hil_common.rcl_io: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
