"""The fused client hot path's F/T samples with no Python: one compiled loop in a thread of the node (issue 17).

:func:`client_sample_loop` is what ``client_hot_path_node`` does for a quiet F/T sample, with no Python between the
samples, as :mod:`hil_bringup.servicer_sample_loop` does for the servicer's wrist: it waits on an rcl wait set of its
own (:mod:`hil_common.rcl_io`) for the F/T sensor's wrenches (the newest only: a subscription of depth 1 that no
executor waits on, as the node's own was) and for its stop guard condition (``hil_common.sample_loop.LoopThread``),
and for each wrench:

1. the lab's clock read: the steady clock on the wall clock; under ``use_sim_time`` the twin's time, its ``/clock``
   taken by the loop itself and waited for while older than the sample's stamp
   (``servicer_sample_loop._sim_time``, one definition for both hot paths);
2. the joint states waiting taken and handed to the rule (:func:`client_joint_rows`: ``ClientHotPath.joint_states``
   for each whole row);
3. the sample on the loop's state (``client_hot_path_kernel.client_loop_sample``, entered by
   :class:`hil_bringup.client_hot_path_loop.ClientLoopState`);
4. its robot command sent, the trace with the sample's stamp, and every ``decimation``-th command the three decimated
   messages (``client_hot_path_kernel.client_decimated_values``, ``rcl_io.publish_all_stamped``).

Anything else returns an **event** (:data:`EV_SAMPLE` ...) and the node's Python does the rest of that sample as it
always does (``ClientHotPathNode.on_loop_event``). Plain Numba over :mod:`hil_common.rcl_io`'s compiled calls; no
rclpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hil_bringup import client_hot_path_kernel as _client_kernel
from hil_bringup import servicer_hot_path_kernel as _servicer_kernel
from hil_bringup import servicer_sample_loop as _servicer_loop
from hil_bringup.client_hot_path_kernel import CLIENT_EVENT, client_decimated_values, client_loop_sample
from hil_bringup.servicer_sample_loop import C_LAB, C_NODE, C_SIM, WAIT_STOPPED, _sim_time, sim_clock_ns, wait_wrenches
from hil_common import policy_kernel as _policy_kernel
from hil_common import rcl_io as _rcl_io
from hil_common.cdr import MALFORMED, Q_OK, DQ_OK
from hil_common.kernel_cache import drop_stale_code
from hil_common.policy_kernel import measurement_time, watch_sample
from hil_common.rcl_io import RCL_RET_OK, clock_now_ns, publish_all_stamped, publish_float64_array, \
    publish_serialized, take_joint_states, write_stamp
from hil_dynamics import kernels as _kernels
from hil_motion_table import ik_kernel as _ik_kernel
from hil_motion_table import table_kernel as _table_kernel

#: the loop's return: its stop guard condition was triggered (``hil_common.sample_loop.STOPPED``)
STOPPED = 0
#: events (the F/T row is ``ctl[K_ROW]``): the sample for the node's Python from its start, the joints taken (the state
#: not entered, the lab's clock not started, or ``client_loop_sample`` handed it back)
EV_SAMPLE = 1
#: the F/T row refused (malformed, or in another frame: its ``flags``)
EV_WRENCH = 2
#: the joint rows from ``ctl[K_AT]`` of ``ctl[K_TAKEN]`` left to Python, then the sample
EV_ROWS = 3
#: a command sent; the node's Python publishes the status it changed (a hold's end)
EV_AFTER = 4
EVENTS = {EV_SAMPLE: 'sample', EV_WRENCH: 'wrench', EV_ROWS: 'joint rows', EV_AFTER: 'after a command'}

#: ``ctl``: the event's row, where in a take it stopped and the take's size; flags the node sets at each entry (the
#: state entered, the after-command Python wanted); the decimation's count (the node's ``samples``); counts (samples,
#: commands, wake-ups); whether the row ``ctl[K_ROW]`` is still to run (a pause came while it waited for its
#: ``/clock``)
K_ROW, K_AT, K_TAKEN, K_ENTERED, K_AFTER, K_OUTPUTS, K_SAMPLES, K_COMMANDS, K_WAKES, K_PENDING, N_CTL = range(11)


@njit(cache=True, nogil=True)
def client_joint_rows(n_rows, q_rows, dq_rows, stamps, flags, now_s, by_stamp, initialized, q, dq, dq_ok, wf, wi):
    """The joint states, rows ``0..n_rows-1`` of a take (``rcl_io.JointStateStream``), each as
    ``ClientHotPath.joint_states(q, t, dq)`` with ``t`` its time (``policy_kernel.measurement_time`` of its stamp,
    ``by_stamp``, ``now_s``): ``q`` into the rule's ``q``, its rates into ``dq`` when measured (``dq_ok[0]``), a sample
    of the joints' watch (``wf, wi``). Returns the index of the first row it did not take (``n_rows``: all): a
    malformed row, one without every position (refused and counted in Python), or any row before the table is
    ``initialized`` (its first joints start it)."""
    n = q.shape[0]
    for k in range(n_rows):
        f = flags[k]
        if f & MALFORMED or not f & Q_OK or not initialized:
            return k
        for i in range(n):
            q[i] = q_rows[k, i]
        if f & DQ_OK:
            for i in range(n):
                dq[i] = dq_rows[k, i]
            dq_ok[0] = 1
        else:
            dq_ok[0] = 0
        watch_sample(wf, wi, measurement_time(stamps[k, 0], stamps[k, 1], by_stamp, now_s))
    return n_rows


@njit(cache=True, nogil=True)
def _lab_ns(clocks, newest, scratch):
    """The lab's time [ns] (the steady clock; under ``use_sim_time`` the twin's, ``sim_clock_ns``); -1 after an rcl
    error."""
    if clocks[C_SIM]:
        return sim_clock_ns(clocks[C_NODE], newest, scratch)
    if clock_now_ns(clocks[C_LAB], scratch) != RCL_RET_OK:
        return np.int64(-1)
    return scratch[0]


@njit(cache=True, nogil=True)
def _send(out, state, stamp, clocks, sample_ns, ctl):
    """A command's messages: the robot's command, the trace, every ``decimation``-th the decimated three, stamped with
    the node's clock now, or under ``use_sim_time`` with the sample's time ``sample_ns`` (the twin's: the executor's
    thread may set a newer one meanwhile, the twin's next step, which is not this state's time). rcl's return."""
    cmd, trace, decimated, decimation, fields, scratch = out
    rule, port, table, cf, ci = state
    publisher, message, data, values = cmd
    ret = publish_float64_array(publisher, message, data, values)
    if ret == RCL_RET_OK and trace[3]:
        write_stamp(trace[2], stamp[0], stamp[1])
        ret = publish_serialized(trace[0], trace[1])
    if ret != RCL_RET_OK:
        return ret
    ctl[K_OUTPUTS] += 1
    if ctl[K_OUTPUTS] % decimation == 0:
        ns_scratch = scratch[2]
        if clocks[C_SIM]:
            ns = sample_ns
        else:
            ret = clock_now_ns(clocks[C_NODE], ns_scratch)
            if ret != RCL_RET_OK:
                return ret
            ns = ns_scratch[0]
        state_pose, state_twist, passivity, pose = fields
        client_decimated_values(port[8], port[9], port[10], port[11], cf, port[0], state_pose, state_twist, passivity,
                                pose, scratch[0], scratch[1])
        publishers, messages, bufs, stamped = decimated
        ret = publish_all_stamped(publishers, messages, bufs, stamped, ns // 1_000_000_000, ns % 1_000_000_000)
    return ret


@njit(cache=True, nogil=True)
def client_sample_loop(waiting, wrench_in, clocks, sim, js, js_rows, state, out, ctl):
    """The F/T samples until the stop's guard condition, or an event (module docstring).

    ``waiting``: ``(wait set words, [F/T subscription], [stop guard], ready, timeout_ns)`` (``rcl_io.wait``);
    ``wrench_in``: ``rcl_io.take_wrenches``' arguments (an ``rcl_io.WrenchStream``'s); ``clocks``:
    ``servicer_sample_loop``'s ``C_LAB`` ...; ``sim``: ``servicer_sample_loop._sim_time``'s (read under
    ``use_sim_time`` only); ``js``: ``take_joint_states``' (``rcl_io.JointStateStream``'s); ``js_rows``:
    :func:`client_joint_rows`' arguments after the rows and times; ``state``: ``client_loop_sample``'s after the sample
    (``ClientLoopState.args``); ``out``: the command's messages (:func:`_send`); ``ctl``: :data:`K_ROW` ...

    Returns :data:`STOPPED`, an event, or ``-(rcl's return)`` after an rcl error."""
    wrenches, stamps, frame_lens, flags = wrench_in[4], wrench_in[5], wrench_in[7], wrench_in[8]
    now_scratch = np.zeros(1, dtype=np.int64)
    newest = sim[3]
    wakes = ctl[K_WAKES:K_WAKES + 1]
    while True:
        if ctl[K_PENDING]:            # the row a pause interrupted
            ctl[K_PENDING] = 0
            k = ctl[K_ROW]
        else:
            n = wait_wrenches(waiting, wrench_in, wakes)
            if n == WAIT_STOPPED:
                return STOPPED
            if n < 0:
                return n
            if n == 0:
                continue
            k = n - 1                 # (depth 1: the newest)
            ctl[K_ROW] = k
        if clocks[C_SIM] and flags[k] == 0:      # (a refused row's stamp is not waited for)
            ret = _sim_time(sim, stamps[k], clocks, now_scratch)
            if ret == 0:
                ctl[K_PENDING] = 1    # (the row runs when the loop enters again)
                return STOPPED
            if ret < 0:
                return ret
        now_ns = _lab_ns(clocks, newest, now_scratch)
        if now_ns < 0:
            return -1
        now_s = now_ns * 1e-9         # (as the node's lab_now reads it)
        if now_s <= 0.0 or not ctl[K_ENTERED]:
            return EV_SAMPLE          # (the twin's /clock not there yet: Python takes the joints and returns)
        n = take_joint_states(*js)
        if n < 0:
            return n
        done = client_joint_rows(n, js[9], js[10], js[11], js[12], now_s, *js_rows)
        if done < n:
            ctl[K_AT], ctl[K_TAKEN] = done, n
            return EV_ROWS
        if flags[k] != 0:
            return EV_WRENCH
        ctl[K_SAMPLES] += 1
        if client_loop_sample(wrenches[k], frame_lens[k] == 0, now_s, *state) == CLIENT_EVENT:
            ctl[K_SAMPLES] -= 1
            return EV_SAMPLE
        ctl[K_COMMANDS] += 1
        ret = _send(out, state, stamps[k], clocks, now_ns, ctl)
        if ret != RCL_RET_OK:
            return -ret if ret > 0 else ret
        if ctl[K_AFTER]:
            return EV_AFTER


def warm_up() -> None:
    """Compile (or load from the cache) :func:`client_sample_loop` with the types the fused client hot path passes: the
    node built with the Envisat graph's parameters on loopback loads it (``./dev`` runs this)."""
    from hil_bringup.client_hot_path_node import warm_up as node_warm_up

    node_warm_up()


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _ik_kernel, _table_kernel, _policy_kernel, _servicer_kernel, _client_kernel,
                _servicer_loop, _rcl_io)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_bringup.client_sample_loop: compiled loop ready ({_time.process_time() - _t0:.1f} s CPU)')
