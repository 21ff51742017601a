"""The example OBSW node's policy, without rclpy (seed 004 Fig. 7, the controller-under-test slot).

:class:`ObswSide` is what :mod:`hil_admittance.obsw_controller_node` does between receiving a
message and publishing one, around the control law :class:`hil_admittance.obsw.ObswController`:

* **inputs with freshness**: the client's and the servicer's absolute states (Eq. 23) and the
  arm's ``q, dq``; while any is missing or older than ``input_timeout_s`` the law does not run and
  the commands are zero (a silent OBSW: thrusters off, arm torque zero), the gripper command unchanged;
* **fixed-rate pacing and the hold on overload** (:class:`hil_common.pacing.StepPacer`,
  :class:`hil_common.overload.OverloadGuard`, optional): one control update per tick that has a
  step due (an early timer callback does nothing); a tick later than the guard's ``hold_late_s``
  makes the OBSW silent in the same way until the guard's policy clears it. A late OBSW acts on states as old as its lateness: a base and arm command
  computed from them pushes the stack where it was, not where it is (the grip took that to the
  F/T overload in an overloaded wall-clock run, docs/envisat_capture.md).

Times are seconds on the node's clock (the controller's ``t`` counts from the first update).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hil_common.overload import OverloadGuard, due_steps
from hil_common.pacing import StepPacer
from hil_admittance.obsw import ObswController


@dataclass
class ObswOutput:
    wrench_base_com: np.ndarray
    tau_arm: np.ndarray
    close_gripper: bool | None      # None: no gripper command this tick
    phase: str | None               # the law's phase (None while silent)
    silent: str = ''                # why the commands are zero ('' when the law ran)


class ObswSide:
    """The OBSW node's rule (see the module docstring)."""

    def __init__(self, law: ObswController, rate_hz: float, input_timeout_s: float,
                 overload: OverloadGuard | None = None):
        self.law, self.overload = law, overload
        self.dt_s, self.timeout_s = 1.0 / float(rate_hz), float(input_timeout_s)
        self.pacer: StepPacer | None = None
        self.inputs: dict[str, tuple | None] = {'client': None, 'servicer': None, 'joints': None}
        self.t0_s: float | None = None
        self.rejected = 0

    def set_state(self, which: str, pose, twist, now_s: float) -> bool:
        """``which`` ('client' or 'servicer'): an absolute state (pose, body twist); refused if non-finite."""
        twist = np.asarray(twist, dtype=float)
        if twist.shape != (6,) or not np.all(np.isfinite(twist)) or not np.all(np.isfinite(pose.homogeneous)):
            self.rejected += 1
            return False
        self.inputs[which] = (pose, twist, float(now_s))
        return True

    def set_joints(self, q, dq, now_s: float) -> None:
        self.inputs['joints'] = (np.asarray(q, dtype=float), np.asarray(dq, dtype=float), float(now_s))

    def stale(self, now_s: float) -> list[str]:
        """The inputs missing or older than the timeout."""
        return [k for k, v in self.inputs.items() if v is None or now_s - v[-1] > self.timeout_s]

    def tick(self, now_s: float) -> ObswOutput | None:
        """The commands at ``now_s``; None when no control period is due (an early callback)."""
        if self.pacer is None:       # the law runs once per due tick: lateness is judged, no step is dropped
            self.pacer = StepPacer(self.dt_s, now_s - self.dt_s, max_catch_up=2 ** 31)
        if due_steps(self.pacer, self.overload, now_s) == 0:
            return None
        n = self.law.model.n
        stale = self.stale(now_s)
        if stale:
            return ObswOutput(np.zeros(6), np.zeros(n), None, None, f'inputs missing or stale: {", ".join(stale)}')
        if self.overload is not None and self.overload.holding:
            return ObswOutput(np.zeros(6), np.zeros(n), None, None, self.overload.message())
        if self.t0_s is None:
            self.t0_s = now_s
        (g_t, v_t, _), (g_b, v_b, _), (q, dq, _) = (self.inputs[k] for k in ('client', 'servicer', 'joints'))
        cmd = self.law.update(now_s - self.t0_s, g_t, v_t, g_b, v_b, q, dq)
        return ObswOutput(cmd.wrench_base_com, cmd.tau_arm, cmd.close_gripper, cmd.phase)
