"""Rigid-link models (Pinocchio) of the SSRMS and the JEMRMS main arm, and their joint data.

* SSRMS: seed 000 Table 1 (after Skaar and Ruoff, its ref. [4]): eight links, link 1 the base
  LEE (fixed to the ISS here), seven revolute joints; joint ``i`` sits at ``p_{i,i+1}`` in link
  frame ``i``; the end effector (tip LEE) at ``p_{8,9}`` in link 8. All link frames are parallel
  at zero joint angles. Seed 000 Fig. 7 (the joint axes) is not in our text: we take the SSRMS's
  roll-yaw-pitch / pitch / pitch-yaw-roll sequence as x, z, y, y, y, z, x, consistent with the
  offsets of Table 1 lying along the axes (an assumption, docs/snare.md).
* JEMRMS main arm: 6 joints (yaw, pitch / pitch / pitch, yaw, roll), 10 m long, 780 kg (JAXA,
  docs/snare.md); the mass split and the link inertias are ours (slender booms).

``build_model(links, base)`` turns a link table into a ``pinocchio.Model`` with the frame
``'lee'`` at the end effector (x along the LEE axis, pointing back into the arm: the direction
in which the grapple enters); ``base='free'`` adds a free-flyer root (momentum tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError


@dataclass(frozen=True)
class Link:
    mass_kg: float
    com_m: tuple            # in the link frame
    inertia_kgm2: tuple     # (Ixx, Iyy, Izz, Ixy, Iyz, Izx) about the CoM
    next_joint_m: tuple     # p_{i,i+1}: the next joint (or the end effector) in the link frame


def _inertia(mass, com, i6):
    ixx, iyy, izz, ixy, iyz, izx = i6
    tensor = np.array([[ixx, ixy, izx], [ixy, iyy, iyz], [izx, iyz, izz]], dtype=float)
    return pin.Inertia(float(mass), np.asarray(com, dtype=float), tensor)


@dataclass(frozen=True)
class ArmSpec:
    name: str
    links: tuple            # links[0] is the base link; links[1:] move, one per joint
    axes: str               # one of 'xyz' per joint
    ee_frame_m: tuple = (0.0, 0.0, 0.0)   # extra offset of the LEE frame beyond the last p_{i,i+1}
    notes: str = field(default='', compare=False)

    @property
    def n_joints(self) -> int:
        return len(self.axes)


SSRMS_TABLE1 = ArmSpec(
    name='ssrms',
    links=(
        Link(246.66, (0.669, 0, 0), (9.336, 44.413, 44.413, 0, 0, 0), (1.3589, 0, 0)),
        Link(105.98, (0, 0, 0.2983), (12.19, 12.13, 3.061, 0, 0, 0), (0, 0, 0.7026)),
        Link(105.98, (0, -0.2316, 0), (8.088, 3.061, 8.446, 0, 0, 0), (0, -0.5692, 0)),
        Link(314.88, (3.55, -0.08, 0), (15.41, 2094.71, 2103.19, 49.52, 0, 0), (7.11, -0.475, 0)),
        Link(279.2, (3.55, 0, 0), (9.522, 1966.28, 1966.28, -39.95, 0, 0), (7.11, 0, 0)),
        Link(105.98, (0, -0.337, 0), (8.305, 3.061, 8.386, 0, 0, 0), (0, -0.5692, 0)),
        Link(105.98, (0, 0, -0.404), (12.13, 12.13, 3.061, 0, 0, 0), (0, 0, -0.7026)),
        Link(243.66, (0.669, 0, 0), (9.336, 44.41, 44.41, 0, 0, 0), (1.3589, 0, 0)),
    ),
    axes='xzyyyzx',
    notes='seed 000 Table 1; joint axes assumed (Fig. 7 not available)',
)


def _boom(mass, length, radius=0.2):
    """A thin-walled tube along x: CoM at mid-length."""
    ixx = mass * radius ** 2
    iyy = mass * length ** 2 / 12.0 + 0.5 * mass * radius ** 2
    return Link(mass, (0.5 * length, 0, 0), (ixx, iyy, iyy, 0, 0, 0), (length, 0, 0))


def _joint_block(mass, offset):
    """A compact joint housing of 0.3 m: CoM half-way to the next joint."""
    off = np.asarray(offset, dtype=float)
    i = 0.4 * mass * 0.15 ** 2
    return Link(mass, tuple(0.5 * off), (i, i, i, 0, 0, 0), tuple(off))


# JEMRMS main arm: 780 kg, 10 m, 6 DOF (JAXA). Shoulder block (yaw, pitch), two 4.4 m booms,
# wrist (pitch, yaw, roll) and an end effector; masses are our split of the 780 kg.
JEMRMS_MAIN_ARM = ArmSpec(
    name='jemrms',
    links=(
        Link(100.0, (0, 0, 0.15), (5, 5, 5, 0, 0, 0), (0, 0, 0.3)),     # base (fixed to Kibo)
        _joint_block(60.0, (0, 0, 0.3)),                                  # after shoulder yaw (z)
        _boom(220.0, 4.4),                                                # after shoulder pitch (y): upper boom
        _boom(200.0, 4.4),                                                # after elbow pitch (y): lower boom
        _joint_block(50.0, (0.3, 0, 0)),                                  # after wrist pitch (y)
        _joint_block(50.0, (0.3, 0, 0)),                                  # after wrist yaw (z)
        Link(100.0, (0.2, 0, 0), (2.0, 3.0, 3.0, 0, 0, 0), (0.3, 0, 0)),  # after wrist roll (x): end effector
    ),
    axes='zyyyzx',
    notes='JEMRMS main arm: 10 m, 780 kg, 6 DOF (JAXA); mass split and inertias assumed',
)

ARMS = {'ssrms': SSRMS_TABLE1, 'jemrms': JEMRMS_MAIN_ARM}


def build_model(spec: ArmSpec, base: str = 'fixed', pose_base_in_world: pin.SE3 | None = None):
    """Pinocchio model of ``spec`` with the end-effector frame ``'lee'``.

    ``base='fixed'``: link 0 welded to the world at ``pose_base_in_world``; ``'free'``: link 0 on
    a free-flyer joint (its configuration then starts the ``q`` vector).
    """
    if base not in ('fixed', 'free'):
        raise ConfigError(f"base must be 'fixed' or 'free', got {base!r}")
    model = pin.Model()
    model.name = spec.name
    model.gravity = pin.Motion.Zero()     # on orbit
    parent = 0
    placement = pose_base_in_world if pose_base_in_world is not None else pin.SE3.Identity()
    base_link = spec.links[0]
    if base == 'free':
        parent = model.addJoint(0, pin.JointModelFreeFlyer(), placement, 'base')
        model.appendBodyToJoint(parent, _inertia(base_link.mass_kg, base_link.com_m, base_link.inertia_kgm2),
                                pin.SE3.Identity())
        placement = pin.SE3.Identity()
    joint_models = {'x': pin.JointModelRX, 'y': pin.JointModelRY, 'z': pin.JointModelRZ}
    prev = base_link
    for i, (axis, link) in enumerate(zip(spec.axes, spec.links[1:])):
        at = placement * pin.SE3(np.eye(3), np.asarray(prev.next_joint_m, dtype=float))
        parent = model.addJoint(parent, joint_models[axis](), at, f'joint{i + 1}')
        model.appendBodyToJoint(parent, _inertia(link.mass_kg, link.com_m, link.inertia_kgm2), pin.SE3.Identity())
        placement = pin.SE3.Identity()
        prev = link
    # LEE frame: x along the LEE axis pointing back into the arm (the grapple's insertion direction)
    tip = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi), np.asarray(prev.next_joint_m, dtype=float) + np.asarray(spec.ee_frame_m, dtype=float))
    model.addFrame(pin.Frame('lee', parent, tip, pin.FrameType.OP_FRAME))
    return model
