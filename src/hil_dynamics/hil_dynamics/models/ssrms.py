"""Space Station Remote Manipulator System (SSRMS, Canadarm2), seed 000 Table 1.

Table 1 of ``000_17c51e125b9f044b.txt`` (after its ref. [4]) gives, for links i = 1..8,
the mass ``m_i``, the CoM ``c_i`` and the inertia ``I_i`` about the CoM in link frame i,
and ``p_{i,i+1}``, the position of joint i+1 (for i = 8: the LEE tip) in link frame i.
Link 1 is the LEE bolted to the carrier (the base); joints 1..7 carry links 2..8.

Not in the table (Figure 7 of the seed is not available as text), so chosen here and
stated explicitly:

* the link frames are parallel at zero joint angles (each ``p_{i,i+1}`` is a pure offset);
* joint axes, in the frame of the link they carry, follow the SSRMS roll-yaw-pitch-pitch-
  pitch-yaw-roll layout: x, z, y, y, y, z, x. This is the assignment under which every
  slender link of Table 1 (small principal inertia) is slender along its own offset
  ``p_{i,i+1}``, and the 0.475 m lateral offset of link 4 lies along the pitch axes;
* the table's ``I_xy`` are taken as the off-diagonal tensor elements (URDF ``ixy``);
* joint ranges +-270 deg (the SSRMS joint travel); torque and speed limits are not
  given by the seed: 1000 N m and 0.07 rad/s (4 deg/s) are placeholders.
"""

from __future__ import annotations

import math

from hil_dynamics.models.urdf_builder import ArmSpec, FrameSpec, JointSpec, LinkSpec

# Table 1 columns i = 1..8: mass [kg], c_i [m], (Ixx, Iyy, Izz, Ixy) [kg m^2], p_{i,i+1} [m].
TABLE_1 = (
    (246.66, (0.669, 0.0, 0.0), (9.336, 44.413, 44.413, 0.0), (1.3589, 0.0, 0.0)),
    (105.98, (0.0, 0.0, 0.2983), (12.19, 12.13, 3.061, 0.0), (0.0, 0.0, 0.7026)),
    (105.98, (0.0, -0.2316, 0.0), (8.088, 3.061, 8.446, 0.0), (0.0, -0.5692, 0.0)),
    (314.88, (3.55, -0.08, 0.0), (15.41, 2094.71, 2103.19, 49.52), (7.11, -0.475, 0.0)),
    (279.2, (3.55, 0.0, 0.0), (9.522, 1966.28, 1966.28, -39.95), (7.11, 0.0, 0.0)),
    (105.98, (0.0, -0.337, 0.0), (8.305, 3.061, 8.386, 0.0), (0.0, -0.5692, 0.0)),
    (105.98, (0.0, 0.0, -0.404), (12.13, 12.13, 3.061, 0.0), (0.0, 0.0, -0.7026)),
    (243.66, (0.669, 0.0, 0.0), (9.336, 44.41, 44.41, 0.0), (1.3589, 0.0, 0.0)),
)

JOINT_AXES = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (0.0, 1.0, 0.0), (0.0, 1.0, 0.0),
              (0.0, 0.0, 1.0), (1.0, 0.0, 0.0))


def ssrms_arm(prefix: str = 'ssrms_') -> ArmSpec:
    """The SSRMS of seed 000 Table 1 as an :class:`ArmSpec`; EE frame ``<prefix>lee_tip``."""
    links = []
    for i, (mass, com, (ixx, iyy, izz, ixy), _) in enumerate(TABLE_1, start=1):
        links.append(LinkSpec(f'{prefix}link_{i}', mass, com, (ixx, iyy, izz, ixy, 0.0, 0.0)))
    joints = []
    for k in range(1, 8):
        joints.append(JointSpec(f'{prefix}joint_{k}', links[k - 1].name, links[k].name, TABLE_1[k - 1][3],
                                (0.0, 0.0, 0.0), JOINT_AXES[k - 1], -1.5 * math.pi, 1.5 * math.pi, 1000.0, 0.07))
    tip = FrameSpec(f'{prefix}lee_tip', links[7].name, TABLE_1[7][3])
    return ArmSpec(
        name='ssrms', base_link=links[0], links=tuple(links[1:]), joints=tuple(joints), frames=(tip,),
        ee_frame=tip.name, segment_ends_m=tuple(row[3] for row in TABLE_1), link_radius_m=0.19,
        source='SSRMS inertial properties from seed 000 Table 1; joint axes as stated in hil_dynamics/models/ssrms.py.')
