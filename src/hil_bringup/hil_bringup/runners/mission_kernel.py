"""Quiet steps of the two Envisat lockstep runners in one compiled call (Numba; no rclpy; issue 17).

:class:`hil_bringup.runners.mission.HilMission` and :class:`~hil_bringup.runners.mission.AbsoluteMission` step in
Python around compiled calls: the OBSW's tick at its rate, the latched gripper's wrenches
(``kernels.latched_grasp_step``), then each body's step. While the gripper is open or latched and the OBSW switches
no phase, a step changes nothing but the state those calls step. :func:`hil_steps` and :func:`absolute_steps` run
such *quiet* steps, many at once (a runner's record to the next), calling the same kernels in the same order:

* the OBSW's ticks (``obsw_kernel.obsw_step`` on ``ObswController.loop_ticks``' arrays, the on-board states of
  Eq. (23) written first), their ``F_b`` and ``tau`` held until the next;
* ``hil_steps`` (seed 004 Fig. 7 with ideal robots): the latched wrenches at the tables' poses and twists; the
  re-basing ramp's increments on both sides (``kernels.rebase_increment``); the client port's Eq. (28) observer and
  Eq. (11) step (``kernels.client_port_step``, measured twist = the commanded one); the servicer port's observer
  and the Eq. (18)/(22)/(20) lockstep step (``kernels.lockstep_port_step``);
* ``absolute_steps`` (the "GNCDE" reference): the latched wrenches in orbit, the free-floating servicer's RKMK4
  step (``kernels.free_floating_inputs_step``) and the client's Eq. (2) step (``kernels.rigid_rkmk4_step``).

Both step the state in place on arrays the caller made for the call, and stop before a step whose inputs are not
finite (the Python step then runs it and names the input). ``test_envisat_mission`` runs each runner's whole
capture with and without these calls and requires the same records, to the bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hil_admittance import obsw_kernel as _obsw_kernel
from hil_admittance.obsw_kernel import KINEMATICS, LAW, MODE_PATH, P_BASE, P_CLIENT, V_Q, V_TAU, V_TWIST_CLIENT, \
    V_VELOCITY, V_WRENCH_BASE, obsw_step
from hil_bringup import servicer_hot_path_kernel as _servicer_kernel
from hil_bringup.servicer_hot_path_kernel import ROTATION_TOL, frame_target
from hil_common.kernel_cache import drop_stale_code
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import _OPTS, _act_force_add, _cross, _finite3, _min_jerk, _rtv, admittance_inputs_step, \
    arm_torque_command, client_port_step, client_rkmk4_step, free_floating_inputs_step, latched_grasp_step, \
    lockstep_port_step, nominal_acceleration_into, rebase_increment, relative_into, relative_mapping_into, \
    rigid_rkmk4_step
from hil_lab_twin import twin_loop as _twin_loop
from hil_lab_twin.twin_loop import loop_ft_sample, loop_mj_step, loop_pre_step
from hil_motion_table import ik_kernel as _ik_kernel
from hil_motion_table import table_kernel as _table_kernel
from hil_motion_table.table_kernel import JOINT_LIMIT, SINGULAR, UNREACHABLE, WORKSPACE_EXIT, command_ok, loop_advance, \
    loop_dt, loop_motion, loop_restore, loop_save

#: ``fo`` (float64), what the steps leave besides the state: the client's and the servicer's state times, the client
#: port's ``E_obs``, pending dissipation and integration energy of its last step, the servicer port's ``E_obs`` and
#: pending dissipation (``hil_steps``); the client's time (``absolute_steps``)
FO_T_CLIENT, FO_T_SERVICER, FO_C_EXCESS, FO_C_PENDING, FO_C_E_INT, FO_S_EXCESS, FO_S_PENDING, FO_TICKS = range(8)
N_FO = FO_TICKS + 1
#: ``obsw_mode`` when the call runs no OBSW tick (it then stops before the next)
NO_TICKS = -1
#: a fault of ``table_motion`` (the table holds: its Python step runs the command)
_TABLE_FAULTS = WORKSPACE_EXIT | UNREACHABLE | SINGULAR | JOINT_LIMIT


@njit(**_OPTS)
def _contact(latched, kin_parents, kin_placements, kin_kind, kin_axis, kin_ee_joint, kin_flange_in_joint, kin_xs,
             kin_tmp, q, g_c, v_c, g_s, v_s, dq, tool_in_flange, grasp_in_client, rest, stiffness, damping, w_tool,
             w_flange, w_client, w_port):
    """The gripper's wrenches of this step: the latched ones (``latched_grasp_step``), else none."""
    if latched:
        latched_grasp_step(kin_parents, kin_placements, kin_kind, kin_axis, kin_ee_joint, kin_flange_in_joint, kin_xs,
                           kin_tmp, q, g_c, v_c, g_s, v_s, dq, tool_in_flange, grasp_in_client, rest, stiffness,
                           damping, w_tool, w_flange, w_client, w_port)
    else:
        w_tool[:] = 0.0
        w_flange[:] = 0.0
        w_client[:] = 0.0
        w_port[:] = 0.0


@njit(**_OPTS)
def _inputs_finite(f_b, tau, w_tool, w_flange, w_client, w_port, v_1, v_2, v_3, v_4, q, dq):
    """Whether a step's held inputs, its wrenches and the state's vectors are all finite."""
    return (_finite3(f_b, tau, w_tool) and _finite3(w_flange, w_client, w_port) and _finite3(v_1, v_2, v_3)
            and _finite3(v_4, q, dq))


@njit(**_OPTS)
def _tick_due(k, k0, steps_per_tick, obsw_mode):
    """Whether the call's step ``k`` (the runner's ``k0 + k``) starts with an OBSW tick the call runs (the tick of
    its first step is the caller's)."""
    return k > 0 and (k0 + k) % steps_per_tick == 0 and obsw_mode != NO_TICKS


@njit(**_OPTS)
def _obsw_tick(t, mode, t_approach, approach_s, v_t, v_b, q, dq, f_b, tau, poses, vecs, mats, scalars, homogeneous,
               parents, placements, kind, axis, inertia, ee_joint, work, work_ic):
    """One OBSW tick as ``ObswController.update`` runs it between phase switches (``loop_ticks``): the on-board
    states in its arrays (``g_t``, ``g_b`` already in ``poses``), :func:`obsw_step` of ``mode`` at the path's
    min-jerk fraction, and its ``F_b`` and ``tau`` into ``f_b`` and ``tau`` (held until the next tick)."""
    n = q.shape[0]
    vecs[V_TWIST_CLIENT, :6] = v_t
    vecs[V_VELOCITY, :6] = v_b
    vecs[V_VELOCITY, 6:] = dq
    vecs[V_Q, :n] = q
    s = _min_jerk((t - t_approach) / approach_s) if mode == MODE_PATH else 0.0
    obsw_step(mode, KINEMATICS | LAW, s, poses, vecs, mats, scalars, homogeneous, parents, placements, kind, axis,
              inertia, ee_joint, work, work_ic)
    f_b[:] = vecs[V_WRENCH_BASE, :6]
    tau[:] = vecs[V_TAU, :n]


@njit(**_OPTS)
def hil_steps(steps, dt, latched, kin_parents, kin_placements, kin_kind, kin_axis, kin_ee_joint, kin_flange_in_joint,
              kin_xs, kin_tmp, tool_in_flange, grasp_in_client, rest, stiffness, damping, w_tool, w_flange, w_client,
              w_port, c_acc, c_prev, c_m, c_enabled, c_max_rate, c_threshold, c_wrench_pc, c_applied, g_nc, v_nc, g_c,
              v_c, c_mass, c_inertia, c_inertia_inv, c_nom_m6, c_nom_m6_inv, s_acc, s_prev, s_m, s_enabled,
              s_max_rate, s_threshold, s_wrench_pc, g_ns, v_ns, g_s, v_s, q, dq, f_b, tau, ee_joint, placement,
              fext_o, fext_g, co, lab_gravity, nominal_in_lab, s_nom_m6, s_nom_m6_inv, w_ff1, w_ff23, w_grav, work,
              work_ic, poses_out, x_out, fo, k0, ramp_s, v_old_s, v_new_s, ramp_c, v_old_c, v_new_c, steps_per_tick,
              obsw_mode, t_approach, approach_s, obsw):
    """Up to ``steps`` quiet steps of ``HilMission.advance`` (see the module docstring) from the runner's step
    ``k0`` on the state ``g_nc, v_nc, g_c, v_c`` (client), ``g_ns, v_ns, g_s, v_s, q, dq`` (servicer) in place, the
    times in ``fo``; ``F_b`` and ``tau`` held. ``ramp_s`` and ``ramp_c`` are the two sides' re-basing increments
    (``PlannedRebase.loop_args``; their ``rs`` not active where there are none), applied before each step as
    ``HilMission.rebase_update`` does (``kernels.rebase_increment``: the servicer's, then the client's), into the
    nominal's ``s_nom_m6``/``c_nom_m6`` and their inverses. The OBSW's ticks (every ``steps_per_tick`` steps of
    the runner) after the first step are the call's (:func:`_obsw_tick` on ``obsw``, ``ObswController.loop_ticks``;
    their count in ``fo``), unless ``obsw_mode`` is ``NO_TICKS``: then ``steps`` ends before the next tick.
    Returns the steps done: fewer where an input or the state of the next step was not finite (nothing of that step
    changed but its tick: the caller's Python step runs it and names what); ``-k - 1`` where step ``k`` failed
    half-way, with finite inputs (a state that overflowed)."""
    n = q.shape[0]
    v_meas_c, v_meas_s, v_t, v_b = np.empty(6), np.empty(6), np.empty(6), np.empty(6)
    obsw_poses = obsw[0]
    for k in range(steps):
        t = (k0 + k) * dt
        if _tick_due(k, k0, steps_per_tick, obsw_mode):     # the on-board states of Eq. (23), then the rule
            relative_mapping_into(g_nc, v_nc, g_c, v_c, obsw_poses[P_CLIENT], v_t)
            relative_mapping_into(g_ns, v_ns, g_s, v_s, obsw_poses[P_BASE], v_b)
            _obsw_tick(t, obsw_mode, t_approach, approach_s, v_t, v_b, q, dq, f_b, tau, *obsw)
            fo[FO_TICKS] += 1.0
        _contact(latched, kin_parents, kin_placements, kin_kind, kin_axis, kin_ee_joint, kin_flange_in_joint, kin_xs,
                 kin_tmp, q, g_c, v_c, g_s, v_s, dq, tool_in_flange, grasp_in_client, rest, stiffness, damping, w_tool,
                 w_flange, w_client, w_port)
        if not _inputs_finite(f_b, tau, w_tool, w_flange, w_client, w_port, v_nc, v_c, v_ns, v_s, q, dq):
            return k
        if rebase_increment(t, dt, *ramp_s, v_old_s, v_new_s, g_ns, v_ns, g_s, v_s, s_nom_m6, s_nom_m6_inv) == 2 or \
                rebase_increment(t, dt, *ramp_c, v_old_c, v_new_c, g_nc, v_nc, g_c, v_c, c_nom_m6, c_nom_m6_inv) == 2:
            return -k - 1
        # ideal tables (Assumption 1): the measured port twists are the commanded ones before the step
        v_meas_c[:] = v_c
        v_meas_s[:] = v_s
        excess, pending, e_int = client_port_step(c_acc, c_prev, c_m, v_meas_c, w_client, dt, fo[FO_C_E_INT],
                                                  c_enabled, c_max_rate, c_threshold, c_wrench_pc, c_applied, g_nc,
                                                  v_nc, g_c, v_c, c_mass, c_inertia, c_inertia_inv, c_nom_m6,
                                                  c_nom_m6_inv)
        if pending < 0.0:
            return -k - 1
        fo[FO_T_CLIENT] += dt
        fo[FO_C_EXCESS], fo[FO_C_PENDING], fo[FO_C_E_INT] = excess, pending, e_int
        excess, pending, status = lockstep_port_step(s_acc, s_prev, s_m, v_meas_s, w_port, dt, 0.0, s_enabled,
                                                     s_max_rate, s_threshold, s_wrench_pc, g_ns, v_ns, g_s, v_s, q,
                                                     dq, f_b, w_flange, tau, ee_joint, placement, fext_o, fext_g, co,
                                                     lab_gravity, nominal_in_lab, s_nom_m6, s_nom_m6_inv, w_ff1,
                                                     w_ff23, w_grav, work, work_ic, poses_out, x_out)
        fo[FO_S_EXCESS], fo[FO_S_PENDING] = excess, pending
        if status != 0:
            return -k - 1
        g_ns[:] = poses_out[0]
        g_s[:] = poses_out[1]
        v_ns[:] = x_out[:6]
        v_s[:] = x_out[6:12]
        q[:] = x_out[12:12 + n]
        dq[:] = x_out[12 + n:]
        fo[FO_T_SERVICER] += dt
    return steps


@njit(**_OPTS)
def absolute_steps(steps, dt, latched, kin_parents, kin_placements, kin_kind, kin_axis, kin_ee_joint,
                   kin_flange_in_joint, kin_xs, kin_tmp, tool_in_flange, grasp_in_client, rest, stiffness, damping,
                   w_tool, w_flange, w_client, w_port, g_t, v_t, t_m6, t_m6_inv, g_b, v_b, q, dq, f_b, tau,
                   flange_in_joint, ee_joint, fext, co, work, work_ic, poses_out, x_out, fo, k0, steps_per_tick,
                   obsw_mode, t_approach, approach_s, obsw):
    """Up to ``steps`` quiet steps of ``AbsoluteMission.advance`` from the runner's step ``k0`` on the client
    ``g_t, v_t`` and the servicer ``g_b, v_b, q, dq`` in place (the client's time in ``fo``), ``F_b`` and ``tau`` held
    between the OBSW's ticks, which the call runs as :func:`hil_steps` does. Returns the steps done, as
    :func:`hil_steps`."""
    n = q.shape[0]
    obsw_poses = obsw[0]
    for k in range(steps):
        if _tick_due(k, k0, steps_per_tick, obsw_mode):
            obsw_poses[P_CLIENT] = g_t
            obsw_poses[P_BASE] = g_b
            _obsw_tick((k0 + k) * dt, obsw_mode, t_approach, approach_s, v_t, v_b, q, dq, f_b, tau, *obsw)
            fo[FO_TICKS] += 1.0
        _contact(latched, kin_parents, kin_placements, kin_kind, kin_axis, kin_ee_joint, kin_flange_in_joint, kin_xs,
                 kin_tmp, q, g_t, v_t, g_b, v_b, dq, tool_in_flange, grasp_in_client, rest, stiffness, damping, w_tool,
                 w_flange, w_client, w_port)
        if not _inputs_finite(f_b, tau, w_tool, w_flange, w_client, w_port, v_t, v_t, v_b, v_b, q, dq):
            return k
        if not free_floating_inputs_step(g_b, v_b, q, dq, dt, f_b, tau, w_flange, flange_in_joint, ee_joint, fext, co,
                                         work, work_ic, poses_out, x_out):
            return -k - 1
        g_b[:] = poses_out[0]
        v_b[:] = x_out[:6]
        q[:] = x_out[6:6 + n]
        dq[:] = x_out[6 + n:]
        rigid_rkmk4_step(g_t, v_t, w_client, t_m6, t_m6_inv, dt)
        fo[FO_T_CLIENT] += dt
    return steps


@njit(**_OPTS)
def twin_rules_step(dt, sensor_in_client, w_client_sensor, wrist_in_flange, w_wrist_sensor, w_client, w_wrist, g_nc,
                    v_nc, g_c, v_c, c_mass, c_inertia, c_inertia_inv, c_nom_m6, c_nom_m6_inv, g_ns, v_ns, g_s, v_s, q,
                    dq, ddq, f_b, ee_joint, placement, fext, zero_fext, co, s_nom_m6, s_nom_m6_inv, work, work_ic,
                    poses_out, x_out, tau_obsw, ff_co, lab_gravity, nominal_in_lab, w_ff1, w_ff23, w_grav, ff_work,
                    ff_work_ic, tw, vn_dot, tau_q):
    """The rules of one ``TwinHilMission`` step in one call (``TwinHilMission.rules_reference`` is the same with the
    rules' own methods): the processed F/T samples moved to the client's CoM (seed 004 §III-A: a constant transform)
    and to the arm's flange; the client admittance's Eq. (11) step (``kernels.client_rkmk4_step``, in place on
    ``g_nc, v_nc, g_c, v_c``); the servicer admittance's Eq. (18) step with the arm's measured joints
    (``kernels.admittance_inputs_step`` into ``poses_out``, ``x_out``); Eq. (22)'s ``tau_q`` at the new state
    (``kernels.arm_torque_command`` with ``V_n_dot`` of Eq. 4). Returns False, and changes nothing, if an input is
    not finite (the rules' methods then name it)."""
    if not (_finite3(w_client_sensor, w_wrist_sensor, f_b) and _finite3(q, dq, ddq) and _finite3(tau_obsw, v_c, v_s)):
        return False
    w_client[:] = 0.0
    _act_force_add(sensor_in_client, w_client_sensor, w_client)
    w_wrist[:] = 0.0
    _act_force_add(wrist_in_flange, w_wrist_sensor, w_wrist)
    client_rkmk4_step(g_nc, v_nc, g_c, v_c, w_client, c_mass, c_inertia, c_inertia_inv, c_nom_m6, c_nom_m6_inv, dt)
    admittance_inputs_step(g_ns, v_ns, g_s, v_s, dt, q, dq, ddq, f_b, w_wrist, ee_joint, placement, fext, zero_fext, co,
                           s_nom_m6, s_nom_m6_inv, work, work_ic, poses_out, x_out)
    nominal_acceleration_into(x_out[:6], s_nom_m6, s_nom_m6_inv, vn_dot)
    arm_torque_command(poses_out[1], x_out[:6], x_out[6:], vn_dot, q, dq, tau_obsw, ff_co[0], ff_co[1], ff_co[2],
                       ff_co[3], ff_co[4], lab_gravity, nominal_in_lab, w_ff1, w_ff23, w_grav, ff_work, ff_work_ic, tw,
                       tau_q)
    return True


@njit(**_OPTS)
def twin_table_step(g_body, start, home_y, y_inv, cmd, zeros6, t, table):
    """``MotionTable.step`` of a ``TwinHilMission`` table on its loop state ``table``
    (``hil_motion_table.table_loop.TableLoopState.args``, the measured joints its IK's seed) at ``t``: the body's
    pose relative to its start ``start^-1 g_body`` (the client's: ``start`` the identity), its flange target
    ``home Y g Y^-1`` (``servicer_hot_path_kernel.frame_target``), the command's check, steps 2-7
    (``table_kernel.loop_motion``) and the state moved on (``loop_advance``). Returns True with the command in the
    state's ``q_cmd``; False, the state as it was, for a command the check refuses or a fault: the table's own step
    then runs it (and holds)."""
    body = np.empty(12)
    relative_into(start, g_body, body)
    frame_target(body, True, home_y, y_inv, cmd)
    if not command_ok(cmd[:9].reshape((3, 3)), cmd[9:], zeros6, ROTATION_TOL):
        return False
    dt = loop_dt(table, t)
    loop_save(table)
    flags = loop_motion(cmd, zeros6, False, dt, table)
    if flags & _TABLE_FAULTS:
        loop_restore(table)
        return False
    loop_advance(table, t, False, flags)
    return True


@njit(**_OPTS)
def twin_ft_chain_into(raw, site_xmat, site, mass, gravity, com, offset, deadband, g_w, out):
    """A twin F/T reading ``raw`` through the driver's chain as ``TwinFtSensor.wrench_of`` runs it (its readable
    form: ``ToolGravity.set_sensor_rotation`` at the sensor site's rotation ``R`` (row ``site`` of MuJoCo's
    ``site_xmat``), then ``WrenchChain.process`` with no filter): the tool's weight ``g_w = [m R^T g; c x m R^T g]``,
    ``out = soft_deadband((raw - g_w) - offset)`` (``offset`` the tare's). Returns False if ``g_w`` or the
    compensated wrench is not finite (the readable form names it)."""
    r_g = _rtv(site_xmat[site], gravity[0], gravity[1], gravity[2])        # (the 9 rotation entries, row-major)
    g_w[0], g_w[1], g_w[2] = mass * r_g[0], mass * r_g[1], mass * r_g[2]
    g_w[3], g_w[4], g_w[5] = _cross(com[0], com[1], com[2], g_w[0], g_w[1], g_w[2])
    for i in range(6):
        v = (raw[i] - g_w[i]) - offset[i]
        if not (np.isfinite(v) and np.isfinite(g_w[i])):
            return False
        w = deadband[i]
        out[i] = 0.0 if abs(v) <= w else (v - w if v > 0 else v + w)
    return True


#: ``twin_loop_step``'s flags: the rules refused their inputs (nothing done); a table refused its command; the twin's
#: step refused (a ring full)
LOOP_RULES_REFUSED, LOOP_CLIENT_TABLE_REFUSED, LOOP_SERVICER_TABLE_REFUSED, LOOP_TWIN_REFUSED = 1, 2, 4, 8


@njit(**_OPTS)
def _loop_table(g_body, table, q_index, qpos, t, pending, has_pending, k):
    """:func:`twin_loop_step`'s table: ``table = (start, home_y, y_inv, cmd, zeros6, loop args)``, its IK seeded
    with the measured joints ``qpos[q_index[0]] + q_index[1]``; True with its ``q_cmd`` pending for target ``k``."""
    args = table[5]
    seed = args[0]
    idx, off = q_index
    for j in range(seed.size):
        seed[j] = qpos[idx[j]] + off[j]
    if not twin_table_step(g_body, table[0], table[1], table[2], table[3], table[4], t, args):
        return False
    q_cmd = args[1]
    for j in range(q_cmd.size):
        pending[k, j] = q_cmd[j]
    has_pending[k] = 1
    return True


@njit(**_OPTS)
def twin_loop_step(readings, client_chain, wrist_chain, rules, w_client_sensor, w_wrist_sensor, g_c, g_s, tau_q,
                   client_table, servicer_table, t, qpos, q_client, q_servicer, pending, has_pending, targets,
                   twin_dt, twin_pre):
    """``TwinHilMission``'s step up to the twin's in one call: both F/T readings (rows ``chain[0]`` of
    ``readings``, the ``TwinLoop``'s) through their chains (:func:`twin_ft_chain_into` on ``chain[1:]``, into
    ``w_client_sensor`` and ``w_wrist_sensor``, which ``rules`` holds), the rules (:func:`twin_rules_step` on
    ``rules``: its ``g_c``, ``g_s`` (the servicer's new poses' second row) and ``tau_q`` are the arrays given
    here), each table's step (:func:`_loop_table`) on its new body pose at ``t``, and the commands (the tables'
    ``q_cmd``, ``tau_q``) as the loop's pending commands of ``targets`` (client, servicer, arm), then, if no table
    refused, the twin's step up to ``mj_step`` (``twin_loop.loop_pre_step`` at ``t`` on ``twin_pre``, the
    ``TwinLoop``'s ``pre_args``). Returns the ``LOOP_*`` flags: with ``LOOP_RULES_REFUSED`` nothing is done; a
    refused table's state is as it was and its command not pending (the table's own step then runs it, and the
    caller the twin's step); ``LOOP_TWIN_REFUSED``: ``loop_pre_step`` refused (a ring full), nothing of the twin's
    done."""
    c, w = client_chain, wrist_chain
    if not (twin_ft_chain_into(readings[c[0]], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], w_client_sensor)
            and twin_ft_chain_into(readings[w[0]], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w_wrist_sensor)):
        return LOOP_RULES_REFUSED
    if not twin_rules_step(*rules):
        return LOOP_RULES_REFUSED
    flags = 0
    if not _loop_table(g_c, client_table, q_client, qpos, t, pending, has_pending, targets[0]):
        flags |= LOOP_CLIENT_TABLE_REFUSED
    if not _loop_table(g_s, servicer_table, q_servicer, qpos, t, pending, has_pending, targets[1]):
        flags |= LOOP_SERVICER_TABLE_REFUSED
    for j in range(tau_q.size):
        pending[targets[2], j] = tau_q[j]
    has_pending[targets[2]] = 1
    if flags == 0 and not loop_pre_step(t, twin_dt, *twin_pre):
        flags |= LOOP_TWIN_REFUSED
    return flags


@njit(**_OPTS)
def twin_quiet_steps(n, t, dt, readings, client_chain, wrist_chain, rules, w_client_sensor, w_wrist_sensor, g_c,
                     poses, x, tau_q, servicer, q, dq, ddq, client_table, servicer_table, qpos, qvel, q_client,
                     q_servicer, q_arm, dq_arm, pending, has_pending, targets, twin_pre, mj, twin_post, out):
    """Up to ``n`` steps of ``TwinHilMission.advance`` (one twin step each, the OBSW's command held) in one call:
    per step :func:`twin_loop_step` at the twin's time ``t``, the servicer's new state copied into the arrays the rules
    read (``servicer = (g_n, V_n, g_s, V_s)``, from ``poses`` and ``x``), ``mj_step`` (``twin_loop.loop_mj_step`` on
    ``mj``; ``t += dt`` as MuJoCo adds its step), the F/T channels' samples (``twin_loop.loop_ft_sample`` on
    ``twin_post``), the arm's measured joints ``q``, ``dq`` (``qpos[q_arm]``, ``qvel[dq_arm]``) and ``ddq = (dq' -
    dq) / dt``, all in the arrays ``rules`` holds. Returns the steps done. It stops after a step whose F/T sample
    used up a channel's noise rows (``out[1] = 1``: the caller draws the next block), and in a step whose
    ``twin_loop_step`` returned flags (``out[0]``, that step as that call leaves it, for the caller to finish)."""
    g_n, v_n, g_s, v_s = servicer
    out[0] = 0
    out[1] = 0
    for i in range(n):
        flags = twin_loop_step(readings, client_chain, wrist_chain, rules, w_client_sensor, w_wrist_sensor, g_c,
                               poses[1], tau_q, client_table, servicer_table, t, qpos, q_client, q_servicer, pending,
                               has_pending, targets, dt, twin_pre)
        if flags:
            out[0] = flags
            return i
        g_n[:] = poses[0]
        v_n[:] = x[:6]
        g_s[:] = poses[1]
        v_s[:] = x[6:]
        loop_mj_step(mj)
        t = t + dt
        used_up = loop_ft_sample(t, *twin_post)
        for j in range(q.size):
            q[j] = qpos[q_arm[j]]
            dq_new = qvel[dq_arm[j]]
            ddq[j] = (dq_new - dq[j]) / dt
            dq[j] = dq_new
        if used_up:
            out[1] = 1
            return i + 1
    return n


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _obsw_kernel, _servicer_kernel, _table_kernel, _ik_kernel, _twin_loop)


if __name__ == '__main__':
    import time as _time

    from hil_bringup.runners.mission import warm_up

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_bringup.runners.mission_kernel: compiled ({_time.process_time() - _t0:.1f} s CPU)')
