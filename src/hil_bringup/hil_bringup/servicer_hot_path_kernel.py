"""The compiled part of a fused servicer hot path sample in one call (Numba; no rclpy).

:class:`hil_bringup.servicer_hot_path.ServicerHotPath` runs, for a wrist sample whose tick does not hold, the
servicer side's last step (:func:`hil_dynamics.servicer.port_step`: the table port's Eq. 28 observer, Eq. 18 under
``F_b + F_pc`` and Eq. 22's torques, seed 004) and then the KR 120's command for the new base pose
(:class:`hil_motion_table.motion_table_node.CommandFrame`'s flange target and twist feed-forward, the table's input
checks and its steps 2-7, :class:`hil_motion_table.table.MotionTable`). Each was a compiled call of its own with
Python around it. :func:`side_and_table_step` makes them one call, on the same arguments the separate calls get
(``servicer.port_step_args``, ``CommandFrame.kernel_args``, ``MotionTable.motion_args``), and the Python before
and after stays that of the separate calls (``servicer.port_step_outcome``, ``MotionTable.motion_outcome``): one
definition of each. ``test_servicer_hot_path_rule`` drives the hot path both ways with the same random sample
streams (jitter, late and dropped samples, faults, stale joints, table faults) and requires the same commands.

:func:`quiet_sample` runs, in the same call, the tick's policies of a quiet sample (``ServicerHotPath._step`` and
``ServicerSide.tick``: the joints' watch, the step grid's lead, the pacer, the overload guard, the held inputs; the
compiled forms of :mod:`hil_common.policy_kernel` on the policies' own arrays) and hands back anything else.

This is a step of the plan in docs/performance.md ("The servicer's sample with no Python"): the rule's compiled
calls of a sample in one, which a compiled loop can call as it is.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hil_common import policy_kernel as _policy_kernel
from hil_admittance.servicer_side import J_FIRST, J_HAS, J_STAMP
from hil_common.cdr import DQ_OK, MALFORMED, Q_OK, WHOLE_ROW
from hil_common.errors import StartError
from hil_common.kernel_cache import drop_stale_code
from hil_common.policy_kernel import GI_HOLDING, P_DROPPED, P_LAST_LATE, P_STEPS, P_T0, P_DT, S_OK, W_LAST, W_STATE, \
    guard_update, held_fresh, measurement_time, pacer_due, pacer_step_time, steps_since, watch_sample, watch_update
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import _OPTS, hold_torque_command, mat_vec_into, pose_mul_into, relative_mapping_into, \
    side_port_step, unforced_nominal_over, xyzquat_into
from hil_motion_table import ik_kernel as _ik_kernel
from hil_motion_table import table_kernel as _table_kernel
from hil_motion_table.ik_kernel import body_twist_into
from hil_motion_table.table_kernel import JOINT_LIMIT, SINGULAR, UNREACHABLE, WORKSPACE_EXIT, command_ok, loop_advance, \
    loop_dt, loop_motion, loop_motion_args, loop_restore, loop_save, table_motion

#: the table's part of :func:`side_and_table_step` when it did not run ``table_motion`` (its flags otherwise, >= 0)
TABLE_NOT_RUN, TABLE_INVALID_COMMAND, TABLE_STALE_MEASUREMENT = -1, -2, -3
#: ``MotionTable._check``'s tolerance on the command's rotation
ROTATION_TOL = 1e-6


@njit(**_OPTS)
def side_and_table_step(side_args, poses, x, has_home, home_y, y_inv, ad_flange_from_body, age, max_age, table_args,
                        cmd, twist):
    """``kernels.side_port_step(*side_args)`` (writing the new ``g_n, g_s`` into ``poses`` and ``V_n, V_s`` into
    ``x``, both among ``side_args``); when it stepped (status 0), the table's command for ``g_s``:

    * the flange target ``cmd = home Y g_s Y^-1`` (``g_s`` without a home) and the twist feed-forward
      ``twist = Ad_Y V_s`` (``V_s``), as ``CommandFrame.target_array`` and ``CommandFrame.twist``;
    * ``MotionTable._check``'s command check (finite, a rotation within :data:`ROTATION_TOL`, a finite twist) and
      its measurement age (``age <= max_age``);
    * ``table_motion(cmd, twist, *table_args)``.

    Returns ``(E_obs, pending, status, table)``: ``side_port_step``'s three, and ``table_motion``'s flags, or
    :data:`TABLE_NOT_RUN` (status not 0), :data:`TABLE_INVALID_COMMAND`, :data:`TABLE_STALE_MEASUREMENT`."""
    excess, pending, status = side_port_step(*side_args)
    if status != 0:
        return excess, pending, status, TABLE_NOT_RUN
    frame_target(poses[1], has_home, home_y, y_inv, cmd)
    if has_home:
        for i in range(6):
            t = 0.0
            for j in range(6):
                t += ad_flange_from_body[i, j] * x[6 + j]
            twist[i] = t
    else:
        for i in range(6):
            twist[i] = x[6 + i]
    if not command_ok(cmd[:9].reshape((3, 3)), cmd[9:], twist, ROTATION_TOL):
        return excess, pending, status, TABLE_INVALID_COMMAND
    if not age <= max_age:
        return excess, pending, status, TABLE_STALE_MEASUREMENT
    return excess, pending, status, table_motion(cmd, twist, *table_args)


@njit(**_OPTS)
def frame_target(g_s, has_home, home_y, y_inv, cmd):
    """The flange target for the table pose ``g_s``: ``cmd = home Y g_s Y^-1`` (``g_s`` without a home), as
    ``CommandFrame.target_array`` makes it (the same two compiled products)."""
    if has_home:
        partial = np.empty(12)
        pose_mul_into(home_y, g_s, partial)
        pose_mul_into(partial, y_inv, cmd)
    else:
        for i in range(12):
            cmd[i] = g_s[i]


#: :func:`quiet_sample`'s outcomes: a step and its command; no step due; a sample for Python; a held tick's steps
#: due (the overload guard holds: the caller runs them, :func:`loop_sample`)
QUIET_STEPPED, QUIET_NOT_DUE, QUIET_EVENT, QUIET_HELD = 0, 1, 2, 3
#: the steps :func:`loop_sample` runs in one sample (catch-up steps: the pacer's own limit drops the others, which
#: makes the sample an event)
LOOP_MAX_STEPS = 1_000_000


@njit(**_OPTS)
def _held_or(value, stamp, now_s, timeout_s, fallback, out):
    """``HeldInput.get(now_s, timeout_s, fallback)`` into ``out``."""
    source = value if held_fresh(stamp[0], now_s, timeout_s) else fallback
    for i in range(out.shape[0]):
        out[i] = source[i]


@njit(**_OPTS)
def quiet_sample(now_s, side_now_s, lead_s, timeout_s, plan_due_s, max_steps, held_ok, pf, pi, has_guard, gf, gi,
                 ring_t,
                 ring_steps, ring_late, wf, wi, saved_f, saved_i, held_values, held_stamps, zeros6, zeros_n, g, v, f_e,
                 f_b, tau, v_meas, side_args, poses, x, has_home, home_y, y_inv, ad_flange_from_body, max_age,
                 table_args, cmd, twist):
    """A wrist sample of the fused servicer hot path whose tick is quiet, in one call: what
    ``ServicerHotPath._step`` and ``ServicerSide.tick`` do in Python, on the policies' arrays
    (``hil_common.policy_kernel``: the table joints' watch ``wf, wi``, the side's pacer ``pf, pi`` and its overload
    guard), then the step (:func:`side_and_table_step` on ``side_args``, whose ``F_e``, ``F_b``, ``tau`` and
    measured twist are the arrays ``f_e, f_b, tau, v_meas`` this call fills from the held inputs:
    ``held_values``/``held_stamps`` in that order).

    Quiet: the joints usable, at most ``max_steps`` steps due (none dropped), the guard not holding, no re-basing
    plan due (the tick's first step's time ``>= plan_due_s``). With ``held_ok``, a tick the guard holds is quiet
    too: :data:`QUIET_HELD`, the policies moved on as the Python tick moves them and nothing else done (the caller
    runs the held steps: :func:`loop_sample`). The caller checked the rest (the side started and not
    held by a fault, the joints measured, the table unlatched, no re-basing under way). The steps before a tick's
    last (catch-up steps: ``ServicerSide.tick``'s ``port_step``, its compiled call ``kernels.side_port_step``) step the
    side's state ``g`` (``g_n, g_s`` rows) and ``v`` (``V_n; V_s``), which ``side_args`` read (a caller that owns
    them: ``loop_sample``; ``max_steps`` 1: untouched). Returns ``(outcome, age, E_obs, pending, status, table,
    steps)``: :data:`QUIET_STEPPED` with ``side_and_table_step``'s four; :data:`QUIET_NOT_DUE` (no step due: the
    policies moved on as the Python tick moves them); :data:`QUIET_EVENT` (not quiet, or a catch-up step refused
    its input: the policies are as they were, and the sample is for the Python path; after catch-up steps
    (``steps > 1``) the caller restores ``g``, ``v`` and the port's accumulators). ``saved_f``, ``saved_i``:
    scratch for the restore."""
    nf, ni = 0, 0
    for arr in (pf, gf, wf):
        saved_f[nf:nf + arr.shape[0]] = arr
        nf += arr.shape[0]
    for arr in (pi, gi, wi):
        saved_i[ni:ni + arr.shape[0]] = arr
        ni += arr.shape[0]
    watch_update(wf, wi, now_s)
    outcome = QUIET_STEPPED
    excess, pending, status, table, steps = 0.0, 0.0, 0, TABLE_NOT_RUN, 0
    age = now_s - wf[W_LAST]
    if wi[W_STATE] != S_OK:
        outcome = QUIET_EVENT                            # the side holds with the table's joints
    else:
        tick_s = quiet_tick_s(pf, pi, side_now_s, lead_s)
        steps = pacer_due(pf, pi, tick_s)
        if steps == 0:
            return QUIET_NOT_DUE, age, excess, pending, status, table, steps
        if steps > max_steps or pi[P_DROPPED] != 0:
            outcome = QUIET_EVENT                        # more catch-up steps than the caller runs, or dropped ones
        elif has_guard and guard_update(gf, gi, ring_t, ring_steps, ring_late, tick_s, pf[P_LAST_LATE], pi[P_DROPPED],
                                        steps) < 0:
            outcome = QUIET_EVENT                        # the guard's ring is full
        elif has_guard and gi[GI_HOLDING] != 0:          # the guard holds
            if held_ok and pacer_step_time(pf, pi[P_STEPS] - steps) < plan_due_s:
                return QUIET_HELD, age, excess, pending, status, table, steps
            outcome = QUIET_EVENT
        elif pacer_step_time(pf, pi[P_STEPS] - steps) >= plan_due_s:
            outcome = QUIET_EVENT                        # a re-basing plan is due
        else:
            _held_or(held_values[0], held_stamps[0], tick_s, timeout_s, zeros6, f_e)
            _held_or(held_values[1], held_stamps[1], tick_s, timeout_s, zeros6, f_b)
            _held_or(held_values[2], held_stamps[2], tick_s, timeout_s, zeros_n, tau)
            for _ in range(steps - 1):                   # catch-up steps: ServicerSide.tick's port_step
                _held_or(held_values[3], held_stamps[3], tick_s, timeout_s, v[6:], v_meas)
                excess, pending, status = side_port_step(*side_args)
                if status != 0:
                    outcome = QUIET_EVENT                # the Python path runs the tick (and raises, or counts)
                    break
                g[:] = poses                             # servicer.port_step_outcome's new state
                v[:] = x
            if outcome != QUIET_EVENT:
                _held_or(held_values[3], held_stamps[3], tick_s, timeout_s, v[6:], v_meas)
                excess, pending, status, table = side_and_table_step(side_args, poses, x, has_home, home_y, y_inv,
                                                                     ad_flange_from_body, age, max_age, table_args,
                                                                     cmd, twist)
    if outcome == QUIET_EVENT:
        _restore_policies(pf, gf, wf, pi, gi, wi, saved_f, saved_i)
    return outcome, age, excess, pending, status, table, steps


@njit(**_OPTS)
def quiet_tick_s(pf, pi, side_now_s, lead_s):
    """The time a quiet sample ticks the side's pacer at (``ServicerHotPath._step``): the grid's next step when it is
    at most ``lead_s`` ahead of ``side_now_s`` (led by the samples), else ``side_now_s``."""
    t_next = pacer_step_time(pf, pi[P_STEPS] + 1)
    return t_next if side_now_s < t_next <= side_now_s + lead_s else side_now_s


@njit(**_OPTS)
def quiet_steps_due(pf, pi, side_now_s, lead_s):
    """The steps a quiet sample's tick will run (``pacer_due`` at :func:`quiet_tick_s`, before the catch-up limit),
    without marking them: the table's step time is the tick's last step's."""
    return steps_since(pf[P_T0], quiet_tick_s(pf, pi, side_now_s, lead_s), pf[P_DT]) - pi[P_STEPS]


@njit(**_OPTS)
def _restore_policies(pf, gf, wf, pi, gi, wi, saved_f, saved_i):
    """The policies' arrays as :func:`quiet_sample` saved them at its start."""
    nf, ni = 0, 0
    for arr in (pf, gf, wf):
        arr[:] = saved_f[nf:nf + arr.shape[0]]
        nf += arr.shape[0]
    for arr in (pi, gi, wi):
        arr[:] = saved_i[ni:ni + arr.shape[0]]
        ni += arr.shape[0]


#: :func:`loop_sample`'s ``lf`` (float64): the side's state time, the last step's ``E_obs`` and pending
#: dissipation, the newest wrist sample's time
LF_T_SIDE, LF_EXCESS, LF_PENDING, LF_LAST_SAMPLE = range(4)
#: ``li`` (int64): the rule's counts since the loop's state was entered (samples, commands, samples with no step due,
#: catch-up steps: a tick's steps before its last; held commands), whether the newest command was held, and whether the
#: port's output ``pv`` (``held``'s) holds one (a step ran since the start). The table's state has its own
#: (``hil_motion_table.table_loop.TableLoopState``)
LI_SAMPLES, LI_COMMANDS, LI_NOT_DUE, LI_CATCH_UP, LI_HELD, LI_LAST_HELD, LI_HAS_PASSIVITY = range(7)
#: a fault of ``table_motion`` (the table holds: the Python path runs the sample)
_TABLE_FAULTS = WORKSPACE_EXIT | UNREACHABLE | SINGULAR | JOINT_LIMIT


@njit(**_OPTS)
def loop_sample(wrench_sensor, now_s, side_now_s, quiet, side, table, held, lf, li):
    """One wrist sample of the fused servicer hot path on state a compiled sample loop owns, with no Python: what
    ``ServicerHotPath.wrench`` does for a quiet sample (``servicer_hot_path.SampleLoopState``, which enters the rule's
    state into these arrays and leaves it back in the rule's objects):

    * the wrench in the sensor frame into ``F_e`` in the EE frame, held at ``side_now_s``
      (``ServicerSide.set_wrench_sensor``: ``hil_dynamics.kernels.mat_vec_into``);
    * :func:`quiet_sample` (the tick's policies, the side's last step and the table's check and steps 2-7), its
      table's arguments made here from the table's state (``MotionTable.motion_args``: ``dt`` since the previous
      step, the prediction's and the IK's state with their flags);
    * the step's outcome: the side's new state (``ServicerState.of_arrays``), the table's state moved on
      (``MotionTable.begin_step`` and ``motion_outcome``: the new command, the IK's solution, change and hint, the
      clamps counted) and the counts;
    * or a tick the overload guard holds (:data:`QUIET_HELD`), as ``ServicerSide.tick`` and ``ServicerHotPath._command``
      hold: the nominal moved on over the held steps with the base co-moving (``ServicerAdmittance.advance_nominal``:
      ``kernels.unforced_nominal_over``), the arm's torques its gravity compensation at the held pose
      (``ArmFeedForward.hold_torques``: ``kernels.hold_torque_command``), and the table's command for that pose with no
      twist feed-forward (its check and steps 2-7). The port's output is the last step's.

    ``quiet``: :func:`quiet_sample`'s arguments but the sample's times, the plan's, ``side_args`` and the table's;
    ``side``: ``(side_args, g, v, poses_out, x_out, acc, prev, acc_saved, prev_saved, to_ee)``, the state ``g``
    (``g_n, g_s`` rows) and ``v`` (``V_n; V_s``) that ``side_args`` read, the arrays it writes, the port's
    accumulators and their copies, the sensor-to-EE wrench matrix; ``table``: its state and constants; ``held``: a
    held tick's (``(nominal_ok, nominal constants, g_c, v_c, w_c, hold_args, tau_q, pv, no_twist)``: whether the
    nominal is a rigid body's, ``hil_dynamics.client.unforced_nominal_constants``, their scratch, the torques' call's
    arguments and output, the last step's port output ``[E_obs, E_port, E_integration, E_dissipated, beta]``, zeros)
    (``SampleLoopState``).

    Returns :data:`QUIET_STEPPED` (the command in the table's ``q_cmd``, the torques in ``side_args``' ``tau_q``),
    :data:`QUIET_HELD` (the same, held), :data:`QUIET_NOT_DUE`, or :data:`QUIET_EVENT`: any other sample (not quiet,
    a non-finite wrench, a step or a table command refused, a table fault, a held tick on a re-based nominal), every
    array as it was but the held ``F_e``, which the Python path sets again to the same value: it runs the sample."""
    (lead_s, timeout_s, plan_due_s, pf, pi, has_guard, gf, gi, ring_t, ring_steps, ring_late, wf, wi, saved_f, saved_i,
     held_values, held_stamps, zeros6, zeros_n, f_e, f_b, tau, v_meas, has_home, home_y, y_inv, ad, max_age, cmd,
     twist) = quiet
    side_args, g, v, poses_out, x_out, acc, prev, acc_saved, prev_saved, to_ee, g_saved, v_saved = side
    nominal_ok, nominal, g_c, v_c, w_c, hold_args, tau_q, pv, no_twist = held
    for i in range(6):
        if not np.isfinite(wrench_sensor[i]):
            return QUIET_EVENT
    mat_vec_into(to_ee, wrench_sensor, held_values[0])
    held_stamps[0][0] = side_now_s
    # the tick's last step's time, if steps are due (the table's command is for it)
    t = pacer_step_time(pf, pi[P_STEPS] + max(1, quiet_steps_due(pf, pi, side_now_s, lead_s)))
    dt = loop_dt(table, t)
    acc_saved[:] = acc
    prev_saved[:] = prev
    g_saved[:] = g
    v_saved[:] = v
    loop_save(table)
    table_args = loop_motion_args(table, True, dt)
    outcome, age, excess, pending, status, flags, steps = quiet_sample(
        now_s, side_now_s, lead_s, timeout_s, plan_due_s, LOOP_MAX_STEPS, nominal_ok, pf, pi, has_guard, gf, gi,
        ring_t, ring_steps, ring_late, wf, wi, saved_f, saved_i, held_values, held_stamps, zeros6, zeros_n, g, v, f_e,
        f_b, tau, v_meas, side_args, poses_out, x_out, has_home, home_y, y_inv, ad, max_age, table_args, cmd, twist)
    if outcome == QUIET_EVENT:
        if steps > 1:                                   # after catch-up steps: the side's state as it was
            acc[:] = acc_saved
            prev[:] = prev_saved
            g[:] = g_saved
            v[:] = v_saved
        return QUIET_EVENT
    if outcome == QUIET_NOT_DUE:
        li[LI_SAMPLES] += 1
        lf[LF_LAST_SAMPLE] = now_s
        li[LI_NOT_DUE] += 1
        return QUIET_NOT_DUE
    has_ff = outcome == QUIET_STEPPED
    if outcome == QUIET_HELD:
        # the table's command for the held pose g_s, without a twist (ServicerHotPath._command, MotionTable._check)
        frame_target(g[1], has_home, home_y, y_inv, cmd)
        flags = TABLE_INVALID_COMMAND
        if command_ok(cmd[:9].reshape((3, 3)), cmd[9:], no_twist, ROTATION_TOL) and age <= max_age:
            flags = loop_motion(cmd, no_twist, False, dt, table)
    if (outcome == QUIET_STEPPED and status != 0) or flags < 0 or flags & _TABLE_FAULTS:
        # the Python path runs it (and counts it) from the start
        _restore_policies(pf, gf, wf, pi, gi, wi, saved_f, saved_i)
        acc[:] = acc_saved
        prev[:] = prev_saved
        g[:] = g_saved
        v[:] = v_saved
        loop_restore(table)
        return QUIET_EVENT
    li[LI_SAMPLES] += 1
    lf[LF_LAST_SAMPLE] = now_s
    dt_side = side_args[4]
    if outcome == QUIET_HELD:
        # ServicerSide.tick's hold: the nominal moved on over the held steps, the base co-moving (g_s, V_s kept)
        # (RebaseFollower.advance -> ServicerAdmittance.advance_nominal -> client.unforced_nominal), the time with it
        duration = steps * dt_side
        unforced_nominal_over(g[0], v[:6], g_c, v_c, w_c, *nominal, dt_side, duration)
        lf[LF_T_SIDE] += duration
        hold_torque_command(g[1], *hold_args, tau_q)
        li[LI_HELD] += 1
        li[LI_LAST_HELD] = 1
    else:
        # the side's new state (servicer.port_step_outcome)
        g[:] = poses_out
        v[:] = x_out
        for _ in range(steps):                          # ServicerState's t + dt, a step at a time
            lf[LF_T_SIDE] += dt_side
        li[LI_CATCH_UP] += steps - 1
        lf[LF_EXCESS], lf[LF_PENDING] = excess, pending
        # the port's output (PassivityController.output), which held ticks publish again
        pv[0], pv[1], pv[2], pv[3], pv[4] = excess, acc[0], acc[1], acc[2] + pending, acc[3]
        li[LI_HAS_PASSIVITY] = 1
        li[LI_LAST_HELD] = 0
    # the table's command cycle (MotionTable.begin_step, motion_outcome)
    loop_advance(table, t, has_ff, flags)
    li[LI_COMMANDS] += 1
    return outcome


@njit(**_OPTS)
def _message_pose(g, out):
    """``hil_dynamics.kernels.pose_xyzquat``: a 12-array pose as ``[x, y, z, qx, qy, qz, qw]``, ``qw >= 0``."""
    xyzquat_into(g, out)
    if out[6] < 0.0:
        for i in range(3, 7):
            out[i] = out[i] * -1.0


@njit(**_OPTS)
def decimated_values(t0_ns, step_time_s, g, v, held, pv, pose, twist, state_pose, state_twist, passivity, g_abs, v_abs):
    """The values of the servicer side's decimated messages (``ServicerAdmittanceNode.publish_decimated``,
    ``ServicerMessages.encode``) for a loop's state (``servicer_hot_path_loop.SampleLoopState``: ``g`` = ``g_n, g_s``,
    ``v`` = ``V_n; V_s``, whether the newest command was ``held``, the port's newest output ``pv``), written into the
    messages' doubles: ``pose`` the table's pose ``g_s`` (``[x, y, z, qx, qy, qz, qw]``), ``twist`` its commanded
    twist (``V_s``; zero while held), ``state_pose`` and ``state_twist`` the base's absolute ``g_b, V_b`` (seed 004
    Eq. 23; ``g_abs``, ``v_abs``: scratch), ``passivity`` ``pv`` (``PassivityOutput.as_list``: ``[E_obs, E_port,
    E_integration, E_dissipated, beta]``). Returns the stamp, the step time ``step_time_s`` on the ROS clock from
    ``t0_ns``, in nanoseconds."""
    _message_pose(g[1], pose)
    for i in range(6):
        twist[i] = 0.0 if held else v[6 + i]
    relative_mapping_into(g[0], v[:6], g[1], v[6:], g_abs, v_abs)
    _message_pose(g_abs, state_pose)
    for i in range(6):
        state_twist[i] = v_abs[i]
    for i in range(5):
        passivity[i] = pv[i]
    return t0_ns + np.int64(round(step_time_s * 1e9))

#: a joint-state row the arm takes: a whole one (``hil_common.cdr.WHOLE_ROW``, ``JointStateStream.whole``)
ARM_ROW = WHOLE_ROW


@njit(**_OPTS)
def arm_joint_rows(n_rows, q_rows, dq_rows, stamps, flags, now_s, q, dq, ddq, jf):
    """The arm's joint states, rows ``0..n_rows-1`` of a take (``hil_common.rcl_io.JointStateStream``: positions,
    velocities, ``(sec, nanosec)`` stamps, flags), each as ``ServicerSide.set_joints(q, dq, now_s, sec + nanosec 1e-9)``
    on the side's :class:`hil_admittance.servicer_side.JointsState` (``q, dq, ddq, jf``): ``ddq`` by differencing
    ``dq`` over the measurements' times (seed 004 Eq. 18 and Eq. 22 take it), the same measurement again only
    replacing ``q``, a first sample or a clock that went back starting again with ``ddq = 0``.

    Returns the index of the first row it did not take (``n_rows``: all): a malformed row, or one without every
    joint's position and velocity, which the side refuses with a reason (the Python path takes it and the rest)."""
    n = q.shape[0]
    for k in range(n_rows):
        f = flags[k]
        if f & MALFORMED or f & ARM_ROW != ARM_ROW:
            return k
        if np.isnan(jf[J_FIRST]):
            jf[J_FIRST] = now_s
        stamp_s = float(stamps[k, 0]) + float(stamps[k, 1]) * 1e-9
        t = stamp_s if stamp_s > 0.0 else now_s
        prev = jf[J_STAMP]
        if not np.isnan(prev) and t == prev:
            for i in range(n):                 # the same measurement again: nothing to difference
                q[i] = q_rows[k, i]
            jf[J_HAS] = 1.0
            continue
        if not np.isnan(prev) and t > prev:
            for i in range(n):
                ddq[i] = (dq_rows[k, i] - dq[i]) / (t - prev)
        else:                                  # the first sample, or a clock that went back
            for i in range(n):
                ddq[i] = 0.0
        for i in range(n):
            q[i] = q_rows[k, i]
            dq[i] = dq_rows[k, i]
        jf[J_STAMP] = t
        jf[J_HAS] = 1.0
    return n_rows


@njit(**_OPTS)
def table_joint_rows(n_rows, q_rows, dq_rows, stamps, flags, now_s, side_now_s, by_stamp, initialized, q_measured,
                     q_flag, wf, wi, placements, kind, axis, frame_placement, ad_body_from_flange, poses, jac, scratch,
                     twist_value, twist_stamp):
    """The table's joint states, rows ``0..n_rows-1`` of a take, each as ``ServicerHotPath.table_joints(q, dq, t,
    side_now_s)`` with ``t`` its time (:func:`hil_common.policy_kernel.measurement_time` of its stamp, ``by_stamp``,
    ``now_s``): ``q`` into ``q_measured`` (``q_flag[0] = 1``), a sample of the joints' watch (``wf, wi``,
    :func:`hil_common.policy_kernel.watch_sample`), and with its velocities the base's measured twist
    ``Ad_{Y^-1} J_b(q) dq`` (``CommandFrame.twist_from_joints``'s call, ``ik_kernel.body_twist_into``; seed 004
    Eq. 28's ``Ṽ_s``) held at ``side_now_s`` (``twist_value``, ``twist_stamp``) when finite (``placements ...
    scratch``: its arguments).

    Returns the index of the first row it did not take (``n_rows``: all): a malformed row, one without every
    position (refused, counted), or any row before the table is ``initialized`` (its first joints start it)."""
    n = q_measured.shape[0]
    for k in range(n_rows):
        f = flags[k]
        if f & MALFORMED or not f & Q_OK or not initialized:
            return k
        for i in range(n):
            q_measured[i] = q_rows[k, i]
        q_flag[0] = 1.0
        watch_sample(wf, wi, measurement_time(stamps[k, 0], stamps[k, 1], by_stamp, now_s))
        if f & DQ_OK and body_twist_into(placements, kind, axis, frame_placement, ad_body_from_flange, q_measured,
                                         dq_rows[k], poses, jac, scratch, twist_value):
            twist_stamp[0] = side_now_s             # ServicerSide.set_twist_measured: held when finite
    return n_rows


def envisat_values(**graph_options) -> tuple[dict, np.ndarray, np.ndarray]:
    """The fused servicer hot path's parameters in the Envisat graph at 1 kHz (``graph_options`` are the graph's
    launch arguments, over ``servicer_hot_path: nodes``), validated as its node validates them, and the KR 120's
    start joints and the arm's: ``(values, q_table_0, q_arm)``."""
    from hil_bringup.facility import calibrate, load_facility
    from hil_bringup.graphs import envisat_graph
    from hil_bringup.scenario import load_scenario
    from hil_bringup.servicer_hot_path_node import PARAMS
    from hil_common.params import validate

    graph = envisat_graph({'servicer_hot_path': 'nodes', 'control_rate_hz': '1000.0', **graph_options})
    adm = {k: v for k, v in graph.node('/servicer_admittance').parameters.items() if k != 'mission_epoch_s'}
    values = validate(PARAMS, {**adm, **graph.node('/servicer/motion_table').parameters})
    scenario = load_scenario('envisat_capture')
    q_table_0 = np.array(calibrate(load_facility('envisat_lab'), scenario).q_table_0['servicer'])
    return values, q_table_0, np.array([float(v) for v in scenario.servicer.q_arm_0])


_NODE_GUARD = object()


def rule_of(values: dict, overload=_NODE_GUARD, **kwargs):
    """The rule (``ServicerHotPath``) on the validated parameters ``values`` as the node builds it
    (``servicer_hot_path_node.build_rule``), its side with ``overload`` (default: the node's guard from the
    parameters; None: none). ``kwargs`` go to ``build_rule`` (``fused``, ``quiet``, ``lead_s``, ...)."""
    from hil_admittance.servicer_admittance_node import build_side
    from hil_bringup.servicer_hot_path_node import build_rule
    from hil_common.overload import overload_guard
    from hil_common.params import ParamValues

    p = ParamValues(values)
    guard = overload_guard(p, 1.0 / p.rate_hz) if overload is _NODE_GUARD else overload
    return build_rule(p, build_side(p, guard), **kwargs)[0]


def envisat_rule(**kwargs):
    """The fused servicer hot path's rule with the Envisat graph's parameters at 1 kHz, as its node builds it (the
    side's overload guard included), and the KR 120's start joints and the arm's: ``(rule, q_table_0, q_arm)``.
    ``kwargs`` go to :func:`rule_of`."""
    values, q_table_0, q_arm = envisat_values()
    return rule_of(values, **kwargs), q_table_0, q_arm


def warm_up() -> None:
    """Compile (or load from the cache) :func:`side_and_table_step`, :func:`quiet_sample`, :func:`arm_joint_rows`,
    :func:`table_joint_rows`, :func:`loop_sample` and :func:`decimated_values` with the types the fused servicer hot
    path passes: its rule built with the Envisat graph's parameters loads them, and a few samples started it and ran
    one on a sample loop's state (``./dev`` runs this, so no node or test compiles them)."""
    from hil_admittance.servicer_side import ServicerMessages
    from hil_bringup.servicer_hot_path_loop import SampleLoopState

    rule, q_table_0, q_arm = envisat_rule(quiet=True)
    if rule.side.last_step is None or rule._quiet is False or rule.inputs_on_arrays() is None:
        raise StartError('servicer_hot_path_kernel: the Envisat servicer hot path does not take the one call, or its '
                         'joints in compiled code')
    side, zeros = rule.side, np.zeros(len(q_arm))
    t = 1.0
    for _ in range(3):          # the side started, the table initialized
        t += side.dt_s
        side.set_joints(q_arm, zeros, t, t)
        rule.table_joints(q_table_0, None, t, t)
        rule.wrench(np.zeros(6), t, t)
    state = SampleLoopState(rule)
    if not state.enter():
        raise StartError('servicer_hot_path_kernel: the Envisat servicer hot path cannot enter a sample loop\'s state')
    t += side.dt_s
    state.sample(np.zeros(6), t, t)
    # the decimated messages' values (on the messages' own views: their types), as the node writes them
    _, fields = ServicerMessages(('orbit', 'nominal', 'base')).fields()
    decimated_values(0, t, state.g, state.v, False, state.pv, *fields, np.empty(12), np.empty(6))
    state.leave()


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _ik_kernel, _table_kernel, _policy_kernel)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_bringup.servicer_hot_path_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
