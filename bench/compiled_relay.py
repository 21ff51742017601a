"""The servicer relay's sample with no Python: its messages waited on, taken, decoded, encoded and sent in one
compiled loop (``bench_envisat.py --only servicer_compiled_relay``).

The messages of ``servicer_hot_path_node``, as ``bench_envisat.servicer_relay_child`` answers them through rclpy,
here in a thread of the node that runs :func:`servicer_relay_loop` without the GIL (:mod:`hil_common.rcl_io`):

* it waits on an rcl wait set of its own for the wrist wrench (a subscription no executor waits on) and a guard
  condition (the stop);
* the wrist wrenches waiting taken and decoded in one call (``take_wrenches``, as ``rcl_io.WrenchStream``), then
  for each: the table's and the arm's joint states taken and decoded (``take_joint_states``), the OBSW's base
  wrench and torques taken and decoded; the table command and the arm's efforts sent (``publish_float64_array``), the trace with the sample's stamp, and every ``decimation``-th sample
  the four decimated messages (encoded once, sent as they are).

Its CPU per command is the floor of the servicer's compiled sample loop (issue 17, docs/performance.md: the plan's
steps 1, 2 and 4 without the rule), beside the relay on rclpy in the same run.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hil_common.rcl_io import (MALFORMED, RCL_RET_OK, RCL_RET_TIMEOUT, decode_float64_array, decode_wrench,
                               message_bytes, publish_float64_array, publish_serialized, take_joint_states,
                               take_serialized, take_wrenches, wait, write_stamp)

STOPPED, RCL_FAILED = 0, -1
# counts[]: what the loop did
C_SAMPLES, C_MALFORMED, C_JOINT_ROWS, C_OBSW, C_WAKES = range(5)


@njit(cache=True, nogil=True)
def _take_obsw(subscription, message, info, is_wrench, stamp, frame, wrench, values, scratch, counts):
    """Every message waiting on one of the OBSW's polled subscriptions, decoded (a wrench or a Float64MultiArray).
    0, or ``-(rcl's return)``."""
    for _ in range(64):
        n = take_serialized(subscription, message, info)
        if n == 0:
            return 0
        if n < 0:
            return n
        buf = message_bytes(message)
        if is_wrench:
            bad = decode_wrench(buf, n, stamp, frame, wrench, scratch) != 0
        else:
            bad = decode_float64_array(buf, n, values, scratch) < 0
        counts[C_MALFORMED] += bad
        counts[C_OBSW] += 1
    return 0


@njit(cache=True, nogil=True)
def servicer_relay_loop(wait_set, waited, guards, ready, timeout_ns, wrist, table_js, arm_js, obsw, obsw_wrench,
                        obsw_message, commands, trace, decimated, decimation, counts):
    """Until the stop's guard condition: wait for wrist samples, answer each as the servicer relay does.

    ``waited``: the wrist subscription's address (one); ``guards``: the stop's; ``wrist``: ``rcl_io.take_wrenches``' arguments after
    the subscription's address (an ``rcl_io.WrenchStream``'s);
    ``table_js``, ``arm_js``: ``take_joint_states``' arguments after the subscription's address (``(address, ...)``);
    ``obsw``: the OBSW subscriptions' addresses, ``obsw_wrench[i]`` 1 for a WrenchStamped; ``commands``: the table
    command's and the efforts' ``(publisher, message, data, values)``; ``trace``: ``(publisher, message, buffer,
    on)``; ``decimated``: the publishers' addresses and their messages' words (a row each).
    Returns :data:`STOPPED`, or ``-(rcl's return)`` after an rcl error."""
    message, info, expected_frame, wrenches, stamps, frames, frame_lens, flags = wrist
    stamp, frame = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    wrench, obsw_values, scratch = np.zeros(6), np.zeros(64), np.zeros(8, dtype=np.uint8)
    while True:
        ret = wait(wait_set, waited, guards, timeout_ns, ready)
        if ret == RCL_RET_TIMEOUT:
            continue
        if ret != RCL_RET_OK:
            return -ret
        counts[C_WAKES] += 1
        if ready[waited.shape[0]]:
            return STOPPED
        for _ in range(64):
            n = take_wrenches(waited[0], message, info, expected_frame, wrenches, stamps, frames, frame_lens, flags,
                              scratch)
            if n == 0:
                break
            if n < 0:
                return n
            for k in range(n):
                for js in (table_js, arm_js):
                    rows = take_joint_states(*js)
                    if rows < 0:
                        return rows
                    counts[C_JOINT_ROWS] += rows
                for i in range(obsw.shape[0]):
                    ret = _take_obsw(obsw[i], obsw_message, info, obsw_wrench[i], stamp, frame, wrench, obsw_values,
                                     scratch, counts)
                    if ret < 0:
                        return ret
                if flags[k] & MALFORMED:
                    counts[C_MALFORMED] += 1
                    continue
                publisher, words, data, values = commands[0]
                ret = publish_float64_array(publisher, words, data, values)
                if ret == RCL_RET_OK and trace[3]:
                    write_stamp(trace[2], stamps[k, 0], stamps[k, 1])
                    ret = publish_serialized(trace[0], trace[1])
                if ret == RCL_RET_OK:
                    publisher, words, data, values = commands[1]
                    ret = publish_float64_array(publisher, words, data, values)
                counts[C_SAMPLES] += 1
                if ret == RCL_RET_OK and counts[C_SAMPLES] % decimation == 0:
                    publishers, messages = decimated
                    for i in range(publishers.shape[0]):
                        if ret == RCL_RET_OK:
                            ret = publish_serialized(publishers[i], messages[i])
                if ret != RCL_RET_OK:
                    return -ret
