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

This is a step of the plan in docs/performance.md ("The servicer's sample with no Python"): the rule's compiled
calls of a sample in one, which a compiled loop can call as it is.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hil_common.errors import StartError
from hil_common.kernel_cache import drop_stale_code
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import _OPTS, pose_mul_into, side_port_step
from hil_motion_table import ik_kernel as _ik_kernel
from hil_motion_table import table_kernel as _table_kernel
from hil_motion_table.table_kernel import command_ok, table_motion

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
    g_s = poses[1]
    if has_home:
        partial = np.empty(12)
        pose_mul_into(home_y, g_s, partial)
        pose_mul_into(partial, y_inv, cmd)
        for i in range(6):
            t = 0.0
            for j in range(6):
                t += ad_flange_from_body[i, j] * x[6 + j]
            twist[i] = t
    else:
        for i in range(12):
            cmd[i] = g_s[i]
        for i in range(6):
            twist[i] = x[6 + i]
    if not command_ok(cmd[:9].reshape((3, 3)), cmd[9:], twist, ROTATION_TOL):
        return excess, pending, status, TABLE_INVALID_COMMAND
    if not age <= max_age:
        return excess, pending, status, TABLE_STALE_MEASUREMENT
    return excess, pending, status, table_motion(cmd, twist, *table_args)


def warm_up() -> None:
    """Compile (or load from the cache) :func:`side_and_table_step` with the types the fused servicer hot path
    passes: its rule built with the Envisat graph's parameters loads it (``./dev`` runs this, so no node compiles
    it when it starts)."""
    from types import SimpleNamespace

    from hil_admittance.servicer_admittance_node import build_side
    from hil_bringup.graphs import envisat_graph
    from hil_bringup.servicer_hot_path import ServicerHotPath
    from hil_bringup.servicer_hot_path_node import PARAMS
    from hil_common.params import validate
    from hil_motion_table.motion_table_node import CommandFrame, build_table

    graph = envisat_graph({'servicer_hot_path': 'nodes'})
    adm = {k: v for k, v in graph.node('/servicer_admittance').parameters.items() if k != 'mission_epoch_s'}
    values = validate(PARAMS, {**adm, **graph.node('/servicer/motion_table').parameters})
    p = SimpleNamespace(**values)
    table = build_table(values, clock=None)
    frame = CommandFrame(p, table.kin)
    rule = ServicerHotPath(build_side(p), table, target=frame.target, twist=frame.twist,
                           twist_from_joints=frame.twist_from_joints)
    if rule.side.last_step is None:
        raise StartError('servicer_hot_path_kernel: the Envisat servicer hot path does not take the one call')


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _ik_kernel, _table_kernel)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_bringup.servicer_hot_path_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
