"""Deterministic lockstep runner for the client (no DDS, faster than real time).

It wires the same rule object the client admittance node uses
(:class:`hil_dynamics.client.ClientAdmittance`) to a scripted wrench at the grasp point,
and, for comparison, the absolute formulation (Eq. 2 integrated in the orbit frame,
what an absolute HIL scheme would command). Used by the regression tests, the demo and
the benchmarks. Plain Python, no rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pinocchio as pin

from hil_bringup.scenario import MissionScenario
from hil_dynamics.client import AbsoluteRigidBody, ClientAdmittance
from hil_dynamics.se3 import transform_wrench


ZERO_WRENCH = np.zeros(6)     # a held zero wrench (the compiled steps only read it)


def push_in_orbit(force_orbit_n, start_s: float, duration_s: float) -> Callable[[float], np.ndarray]:
    """A force of fixed direction in the orbit frame, on during ``[start, start + duration)``."""
    force = np.asarray(force_orbit_n, dtype=float)

    def profile(t: float) -> np.ndarray:
        return force if start_s <= t < start_s + duration_s else np.zeros(3)
    return profile


@dataclass
class ClientRun:
    """Sampled trajectories of a client run (rows = samples)."""

    t: np.ndarray                         # [s]
    pos_grasp_in_nominal_cmd: np.ndarray  # grasp point commanded by the relative formulation, in the nominal frame [m]
    pos_grasp_in_orbit: np.ndarray        # grasp point commanded by the absolute formulation (orbit frame) [m]
    pos_client_in_nominal: np.ndarray     # p_c [m]
    twist_client_rel_body: np.ndarray     # V_c
    twist_client_body: np.ndarray         # V_t (Eq. 23)
    twist_nominal_body: np.ndarray        # V_n
    delta_twist: np.ndarray               # Delta V_c = Ad_{g_c^-1} V_n
    momentum_in_orbit: np.ndarray         # [P; L] of the client in the orbit frame, from Eq. (23)
    kinetic_energy: np.ndarray            # [J]

    def workspace_exit_time(self, box_m, which: str = 'absolute') -> float | None:
        """First time the grasp-point command leaves a box centred on its start (None if never)."""
        p = self.pos_grasp_in_orbit if which == 'absolute' else self.pos_grasp_in_nominal_cmd
        outside = np.any(np.abs(p - p[0]) > 0.5 * np.asarray(box_m), axis=1)
        return float(self.t[np.argmax(outside)]) if outside.any() else None


def run_client(scenario: MissionScenario, duration_s: float, force_orbit_at_grasp: Callable[[float], np.ndarray] | None = None,
               dt: float | None = None, record_every_s: float = 0.1,
               progress: Callable[[float], None] | None = None, with_absolute: bool = True) -> ClientRun:
    """Run the relative client rule and the absolute formulation side by side.

    ``force_orbit_at_grasp(t)`` is a force (orbit frame) applied at the grasp point. It is
    sampled once per step, at the step's midpoint, and held over the step like a sampled
    sensor, so pulses whose edges lie on the step grid deliver their exact impulse at the
    exact time. Its direction stays fixed in the orbit frame: both formulations turn it
    into a body wrench about the CoM with the attitude of every integrator stage.
    ``with_absolute=False`` skips the absolute formulation (its column is then NaN).
    """
    client = scenario.client
    dt = 1.0 / scenario.admittance_hz if dt is None else dt
    pose_grasp = client.pose_grasp_in_client
    force_fn = force_orbit_at_grasp or (lambda t: np.zeros(3))
    held = {'force_orbit': np.zeros(3)}

    def wrench_com(t: float, pose_client_in_orbit: pin.SE3) -> np.ndarray:
        rot_grasp_in_orbit = pose_client_in_orbit.rotation @ pose_grasp.rotation
        return transform_wrench(pose_grasp, np.concatenate((rot_grasp_in_orbit.T @ held['force_orbit'], np.zeros(3))))

    rule = ClientAdmittance(client.body, client.twist_client_body_0)
    absolute = AbsoluteRigidBody(client.body, client.twist_client_body_0)
    n_steps = int(round(duration_s / dt))
    every = max(1, int(round(record_every_s / dt)))
    rows = []
    for k in range(n_steps + 1):
        if k % every == 0 or k == n_steps:
            s = rule.state
            g_t, v_t = s.absolute()
            delta = v_t - s.twist_client_rel_body
            rows.append((s.t, (s.pose_client_in_nominal * pose_grasp).translation.copy(),
                         (absolute.pose_in_orbit * pose_grasp).translation.copy() if with_absolute else np.full(3, np.nan),
                         s.pose_client_in_nominal.translation.copy(), s.twist_client_rel_body.copy(), v_t,
                         s.twist_nominal_body.copy(), delta, client.body.momentum_in_parent(g_t, v_t),
                         client.body.kinetic_energy(v_t)))
            if progress is not None:
                progress(s.t)
        if k < n_steps:
            held['force_orbit'] = np.asarray(force_fn((k + 0.5) * dt), dtype=float)
            # no force: the wrench is zero at every stage, a held zero that runs the compiled step
            wrench = wrench_com if held['force_orbit'].any() else ZERO_WRENCH
            rule.step(wrench, dt)
            if with_absolute:
                absolute.step(wrench, dt)
    cols = list(zip(*rows))
    return ClientRun(*(np.array(c) for c in cols))


def analytic_exit_time_spin(radius_m: float, spin_rad_s: float, half_side_m: float) -> float:
    """Time for a point at ``radius`` from a pure spin axis to move ``half_side`` along the tangent.

    For a grasp point on an axis orthogonal to the spin, the tangential displacement is
    ``r sin(w t)`` and the radial one ``r (1 - cos(w t))`` (smaller while w t < 90 deg).
    """
    return math.asin(half_side_m / radius_m) / abs(spin_rad_s)
