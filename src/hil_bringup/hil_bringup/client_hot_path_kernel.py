"""A quiet sample of the fused client hot path in one compiled call (Numba; no rclpy; issue 17).

:class:`hil_bringup.client_hot_path.ClientHotPath` runs each F/T sample in Python around compiled calls: the
wrench's checks, the steps due, the overload guard and the joints' watch, the wrench at the CoM, the table's
measured twist, the port's Eq. (11) steps with the passivity observer (seed 004 Eqs. 11, 23, 28:
``kernels.client_port_step``) and the table's command (``MotionTable.step_array``: its check and steps 2-7).
:func:`client_loop_sample` is the same for a *quiet* sample, on state a sample loop owns
(``hil_bringup.client_hot_path_loop.ClientLoopState``), with no Python; any other sample comes back as an event,
with nothing changed, and the rule runs it in Python. ``test_client_hot_path_rule`` drives a rule through this call
and the rule in Python with the same random streams and requires the same commands and end state, to the bit.

This is step 1 of the plan in docs/performance.md ("The client's sample with no Python").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hil_common import policy_kernel as _policy_kernel
from hil_common.kernel_cache import drop_stale_code
from hil_common.policy_kernel import GI_HOLDING, S_OK, W_LAST, guard_update, watch_update
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import _OPTS, client_port_step, mat_vec_into, relative_mapping_into
from hil_motion_table import ik_kernel as _ik_kernel
from hil_motion_table import table_kernel as _table_kernel
from hil_motion_table.ik_kernel import body_twist_into
from hil_motion_table.table_kernel import JOINT_LIMIT, SINGULAR, UNREACHABLE, WORKSPACE_EXIT, command_ok, \
    loop_advance, loop_dt, loop_motion, loop_restore, loop_save
from hil_bringup import servicer_hot_path_kernel as _servicer_kernel
from hil_bringup.servicer_hot_path_kernel import ROTATION_TOL, _message_pose, frame_target

#: :func:`client_loop_sample`'s outcomes: a command (in the table loop state's ``q_cmd``); a sample for Python
CLIENT_STEPPED, CLIENT_EVENT = 0, 2
#: ``cf`` (float64): the previous sample's time (``ClientHotPath.t_last``), the admittance state's time, the port's
#: integration energy of its last step, that step's ``E_obs`` and pending dissipation
CF_T_LAST, CF_T_STATE, CF_E_INT, CF_EXCESS, CF_PENDING = range(5)
#: ``ci`` (int64): the counts since the state was entered (samples, commands, Eq. 11 steps, unframed samples) and the
#: steps of the newest command
CI_SAMPLES, CI_COMMANDS, CI_STEPS, CI_UNFRAMED, CI_LAST_STEPS = range(5)
#: a fault of ``table_motion`` (the table holds: the Python path runs the sample)
_TABLE_FAULTS = WORKSPACE_EXIT | UNREACHABLE | SINGULAR | JOINT_LIMIT


@njit(**_OPTS)
def _save_policies(gf, gi, wf, wi, saved_f, saved_i):
    n = gf.shape[0]
    saved_f[:n] = gf
    saved_f[n:n + wf.shape[0]] = wf
    n = gi.shape[0]
    saved_i[:n] = gi
    saved_i[n:n + wi.shape[0]] = wi


@njit(**_OPTS)
def _restore_policies(gf, gi, wf, wi, saved_f, saved_i):
    n = gf.shape[0]
    gf[:] = saved_f[:n]
    wf[:] = saved_f[n:n + wf.shape[0]]
    n = gi.shape[0]
    gi[:] = saved_i[:n]
    wi[:] = saved_i[n:n + wi.shape[0]]


@njit(**_OPTS)
def client_loop_sample(wrench_sensor, unframed, now_s, rule, port, table, cf, ci):
    """One F/T sample (``wrench_sensor`` in the sensor frame, its frame accepted; ``unframed``: it had none) at
    ``now_s`` on the lab's clock, as ``ClientHotPath.wrench`` runs a quiet one:

    * the wrench finite and within ``max_force_n``, ``max_torque_nm`` (``ClientHotPath.refusal``), held as the
      newest and the last accepted sample;
    * the time since the previous sample in at most ``max_catch_up`` steps' worth (none dropped), cut into
      ``max(1, floor(elapsed / dt + 0.5))`` equal steps;
    * the overload guard's update (not holding after it) and the joints' watch (usable): ``policy_kernel``'s
      ``guard_update`` and ``watch_update`` on the rule's own arrays;
    * no step at or after a re-basing plan's start (``plan_due_s``);
    * the wrench at the CoM (``hil_dynamics.kernels.mat_vec_into``), the table's measured twist
      (``ik_kernel.body_twist_into``, when the joints' rates were measured; else the commanded twist stands in),
      the port's steps (``kernels.client_port_step``: seed 004 Eqs. 28, 11, 23);
    * the table's command for ``g_c`` (``servicer_hot_path_kernel.frame_target``, the check of
      ``MotionTable._check``, ``table_kernel.loop_motion`` and ``loop_advance`` at ``now_s``).

    ``rule``: ``(dt, span, max_force, max_torque, plan_due_s, has_guard, gf, gi, ring_t, ring_steps, ring_late, wf,
    wi, saved_f, saved_i, last_wrench, newest_wrench, to_com, wrench_com, q, dq, dq_ok, placements, kind, axis,
    frame_placement, ad_body_from_flange, poses, jac, scratch, v_meas, has_home, home_y, y_inv, max_age, cmd,
    zeros6)``; ``port``: ``(acc, prev, m, enabled, max_rate, threshold, wrench_pc, applied, g_n, v_n, g_c, v_c,
    mass, inertia, inertia_inv, nom_m6, nom_m6_inv, saved)`` (``saved``: a 2 x 12 and a 2 x 6 array, and two for
    the port's accumulators); ``table``: a ``TableLoopState``'s ``args``.

    Returns :data:`CLIENT_STEPPED` or :data:`CLIENT_EVENT` (every array as it was, but the held wrenches, which the
    Python path sets again to the same values)."""
    (dt, span, max_force, max_torque, plan_due_s, has_guard, gf, gi, ring_t, ring_steps, ring_late, wf, wi, saved_f,
     saved_i, last_wrench, newest_wrench, to_com, wrench_com, q, dq, dq_ok, placements, kind, axis, frame_placement,
     ad_body_from_flange, poses, jac, scratch, v_meas, has_home, home_y, y_inv, max_age, cmd, zeros6) = rule
    (acc, prev, m, enabled, max_rate, threshold, wrench_pc, applied, g_n, v_n, g_c, v_c, mass, inertia, inertia_inv,
     nom_m6, nom_m6_inv, saved) = port
    g_saved, v_saved, acc_saved, prev_saved = saved
    fx, fy, fz = wrench_sensor[0], wrench_sensor[1], wrench_sensor[2]
    tx, ty, tz = wrench_sensor[3], wrench_sensor[4], wrench_sensor[5]
    for i in range(6):
        if not math.isfinite(wrench_sensor[i]):
            return CLIENT_EVENT
    if math.sqrt(fx * fx + fy * fy + fz * fz) > max_force or math.sqrt(tx * tx + ty * ty + tz * tz) > max_torque:
        return CLIENT_EVENT
    t_from = cf[CF_T_LAST]
    elapsed = now_s - t_from
    if not elapsed > 0.0 or elapsed > span:
        return CLIENT_EVENT                              # not due (one instant), or time to drop
    steps = max(1, int(math.floor(elapsed / dt + 0.5)))
    h = elapsed / steps
    if t_from + (steps - 1) * h >= plan_due_s:
        return CLIENT_EVENT                              # a re-basing plan's step
    _save_policies(gf, gi, wf, wi, saved_f, saved_i)
    if has_guard and (guard_update(gf, gi, ring_t, ring_steps, ring_late, now_s, elapsed - dt, 0, steps) < 0
                      or gi[GI_HOLDING] != 0):
        _restore_policies(gf, gi, wf, wi, saved_f, saved_i)
        return CLIENT_EVENT
    if watch_update(wf, wi, now_s) != S_OK:
        _restore_policies(gf, gi, wf, wi, saved_f, saved_i)
        return CLIENT_EVENT
    for i in range(6):
        newest_wrench[i] = wrench_sensor[i]
        last_wrench[i] = wrench_sensor[i]
    mat_vec_into(to_com, last_wrench, wrench_com)
    measured = dq_ok[0] != 0
    if measured and not body_twist_into(placements, kind, axis, frame_placement, ad_body_from_flange, q, dq, poses,
                                        jac, scratch, v_meas):
        _restore_policies(gf, gi, wf, wi, saved_f, saved_i)
        return CLIENT_EVENT                              # not finite: the port refuses it in Python
    g_saved[0], g_saved[1], v_saved[0], v_saved[1] = g_n, g_c, v_n, v_c
    acc_saved[:] = acc
    prev_saved[:] = prev
    e_int, excess, pending = cf[CF_E_INT], 0.0, 0.0
    ok = True
    for _ in range(steps):
        excess, pending, e_int = client_port_step(acc, prev, m, v_meas if measured else v_c, wrench_com, h, e_int,
                                                  enabled, max_rate, threshold, wrench_pc, applied, g_n, v_n, g_c,
                                                  v_c, mass, inertia, inertia_inv, nom_m6, nom_m6_inv)
        if pending < 0.0:
            ok = False
            break
    if ok:
        frame_target(g_c, has_home, home_y, y_inv, cmd)
        ok = command_ok(cmd[:9].reshape((3, 3)), cmd[9:], zeros6, ROTATION_TOL) and now_s - wf[W_LAST] <= max_age
    flags = 0
    if ok:
        dt_table = loop_dt(table, now_s)
        loop_save(table)
        flags = loop_motion(cmd, zeros6, False, dt_table, table)
        ok = (flags & _TABLE_FAULTS) == 0
        if not ok:
            loop_restore(table)
    if not ok:
        g_n[:], g_c[:], v_n[:], v_c[:] = g_saved[0], g_saved[1], v_saved[0], v_saved[1]
        acc[:] = acc_saved
        prev[:] = prev_saved
        _restore_policies(gf, gi, wf, wi, saved_f, saved_i)
        return CLIENT_EVENT
    loop_advance(table, now_s, False, flags)
    t_state = cf[CF_T_STATE]
    for _ in range(steps):                               # ClientState's t + dt, a step at a time
        t_state += h
    cf[CF_T_STATE] = t_state
    cf[CF_T_LAST] = now_s
    cf[CF_E_INT], cf[CF_EXCESS], cf[CF_PENDING] = e_int, excess, pending
    ci[CI_SAMPLES] += 1
    ci[CI_COMMANDS] += 1
    ci[CI_STEPS] += steps
    ci[CI_UNFRAMED] += unframed
    ci[CI_LAST_STEPS] = steps
    return CLIENT_STEPPED


@njit(**_OPTS)
def client_decimated_values(g_n, v_n, g_c, v_c, cf, acc, state_pose, state_twist, passivity, pose, g_abs, v_abs):
    """The values of the client's decimated messages for a loop's state (``ClientLoopState``: its ``g_n, V_n, g_c,
    V_c``, ``cf``, the port's sums ``acc``), written into the messages' doubles: ``state_pose``, ``state_twist`` the
    client's absolute ``g_t, V_t`` (seed 004 Eq. 23, ``ClientState.absolute_arrays``; ``g_abs``, ``v_abs``:
    scratch), ``passivity`` the port's output (``ClientPort.out.as_list()``: ``[E_obs, E_port, E_integration,
    E_dissipated, beta]``), ``pose`` ``g_c``; the poses as ``[x, y, z, qx, qy, qz, qw]``, ``qw >= 0``
    (``kernels.pose_xyzquat``). One definition for the node's callback and its compiled loop
    (``client_sample_loop``)."""
    relative_mapping_into(g_n, v_n, g_c, v_c, g_abs, v_abs)
    _message_pose(g_abs, state_pose)
    for i in range(6):
        state_twist[i] = v_abs[i]
    passivity[0], passivity[1], passivity[2] = cf[CF_EXCESS], acc[0], acc[1]
    passivity[3], passivity[4] = acc[2] + cf[CF_PENDING], acc[3]
    _message_pose(g_c, pose)


def warm_up() -> None:
    """Compile (or load from the cache) :func:`client_loop_sample` with the types the fused client hot path passes:
    the Envisat client's rule, started, and one sample on its loop's state (``./dev`` runs this)."""
    from hil_bringup.client_hot_path_loop import ClientLoopState, envisat_client_rule
    from hil_common.errors import StartError

    rule, q0 = envisat_client_rule()
    t = 1.0
    for _ in range(3):
        t += 1e-3
        rule.joint_states(q0, t, np.zeros_like(q0))
        rule.wrench(np.zeros(6), '', t)
    state = ClientLoopState(rule)
    if not state.enter():
        raise StartError('client_hot_path_kernel: the Envisat client hot path cannot enter a sample loop\'s state')
    t += 1e-3
    state.sample(np.zeros(6), True, t)
    state.decimated_values()
    state.leave()


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _ik_kernel, _table_kernel, _policy_kernel, _servicer_kernel)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_bringup.client_hot_path_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
