"""KUKA LBR iiwa 14 R820: a 7-DOF torque-controlled light-weight arm (the servicer's arm).

Sources
-------
Kinematics and limits: KUKA Roboter GmbH, *LBR iiwa 7 R800, LBR iiwa 14 R820
Specification* (Spez LBR iiwa V-series): base to A2 0.360 m, A2 to A4 0.420 m, A4 to A6
0.400 m, A6 to flange 0.126 m; axis ranges A1/A3/A5 +-170 deg, A2/A4/A6 +-120 deg,
A7 +-175 deg; maximum torques 320, 320, 176, 176, 110, 40, 40 N m; maximum speeds 85, 85,
100, 75, 130, 135, 135 deg/s; weight about 30 kg.

Link frames and inertial parameters: the open LBR iiwa 14 model of the Drake project
(RobotLocomotion, ``iiwa_description/urdf/iiwa14_*.urdf``; masses 5.76, 6.35, 3.5, 3.5,
3.5, 1.8, 1.2 kg, CoMs and principal inertias in the link frames below), which is the
parameter set most simulation work on this arm uses; its link lengths reproduce the
KUKA dimensions above (checked in ``test/test_servicer_models.py``). Identified sets
(e.g. Stuerz et al., IFAC-PapersOnLine 50(1), 2017; Xu et al., IEEE Access 8, 2020) differ
by a few kg per link; the relative-dynamics method of seed 004 only needs the simulated
and the real arm to share one set (Assumption 2), so any of them can be dropped in here.

At zero joint angles the arm stands straight up along +z of its base link
(``lbr_link_0``); the flange is at z = 1.306 m.
"""

from __future__ import annotations

import math

from hil_dynamics.models.urdf_builder import ArmSpec, FrameSpec, JointSpec, LinkSpec

_DEG = math.pi / 180.0
_HALF_PI = math.pi / 2.0

# (origin xyz in parent, origin rpy, range [deg], max torque [N m], max speed [deg/s])
_JOINTS = (
    ((0.0, 0.0, 0.1575), (0.0, 0.0, 0.0), 170.0, 320.0, 85.0),
    ((0.0, 0.0, 0.2025), (_HALF_PI, 0.0, math.pi), 120.0, 320.0, 85.0),
    ((0.0, 0.2045, 0.0), (_HALF_PI, 0.0, math.pi), 170.0, 176.0, 100.0),
    ((0.0, 0.0, 0.2155), (_HALF_PI, 0.0, 0.0), 120.0, 176.0, 75.0),
    ((0.0, 0.1845, 0.0), (-_HALF_PI, math.pi, 0.0), 170.0, 110.0, 130.0),
    ((0.0, 0.0, 0.2155), (_HALF_PI, 0.0, 0.0), 120.0, 40.0, 135.0),
    ((0.0, 0.081, 0.0), (-_HALF_PI, math.pi, 0.0), 175.0, 40.0, 135.0),
)

# (mass [kg], CoM in link frame [m], principal inertia about the CoM [kg m^2]) for links 0..7.
_LINKS = (
    (5.0, (-0.1, 0.0, 0.07), (0.05, 0.06, 0.03)),
    (5.76, (0.0, -0.03, 0.12), (0.033, 0.0333, 0.0123)),
    (6.35, (0.0003, 0.059, 0.042), (0.0305, 0.0304, 0.011)),
    (3.5, (0.0, 0.03, 0.13), (0.025, 0.0238, 0.0076)),
    (3.5, (0.0, 0.067, 0.034), (0.017, 0.0164, 0.006)),
    (3.5, (0.0001, 0.021, 0.076), (0.01, 0.0087, 0.00449)),
    (1.8, (0.0, 0.0006, 0.0004), (0.0049, 0.0047, 0.0036)),
    (1.2, (0.0, 0.0, 0.02), (0.001, 0.001, 0.001)),
)

FLANGE_IN_LINK7_M = (0.0, 0.0, 0.045)


def lbr_iiwa14_arm(prefix: str = 'lbr_') -> ArmSpec:
    """The LBR iiwa 14 R820 as an :class:`ArmSpec`; names are ``<prefix>link_k``/``<prefix>joint_k``.

    The end-effector frame is ``<prefix>flange`` (the media flange, where a wrist F/T
    sensor and the gripper are mounted).
    """
    links = []
    for k, (mass, com, principal) in enumerate(_LINKS):
        links.append(LinkSpec(f'{prefix}link_{k}', mass, com, (*principal, 0.0, 0.0, 0.0)))
    joints = []
    for k, (xyz, rpy, range_deg, torque, speed) in enumerate(_JOINTS, start=1):
        joints.append(JointSpec(f'{prefix}joint_{k}', links[k - 1].name, links[k].name, xyz, rpy, (0.0, 0.0, 1.0),
                                -range_deg * _DEG, range_deg * _DEG, torque, speed * _DEG))
    segment_ends = tuple(j[0] for j in _JOINTS) + (FLANGE_IN_LINK7_M,)
    flange = FrameSpec(f'{prefix}flange', links[7].name, FLANGE_IN_LINK7_M)
    return ArmSpec(
        name='lbr_iiwa14_r820', base_link=links[0], links=tuple(links[1:]), joints=tuple(joints),
        frames=(flange,), ee_frame=flange.name, segment_ends_m=segment_ends, link_radius_m=0.065,
        source=('KUKA LBR iiwa 14 R820: kinematics and limits from the KUKA specification, '
                'inertial parameters from the Drake iiwa14 model (see hil_dynamics/models/lbr_iiwa14.py).'))
