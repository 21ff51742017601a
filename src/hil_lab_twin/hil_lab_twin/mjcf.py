"""MJCF (MuJoCo XML) of the lab twin, generated from the same kinematic data as the motion tables.

A facility like OOS-Sim (seed 004, Fig. 1): each robot sits at its own base pose in the
lab world (z up). Names inside the model are prefixed with the robot namespace
(``client_...``). Per robot the model holds:

* serial robot: hinge joints from :class:`hil_motion_table.robot_models.SerialRobotSpec`
  (same frames as the URDF used for IK), a ``<ns>_flange`` site, then an F/T sensor body
  and the payload; robot links do not collide (visual capsules only);
* hexapod: six legs, each a ball joint at ``b_i`` and a prismatic joint along the leg,
  closed on the free-floating platform by ``connect`` equalities at ``p_i`` (the closed
  chain of the parallel robot); leg length ``l_i = l_i0 + qpos``;
* payloads: the client mock-up (a box with a launch-adapter-ring-like grapple made of
  capsules), or the 7-DOF light-weight arm (from :mod:`hil_dynamics.models`) with a wrist
  F/T sensor and a two-finger gripper.

F/T sensors are MuJoCo ``force``/``torque`` sensors at a site on the payload's root body,
placed at the sensor's measuring frame; they report the interaction between the payload
subtree and the sensor body.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from hil_motion_table.robot_models import HexapodSpec, SerialRobotSpec, rpy_matrix


def _f(x) -> str:
    return f'{float(x):.12g}'


def _v(values) -> str:
    return ' '.join(_f(v) for v in values)


def quat_wxyz(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """MuJoCo quaternion ``(w, x, y, z)`` of a rotation matrix."""
    x, y, z, w = pin.Quaternion(np.asarray(rotation, dtype=float)).coeffs()
    return (w, x, y, z)


def pose_attrs(xyz, rotation=None) -> str:
    """MJCF ``pos`` (and ``quat`` unless identity) attributes of a pose."""
    attrs = f'pos="{_v(xyz)}"'
    if rotation is not None and not np.allclose(rotation, np.eye(3)):
        attrs += f' quat="{_v(quat_wxyz(rotation))}"'
    return attrs


@dataclass(frozen=True)
class ChainLink:
    """One moving link of a serial chain for the MJCF writer (SI units, parent-link frame)."""

    body: str
    joint: str
    xyz: tuple
    rotation: np.ndarray
    axis: tuple
    q_range: tuple[float, float]
    mass: float
    com: tuple
    inertia: np.ndarray  # 3x3 about the CoM, link axes
    segment_end: tuple
    radius: float
    armature: float = 0.0
    damping: float = 0.0
    frictionloss: float = 0.0


@dataclass
class ModelInfo:
    """What the twin needs to know about the generated model, per robot namespace."""

    robots: dict = field(default_factory=dict)      # ns -> dict(kind, joints, flange_site, base_pose, ...)
    ft_sensors: dict = field(default_factory=dict)  # sensor name -> dict(site, payload_body)


def chain_from_serial(spec: SerialRobotSpec, ns: str, armature) -> list[ChainLink]:
    out = []
    for i in range(spec.dof):
        nxt = spec.joint_xyz[i + 1] if i + 1 < spec.dof else spec.flange_xyz
        out.append(ChainLink(
            body=f'{ns}_link_{i + 1}', joint=f'{ns}_{spec.joint_names[i]}', xyz=spec.joint_xyz[i],
            rotation=rpy_matrix(spec.joint_rpy[i]), axis=spec.joint_axis[i], q_range=(spec.q_min[i], spec.q_max[i]),
            mass=spec.link_masses[i], com=spec.link_coms[i], inertia=np.diag(spec.link_inertias[i]),
            segment_end=nxt, radius=spec.link_radius, armature=float(armature[i])))
    return out


def chain_from_arm(arm, ns: str, damping, frictionloss, armature) -> list[ChainLink]:
    """Chain from a :class:`hil_dynamics.models.urdf_builder.ArmSpec` (the light-weight arm)."""
    out = []
    for i, (joint, link) in enumerate(zip(arm.joints, arm.links)):
        out.append(ChainLink(
            body=f'{ns}_{link.name}', joint=f'{ns}_{joint.name}', xyz=joint.xyz_m, rotation=rpy_matrix(joint.rpy_rad),
            axis=joint.axis, q_range=(joint.lower_rad, joint.upper_rad), mass=link.mass_kg, com=link.com_m,
            inertia=link.inertia_matrix(), segment_end=arm.segment_ends_m[i + 1], radius=arm.link_radius_m * 0.8,
            armature=float(armature[i]), damping=float(damping[i]), frictionloss=float(frictionloss[i])))
    return out


def inertial(mass, com, inertia) -> str:
    """MJCF ``<inertial>`` element: mass (kg), CoM (m) and the full inertia tensor at the CoM (kg m^2)."""
    i = np.asarray(inertia)
    return (f'<inertial pos="{_v(com)}" mass="{_f(mass)}" '
            f'fullinertia="{_v((i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]))}"/>')


def capsule(name, end, radius, rgba, collide=False) -> str:
    """MJCF capsule from the body origin to ``end`` (a sphere when ``end`` is the origin)."""
    if float(np.linalg.norm(end)) < 1e-6:
        return f'<geom name="{name}" type="sphere" size="{_f(radius)}" rgba="{rgba}" {_nocollide(collide)}/>'
    return (f'<geom name="{name}" type="capsule" fromto="0 0 0 {_v(end)}" size="{_f(radius)}" rgba="{rgba}" '
            f'{_nocollide(collide)}/>')


def _nocollide(collide: bool) -> str:
    return '' if collide else 'contype="0" conaffinity="0"'


def open_chain(chain: list[ChainLink], rgba: str) -> tuple[list[str], int]:
    """Nested ``<body>`` openings for the chain; returns the lines and how many to close."""
    lines = []
    for link in chain:
        lo, hi = link.q_range
        lines.append(f'<body name="{link.body}" {pose_attrs(link.xyz, link.rotation)}>')
        lines.append(f'<joint name="{link.joint}" type="hinge" axis="{_v(link.axis)}" range="{_f(lo)} {_f(hi)}" '
                     f'armature="{_f(link.armature)}" damping="{_f(link.damping)}" frictionloss="{_f(link.frictionloss)}"/>')
        lines.append(inertial(link.mass, link.com, link.inertia))
        lines.append(capsule(f'{link.body}_geom', link.segment_end, link.radius, rgba))
    return lines, len(chain)


def ft_sensor_body(name: str, xyz, rotation, mass=0.9, radius=0.05, height=0.04) -> tuple[list[str], str]:
    """Open the F/T sensor body (a puck ``height`` thick); returns lines and the measuring-frame pose."""
    lines = [f'<body name="{name}_body" {pose_attrs(xyz, rotation)}>',
             inertial(mass, (0, 0, height / 2), np.diag([mass * radius ** 2 / 4] * 2 + [mass * radius ** 2 / 2])),
             f'<geom name="{name}_geom" type="cylinder" fromto="0 0 0 0 0 {_f(height)}" size="{_f(radius)}" '
             f'rgba="0.2 0.2 0.2 1" contype="0" conaffinity="0"/>']
    return lines, _v((0, 0, height))


def client_mockup(ns: str, sensor: str, sensor_top: str, mass_box: float = 4.0, ring_mass: float = 1.5,
                  box_half=(0.15, 0.15, 0.12), ring_radius: float = 0.16, ring_tube: float = 0.012,
                  ring_segments: int = 16) -> list[str]:
    """The client mock-up: a box 'satellite' with a launch-adapter-ring-like grapple on its far face.

    Body frame = sensor measuring frame (z out of the flange). The ring is ``ring_segments``
    capsules on a circle of ``ring_radius`` in the plane ``z = 2 box_half_z + 0.03``,
    standing on four struts; it is the grapple the servicer's gripper closes on.
    """
    hx, hy, hz = box_half
    zr = 2 * hz + 0.03
    lines = [f'<body name="{ns}_mockup" pos="{sensor_top}">',
             f'<site name="{sensor}_site" pos="0 0 0" size="0.01" rgba="1 0 0 1"/>',
             f'<geom name="{ns}_mockup_box" type="box" pos="0 0 {_f(hz)}" size="{_v(box_half)}" mass="{_f(mass_box)}" '
             f'rgba="0.85 0.75 0.3 1"/>']
    seg_mass = ring_mass / ring_segments
    for k in range(ring_segments):
        a0, a1 = 2 * math.pi * k / ring_segments, 2 * math.pi * (k + 1) / ring_segments
        p0 = (ring_radius * math.cos(a0), ring_radius * math.sin(a0), zr)
        p1 = (ring_radius * math.cos(a1), ring_radius * math.sin(a1), zr)
        lines.append(f'<geom name="{ns}_lar_{k}" type="capsule" fromto="{_v(p0)} {_v(p1)}" size="{_f(ring_tube)}" '
                     f'mass="{_f(seg_mass)}" rgba="0.7 0.7 0.75 1"/>')
    for k in range(4):
        a = math.pi / 4 + k * math.pi / 2
        lines.append(f'<geom name="{ns}_lar_strut_{k}" type="capsule" fromto="{_v((0.1 * math.cos(a), 0.1 * math.sin(a), 2 * hz))} '
                     f'{_v((ring_radius * math.cos(a), ring_radius * math.sin(a), zr))}" size="0.008" mass="0.05" '
                     f'rgba="0.7 0.7 0.75 1"/>')
    lines.append(f'<site name="{ns}_grapple" pos="0 0 {_f(zr)}" size="0.01"/>')
    lines.append('</body>')
    return lines


#: Contact group of the docking probe and target: they touch each other and nothing else.
DOCK_CONTACT = 'contype="2" conaffinity="2"'


def probe_mockup(ns: str, sensor: str, sensor_top: str, axis, length: float, tip_radius: float, tip_mass: float,
                 stiffness: float, damping: float, solref, base_mass: float = 0.05) -> list[str]:
    """A docking probe on the F/T sensor (:class:`hil_lab_twin.scene.ProbeConfig`): a fixed base
    carrying the sensor site, and a sliding rod and ball on a spring-damper along ``axis``."""
    axis = np.asarray(axis, dtype=float)
    tip = axis * length
    return [f'<body name="{ns}_probe" pos="{sensor_top}">',
            f'<site name="{sensor}_site" pos="0 0 0" size="0.01" rgba="1 0 0 1"/>',
            f'<geom name="{ns}_probe_base" type="cylinder" fromto="0 0 0 {_v(axis * 0.03)}" size="0.03" '
            f'mass="{_f(base_mass)}" rgba="0.5 0.5 0.55 1" {_nocollide(False)}/>',
            f'<body name="{ns}_probe_tip" gravcomp="1">',
            f'<joint name="{ns}_probe_spring" type="slide" axis="{_v(axis)}" stiffness="{_f(stiffness)}" '
            f'damping="{_f(damping)}" springref="0"/>',
            f'<geom name="{ns}_probe_rod" type="capsule" fromto="{_v(axis * 0.03)} {_v(tip)}" size="0.006" mass="0.001" '
            f'rgba="0.75 0.75 0.8 1" {_nocollide(False)}/>',
            f'<geom name="{ns}_probe_ball" type="sphere" pos="{_v(tip)}" size="{_f(tip_radius)}" mass="{_f(tip_mass)}" '
            f'solref="{_v(solref)}" friction="0.1 0.005 0.0001" rgba="0.9 0.3 0.2 1" {DOCK_CONTACT}/>',
            f'<site name="{ns}_probe_tip" pos="{_v(tip)}" size="0.005"/>',
            '</body>',
            '</body>']


def dock_target(face_xyz, face_normal, half_size, solref=(0.0005, 1.0)) -> list[str]:
    """The target's docking plate, fixed in the world: a box whose face through ``face_xyz`` has the
    outward normal ``face_normal`` (the box's +z)."""
    n = np.asarray(face_normal, dtype=float)
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, n)
    x /= np.linalg.norm(x)
    rotation = np.column_stack([x, np.cross(n, x), n])
    centre = np.asarray(face_xyz, dtype=float) - n * half_size[2]
    return [f'<body name="dock_target" {pose_attrs(centre, rotation)}>',
            f'<geom name="dock_target_plate" type="box" size="{_v(half_size)}" solref="{_v(solref)}" '
            f'friction="0.1 0.005 0.0001" rgba="0.85 0.75 0.3 1" {DOCK_CONTACT}/>',
            f'<site name="dock_target_face" pos="0 0 {_f(half_size[2])}" size="0.005"/>',
            '</body>']


def gripper(ns: str, sensor: str, sensor_top: str, palm_mass: float = 1.2, finger_mass: float = 0.2) -> list[str]:
    """A two-finger parallel gripper (palm + two slide fingers) below the wrist F/T sensor."""
    return [f'<body name="{ns}_gripper" pos="{sensor_top}">',
            f'<site name="{sensor}_site" pos="0 0 0" size="0.01" rgba="1 0 0 1"/>',
            f'<geom name="{ns}_palm" type="box" pos="0 0 0.03" size="0.05 0.09 0.03" mass="{_f(palm_mass)}" '
            'rgba="0.3 0.3 0.35 1"/>',
            f'<body name="{ns}_finger_left" pos="0 0.05 0.06"><joint name="{ns}_finger_left_joint" type="slide" '
            'axis="0 1 0" range="-0.04 0.03" damping="5"/>'
            f'<geom type="box" pos="0 0 0.05" size="0.015 0.008 0.05" mass="{_f(finger_mass)}" rgba="0.3 0.3 0.35 1"/></body>',
            f'<body name="{ns}_finger_right" pos="0 -0.05 0.06"><joint name="{ns}_finger_right_joint" type="slide" '
            'axis="0 -1 0" range="-0.04 0.03" damping="5"/>'
            f'<geom type="box" pos="0 0 0.05" size="0.015 0.008 0.05" mass="{_f(finger_mass)}" rgba="0.3 0.3 0.35 1"/></body>',
            f'<site name="{ns}_tcp" pos="0 0 0.15" size="0.01"/>',
            '</body>']


def hexapod_bodies(spec: HexapodSpec, ns: str, leg_armature: float, platform_mass: float = 20.0) -> tuple[list[str], list[str], list[str], list[float]]:
    """Legs (ball + slide) and the free platform; returns (leg lines, platform opening lines, equalities, l0)."""
    home = np.array([0.0, 0.0, spec.home_height])
    legs, equalities, rest = [], [], []
    for i in range(6):
        b, p = spec.base_points_in_base[i], spec.platform_points_in_platform[i]
        vec = home + p - b
        l0 = float(np.linalg.norm(vec))
        rest.append(l0)
        z = vec / l0
        x = np.cross([0.0, 1.0, 0.0], z)
        x /= np.linalg.norm(x)
        rot = np.column_stack([x, np.cross(z, x), z])
        name = spec.joint_names[i]
        legs += [f'<body name="{ns}_leg_{i + 1}_lower" {pose_attrs(b, rot)}>',
                 f'<joint name="{ns}_leg_{i + 1}_ball" type="ball" damping="0.5"/>',
                 inertial(2.0, (0, 0, 0.2 * l0), np.diag([0.03, 0.03, 0.002])),
                 capsule(f'{ns}_leg_{i + 1}_lower_geom', (0, 0, 0.55 * l0), 0.035, '0.5 0.5 0.55 1'),
                 f'<body name="{ns}_leg_{i + 1}_upper">',
                 f'<joint name="{ns}_{name}" type="slide" axis="0 0 1" range="{_f(spec.leg_min - l0)} {_f(spec.leg_max - l0)}" '
                 f'armature="{_f(leg_armature)}"/>',
                 inertial(1.0, (0, 0, 0.7 * l0), np.diag([0.01, 0.01, 0.001])),
                 f'<geom name="{ns}_leg_{i + 1}_upper_geom" type="capsule" fromto="0 0 {_f(0.45 * l0)} 0 0 {_f(l0)}" '
                 f'size="0.022" rgba="0.8 0.8 0.85 1" contype="0" conaffinity="0"/>',
                 f'<site name="{ns}_leg_{i + 1}_tip" pos="0 0 {_f(l0)}" size="0.01"/>',
                 '</body>', '</body>']
        equalities.append(f'<connect name="{ns}_leg_{i + 1}_close" site1="{ns}_leg_{i + 1}_tip" '
                          f'site2="{ns}_platform_anchor_{i + 1}" solref="0.002 1" solimp="0.99 0.999 0.001"/>')
    radius = float(np.max(np.linalg.norm(spec.platform_points_in_platform, axis=1))) + 0.05
    platform = [f'<body name="{ns}_platform" pos="{_v(home)}">',
                f'<freejoint name="{ns}_platform_free"/>',
                inertial(platform_mass, (0, 0, 0.015), np.diag([platform_mass * radius ** 2 / 4] * 2
                                                                 + [platform_mass * radius ** 2 / 2])),
                f'<geom name="{ns}_platform_geom" type="cylinder" fromto="0 0 0 0 0 0.03" size="{_f(radius)}" '
                'rgba="0.4 0.45 0.6 1" contype="0" conaffinity="0"/>',
                f'<site name="{ns}_flange" pos="0 0 0" size="0.01"/>']
    for i in range(6):
        platform.append(f'<site name="{ns}_platform_anchor_{i + 1}" pos="{_v(spec.platform_points_in_platform[i])}" size="0.012"/>')
    return legs, platform, equalities, rest


# -- the capture hardware of a calibrated facility (hil_bringup.facility) --------------------------
CONTACT_ATTRS = 'contype="1" conaffinity="1" condim="6" friction="1 0.02 0.002" solref="0.004 1" solimp="0.95 0.99 0.001"'


def ring_mockup(ns: str, sensor: str, sensor_top: str, pose_grasp_in_sensor: pin.SE3, ring_radius: float,
                lip_thickness: float, lip_depth: float, segments: int, box_half, box_mass: float,
                ring_mass: float) -> list[str]:
    """The client mock-up of a calibrated facility: a box 'satellite' and the launch-adapter ring.

    Body frame = the F/T sensor's measuring frame. The ring is a cylindrical lip (the ring
    profile: ``lip_thickness`` radially, ``lip_depth`` along its axis) of ``segments`` box
    segments, collision geometry the gripper closes on. ``pose_grasp_in_sensor`` is the grasp
    frame of the scenario (``client.pose_grasp_in_client`` seen from the sensor): its origin is
    the centre of the lip's cross-section where the fingers close, its x axis the ring axis
    (pointing into the mock-up, the tool's approach direction), its y axis the ring's radial
    direction there (the fingers' closing axis). So the ring centre is at ``-ring_radius y``.
    Site ``<ns>_grapple`` marks the grasp frame.
    """
    rot = pose_grasp_in_sensor.rotation
    axis, e1, e2 = rot[:, 0], rot[:, 1], rot[:, 2]
    centre = pose_grasp_in_sensor.translation - ring_radius * e1
    hx, hy, hz = box_half
    lines = [f'<body name="{ns}_mockup" pos="{sensor_top}">',
             f'<site name="{sensor}_site" pos="0 0 0" size="0.01" rgba="1 0 0 1"/>',
             f'<geom name="{ns}_mockup_box" type="box" pos="0 0 {_f(hz)}" size="{_v(box_half)}" mass="{_f(box_mass)}" '
             f'rgba="0.85 0.75 0.3 1" {CONTACT_ATTRS}/>']
    # segments meet on the mid-circle: no corner stands proud of its neighbour's face (V-gaps
    # of ~lip_thickness tan(pi/segments) remain on the outside)
    half_width = ring_radius * math.tan(math.pi / segments)
    seg_mass = ring_mass / segments
    for k in range(segments):
        a = 2.0 * math.pi * k / segments
        u = math.cos(a) * e1 + math.sin(a) * e2
        t = np.cross(axis, u)
        seg_rot = np.column_stack([u, t, axis])
        lines.append(f'<geom name="{ns}_lar_{k}" type="box" {pose_attrs(centre + ring_radius * u, seg_rot)} '
                     f'size="{_f(lip_thickness / 2)} {_f(half_width)} {_f(lip_depth / 2)}" mass="{_f(seg_mass)}" '
                     f'rgba="0.7 0.7 0.75 1" {CONTACT_ATTRS}/>')
    # struts from the box's top face to the back of the lip (visual only)
    back = centre + axis * (lip_depth / 2)
    for k in range(4):
        a = math.pi / 4 + k * math.pi / 2
        u = math.cos(a) * e1 + math.sin(a) * e2
        top = np.array([0.6 * hx * math.cos(a), 0.6 * hy * math.sin(a), 2 * hz])
        lines.append(f'<geom name="{ns}_lar_strut_{k}" type="capsule" fromto="{_v(top)} {_v(back + ring_radius * u)}" '
                     'size="0.006" mass="0.05" rgba="0.7 0.7 0.75 1" contype="0" conaffinity="0"/>')
    lines.append(f'<site name="{ns}_grapple" {pose_attrs(pose_grasp_in_sensor.translation, rot)} size="0.008"/>')
    lines.append('</body>')
    return lines


def ring_gripper(ns: str, sensor: str, sensor_top: str, pose_tool_in_sensor: pin.SE3, open_half_m: float,
                 pad_half=(0.015, 0.006, 0.03), palm_mass: float = 1.2, finger_mass: float = 0.2) -> list[str]:
    """A two-finger parallel gripper below the wrist F/T sensor, closing on the ring's lip.

    Body frame = the wrist sensor's measuring frame. The fingers slide along the tool's y axis;
    joint ``<ns>_finger_<side>_joint`` is the half-opening: the pad's inner face is that far
    from the tool point (0 = closed on the tool point). Pads are centred on the tool point
    along the tool's z (approach) axis. Site ``<ns>_tool`` is the tool frame.
    """
    rot = pose_tool_in_sensor.rotation
    p = pose_tool_in_sensor.translation
    px, py, pz = pad_half
    palm_z = p - rot[:, 2] * (pz + 0.02)          # palm behind the pads
    lines = [f'<body name="{ns}_gripper" pos="{sensor_top}">',
             f'<site name="{sensor}_site" pos="0 0 0" size="0.01" rgba="1 0 0 1"/>',
             f'<geom name="{ns}_palm" type="box" {pose_attrs(palm_z, rot)} size="0.03 {_f(open_half_m + 2 * py + 0.01)} 0.02" '
             f'mass="{_f(palm_mass)}" rgba="0.3 0.3 0.35 1" {CONTACT_ATTRS}/>',
             f'<geom name="{ns}_palm_link" type="cylinder" fromto="0 0 0 {_v(palm_z - rot[:, 2] * 0.02)}" size="0.03" '
             'mass="0.01" rgba="0.3 0.3 0.35 1" contype="0" conaffinity="0"/>']
    for side, sign in (('left', 1.0), ('right', -1.0)):
        lines += [f'<body name="{ns}_finger_{side}" {pose_attrs(p, rot)}>',
                  f'<joint name="{ns}_finger_{side}_joint" type="slide" axis="0 {_f(sign)} 0" '
                  f'range="-0.01 {_f(open_half_m + 0.005)}" damping="20"/>',
                  f'<geom name="{ns}_pad_{side}" type="box" pos="0 {_f(sign * py)} 0" size="{_v(pad_half)}" '
                  f'mass="{_f(finger_mass)}" rgba="0.25 0.25 0.3 1" {CONTACT_ATTRS}/>',
                  '</body>']
    lines.append(f'<site name="{ns}_tool" {pose_attrs(p, rot)} size="0.008"/>')
    lines.append('</body>')
    return lines
