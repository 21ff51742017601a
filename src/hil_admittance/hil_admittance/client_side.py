"""The client admittance node's policy, without rclpy (seed 004 Eqs. 11, 23; §VI).

:class:`ClientSide` is what :mod:`hil_admittance.client_admittance_node` does between receiving a
message and publishing one, as plain Python the tests drive directly (as
:class:`hil_admittance.servicer_side.ServicerSide` for the servicer):

* **the wrench with freshness**: the client F/T wrench, moved from the sensor to the client CoM
  through the constant ``pose_sensor_in_client`` (seed 004 §III-A), held between steps (zero-order
  hold) while younger than ``wrench_timeout_s`` and zero after (Eq. 11 runs unforced, the relative
  command stays put); a non-finite wrench is refused and counted;
* **the measured twist** of the table (``Ṽ_c``) for the passivity port while fresh; else the
  commanded one stands in (Assumption 1);
* **fixed-step pacing** (:class:`hil_common.pacing.StepPacer`): the steps due at each tick, up to
  ``max_catch_up``; more are dropped and counted; a dropped or held step still moves the nominal
  on (the client co-moving with it), so client and servicer keep one ``g_n``;
* **one mission clock** (``epoch_s``): a side that starts after the epoch moves the nominal on
  from it to the step grid's last instant before its start, so client and servicer integrate one
  nominal (Eq. 23);
* **hold on overload** (:class:`hil_common.overload.OverloadGuard`, optional): while the guard
  holds, Eq. (11) is not integrated and the table's twist command is zero (its pose stays);
* **post-grasp re-basing** (:class:`hil_dynamics.rebase.RebaseFollower`): the servicer node's plan,
  applied to this side's nominal from the same step, through held and dropped steps too.

Each step is the passivity port's (:class:`hil_dynamics.passivity.ClientPort`: observer, and the
controller's damping when it is on). Times are seconds on the node's clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_common.freshness import HeldInput
from hil_common.overload import OverloadGuard, due_steps
from hil_common.pacing import StepPacer
from hil_dynamics.client import ClientState
from hil_dynamics.passivity import ClientPort
from hil_dynamics.rebase import RebaseFollower, RebasePlan
from hil_dynamics.se3 import transform_wrench


@dataclass
class ClientOutput:
    """What the node publishes after a tick."""

    state: ClientState
    twist_table_cmd: np.ndarray       # V_c (zero while holding)
    holding: bool
    stale_began: bool                 # the wrench stream went stale at this tick (after it had started)
    step_time_s: float                # the simulated time the state belongs to (node clock)


class ClientSide:
    """The client admittance node's rule (see the module docstring)."""

    def __init__(self, port: ClientPort, pose_sensor_in_client: pin.SE3, dt_s: float, wrench_timeout_s: float,
                 max_catch_up: int = 20, epoch_s: float | None = None, overload: OverloadGuard | None = None):
        self.port, self.rule = port, port.admittance
        self.pose_sensor_in_client = pose_sensor_in_client
        self.dt_s, self.timeout_s = float(dt_s), float(wrench_timeout_s)
        self.max_catch_up = int(max_catch_up)
        self.epoch_s = None if epoch_s is None else float(epoch_s)
        self.overload = overload
        self.pacer: StepPacer | None = None
        self.wrench_com, self.twist_measured = HeldInput(6), HeldInput(6)   # the wrench at the CoM
        self.stale = False
        self.rejected = 0
        self.rebase = RebaseFollower(dt_s)

    def set_rebase_plan(self, plan: RebasePlan, now_s: float) -> str:
        """The servicer node's re-basing plan (:meth:`RebaseFollower.accept`: '' or why not / how late)."""
        return self.rebase.accept(plan, now_s)

    # -- inputs ----------------------------------------------------------------------------
    def set_wrench_sensor(self, wrench_sensor, now_s: float) -> bool:
        """The client F/T wrench in the sensor frame; False (counted) if it is not 6 finite numbers."""
        w = np.asarray(wrench_sensor, dtype=float)
        if w.shape != (6,) or not np.all(np.isfinite(w)):
            self.rejected += 1
            return False
        self.wrench_com.set(transform_wrench(self.pose_sensor_in_client, w), now_s)
        return True

    def set_twist_measured(self, twist, now_s: float) -> bool:
        """The table's measured body twist relative to the nominal frame; ignored unless finite."""
        v = np.asarray(twist, dtype=float)
        if v.shape != (6,) or not np.all(np.isfinite(v)):
            return False
        self.twist_measured.set(v, now_s)
        return True

    @property
    def holding(self) -> bool:
        return self.overload is not None and self.overload.holding

    # -- the step ----------------------------------------------------------------------------
    def _start(self, now_s: float) -> None:
        """The first tick: the step grid starts now, or (after a mission epoch) at the epoch, the
        nominal moved on over the steps before now (:meth:`ClientAdmittance.advance_nominal`)."""
        if self.epoch_s is None or now_s <= self.epoch_s:
            self.pacer = StepPacer(self.dt_s, now_s, self.max_catch_up)
        else:
            self.pacer = StepPacer(self.dt_s, self.epoch_s, self.max_catch_up)
            self.rule.advance_nominal(self.pacer.skip_to(now_s) * self.dt_s, self.dt_s)

    def tick(self, now_s: float) -> ClientOutput | None:
        """The steps due at ``now_s``; None when none is due."""
        if self.pacer is None:
            self._start(now_s)
        steps = due_steps(self.pacer, self.overload, now_s)
        if steps == 0:
            return None
        fresh = self.wrench_com.fresh(now_s, self.timeout_s)
        started = self.wrench_com.stamp_s is not None
        stale_began = not fresh and started and not self.stale
        self.stale = not fresh and started
        holding = self.holding
        # One mission clock: dropped and held steps still move the nominal on (the client co-moving
        # with it), or this side's g_n would fall behind the servicer's (Eq. 23).
        skipped = self.pacer.last_dropped + (steps if holding else 0)
        first = self.pacer.steps_done - steps - self.pacer.last_dropped
        if skipped:
            self.rebase.advance(self.rule, self.pacer.step_time(first), skipped * self.dt_s)
        if holding:
            state = self.rule.state
            twist_cmd = np.zeros(6)
        else:
            wrench = self.wrench_com.value if fresh else np.zeros(6)
            measured = self.twist_measured.get(now_s, self.timeout_s, None)
            for k in range(self.pacer.steps_done - steps, self.pacer.steps_done):
                self.rebase.before_step(self.pacer.step_time(k), self.rule)
                state = self.port.step(wrench, self.dt_s, measured)
            twist_cmd = state.twist_client_rel_body
        return ClientOutput(state, twist_cmd, holding, stale_began, self.pacer.step_time(self.pacer.steps_done))
