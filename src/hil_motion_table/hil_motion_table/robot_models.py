"""Kinematic data of the lab robots and URDF generation from it (no rclpy).

Serial robots: the CISAS docking arm of seed 003 (:func:`cisas_arm_spec`), the KUKA KR 120 R2500 pro
(:func:`kr120r2500pro_spec`, sources there) and the
Universal Robots **UR10e**, from the manufacturer's published table
"DH parameters for calculations of kinematics and dynamics" (Universal Robots support
article, https://www.universal-robots.com/articles/ur/application-installation/
dh-parameters-for-calculations-of-kinematics-and-dynamics/):

=====  ========  =========  =========  ======
joint  a [m]     d [m]      alpha      m [kg]
=====  ========  =========  =========  ======
1      0         0.1807     pi/2       7.369
2      -0.6127   0          0          13.051
3      -0.57155  0          0          3.989
4      0         0.17415    pi/2       2.1
5      0         0.11985    -pi/2      1.98
6      0         0.11655    0          0.615
=====  ========  =========  =========  ======

Joint ranges and speeds from the UR10e data sheet (all joints +-360 deg; base and
shoulder 120 deg/s, elbow and wrists 180 deg/s); the elbow is restricted to +-180 deg
as in Universal Robots' ``ur_description`` (self-collision). The data sheet gives no
joint accelerations; the values below are our own conservative choice.

Conventions: standard (distal) DH, ``T_{i-1,i} = Rz(q_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``.
The URDF places joint *i* at ``F_{i-1} = Tz(d_{i-1}) Tx(a_{i-1}) Rx(alpha_{i-1})`` of the
previous link (``F_0 = I``) so that ``pose_flange_in_base = prod_i Rz(q_i) F_i`` is
exactly the DH product. Inertias are simple: each link's mass sits at the middle of its
DH segment with the inertia of a uniform rod of radius 0.06 m (not the manufacturer's
CAD inertias; good enough for a servo model and for gravity loads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError

UR10E_SOURCE = ('Universal Robots, "DH parameters for calculations of kinematics and dynamics", UR10e row; '
                'UR10e technical specifications (joint ranges and speeds)')


@dataclass(frozen=True)
class SerialRobotSpec:
    """A serial robot as a URDF-like chain (SI units).

    Joint *i* sits at ``joint_xyz[i]``/``joint_rpy[i]`` (URDF origin: translation, then
    fixed-axis roll-pitch-yaw) in the frame of link *i-1* (the base for *i = 0*) and turns
    about ``joint_axis[i]``; the flange frame is at ``flange_xyz``/``flange_rpy`` in the
    last link. ``link_coms[i]`` and ``link_inertias[i]`` (principal moments about the CoM,
    link axes) describe link *i*.
    """

    name: str
    joint_names: tuple[str, ...]
    joint_xyz: tuple[tuple[float, float, float], ...]
    joint_rpy: tuple[tuple[float, float, float], ...]
    joint_axis: tuple[tuple[float, float, float], ...]
    flange_xyz: tuple[float, float, float]
    flange_rpy: tuple[float, float, float]
    link_masses: tuple[float, ...]
    link_coms: tuple[tuple[float, float, float], ...]
    link_inertias: tuple[tuple[float, float, float], ...]
    q_min: tuple[float, ...]
    q_max: tuple[float, ...]
    qd_max: tuple[float, ...]
    qdd_max: tuple[float, ...]
    q_home: tuple[float, ...]
    source: str = ''
    link_radius: float = 0.06
    dh: tuple | None = None  # (a, d, alpha) rows when the robot was given by DH parameters

    def __post_init__(self):
        n = len(self.joint_names)
        for attr in ('joint_xyz', 'joint_rpy', 'joint_axis', 'link_masses', 'link_coms', 'link_inertias',
                     'q_min', 'q_max', 'qd_max', 'qdd_max', 'q_home'):
            if len(getattr(self, attr)) != n:
                raise ConfigError(f'{self.name}: {attr} has {len(getattr(self, attr))} entries, expected {n}')

    @property
    def dof(self) -> int:
        return len(self.joint_names)


def _rod_inertia(mass: float, length: float, radius: float) -> tuple[float, float, float]:
    moment = mass * (3 * radius * radius + length * length) / 12.0
    return (moment, moment, moment)


def serial_spec_from_dh(name, joint_names, dh_a, dh_d, dh_alpha, link_masses, link_radius=0.06, **limits) -> SerialRobotSpec:
    """Standard DH (``T_{i-1,i} = Rz(q_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``) to the chain form.

    Joint *i* is placed at ``F_{i-1} = Tz(d_{i-1}) Tx(a_{i-1}) Rx(alpha_{i-1})`` (``F_0 = I``),
    the flange at ``F_n``, so ``pose_flange_in_base = prod_i Rz(q_i) F_i`` is the DH product.
    Each link's mass sits at the middle of its DH segment with a uniform-rod inertia.
    """
    n = len(dh_a)
    xyz = [(0.0, 0.0, 0.0)] + [(float(dh_a[i]), 0.0, float(dh_d[i])) for i in range(n - 1)]
    rpy = [(0.0, 0.0, 0.0)] + [(float(dh_alpha[i]), 0.0, 0.0) for i in range(n - 1)]
    coms = tuple((dh_a[i] / 2.0, 0.0, dh_d[i] / 2.0) for i in range(n))
    inertias = tuple(_rod_inertia(link_masses[i], math.hypot(dh_a[i], dh_d[i]), link_radius) for i in range(n))
    return SerialRobotSpec(
        name=name, joint_names=tuple(joint_names), joint_xyz=tuple(xyz), joint_rpy=tuple(rpy),
        joint_axis=((0.0, 0.0, 1.0),) * n, flange_xyz=(float(dh_a[-1]), 0.0, float(dh_d[-1])),
        flange_rpy=(float(dh_alpha[-1]), 0.0, 0.0), link_masses=tuple(link_masses), link_coms=coms,
        link_inertias=inertias, link_radius=link_radius, dh=tuple(zip(dh_a, dh_d, dh_alpha)), **limits)


def ur10e_spec() -> SerialRobotSpec:
    """The UR10e (see module docstring for the source of every number)."""
    deg = math.pi / 180.0
    return serial_spec_from_dh(
        'ur10e',
        ('shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint', 'wrist_2_joint', 'wrist_3_joint'),
        dh_a=(0.0, -0.6127, -0.57155, 0.0, 0.0, 0.0),
        dh_d=(0.1807, 0.0, 0.0, 0.17415, 0.11985, 0.11655),
        dh_alpha=(math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0),
        link_masses=(7.369, 13.051, 3.989, 2.1, 1.98, 0.615),
        q_min=(-2 * math.pi, -2 * math.pi, -math.pi, -2 * math.pi, -2 * math.pi, -2 * math.pi),
        q_max=(2 * math.pi, 2 * math.pi, math.pi, 2 * math.pi, 2 * math.pi, 2 * math.pi),
        qd_max=(120 * deg, 120 * deg, 180 * deg, 180 * deg, 180 * deg, 180 * deg),
        qdd_max=(8.0, 8.0, 10.0, 15.0, 15.0, 15.0),
        q_home=(0.0, -math.pi / 2, math.pi / 2, -math.pi / 2, -math.pi / 2, 0.0),
        source=UR10E_SOURCE,
    )


KR120_SOURCE = ('KUKA KR 120 R2500 pro (KR QUANTEC pro): joint frames, axes, ranges and speeds as published by '
                'ROS-Industrial, kuka_experimental/kuka_kr120_support/urdf/kr120r2500pro_macro.xacro')


def kr120r2500pro_spec() -> SerialRobotSpec:
    """KUKA KR 120 R2500 pro, the class of industrial robot the OOS-Sim facility uses (seed 004).

    Kinematics (A1 at 0.675 m, A2 offset 0.35 m, A2-A3 1.15 m, A3-A4 1.0 m / -0.041 m,
    flange 0.215 m after A5/A6), axes, ranges and speeds: see :data:`KR120_SOURCE`. The
    public description has no inertial data; the link masses below are our estimate,
    adding up (with a 260 kg base) to about the 1049 kg the data sheet gives. Joint
    accelerations are our choice. At zero angles the arm points along +x.
    """
    deg = math.pi / 180.0
    masses = (240.0, 200.0, 160.0, 60.0, 25.0, 5.0)
    segments = (0.675, 1.15, 1.0, 0.3, 0.2, 0.1)
    coms = ((0.1, 0.0, 0.0), (0.575, 0.0, 0.0), (0.5, 0.0, -0.02), (0.0, 0.0, 0.0), (0.1, 0.0, 0.0), (0.05, 0.0, 0.0))
    return SerialRobotSpec(
        name='kr120r2500pro',
        joint_names=tuple(f'joint_a{i + 1}' for i in range(6)),
        joint_xyz=((0.0, 0.0, 0.675), (0.35, 0.0, 0.0), (1.15, 0.0, 0.0), (1.0, 0.0, -0.041), (0.0, 0.0, 0.0),
                   (0.0, 0.0, 0.0)),
        joint_rpy=((0.0, 0.0, 0.0),) * 6,
        joint_axis=((0.0, 0.0, -1.0), (0.0, 1.0, 0.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0),
                    (-1.0, 0.0, 0.0)),
        flange_xyz=(0.215, 0.0, 0.0), flange_rpy=(0.0, 0.0, 0.0),
        link_masses=masses, link_coms=coms,
        link_inertias=tuple(_rod_inertia(m, L, 0.2) for m, L in zip(masses, segments)),
        q_min=(-185 * deg, -155 * deg, -130 * deg, -350 * deg, -130 * deg, -350 * deg),
        q_max=(185 * deg, 35 * deg, 154 * deg, 350 * deg, 130 * deg, 350 * deg),
        qd_max=(156 * deg, 156 * deg, 156 * deg, 330 * deg, 330 * deg, 615 * deg),
        qdd_max=(3.0, 3.0, 3.0, 8.0, 8.0, 10.0),
        q_home=(0.0, -90 * deg, 90 * deg, 0.0, 45 * deg, 0.0),
        source=KR120_SOURCE, link_radius=0.2,
    )


def dh_transform(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    """``Rz(theta) Tz(d) Tx(a) Rx(alpha)`` as a 4x4 matrix (standard DH, plain numpy)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def dh_forward(spec: SerialRobotSpec, q: Sequence[float]) -> np.ndarray:
    """``pose_flange_in_base`` as a 4x4 matrix by the DH product (independent of Pinocchio)."""
    out = np.eye(4)
    for i, (a, d, alpha) in enumerate(spec.dh):
        out = out @ dh_transform(a, d, alpha, float(q[i]))
    return out


def rpy_matrix(rpy) -> np.ndarray:
    """URDF ``rpy``: ``Rz(yaw) Ry(pitch) Rx(roll)`` (Pinocchio's ``rpyToMatrix``)."""
    return pin.rpy.rpyToMatrix(*(float(v) for v in rpy))


def link_names(spec: SerialRobotSpec) -> list[str]:
    return [f'{spec.name}_link_{i + 1}' for i in range(spec.dof)]


def _f(x: float) -> str:
    return repr(float(x))


def _v(values) -> str:
    return ' '.join(_f(v) for v in values)


def urdf_from_spec(spec: SerialRobotSpec) -> str:
    """A URDF of ``spec`` (base link ``<name>_base``, tool frame link ``<name>_flange``)."""
    links = link_names(spec)
    parts = [f'<?xml version="1.0"?>\n<robot name="{spec.name}">', f'  <link name="{spec.name}_base"/>']
    parent = f'{spec.name}_base'
    for i in range(spec.dof):
        ixx, iyy, izz = spec.link_inertias[i]
        parts.append(
            f'  <link name="{links[i]}"><inertial><origin xyz="{_v(spec.link_coms[i])}"/>'
            f'<mass value="{_f(spec.link_masses[i])}"/><inertia ixx="{_f(ixx)}" ixy="0" ixz="0" '
            f'iyy="{_f(iyy)}" iyz="0" izz="{_f(izz)}"/></inertial></link>')
        parts.append(
            f'  <joint name="{spec.joint_names[i]}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{links[i]}"/><origin xyz="{_v(spec.joint_xyz[i])}" rpy="{_v(spec.joint_rpy[i])}"/>'
            f'<axis xyz="{_v(spec.joint_axis[i])}"/>'
            f'<limit lower="{_f(spec.q_min[i])}" upper="{_f(spec.q_max[i])}" effort="1000" '
            f'velocity="{_f(spec.qd_max[i])}"/></joint>')
        parent = links[i]
    parts.append(f'  <link name="{spec.name}_flange"/>')
    parts.append(f'  <joint name="{spec.name}_flange_joint" type="fixed"><parent link="{parent}"/>'
                 f'<child link="{spec.name}_flange"/><origin xyz="{_v(spec.flange_xyz)}" rpy="{_v(spec.flange_rpy)}"/>'
                 '</joint>')
    parts.append('</robot>\n')
    return '\n'.join(parts)


# -- the CISAS docking facility's arm (seed 003 §II-A) ---------------------------------------------
CISAS_LINK_LENGTHS_M = (0.7, 0.7, 0.6)
CISAS_LINK_MASSES_KG = (1.05, 1.71, 1.46, 0.23, 0.19, 0.21)
TUBE_RADIUS_M = 0.03
WRIST_SPHERE_RADIUS_M = 0.04
FLANGE_OFFSET_M = 0.08
CISAS_SOURCE = ('CISAS arm, seed 003 §II-A table (lengths, masses); layout, inertias and limits as stated in '
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
    """The CISAS 6-DOF arm of seed 003 §II (the layout and the values not in the seed: hil_docking/arm.py)."""
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
        source=CISAS_SOURCE,
        link_radius=TUBE_RADIUS_M,
    )



SERIAL_ROBOTS = {'ur10e': ur10e_spec, 'kr120r2500pro': kr120r2500pro_spec, 'cisas': cisas_arm_spec}


# ---------------------------------------------------------------------------------------
# Hexapod (Stewart platform), the parallel motion table of seed 001 (HEXA-type table).

@dataclass(frozen=True)
class HexapodSpec:
    """A 6-6 Stewart platform.

    ``base_points_in_base[i]`` (b_i) and ``platform_points_in_platform[i]`` (p_i) are the
    leg anchor points; leg *i* joins b_i to p_i. ``home_height`` is the platform origin's
    height above the base origin in the home pose. Legs are prismatic actuators with
    stroke ``[leg_min, leg_max]``, speed ``leg_speed_max`` and acceleration ``leg_acc_max``.
    The geometry is a generic laboratory hexapod (our own numbers, not a product's).
    """

    name: str
    base_points_in_base: np.ndarray
    platform_points_in_platform: np.ndarray
    home_height: float
    leg_min: float
    leg_max: float
    leg_speed_max: float
    leg_acc_max: float
    joint_names: tuple[str, ...] = ()

    def __post_init__(self):
        for attr in ('base_points_in_base', 'platform_points_in_platform'):
            value = np.asarray(getattr(self, attr), dtype=float)
            if value.shape != (6, 3):
                raise ConfigError(f'{self.name}: {attr} must be 6x3, got {value.shape}')
            object.__setattr__(self, attr, value)
        if not self.joint_names:
            object.__setattr__(self, 'joint_names', tuple(f'leg_{i + 1}' for i in range(6)))

    @property
    def dof(self) -> int:
        return 6


def hexapod_spec(name: str = 'hexapod', base_radius: float = 0.6, platform_radius: float = 0.35,
                 base_half_angle_deg: float = 10.0, platform_half_angle_deg: float = 50.0,
                 home_height: float = 0.75) -> HexapodSpec:
    """A symmetric 6-6 hexapod: base pairs at 0/120/240 deg, platform pairs rotated by 60 deg.

    Base point ``2k`` and ``2k+1`` sit at ``120k -+ base_half_angle``; platform points at
    ``120k -+ platform_half_angle`` so that each leg crosses to the neighbouring pair, the
    usual well-conditioned layout.
    """
    base, plat = [], []
    for k in range(3):
        centre = math.radians(120.0 * k)
        for sign in (-1.0, 1.0):
            ab = centre + sign * math.radians(base_half_angle_deg)
            ap = centre + sign * math.radians(platform_half_angle_deg)
            base.append([base_radius * math.cos(ab), base_radius * math.sin(ab), 0.0])
            plat.append([platform_radius * math.cos(ap), platform_radius * math.sin(ap), 0.0])
    return HexapodSpec(name=name, base_points_in_base=np.array(base), platform_points_in_platform=np.array(plat),
                       home_height=home_height, leg_min=0.60, leg_max=1.10, leg_speed_max=0.25, leg_acc_max=5.0)
