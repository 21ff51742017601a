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

The arm is a :class:`hil_motion_table.robot_models.SerialRobotSpec`, so the motion-table
IK (:class:`hil_motion_table.kinematics.SerialKinematics`) and the URDF writer serve it
unchanged. Plain Python (Pinocchio); no rclpy.
"""

from __future__ import annotations

import math

import numpy as np

from hil_motion_table.robot_models import SerialRobotSpec, urdf_from_spec

CISAS_LINK_LENGTHS_M = (0.7, 0.7, 0.6)
CISAS_LINK_MASSES_KG = (1.05, 1.71, 1.46, 0.23, 0.19, 0.21)
TUBE_RADIUS_M = 0.03
WRIST_SPHERE_RADIUS_M = 0.04
FLANGE_OFFSET_M = 0.08
SOURCE = ('CISAS arm, seed 003 §II-A table (lengths, masses); layout, inertias and limits as stated in '
          'hil_docking/arm.py')


def _tube(mass: float, length: float, radius: float, axis: int) -> tuple[float, float, float]:
    """Principal moments (ixx, iyy, izz) of a uniform rod along ``axis`` (0 = x, 2 = z)."""
    transverse = mass * (3.0 * radius * radius + length * length) / 12.0
    axial = mass * radius * radius / 2.0
    moments = [transverse] * 3
    moments[axis] = axial
    return tuple(moments)


def _sphere(mass: float, radius: float) -> tuple[float, float, float]:
    moment = 0.4 * mass * radius * radius
    return (moment, moment, moment)


def cisas_arm_spec(name: str = 'cisas') -> SerialRobotSpec:
    l1, l2, l3 = CISAS_LINK_LENGTHS_M
    m = CISAS_LINK_MASSES_KG
    pi = math.pi
    return SerialRobotSpec(
        name=name,
        joint_names=tuple(f'{name}_joint_{i}' for i in range(1, 7)),
        joint_xyz=((0.0, 0.0, 0.0), (0.0, 0.0, l1), (l2, 0.0, 0.0), (l3, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
        joint_rpy=((0.0, 0.0, 0.0),) * 6,
        joint_axis=((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0),
                    (1.0, 0.0, 0.0)),
        flange_xyz=(FLANGE_OFFSET_M, 0.0, 0.0),
        flange_rpy=(0.0, 0.0, 0.0),
        link_masses=m,
        link_coms=((0.0, 0.0, l1 / 2), (l2 / 2, 0.0, 0.0), (l3 / 2, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                   (FLANGE_OFFSET_M / 2, 0.0, 0.0)),
        link_inertias=(_tube(m[0], l1, TUBE_RADIUS_M, 2), _tube(m[1], l2, TUBE_RADIUS_M, 0),
                       _tube(m[2], l3, TUBE_RADIUS_M, 0), _sphere(m[3], WRIST_SPHERE_RADIUS_M),
                       _sphere(m[4], WRIST_SPHERE_RADIUS_M), _tube(m[5], FLANGE_OFFSET_M, TUBE_RADIUS_M, 0)),
        q_min=(-pi, -pi, -pi, -2 * pi, -pi, -2 * pi),
        q_max=(pi, pi, pi, 2 * pi, pi, 2 * pi),
        qd_max=(2.0,) * 6,
        qdd_max=(10.0,) * 6,
        q_home=(0.0, -0.6, 1.4, 0.0, -0.8, 0.0),
        source=SOURCE,
        link_radius=TUBE_RADIUS_M,
    )


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
