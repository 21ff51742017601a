"""Targets of the snare runs: mass properties and where their grapple sits (plain Python).

* HTV: 16 500 kg at capture (JAXA's published maximum total mass; docs/snare.md), a solid
  cylinder 4.4 m in diameter and 9.8 m long for the inertia (assumption); the grapple fixture
  on the hull, 2.2 m from the long axis and 1 m aft of the CoM, its 0.40 m shaft radial.
* Seed 002's payload: 500 kg, diag(415, 83, 415) kg m^2 (Tables 6-7).
* Seed 002's air-table target: 8.9 kg, 0.16 kg m^2 about the vertical (Table 5).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_dynamics.rigid_body import RigidBody
from hil_snare.system import Grapple

HTV_MASS_KG = 16500.0
HTV_RADIUS_M = 2.2
HTV_LENGTH_M = 9.8
GF_SHAFT_LENGTH_M = 0.40
GF_SHAFT_RADIUS_M = 0.025


def htv() -> tuple[RigidBody, Grapple, pin.SE3]:
    """The HTV, its grapple shaft, and ``pose_gf_in_htv`` (GF frame: origin at the shaft tip, x along the shaft)."""
    m, r, length = HTV_MASS_KG, HTV_RADIUS_M, HTV_LENGTH_M
    ixx = 0.5 * m * r * r
    iyy = m * (3.0 * r * r + length * length) / 12.0
    body = RigidBody(m, [ixx, iyy, iyy])
    tip = np.array([1.0, 0.0, r + GF_SHAFT_LENGTH_M])
    grapple = Grapple(tuple(tip), (0.0, 0.0, 1.0), GF_SHAFT_LENGTH_M, GF_SHAFT_RADIUS_M)
    rot = np.column_stack([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])   # x_gf = z_htv
    return body, grapple, pin.SE3(rot, tip)


def payload_500kg(grapple_offset_m=(0.0, 0.0, 1.0)) -> tuple[RigidBody, Grapple, pin.SE3]:
    """Seed 002 Tables 6-7 payload with a grapple shaft (ours) on its +z face."""
    body = RigidBody(500.0, [415.0, 83.0, 415.0])
    off = np.asarray(grapple_offset_m, dtype=float)
    tip = off + np.array([0.0, 0.0, GF_SHAFT_LENGTH_M])
    grapple = Grapple(tuple(tip), (0.0, 0.0, 1.0), GF_SHAFT_LENGTH_M, GF_SHAFT_RADIUS_M)
    rot = np.column_stack([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    return body, grapple, pin.SE3(rot, tip)


def air_table_target(probe_tip_m=(0.25, 0.03, 0.0), probe_radius_m=0.005) -> tuple[RigidBody, Grapple]:
    """Seed 002 Table 5 target (8.9 kg, 0.16 kg m^2 yaw) with a vertical probe rod (ours).

    The wire is horizontal across the probe's path; the probe is a vertical rod of radius
    ``probe_radius_m`` at ``probe_tip_m`` (ahead of and beside the CoM, so the contact spins it,
    as in seed 002 Fig. 15). Roll and pitch inertias are irrelevant on the table; we give them
    the same value.
    """
    body = RigidBody(8.9, [0.16, 0.16, 0.16])
    tip = np.asarray(probe_tip_m, dtype=float) + np.array([0.0, 0.0, 0.05])
    return body, Grapple(tuple(tip), (0.0, 0.0, 1.0), 0.10, probe_radius_m)
