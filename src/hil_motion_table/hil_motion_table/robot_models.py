"""Kinematic data of the lab robots and URDF generation from it (no rclpy).

Serial robot: Universal Robots **UR10e**, from the manufacturer's published table
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
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

UR10E_SOURCE = ('Universal Robots, "DH parameters for calculations of kinematics and dynamics", UR10e row; '
                'UR10e technical specifications (joint ranges and speeds)')


@dataclass(frozen=True)
class SerialRobotSpec:
    """A serial robot described by standard DH parameters plus joint limits (SI units)."""

    name: str
    dh_a: tuple[float, ...]
    dh_d: tuple[float, ...]
    dh_alpha: tuple[float, ...]
    link_masses: tuple[float, ...]
    q_min: tuple[float, ...]
    q_max: tuple[float, ...]
    qd_max: tuple[float, ...]
    qdd_max: tuple[float, ...]
    q_home: tuple[float, ...]
    source: str = ''
    link_radius: float = 0.06
    joint_names: tuple[str, ...] = field(default=())

    def __post_init__(self):
        n = len(self.dh_a)
        for attr in ('dh_d', 'dh_alpha', 'link_masses', 'q_min', 'q_max', 'qd_max', 'qdd_max', 'q_home'):
            if len(getattr(self, attr)) != n:
                raise ValueError(f'{self.name}: {attr} has {len(getattr(self, attr))} entries, expected {n}')
        if not self.joint_names:
            object.__setattr__(self, 'joint_names', tuple(f'joint_{i + 1}' for i in range(n)))

    @property
    def dof(self) -> int:
        return len(self.dh_a)


def ur10e_spec() -> SerialRobotSpec:
    """The UR10e (see module docstring for the source of every number)."""
    deg = math.pi / 180.0
    return SerialRobotSpec(
        name='ur10e',
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
        joint_names=('shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint',
                     'wrist_1_joint', 'wrist_2_joint', 'wrist_3_joint'),
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
    for i in range(spec.dof):
        out = out @ dh_transform(spec.dh_a[i], spec.dh_d[i], spec.dh_alpha[i], float(q[i]))
    return out


def link_names(spec: SerialRobotSpec) -> list[str]:
    return [f'{spec.name}_link_{i + 1}' for i in range(spec.dof)]


def link_inertial(spec: SerialRobotSpec, i: int) -> tuple[np.ndarray, np.ndarray]:
    """CoM (in link-i frame) and rotational inertia about the CoM of link ``i`` (simple rod)."""
    com = np.array([spec.dh_a[i] / 2.0, 0.0, spec.dh_d[i] / 2.0])
    length = math.hypot(spec.dh_a[i], spec.dh_d[i])
    m, r = spec.link_masses[i], spec.link_radius
    moment = m * (3 * r * r + length * length) / 12.0
    return com, np.diag([moment, moment, moment])


def _f(x: float) -> str:
    return repr(float(x))


def _origin(a: float, d: float, alpha: float) -> str:
    return f'<origin xyz="{_f(a)} 0 {_f(d)}" rpy="{_f(alpha)} 0 0"/>'


def urdf_from_dh(spec: SerialRobotSpec) -> str:
    """A URDF of ``spec`` (base link ``<name>_base``, tool frame link ``<name>_flange``)."""
    links = link_names(spec)
    parts = [f'<?xml version="1.0"?>\n<robot name="{spec.name}">',
             f'  <link name="{spec.name}_base"/>']
    parent = f'{spec.name}_base'
    previous = (0.0, 0.0, 0.0)
    for i in range(spec.dof):
        com, inertia = link_inertial(spec, i)
        parts.append(
            f'  <link name="{links[i]}"><inertial><origin xyz="{_f(com[0])} {_f(com[1])} {_f(com[2])}"/>'
            f'<mass value="{_f(spec.link_masses[i])}"/><inertia ixx="{_f(inertia[0, 0])}" ixy="0" ixz="0" '
            f'iyy="{_f(inertia[1, 1])}" iyz="0" izz="{_f(inertia[2, 2])}"/></inertial></link>')
        parts.append(
            f'  <joint name="{spec.joint_names[i]}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{links[i]}"/>{_origin(*previous)}<axis xyz="0 0 1"/>'
            f'<limit lower="{_f(spec.q_min[i])}" upper="{_f(spec.q_max[i])}" effort="1000" '
            f'velocity="{_f(spec.qd_max[i])}"/></joint>')
        parent = links[i]
        previous = (spec.dh_a[i], spec.dh_d[i], spec.dh_alpha[i])
    parts.append(f'  <link name="{spec.name}_flange"/>')
    parts.append(f'  <joint name="{spec.name}_flange_joint" type="fixed"><parent link="{parent}"/>'
                 f'<child link="{spec.name}_flange"/>{_origin(*previous)}</joint>')
    parts.append('</robot>\n')
    return '\n'.join(parts)


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
                raise ValueError(f'{self.name}: {attr} must be 6x3, got {value.shape}')
            object.__setattr__(self, attr, value)
        if not self.joint_names:
            object.__setattr__(self, 'joint_names', tuple(f'{self.name}_leg_{i + 1}' for i in range(6)))

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
