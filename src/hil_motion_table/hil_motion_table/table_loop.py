"""A motion table's command state in arrays a compiled sample loop owns (plain Python, no rclpy; issue 17).

The fused hot paths (``hil_bringup.servicer_hot_path_loop``, ``hil_bringup.client_hot_path_loop``) run their quiet
samples in one compiled call each, the table's command included: the check of the command, steps 2-7
(``table_kernel.table_motion``) and the table's state moved on. :class:`TableLoopState` is that state, one definition
for both: while it is *entered* its arrays are the table's command state (the last command and its rate, the safe
pose, the prediction's command, twist and twist estimate, the IK's previous solution, change and sigma hint, the
previous step's time, their flags in ``ti``, the steps and clamps counted since), and the compiled calls of
:mod:`hil_motion_table.table_kernel` step it (``loop_dt``, ``loop_save``, ``loop_restore``, ``loop_motion_args``,
``loop_motion``, ``loop_advance``). :meth:`TableLoopState.leave` puts it back into the
:class:`~hil_motion_table.table.MotionTable`, as its own ``step`` would have left it after the same commands.
"""

from __future__ import annotations

import math

import numpy as np

from hil_common.errors import ConfigError
from hil_motion_table.table import MotionTable
from hil_motion_table.table_kernel import TF_HINT_SIGMA, TF_T_PREV, TI_CLAMP_ACCELERATION, TI_CLAMP_SPEED, \
    TI_CLAMP_VELOCITY, TI_HAS_HINT, TI_HAS_IK_PREV, TI_HAS_IK_STEP, TI_HAS_PREV_CMD, TI_HAS_T_PREV, \
    TI_HAS_TWIST_PREV, TI_STEPS

#: ``tf`` and ``ti`` sizes
N_TF, N_TI = TF_HINT_SIGMA + 1, TI_CLAMP_ACCELERATION + 1
_CLAMPS = (('cartesian_speed', TI_CLAMP_SPEED), ('joint_velocity', TI_CLAMP_VELOCITY),
           ('joint_acceleration', TI_CLAMP_ACCELERATION))


class TableLoopState:
    """The command state of ``table`` (a serial chain's: its steps 2-7 compiled) in arrays; :meth:`args` is the
    ``table`` tuple of the loop kernels, on the IK's seed array ``q_seed`` (the hot path's measured joints)."""

    def __init__(self, table: MotionTable):
        if table._chain is None:
            raise ConfigError('TableLoopState: the table has no compiled steps (a serial chain\'s)')
        self.table = table
        n = table.kin.dof
        (self.q_cmd, self.qd_cmd, self.ik_prev, self.ik_step, self.hint_q, self.q_ik, self.q_next, self.qd_next,
         self.ik_step_out) = (np.zeros(n) for _ in range(9))
        self.pose_safe, self.prev_cmd, self.prev_cmd_saved = np.zeros(12), np.zeros(12), np.zeros(12)
        (self.twist_est, self.twist_prev, self.twist_est_saved, self.twist_prev_saved) = (np.zeros(6) for _ in range(4))
        self.tf, self.ti = np.zeros(N_TF), np.zeros(N_TI, dtype=np.int64)

    def args(self, q_seed: np.ndarray) -> tuple:
        """The loop kernels' ``table``: the loop's arrays and the table's constants (read now: call it at each
        :meth:`enter`, a caller may have given the table a new workspace)."""
        table = self.table
        chain, kin = table._chain, table.kin
        return (q_seed, self.q_cmd, self.qd_cmd, self.pose_safe, self.prev_cmd, self.twist_est, self.twist_prev,
                self.ik_prev, self.ik_step, self.hint_q, self.prev_cmd_saved, self.twist_est_saved,
                self.twist_prev_saved, self.q_ik, self.q_next, self.qd_next, self.ik_step_out, table._par,
                table.workspace_min, table.workspace_max, chain.placements, chain.kind, chain.axis,
                chain.frame_placement, chain.poses, chain.jac, chain.hint_q, table.q_lo, table.q_hi, kin.qd_max,
                kin.qdd_max, table._target, chain.result, float(table.period), self.tf, self.ti)

    def enter(self) -> None:
        """Take the table's command state into the arrays (the table initialized; the counts from zero)."""
        table, tf, ti = self.table, self.tf, self.ti
        tf[:] = 0.0
        ti[:] = 0
        self.q_cmd[:], self.qd_cmd[:], self.pose_safe[:] = table._q_cmd, table._qd_cmd, table._pose_safe
        self.twist_est[:] = table._twist_est
        for array, value, flag in ((self.prev_cmd, table._pose_prev_cmd, TI_HAS_PREV_CMD),
                                   (self.twist_prev, table._twist_prev, TI_HAS_TWIST_PREV),
                                   (self.ik_prev, table._q_ik_prev, TI_HAS_IK_PREV),
                                   (self.ik_step, table._q_ik_step, TI_HAS_IK_STEP)):
            ti[flag] = value is not None
            if value is not None:
                array[:] = value
        ti[TI_HAS_T_PREV] = table._t_prev is not None
        tf[TF_T_PREV] = math.nan if table._t_prev is None else table._t_prev
        hint = table.kin._sigma_hint
        ti[TI_HAS_HINT] = hint is not None
        if hint is not None:
            tf[TF_HINT_SIGMA], self.hint_q[:] = hint

    def leave(self) -> None:
        """Put the state back into the table (copies), if a step ran since :meth:`enter`, and count its steps and
        clamps."""
        table, tf, ti = self.table, self.tf, self.ti
        if not ti[TI_STEPS]:
            return
        table._q_cmd, table._qd_cmd, table._pose_safe = self.q_cmd.copy(), self.qd_cmd.copy(), self.pose_safe.copy()
        table._twist_est[:] = self.twist_est
        table._pose_prev_cmd = self.prev_cmd.copy() if ti[TI_HAS_PREV_CMD] else None
        table._twist_prev = self.twist_prev.copy() if ti[TI_HAS_TWIST_PREV] else None
        table._q_ik_prev = self.ik_prev.copy() if ti[TI_HAS_IK_PREV] else None
        table._q_ik_step = self.ik_step.copy() if ti[TI_HAS_IK_STEP] else None
        table._t_prev = float(tf[TF_T_PREV]) if ti[TI_HAS_T_PREV] else None
        table.kin._sigma_hint = (float(tf[TF_HINT_SIGMA]), self.hint_q.copy()) if ti[TI_HAS_HINT] else None
        table.stats.steps += int(ti[TI_STEPS])
        for name, index in _CLAMPS:
            table.stats.clamp_counts[name] += int(ti[index])
        ti[TI_STEPS] = 0
        for _, index in _CLAMPS:
            ti[index] = 0
