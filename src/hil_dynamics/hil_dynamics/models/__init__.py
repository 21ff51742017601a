"""URDF generators for the servicer (seed 004 §III-B) and its arms; primitives only, no meshes.

Public functions (all return URDF XML strings):

* :func:`lbr_iiwa14_urdf` -- the 7-DOF KUKA LBR iiwa 14 R820 alone, fixed base
  ``lbr_link_0`` (what is bolted to the lab's industrial robot / the MuJoCo twin).
* :func:`servicer_lbr_urdf` -- a 1.8 t servicer base with the LBR iiwa 14 mounted on it;
  load with a free-flyer root (:class:`hil_dynamics.servicer.ServicerModel`).
* :func:`ssrms_urdf`, :func:`servicer_ssrms_urdf` -- the same for the SSRMS (seed 000 Table 1).

Sources are cited in :mod:`.lbr_iiwa14` and :mod:`.ssrms`. The root frame of a servicer
URDF is the CoM of its rigid base (base box + arm base link), axes of the box, which is
where seed 004 Eq. (12) takes the base twist ``V_b``.
"""

from __future__ import annotations

from hil_dynamics.models.lbr_iiwa14 import lbr_iiwa14_arm
from hil_dynamics.models.ssrms import ssrms_arm
from hil_dynamics.models.urdf_builder import (ArmSpec, BaseSpec, FrameSpec, JointSpec, LinkSpec, ServicerLayout,
                                              arm_urdf, servicer_layout, servicer_urdf)

__all__ = [
    'ArmSpec', 'BaseSpec', 'FrameSpec', 'JointSpec', 'LinkSpec', 'ServicerLayout', 'arm_urdf', 'servicer_urdf',
    'servicer_layout', 'lbr_iiwa14_arm', 'ssrms_arm', 'lbr_iiwa14_urdf', 'ssrms_urdf', 'servicer_lbr_urdf',
    'servicer_ssrms_urdf', 'LBR_MOUNT_IN_BASE_COM_M', 'SSRMS_MOUNT_IN_BASE_COM_M',
]

# Arm mounting points on the default base box (2.0 x 1.8 x 1.6 m), base-CoM coordinates [m].
LBR_MOUNT_IN_BASE_COM_M = (0.6, 0.2, 0.8)      # on the +z face, arm pointing along +z
SSRMS_MOUNT_IN_BASE_COM_M = (1.0, 0.0, 0.3)     # on the +x face, LEE pointing along +x


def lbr_iiwa14_urdf(prefix: str = 'lbr_') -> str:
    """URDF of the LBR iiwa 14 R820 alone (fixed base ``<prefix>link_0``, EE ``<prefix>flange``).

    Joints ``<prefix>joint_1..7`` (revolute, z axes, KUKA limits), CoMs and inertias in
    each link frame, cylinders as visuals. At zero angles the arm points along +z.
    """
    return arm_urdf(lbr_iiwa14_arm(prefix))


def ssrms_urdf(prefix: str = 'ssrms_') -> str:
    """URDF of the SSRMS alone (fixed base ``<prefix>link_1``, EE ``<prefix>lee_tip``)."""
    return arm_urdf(ssrms_arm(prefix))


def servicer_lbr_urdf(base: BaseSpec | None = None, mount_xyz_in_base_com_m=LBR_MOUNT_IN_BASE_COM_M,
                      prefix: str = 'lbr_') -> str:
    """URDF of the servicer: a base (default 1800 kg uniform 2.0 x 1.8 x 1.6 m box) + LBR iiwa 14.

    The default base is of the 1.5-2 t class of free-flying servicers (inertia of a uniform
    box: about 870-1090 kg m^2). Root link ``servicer_base`` at the composite base CoM;
    the EE frame is ``<prefix>flange``.
    """
    return servicer_urdf(lbr_iiwa14_arm(prefix), base or BaseSpec(), mount_xyz_in_base_com_m, 'servicer_lbr_iiwa14')


def servicer_ssrms_urdf(base: BaseSpec | None = None, mount_xyz_in_base_com_m=SSRMS_MOUNT_IN_BASE_COM_M,
                        prefix: str = 'ssrms_') -> str:
    """URDF of a servicer base (default as :func:`servicer_lbr_urdf`) carrying the SSRMS.

    The default 1.8 t base makes a strongly coupled system (the SSRMS is about 1.5 t), which
    is what the tests want; pass a heavier :class:`BaseSpec` for a station-like carrier.
    """
    return servicer_urdf(ssrms_arm(prefix), base or BaseSpec(), mount_xyz_in_base_com_m, 'servicer_ssrms')
