"""A minimal URDF writer for serial arms made of rigid links and revolute joints.

The arm models of :mod:`hil_dynamics.models` are data (:class:`ArmSpec`); this module turns
them into URDF strings, either as a fixed-base arm or mounted on a free-flying servicer base.
Geometry is limited to primitives (cylinders along each link, a box for the base): no
meshes, so the strings load in Pinocchio and MuJoCo alike.

Conventions: lengths in m, masses in kg, inertias in kg m^2 about the link CoM in link axes
(URDF ``ixy`` etc. are the off-diagonal *tensor* elements), angles in rad.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence
from xml.sax.saxutils import quoteattr

import numpy as np

from hil_common.errors import ConfigError


@dataclass(frozen=True)
class LinkSpec:
    """Mass properties of one rigid link in its own frame."""

    name: str
    mass_kg: float
    com_m: tuple[float, float, float]
    # (ixx, iyy, izz, ixy, ixz, iyz) about the CoM, link axes [kg m^2].
    inertia_com_kgm2: tuple[float, float, float, float, float, float]

    def inertia_matrix(self) -> np.ndarray:
        ixx, iyy, izz, ixy, ixz, iyz = self.inertia_com_kgm2
        return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


@dataclass(frozen=True)
class JointSpec:
    """A revolute joint placing ``child`` in ``parent`` (origin xyz/rpy at zero angle)."""

    name: str
    parent: str
    child: str
    xyz_m: tuple[float, float, float]
    rpy_rad: tuple[float, float, float]
    axis: tuple[float, float, float]
    lower_rad: float
    upper_rad: float
    effort_nm: float
    velocity_rad_s: float


@dataclass(frozen=True)
class FrameSpec:
    """A massless frame fixed to a link (end effector, flange, tool centre point)."""

    name: str
    parent: str
    xyz_m: tuple[float, float, float]
    rpy_rad: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class ArmSpec:
    """A serial arm: a base link (fixed to whatever carries the arm), n moving links, n joints.

    ``links[i]`` is the child of ``joints[i]``; ``segment_ends_m[k]`` is where the visual
    cylinder of link k (0 = base link) ends, in that link's frame (it starts at the origin).
    """

    name: str
    base_link: LinkSpec
    links: tuple[LinkSpec, ...]
    joints: tuple[JointSpec, ...]
    frames: tuple[FrameSpec, ...]
    ee_frame: str
    segment_ends_m: tuple[tuple[float, float, float], ...]
    link_radius_m: float
    source: str = ''

    @property
    def n_joints(self) -> int:
        return len(self.joints)


@dataclass(frozen=True)
class BaseSpec:
    """A servicer base: a uniform box (mass, size) unless an explicit inertia is given.

    ``inertia_com_kgm2`` (ixx, iyy, izz, ixy, ixz, iyz) overrides the box inertia; the
    box size is then only the visual.
    """

    mass_kg: float = 1800.0
    size_m: tuple[float, float, float] = (2.0, 1.8, 1.6)
    inertia_com_kgm2: Optional[tuple[float, float, float, float, float, float]] = None
    name: str = 'servicer_base'

    def inertia_matrix(self) -> np.ndarray:
        if self.inertia_com_kgm2 is not None:
            ixx, iyy, izz, ixy, ixz, iyz = self.inertia_com_kgm2
            return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)
        a, b, c = self.size_m
        return self.mass_kg / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def _fmt(values: Sequence[float]) -> str:
    return ' '.join(repr(float(v)) for v in values)


def _inertial_xml(mass_kg: float, com_m, inertia: np.ndarray) -> str:
    return (f'    <inertial>\n      <origin xyz="{_fmt(com_m)}" rpy="0 0 0"/>\n'
            f'      <mass value="{float(mass_kg)!r}"/>\n'
            f'      <inertia ixx="{float(inertia[0, 0])!r}" ixy="{float(inertia[0, 1])!r}" '
            f'ixz="{float(inertia[0, 2])!r}" iyy="{float(inertia[1, 1])!r}" iyz="{float(inertia[1, 2])!r}" '
            f'izz="{float(inertia[2, 2])!r}"/>\n    </inertial>\n')


def _rpy_z_to(direction: np.ndarray) -> tuple[float, float, float]:
    """URDF rpy of a rotation taking +z onto ``direction`` (for a cylinder visual)."""
    d = direction / np.linalg.norm(direction)
    # R = Rz(yaw) Ry(pitch): R ez = (cos(yaw) sin(pitch), sin(yaw) sin(pitch), cos(pitch)).
    pitch = float(np.arccos(np.clip(d[2], -1.0, 1.0)))
    yaw = float(np.arctan2(d[1], d[0])) if np.hypot(d[0], d[1]) > 1e-12 else 0.0
    return (0.0, pitch, yaw)


def _segment_visual_xml(end_m, radius_m: float) -> str:
    end = np.asarray(end_m, dtype=float)
    length = float(np.linalg.norm(end))
    if length < 1e-9:
        return (f'    <visual>\n      <origin xyz="0 0 0" rpy="0 0 0"/>\n'
                f'      <geometry><sphere radius="{radius_m!r}"/></geometry>\n    </visual>\n')
    rpy = _rpy_z_to(end)
    return (f'    <visual>\n      <origin xyz="{_fmt(end / 2.0)}" rpy="{_fmt(rpy)}"/>\n'
            f'      <geometry><cylinder radius="{float(radius_m)!r}" length="{length!r}"/></geometry>\n    </visual>\n')


def _link_xml(name: str, inertial: str = '', visual: str = '') -> str:
    return f'  <link name={quoteattr(name)}>\n{inertial}{visual}  </link>\n'


def _fixed_joint_xml(name: str, parent: str, child: str, xyz, rpy=(0.0, 0.0, 0.0)) -> str:
    return (f'  <joint name={quoteattr(name)} type="fixed">\n'
            f'    <parent link={quoteattr(parent)}/>\n    <child link={quoteattr(child)}/>\n'
            f'    <origin xyz="{_fmt(xyz)}" rpy="{_fmt(rpy)}"/>\n  </joint>\n')


def _revolute_joint_xml(j: JointSpec) -> str:
    return (f'  <joint name={quoteattr(j.name)} type="revolute">\n'
            f'    <parent link={quoteattr(j.parent)}/>\n    <child link={quoteattr(j.child)}/>\n'
            f'    <origin xyz="{_fmt(j.xyz_m)}" rpy="{_fmt(j.rpy_rad)}"/>\n'
            f'    <axis xyz="{_fmt(j.axis)}"/>\n'
            f'    <limit lower="{j.lower_rad!r}" upper="{j.upper_rad!r}" effort="{j.effort_nm!r}" '
            f'velocity="{j.velocity_rad_s!r}"/>\n  </joint>\n')


def _arm_body_xml(arm: ArmSpec, base_inertial: bool) -> str:
    """Links and joints of the arm, from its base link outwards (no <robot> wrapper)."""
    out = []
    base = arm.base_link
    inertial = _inertial_xml(base.mass_kg, base.com_m, base.inertia_matrix()) if base_inertial else ''
    out.append(_link_xml(base.name, inertial, _segment_visual_xml(arm.segment_ends_m[0], arm.link_radius_m)))
    for k, (joint, link) in enumerate(zip(arm.joints, arm.links), start=1):
        out.append(_link_xml(link.name, _inertial_xml(link.mass_kg, link.com_m, link.inertia_matrix()),
                             _segment_visual_xml(arm.segment_ends_m[k], arm.link_radius_m)))
        out.append(_revolute_joint_xml(joint))
    for frame in arm.frames:
        out.append(_link_xml(frame.name))
        out.append(_fixed_joint_xml(f'{frame.name}_joint', frame.parent, frame.name, frame.xyz_m, frame.rpy_rad))
    return ''.join(out)


def arm_urdf(arm: ArmSpec) -> str:
    """URDF of the arm alone, rooted at its base link (a fixed-base arm, e.g. on a lab robot)."""
    comment = f'<!-- {arm.name}: generated by hil_dynamics.models. {arm.source} -->\n'
    return (f'<?xml version="1.0"?>\n{comment}<robot name={quoteattr(arm.name)}>\n'
            f'{_arm_body_xml(arm, base_inertial=True)}</robot>\n')


@dataclass(frozen=True)
class ServicerLayout:
    """Where the composite base CoM ended up: offsets the caller may need (all in m)."""

    base_com_in_root_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    arm_mount_in_root_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    composite_base_mass_kg: float = 0.0


def servicer_layout(arm: ArmSpec, base: BaseSpec, mount_xyz_in_base_com_m) -> ServicerLayout:
    """Place the root frame at the CoM of the rigid base *including* the arm's base link.

    The free-flyer joint of the servicer sits at the root frame, and seed 004 Eq. (12)
    takes the base velocity at the base CoM; since the arm's base link is rigidly bolted
    to the base it is part of that rigid body.
    """
    mount = np.asarray(mount_xyz_in_base_com_m, dtype=float)
    m_b = float(base.mass_kg)
    m_0 = float(arm.base_link.mass_kg)
    # The arm base link is mounted with the base's axes (no rotation); its CoM in base-CoM coordinates:
    com_link0 = mount + np.asarray(arm.base_link.com_m, dtype=float)
    c = (m_0 * com_link0) / (m_b + m_0)
    return ServicerLayout(base_com_in_root_m=-c, arm_mount_in_root_m=mount - c, composite_base_mass_kg=m_b + m_0)


def servicer_urdf(arm: ArmSpec, base: BaseSpec, mount_xyz_in_base_com_m, robot_name: str) -> str:
    """URDF of a free-flying servicer: the base box with ``arm`` bolted on at ``mount``.

    The root link (``base.name``) frame is at the CoM of base + arm base link, axes of the
    base box; load it with a free-flyer root joint (:func:`hil_dynamics.servicer.ServicerModel`).
    """
    mass = float(base.mass_kg)
    if not np.isfinite(mass) or mass <= 0.0:
        raise ConfigError(f'base mass_kg must be finite and > 0, got {base.mass_kg!r}')
    inertia = base.inertia_matrix()
    if not np.all(np.linalg.eigvalsh(inertia) > 0.0):
        raise ConfigError('base inertia_com_kgm2 must be positive definite')
    layout = servicer_layout(arm, base, mount_xyz_in_base_com_m)
    box_visual = (f'    <visual>\n      <origin xyz="{_fmt(layout.base_com_in_root_m)}" rpy="0 0 0"/>\n'
                  f'      <geometry><box size="{_fmt(base.size_m)}"/></geometry>\n    </visual>\n')
    root = _link_xml(base.name, _inertial_xml(mass, layout.base_com_in_root_m, inertia), box_visual)
    mount = _fixed_joint_xml(f'{arm.name}_mount', base.name, arm.base_link.name, layout.arm_mount_in_root_m)
    comment = (f'<!-- {robot_name}: generated by hil_dynamics.models. Base: {mass!r} kg, box {list(base.size_m)} m. '
               f'Arm: {arm.source} -->\n')
    return (f'<?xml version="1.0"?>\n{comment}<robot name={quoteattr(robot_name)}>\n{root}'
            f'{_arm_body_xml(arm, base_inertial=True)}{mount}</robot>\n')
