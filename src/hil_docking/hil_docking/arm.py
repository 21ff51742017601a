"""The CISAS 6-DOF anthropomorphic arm (seed 003 §II) and its feed-forward control variants (§VI).

Geometry and masses from the seed's table (link lengths 0.7, 0.7, 0.6 m; masses 1.05,
1.71, 1.46, 0.23, 0.19, 0.21 kg), a spherical wrist (the last three axes intersect,
Pieper's simplification, §II-A). Not in the seed, so chosen here and stated:

* layout: joint 1 yaw about the vertical ``z`` at the base; link 1 is the 0.7 m column;
  joints 2 and 3 pitch (``y``); link 2 (0.7 m) and link 3 (0.6 m) lie along ``x`` at zero
  angles; joints 4-6 roll-pitch-roll (``x, y, x``) at the wrist centre, 0.6 m from the elbow;
* links 1-3 are uniform tubes of radius 0.03 m (rod inertia), links 4 and 5 small spheres
  of radius 0.04 m at the wrist centre, link 6 (the end effector of Fig. 1) a 0.08 m rod
  beyond the wrist centre; the tool flange is 0.08 m from the wrist centre;
* joint ranges +-pi (wrist rolls +-2 pi), 2 rad/s, 10 rad/s^2 (lab values, not the seed's);
* every joint carries a reflected actuator inertia (armature) of 0.01 kg m^2 (e.g. a 1e-6
  kg m^2 rotor behind a 100:1 gear). The links alone give the wrist about 1e-4 kg m^2, which
  the seed's ``Kp = 50`` cannot hold with a torque held for 1-2 ms (``omega T > 1``); a real
  geared joint has this inertia, and Pinocchio's ``model.armature`` adds it to ABA, CRBA
  and RNEA alike (so the Newton-Euler feed-forward still knows the model exactly).

The arm is a :class:`hil_motion_table.robot_models.SerialRobotSpec` (``cisas_arm_spec``, defined there
and registered as ``SERIAL_ROBOTS['cisas']``), so the motion-table IK
(:class:`hil_motion_table.kinematics.SerialKinematics`), ``motion_table_node robot:=cisas`` and the
URDF writer serve it unchanged. Plain Python (Pinocchio); no rclpy.
"""

from __future__ import annotations

import math

import numpy as np

from hil_motion_table.robot_models import urdf_from_spec

# The arm's geometry and masses live with the motion table's robot models (the table drives it:
# motion_table_node robot:=cisas); the constants are re-exported here.
from hil_motion_table.robot_models import (CISAS_LINK_LENGTHS_M, CISAS_LINK_MASSES_KG, FLANGE_OFFSET_M,  # noqa: E402,F401
                                           TUBE_RADIUS_M, WRIST_SPHERE_RADIUS_M, cisas_arm_spec)


ARMATURE_KGM2 = 0.01


def cisas_pin_model(name: str = 'cisas', armature_kgm2: float = ARMATURE_KGM2):
    """Pinocchio model of the arm with the joint armature set (URDF cannot carry it)."""
    import pinocchio as pin

    model = pin.buildModelFromXML(cisas_arm_urdf(name))
    model.armature = np.full(model.nv, float(armature_kgm2))
    return model


def cisas_arm_urdf(name: str = 'cisas') -> str:
    """The URDF (base link ``<name>_base``, tool frame ``<name>_flange``)."""
    return urdf_from_spec(cisas_arm_spec(name))
