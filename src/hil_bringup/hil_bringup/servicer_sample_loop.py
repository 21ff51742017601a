"""The fused servicer hot path's wrist samples with no Python: one compiled loop in a thread of the node (issue 17).

:func:`servicer_sample_loop` is what ``servicer_hot_path_node`` does for a quiet wrist sample, with no Python
between the samples (docs/performance.md, "The servicer's sample with no Python"): it waits on an rcl wait set of
its own (:mod:`hil_common.rcl_io`) for the wrist's wrenches (a subscription no executor waits on) and for its stop
guard condition (``hil_common.sample_loop.LoopThread``), and for each wrench, in the order the node's Python takes
them:

1. the lab's and the node's clocks read: on the lab's wall clock the steady one and the node's (rcl clocks); under
   ``use_sim_time`` the twin's time, which the loop takes from ``/clock`` itself (:func:`_sim_time`): the newest
   ``/clock`` waiting, waited for (at most :data:`CLOCK_WAIT_NS`) while it is older than the wrist sample's stamp (the
   F/T driver stamps on the twin's clock, so a ``/clock`` at least as new is on its way), or the node clock's reading
   if rclpy's time source set a newer one. Before, the loop read the node's clock, which the executor's thread sets:
   a sample taken before the executor had handled the step's ``/clock`` found no step due, and the twin waited for
   the command (the live Envisat graph at 0.077 of real time against about 0.3);
2. the table's joint states waiting taken and handed to the rule (``servicer_hot_path_kernel.table_joint_rows``),
   then the arm's (``arm_joint_rows``), then the OBSW's base wrench and torques, decoded and held
   (``ServicerSide.set_wrench_base``, ``set_tau``: the held inputs' arrays), then the client's states (kept as
   their bytes for Python, which only a re-basing plan reads);
3. the sample on the loop's state (``servicer_hot_path_kernel.loop_sample``, entered by
   :class:`hil_bringup.servicer_hot_path_loop.SampleLoopState`);
4. a step's robot command and efforts sent, the trace with the sample's stamp, and every ``decimation``-th step the
   four decimated messages (``decimated_values``, ``rcl_io.publish_all_stamped``).

Anything else returns an **event** (:data:`EV_SAMPLE` ...) with nothing of it done past the point named, and the
node's Python does the rest of that sample as it always does (``ServicerHotPathNode.on_loop_event``): a row the
rule's compiled rows leave (a malformed or partial row, the table's first joints), a refused OBSW message, a
refused wrist wrench, a sample the loop's state does not run (a fault's hold, dropped steps, a plan due: every array
restored), or, after a step or an overload guard's held tick sent, the status's and the holding's log
(:data:`EV_AFTER`). The wrenches of a take
after the event's are the loop's again when it enters next (``ctl[K_NEXT]``).

Plain Numba over :mod:`hil_common.rcl_io`'s compiled calls; no rclpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hil_bringup import servicer_hot_path_kernel as _hot_path_kernel
from hil_bringup.servicer_hot_path_kernel import LI_HAS_PASSIVITY, LI_LAST_HELD, QUIET_EVENT, QUIET_HELD, \
    QUIET_STEPPED, arm_joint_rows, decimated_values, loop_sample, table_joint_rows
from hil_common import policy_kernel as _policy_kernel
from hil_common import rcl_io as _rcl_io
from hil_dynamics import kernels as _kernels
from hil_motion_table import ik_kernel as _ik_kernel
from hil_motion_table import table_kernel as _table_kernel
from hil_common.kernel_cache import drop_stale_code
from hil_common.policy_kernel import GI_LEVEL, P_STEPS, pacer_step_time
from hil_common.rcl_io import RCL_RET_OK, RCL_RET_TIMEOUT, clock_now_ns, decode_float64_array, decode_wrench, \
    message_bytes, publish_all_stamped, publish_float64_array, publish_serialized, take_clock, take_joint_states, \
    take_serialized, take_wrenches, wait, write_stamp

#: the loop's return: its stop guard condition was triggered (``hil_common.sample_loop.STOPPED``)
STOPPED = 0
#: events (the wrist row is ``ctl[K_ROW]``): the sample for the node's Python from its start, its inputs taken
#: (the state not entered, the lab's clock not started, or ``loop_sample`` handed it back)
EV_SAMPLE = 1
#: the wrist row refused (malformed, or in another frame: ``flags``)
EV_WRIST = 2
#: the table's joint rows from ``ctl[K_AT]`` of ``ctl[K_TAKEN]`` left to Python, then the sample
EV_TABLE_ROWS = 3
#: the arm's joint rows from ``ctl[K_AT]`` of ``ctl[K_TAKEN]`` left to Python, then the sample
EV_ARM_ROWS = 4
#: an OBSW message (subscription ``ctl[K_AT]``, its bytes in the loop's message) refused, then the sample
EV_OBSW = 5
#: a step or a held tick sent; the node's Python logs and publishes what changed (the guard's level, a hold's start
#: or end)
EV_AFTER = 6
#: the client's states kept for Python are as many as their rows hold: Python takes them, then the sample
EV_CLIENT = 7
EVENTS = {EV_SAMPLE: 'sample', EV_WRIST: 'wrist', EV_TABLE_ROWS: 'table rows', EV_ARM_ROWS: 'arm rows',
          EV_OBSW: 'OBSW message', EV_AFTER: 'after a step', EV_CLIENT: 'client states'}

#: ``ctl``: the take's next wrist row and its count, the event's row, where in a take it stopped and the take's size;
#: flags the node sets at each entry (the state entered, the after-step's Python wanted at the next step, the guard's
#: level reported, the after-step's Python wanted at the next held tick); the node's outputs (its decimation's count);
#: counts (samples, steps and held ticks, wake-ups, OBSW messages, client states kept)
K_NEXT, K_ROWS, K_ROW, K_AT, K_TAKEN, K_ENTERED, K_AFTER, K_LEVEL, K_OUTPUTS, K_SAMPLES, K_STEPS, K_WAKES, K_OBSW, \
    K_CLIENT, K_AFTER_HELD, N_CTL = range(16)
#: ``clocks``: the lab clock's rcl address (the steady clock), the node clock's, the node's start on its clock [ns],
#: 1 under ``use_sim_time`` (the twin's time: the loop takes ``/clock``, :func:`_sim_time`) else 0
C_LAB, C_NODE, C_T0, C_SIM = range(4)
#: ``sim``'s ``newest``: the newest ``/clock`` the loop took [ns] (0: none yet), the malformed ones, the samples that
#: waited for a ``/clock`` as new as their stamp, and those that stopped waiting after :data:`CLOCK_WAIT_NS`
S_NEWEST, S_MALFORMED, S_WAITED, S_LATE, N_SIM = range(5)
#: how long (steady time) a wrist sample stamped ahead of the newest ``/clock`` waits for it; then it runs on the time
#: the loop has, as the node's Python would. In the live Envisat graph none waits (the drivers stamp on the twin's
#: clock as they have it, no newer than the ``/clock`` on its way to this node), so this bounds only a rare late
#: ``/clock``
CLOCK_WAIT_NS = 200_000_000
#: a stamp further ahead of the newest ``/clock`` is not waited for: not the twin's time (a driver on another clock),
#: or ``/clock`` not there yet
CLOCK_AHEAD_NS = 1_000_000_000


@njit(cache=True, nogil=True)
def sim_clock_ns(node_clock, newest, scratch):
    """Under ``use_sim_time``, the node's time [ns] as the loop reads it and the node's Python too
    (``SampleThread.clock_ns``): the newest of the node clock's reading (``node_clock``: its rcl address; rclpy's time
    source sets it in the executor's thread) and the ``/clock`` the loop took (``newest[S_NEWEST]``), so that the
    Python, which runs the samples the loop hands it, never reads an older time than the loop did. -1 after an rcl
    error."""
    if clock_now_ns(node_clock, scratch) != RCL_RET_OK:
        return np.int64(-1)
    return max(scratch[0], newest[S_NEWEST])


@njit(cache=True, nogil=True)
def _clock_s(clocks, newest, scratch):
    """The lab's time [s] (``hil_common.lab_clock.lab_seconds``: ``time.monotonic``'s seconds on the wall clock, the
    twin's time under ``use_sim_time``: :func:`sim_clock_ns`) and the node's since its start (``_now_s``); nan after an
    rcl error."""
    if clocks[C_SIM]:
        ns = sim_clock_ns(clocks[C_NODE], newest, scratch)
        if ns < 0:
            return np.nan, np.nan
        return ns / 1e9, (ns - clocks[C_T0]) * 1e-9
    if clock_now_ns(clocks[C_LAB], scratch) != RCL_RET_OK:
        return np.nan, np.nan
    lab = scratch[0] / 1e9
    if clock_now_ns(clocks[C_NODE], scratch) != RCL_RET_OK:
        return np.nan, np.nan
    return lab, (scratch[0] - clocks[C_T0]) * 1e-9


@njit(cache=True, nogil=True)
def _sim_time(sim, stamp, clocks, scratch):
    """Under ``use_sim_time``, before a wrist sample stamped ``stamp`` (sec, nanosec) runs: the ``/clock`` waiting
    taken (``sim``: its subscription's address, the take's message and info, ``newest`` (:data:`S_NEWEST` ...), a wait
    set of the subscription and the loop's stop guard: its words, the two addresses' arrays, ``ready``), and while the
    newest time is older than the stamp (by at most :data:`CLOCK_AHEAD_NS`), waited for, at most :data:`CLOCK_WAIT_NS`
    of steady time. 1; 0 when the stop guard was triggered (the sample not taken); ``-(rcl's return)``."""
    subscription, message, info, newest, wait_set, waited, guards, ready = sim
    n = take_clock(subscription[0], message, info, newest)
    if n < 0:
        return n
    want = stamp[0] * 1_000_000_000 + stamp[1]
    if newest[S_NEWEST] >= want or want - newest[S_NEWEST] > CLOCK_AHEAD_NS:
        return 1
    if clock_now_ns(clocks[C_NODE], scratch) != RCL_RET_OK:
        return -1
    if scratch[0] >= want:              # rclpy's time source set a newer one
        return 1
    newest[S_WAITED] += 1
    if clock_now_ns(clocks[C_LAB], scratch) != RCL_RET_OK:
        return -1
    deadline = scratch[0] + CLOCK_WAIT_NS
    remaining = np.int64(CLOCK_WAIT_NS)
    while remaining > 0:
        ret = wait(wait_set, waited, guards, remaining, ready)
        if ret != RCL_RET_OK and ret != RCL_RET_TIMEOUT:
            return -ret
        if ret == RCL_RET_OK and ready[waited.shape[0]]:
            return 0
        n = take_clock(subscription[0], message, info, newest)
        if n < 0:
            return n
        if newest[S_NEWEST] >= want:
            return 1
        if clock_now_ns(clocks[C_LAB], scratch) != RCL_RET_OK:
            return -1
        remaining = deadline - scratch[0]
    newest[S_LATE] += 1
    return 1


#: :func:`wait_wrenches`' return when the loop's stop guard condition was triggered
WAIT_STOPPED = -(1 << 40)


@njit(cache=True, nogil=True)
def wait_wrenches(waiting, wrench_in, wakes):
    """A sample loop's wait (``waiting``: ``(wait set words, [subscription], [stop guard], ready, timeout_ns)``,
    ``rcl_io.wait``) and the take of the wrenches waiting then (``wrench_in``: ``rcl_io.take_wrenches``' arguments),
    the wake-ups counted in ``wakes[0]``: their count (0 after a timeout), :data:`WAIT_STOPPED` when the stop guard was
    triggered, or ``-(rcl's return)``. One definition for the servicer's and the client's loops."""
    wait_set, waited, guards, ready, timeout_ns = waiting
    ret = wait(wait_set, waited, guards, timeout_ns, ready)
    if ret == RCL_RET_TIMEOUT:
        return 0
    if ret != RCL_RET_OK:
        return -ret
    wakes[0] += 1
    if ready[waited.shape[0]]:
        return WAIT_STOPPED
    return take_wrenches(*wrench_in)


@njit(cache=True, nogil=True)
def _obsw(obsw, side_now_s, ctl):
    """The OBSW's base wrench and torques waiting (``obsw``: their subscriptions' addresses, the take's message and
    info, decode scratch, the held inputs' value and stamp arrays), each held as ``ServicerSide.set_wrench_base`` /
    ``set_tau`` hold them. 0; :data:`EV_OBSW` (``ctl[K_AT]`` the subscription) for one the side refuses (its bytes
    in ``message``); ``-(rcl's return)``."""
    subscriptions, message, info, stamp, frame, wrench, values, scratch, held_values, held_stamps = obsw
    for s in range(subscriptions.shape[0]):
        for _ in range(64):
            n = take_serialized(subscriptions[s], message, info)
            if n == 0:
                break
            if n < 0:
                return n
            ctl[K_OBSW] += 1
            buf = message_bytes(message)
            target = held_values[s]
            if s == 0:
                ok = decode_wrench(buf, n, stamp, frame, wrench, scratch) == 0
                for i in range(6):
                    ok = ok and np.isfinite(wrench[i])
            else:
                ok = decode_float64_array(buf, n, values, scratch) == target.shape[0]
                for i in range(target.shape[0]):
                    ok = ok and np.isfinite(values[i])
            if not ok:
                ctl[K_AT] = s
                return EV_OBSW
            source = wrench if s == 0 else values
            for i in range(target.shape[0]):
                target[i] = source[i]
            held_stamps[s][0] = side_now_s
    return 0


@njit(cache=True, nogil=True)
def _client(client, side_now_s, ctl):
    """The client's states waiting (``client``: its subscription's address, none without re-basing; the take's
    message and info; ``rows``, ``lengths``, ``times``), kept as their bytes with their receipt times on the node's
    clock from row ``ctl[K_CLIENT]`` on: only a re-basing plan reads them, in Python, which takes the rows first
    (``ServicerHotPathNode.take_client_rows``). ``-length`` for one longer than a row. 0; :data:`EV_CLIENT` when the
    rows are full; ``-(rcl's return)``."""
    subscriptions, message, info, rows, lengths, times = client
    for s in range(subscriptions.shape[0]):
        while True:
            if ctl[K_CLIENT] >= rows.shape[0]:
                return EV_CLIENT
            n = take_serialized(subscriptions[s], message, info)
            if n == 0:
                break
            if n < 0:
                return n
            r = ctl[K_CLIENT]
            if n > rows.shape[1]:
                lengths[r] = -n
            else:
                buf = message_bytes(message)
                for i in range(n):
                    rows[r, i] = buf[i]
                lengths[r] = n
            times[r] = side_now_s
            ctl[K_CLIENT] = r + 1
    return 0


@njit(cache=True, nogil=True)
def _send(out, state, stamp, ctl):
    """A step's (or a held tick's) messages: the robot's command, the trace, the efforts, every ``decimation``-th
    the decimated four (three before the port's first output, as ``ServicerMessages.encode``). rcl's return."""
    cmd, effort, trace, decimated, decimation, t0_ns, fields, scratch = out
    quiet, side, table, held, lf, li = state
    publisher, message, data, values = cmd
    ret = publish_float64_array(publisher, message, data, values)
    if ret == RCL_RET_OK and trace[3]:
        write_stamp(trace[2], stamp[0], stamp[1])
        ret = publish_serialized(trace[0], trace[1])
    if ret == RCL_RET_OK:
        publisher, message, data, values = effort
        ret = publish_float64_array(publisher, message, data, values)
    if ret != RCL_RET_OK:
        return ret
    ctl[K_OUTPUTS] += 1
    if ctl[K_OUTPUTS] % decimation == 0:
        pf, pi = quiet[3], quiet[4]
        pose, twist, state_pose, state_twist, passivity = fields
        stamp_ns = decimated_values(t0_ns, pacer_step_time(pf, pi[P_STEPS]), side[1], side[2], li[LI_LAST_HELD] != 0,
                                    held[7], pose, twist, state_pose, state_twist, passivity, scratch[0], scratch[1])
        publishers, messages, bufs, stamped = decimated
        n = publishers.shape[0] if li[LI_HAS_PASSIVITY] else publishers.shape[0] - 1
        ret = publish_all_stamped(publishers[:n], messages[:n], bufs, stamped[:n], stamp_ns // 1_000_000_000,
                                  stamp_ns % 1_000_000_000)
    return ret


@njit(cache=True, nogil=True)
def servicer_sample_loop(waiting, wrist, clocks, sim, table_js, table_rows, arm_js, arm_rows, obsw, client, state,
                         out, ctl):
    """The wrist samples until the stop's guard condition, or an event (module docstring).

    ``waiting``: ``(wait set words, [wrist subscription], [stop guard], ready, timeout_ns)`` (``rcl_io.wait``);
    ``wrist``: ``rcl_io.take_wrenches``' arguments (an ``rcl_io.WrenchStream``'s); ``clocks``: :data:`C_LAB` ...;
    ``sim``: :func:`_sim_time`'s (read under ``use_sim_time`` only);
    ``table_js``, ``arm_js``: ``take_joint_states``' (``rcl_io.JointStateStream``'s); ``table_rows``,
    ``arm_rows``: ``table_joint_rows``' and ``arm_joint_rows``' arguments after the rows and times (the rule's);
    ``obsw``: :func:`_obsw`'s; ``client``: :func:`_client`'s; ``state``: ``loop_sample``'s after the sample (``SampleLoopState.args``); ``out``:
    the step's messages (:func:`_send`); ``ctl``: :data:`K_NEXT` ...

    Returns :data:`STOPPED`, an event, or ``-(rcl's return)`` after an rcl error."""
    wrenches, stamps, flags = wrist[4], wrist[5], wrist[8]
    now_scratch = np.zeros(1, dtype=np.int64)
    quiet, side, table, held, lf, li = state
    gi, has_guard = quiet[7], quiet[5]
    wakes = ctl[K_WAKES:K_WAKES + 1]
    while True:
        if ctl[K_NEXT] >= ctl[K_ROWS]:
            n = wait_wrenches(waiting, wrist, wakes)
            if n == WAIT_STOPPED:
                return STOPPED
            if n < 0:
                return n
            ctl[K_NEXT], ctl[K_ROWS] = 0, n
            continue
        k = ctl[K_NEXT]
        if clocks[C_SIM] and flags[k] == 0:      # (a refused row's stamp is not waited for)
            ret = _sim_time(sim, stamps[k], clocks, now_scratch)
            if ret == 0:
                return STOPPED        # (the row stays the next one)
            if ret < 0:
                return ret
        ctl[K_NEXT] = k + 1           # this row is the loop's or the event's
        ctl[K_ROW] = k
        now_s, side_now_s = _clock_s(clocks, sim[3], now_scratch)
        if np.isnan(now_s):
            return -1
        if now_s <= 0.0 or not ctl[K_ENTERED]:
            return EV_SAMPLE          # (the twin's /clock not there yet: Python takes the inputs and returns)
        n = take_joint_states(*table_js)
        if n < 0:
            return n
        done = table_joint_rows(n, table_js[9], table_js[10], table_js[11], table_js[12], now_s, side_now_s,
                                *table_rows)
        if done < n:
            ctl[K_AT], ctl[K_TAKEN] = done, n
            return EV_TABLE_ROWS
        n = take_joint_states(*arm_js)
        if n < 0:
            return n
        done = arm_joint_rows(n, arm_js[9], arm_js[10], arm_js[11], arm_js[12], side_now_s, *arm_rows)
        if done < n:
            ctl[K_AT], ctl[K_TAKEN] = done, n
            return EV_ARM_ROWS
        ret = _obsw(obsw, side_now_s, ctl)
        if ret == 0:
            ret = _client(client, side_now_s, ctl)
        if ret != 0:
            return ret
        if flags[k] != 0:
            return EV_WRIST
        ctl[K_SAMPLES] += 1
        outcome = loop_sample(wrenches[k], now_s, side_now_s, quiet, side, table, held, lf, li)
        if outcome == QUIET_EVENT:
            ctl[K_SAMPLES] -= 1
            return EV_SAMPLE
        if outcome == QUIET_STEPPED or outcome == QUIET_HELD:
            ctl[K_STEPS] += 1
            ret = _send(out, state, stamps[k], ctl)
            if ret != RCL_RET_OK:
                return -ret
            after = ctl[K_AFTER_HELD] if outcome == QUIET_HELD else ctl[K_AFTER]
            if after or (has_guard and gi[GI_LEVEL] != ctl[K_LEVEL]):
                return EV_AFTER


def warm_up() -> None:
    """Compile (or load from the cache) :func:`servicer_sample_loop` with the types the fused servicer hot path
    passes: the node built with the Envisat graph's parameters on loopback loads it (``./dev`` runs this)."""
    from hil_bringup.servicer_hot_path_node import warm_up as node_warm_up

    node_warm_up()


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _ik_kernel, _table_kernel, _policy_kernel, _hot_path_kernel, _rcl_io)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_bringup.servicer_sample_loop: compiled loop ready ({_time.process_time() - _t0:.1f} s CPU)')
