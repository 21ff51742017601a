"""The Envisat capture mission as a campaign runner: lab imperfections and capture metrics.

:class:`hil_bringup.runners.mission.HilMission` closes seed 004's facility loop with ideal robots
and exact F/T samples (Assumption 1). A robustness campaign needs the two imperfections a
lab adds, so :class:`ImperfectLabMission` wraps it without changing its rules:

* **F/T noise**: white Gaussian noise of standard deviation ``sigma_f`` [N] per force
  axis and ``sigma_t`` [N m] per torque axis is added to each 1 kHz sample of both
  sensors, the wrist sensor (flange frame, what Eq. 18 reads) and the client sensor
  (sensor frame, moved to the client CoM by the constant transform of seed 004 §III-A).
  Seeded per run, so a run is reproducible.
* **Command delay**: the robots realise the admittances' commanded motion ``d`` seconds
  late (a pure transport delay, rounded to whole admittance periods): the contact, and so
  the measured wrench, is evaluated on the bodies where the robots are, i.e. at the
  admittance states of ``round(d / dt)`` steps ago. This is the delay that injects energy
  into an admittance-based HIL loop (seed 004 §IV and the delay compensation of its ref. [19]).
* **Divergence**: a loop made unstable (by the delay, say) ends the run as an outcome, not
  an error: when the contact wrench is no longer finite or exceeds ``divergence_force_n``
  (well beyond any gripper's rating), :class:`Diverged` stops the run and the metrics are
  those of the record so far, with ``diverged_at_s`` set.

:func:`capture_metrics` reduces a run to the numbers a campaign tabulates. Plain Python,
no rclpy.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pinocchio as pin

from hil_bringup.runners.mission import HilMission, MissionRecord
from hil_dynamics.se3 import transform_wrench

from hil_common.errors import SimulationFailed


class Diverged(SimulationFailed):
    """The contact wrench left the plausible range: the simulated loop is unstable."""

    def __init__(self, t: float, wrench):
        super().__init__(f'contact wrench {np.round(np.asarray(wrench, dtype=float), 1).tolist()} at t = {t:.3f} s')
        self.t = float(t)


def _copy_states(states):
    return tuple(pin.SE3(s) if isinstance(s, pin.SE3) else np.array(s, dtype=float) for s in states)


class ImperfectLabMission(HilMission):
    """:class:`HilMission` with F/T noise and a robot command delay (see the module docstring).

    Tracks the peak contact wrench at every admittance step (the record is decimated).
    With zero noise and zero delay it is :class:`HilMission` exactly.
    """

    def __init__(self, scenario, ft_noise_force_n: float = 0.0, ft_noise_torque_nm: float = 0.0,
                 command_delay_s: float = 0.0, seed: int = 0, divergence_force_n: float = np.inf):
        super().__init__(scenario)
        self.noise_std = np.array([ft_noise_force_n] * 3 + [ft_noise_torque_nm] * 3, dtype=float)
        self.rng = np.random.default_rng(seed)
        self.delay_steps = int(round(command_delay_s / self.dt))
        self.divergence_force_n = float(divergence_force_n)
        self._realised = deque([_copy_states(super().lab_states())] * (self.delay_steps + 1),
                               maxlen=self.delay_steps + 1)
        self.peak_contact_force_n = 0.0
        self.peak_contact_torque_nm = 0.0

    def lab_states(self):
        """The bodies where the robots are: the commanded states ``delay_steps`` steps ago."""
        return self._realised[0] if self.delay_steps else super().lab_states()

    def _noise(self) -> np.ndarray:
        if not self.noise_std.any():
            return np.zeros(6)
        return self.rng.normal(0.0, 1.0, 6) * self.noise_std

    def advance(self, wrench_base_com, tau_arm, wrench_flange, wrench_client_com) -> None:
        w = np.asarray(self.wrench_tool, dtype=float)
        force, torque = float(np.linalg.norm(w[:3])), float(np.linalg.norm(w[3:]))
        if not np.isfinite(force + torque) or max(force, torque) > self.divergence_force_n:
            raise Diverged(self.t, w)
        self.peak_contact_force_n = max(self.peak_contact_force_n, force)
        self.peak_contact_torque_nm = max(self.peak_contact_torque_nm, torque)
        wrench_flange = np.asarray(wrench_flange, dtype=float) + self._noise()
        noise_client_sensor = self._noise()
        if noise_client_sensor.any():
            wrench_client_com = np.asarray(wrench_client_com, dtype=float) + transform_wrench(
                self.scenario.client.pose_sensor_in_client, noise_client_sensor)
        super().advance(wrench_base_com, tau_arm, wrench_flange, wrench_client_com)
        if self.delay_steps:
            self._realised.append(_copy_states(super().lab_states()))


def tumble_twist(twist_client_body_0, rate_deg_s: float | None, axis_tilt_deg: float) -> list[float]:
    """The client's initial body twist with its spin rate and axis replaced.

    The axis is the line of the scenario's spin (the angular part of ``twist_client_body_0``;
    body y if the scenario does not spin), oriented so that its largest component is positive
    (body +y for Envisat), then tilted by ``axis_tilt_deg`` about body x (the long axis).
    ``rate_deg_s`` is the signed rate about that axis: -2.5 is seed 004's spin,
    ``V_t(0) = [0 0 0 0 -2.5 deg/s 0]``; ``None`` keeps the scenario's rate. The linear part is kept.
    """
    v = np.asarray(twist_client_body_0, dtype=float)
    w = v[3:]
    norm = float(np.linalg.norm(w))
    axis = w / norm if norm > 0.0 else np.array([0.0, 1.0, 0.0])
    if axis[int(np.argmax(np.abs(axis)))] < 0.0:
        axis = -axis
    rate = np.radians(rate_deg_s) if rate_deg_s is not None else float(w @ axis)
    tilt = pin.rpy.rpyToMatrix(np.radians(axis_tilt_deg), 0.0, 0.0)
    return [*map(float, v[:3]), *map(float, rate * (tilt @ axis))]


def capture_metrics(mission, rec: MissionRecord, peak_force_n: float | None = None,
                    peak_torque_nm: float | None = None, diverged_at_s: float | None = None) -> dict:
    """Capture success, grasp time, peak contact wrench, post-grasp momentum error of one run.

    * ``capture_success``: the gripper latched on the launch adapter ring and stayed latched.
    * ``grasp_time_s``: when it latched (NaN if never).
    * ``peak_contact_force_n`` / ``_torque_nm``: peak norm of the contact wrench on the tool
      (every step when the mission tracks it, else the recorded samples).
    * ``momentum_error_linear`` / ``_angular``: after the grasp the thrusters are off, so the
      stack's momentum in orbit is conserved (seed 004 §V); its largest relative change from
      the post-grasp start (``hil_bringup.envisat_demo.momentum_drift``), NaN without grasp.
    * ``final_relative_speed_mm_s`` / ``final_relative_rate_deg_s``: servicer relative to the
      client at the end; ``settle_time_s``: when the relative velocity settled after the grasp.
    * ``client_table_exit_s``: when the client table's command leaves its workspace box (NaN:
      never), as ``envisat_demo`` reports it.
    * ``diverged_at_s``: when the run was stopped as unstable (:class:`Diverged`; NaN: it was not).
      A diverged run is no capture.
    """
    from hil_bringup.envisat_demo import momentum_drift, settle_time

    nan = float('nan')
    contact = mission.contact
    post = mission.controller.phase_times.get('post_grasp') if mission.controller is not None else None
    wrench = np.asarray(rec.wrench_tool, dtype=float)
    out = {
        'capture_success': bool(contact.latched) and diverged_at_s is None,
        'diverged_at_s': nan if diverged_at_s is None else float(diverged_at_s),
        'grasp_time_s': nan if contact.latch_time_s is None else float(contact.latch_time_s),
        'peak_contact_force_n': float(peak_force_n if peak_force_n is not None else np.linalg.norm(wrench[:, :3], axis=1).max()),
        'peak_contact_torque_nm': float(peak_torque_nm if peak_torque_nm is not None else np.linalg.norm(wrench[:, 3:], axis=1).max()),
        'momentum_error_linear': nan, 'momentum_error_angular': nan, 'settle_time_s': nan,
        'final_relative_speed_mm_s': float(np.linalg.norm(rec.twist_base_rel_client[-1, :3]) * 1e3),
        'final_relative_rate_deg_s': float(np.degrees(np.linalg.norm(rec.twist_base_rel_client[-1, 3:]))),
        'max_thrust_n': float(np.abs(rec.wrench_base_com[:, :3]).max()),
        'max_joint_torque_nm': float(np.abs(rec.tau_arm).max()),
    }
    if post is not None and np.count_nonzero(rec.t >= post) >= 2:
        drift = momentum_drift(rec, post)
        out['momentum_error_linear'] = drift['linear_relative']
        out['momentum_error_angular'] = drift['angular_relative']
        settled = settle_time(rec, post)
        out['settle_time_s'] = nan if settled is None else settled
    exit_s = None
    if np.all(np.isfinite(rec.pos_grasp_in_nominal_cmd)):
        exit_s = rec.exit_time('pos_grasp_in_nominal_cmd', mission.scenario.workspace_box_m)
    out['client_table_exit_s'] = nan if exit_s is None else exit_s
    return out
