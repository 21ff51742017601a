"""The snare capture in the HIL lab: mock-ups, the lab twin's wires, the drift frame (plain Python, no rclpy).

The lab (issue 12, "In the HIL loop"): the GF mock-up (a 0.40 m shaft, radius 25 mm) rides on
the client table's F/T sensor, driven by the client admittance with the HTV's mass properties;
the LEE mock-up (its three wires and their drive) rides on the servicer robot's F/T sensor,
driven by the SSRMS flexible-joint rule (:class:`hil_snare.servicer_side.FlexibleArmServicer`).

Mock-up frames (our choice, docs/snare.md):

* GF: the client sensor frame is the shaft's base, its z axis along the shaft (base to tip);
  in the HTV it sits at ``(1, 0, 2.2)`` m with the HTV's axes (:func:`hil_snare.targets.htv`),
  so ``pose_sensor_in_client`` is a pure translation.
* LEE: the servicer sensor looks out of the LEE (its z is the LEE frame's -x, the direction the
  grapple comes from), at ``x_lee =`` :data:`LEE_SENSOR_X_M` ``= -0.20`` m, 0.40 m behind the wire plane (``x_wire_m = -0.60``), so the GF tip
  (Table 3: ``x = -0.476`` m, 3 cm/s deeper) never reaches it.

The drift frame. Seed 004's relative admittance moves the client table by the client's
deviation from its nominal (unforced) motion, so a drifting HTV would stand still on its table.
Table 3's HTV drifts at constant velocity and does not spin, so its unforced motion is an
inertial frame; in it the HTV starts at rest and the ISS (the SSRMS base) drifts at
``-v_rel``. Newton's laws are the same in both frames (no gravity, no rotation): the servicer
side streams the LEE's pose in that frame (:func:`lee_in_drift_frame`) and the client admittance
starts at rest. The relative motion of LEE and GF is the lockstep runner's.

The twin's wires (:class:`SnareWires`): the contact law of :mod:`hil_snare.contact` (seed 000
Eqs. 10-12) between the twin's LEE and GF mock-ups, computed from their poses and velocities in
the MuJoCo state by :meth:`hil_snare.system.SnareSystem.wrenches` and applied to both mock-up
bodies, equal and opposite; the twin's F/T sensors measure it as they measure any load on the
mock-ups, and serve it over RDT/UDP to the F/T drivers. The snare drive's ring angle is twin
state; the drive runs once the capture is commanded (:meth:`SnareWires.start_drive`; the servicer
side commands it when its run starts, as the operator does at Table 3's instant). :class:`SnareLab` is what the twin's real-time pacer (or a lockstep loop) steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_dynamics.se3 import cross3
from hil_snare.mount import CompliantMount, MountedWires
from hil_snare.runner import DEG, HtvCaptureConfig, lee_snare
from hil_snare.system import Grapple, SnareSystem
from hil_snare.targets import GF_SHAFT_LENGTH_M, GF_SHAFT_RADIUS_M, htv

LEE_SENSOR_X_M = -0.20          # the servicer F/T sensor on the LEE axis, LEE frame [m]
SENSOR_HEIGHT_M = 0.04          # hil_lab_twin.scene.SENSOR_HEIGHT_M: the measuring frame above the flange


def pose_sensor_in_lee() -> pin.SE3:
    """The servicer F/T sensor's measuring frame in the LEE frame."""
    # columns: the sensor's x, y, z in LEE coordinates; z_s = -x_lee, y_s = y_lee, x_s = y_s x z_s = z_lee
    rot = np.column_stack([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    return pin.SE3(rot, np.array([LEE_SENSOR_X_M, 0.0, 0.0]))


def pose_sensor_in_gf() -> pin.SE3:
    """The client F/T sensor (the shaft's base, z along the shaft) in the GF frame (tip, x along the shaft)."""
    # z_s = x_gf, y_s = y_gf, x_s = y_s x z_s = -z_gf
    rot = np.column_stack([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    return pin.SE3(rot, np.array([-GF_SHAFT_LENGTH_M, 0.0, 0.0]))


def pose_sensor_in_htv() -> pin.SE3:
    """The client F/T sensor in the HTV CoM frame (``pose_sensor_in_client`` of the client admittance)."""
    return htv()[2] * pose_sensor_in_gf()


def grapple_in_sensor() -> Grapple:
    """The GF shaft in the client sensor frame."""
    return Grapple((0.0, 0.0, GF_SHAFT_LENGTH_M), (0.0, 0.0, 1.0), GF_SHAFT_LENGTH_M, GF_SHAFT_RADIUS_M)


def pose_gf_in_lee(cfg: HtvCaptureConfig) -> pin.SE3:
    """Table 3's relative pose (GF tip frame in the LEE frame), as :func:`hil_snare.runner.build_htv_capture` reads it."""
    r = np.asarray(cfg.rel_attitude_deg, dtype=float) * DEG
    return pin.SE3(pin.rpy.rpyToMatrix(*r), np.asarray(cfg.rel_position_m, dtype=float))


def drift_velocity_world(cfg: HtvCaptureConfig) -> np.ndarray:
    """The HTV's velocity in the ISS frame (Table 3's relative velocity, the LEE at rest): the drift frame's."""
    from hil_snare.runner import build_htv_capture

    system = build_htv_capture(cfg)[0]
    q0 = np.asarray(cfg.joints_deg, dtype=float) * DEG
    pin.framesForwardKinematics(system.model, system.data, q0)
    return system.data.oMf[system.frame_id].rotation @ np.asarray(cfg.rel_velocity_mps, dtype=float)


def lee_in_drift_frame(pose_lee_world: pin.SE3, twist_lee_body, t_s: float, v_drift_world) -> tuple[pin.SE3, np.ndarray]:
    """The LEE's pose and body twist in the drift frame (origin on the ISS frame's at ``t = 0``, moving at
    ``v_drift_world``): ``T(-v t) g``, ``V - [R^T v; 0]`` (a Galilean change of frame)."""
    v = np.asarray(v_drift_world, dtype=float)
    pose = pin.SE3(pose_lee_world.rotation, pose_lee_world.translation - v * t_s)
    twist = np.asarray(twist_lee_body, dtype=float).copy()
    twist[:3] -= pose_lee_world.rotation.T @ v
    return pose, twist


# -- the facility --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SnareLabLayout:
    """The robots: the LEE on ``lee_ns`` (KR 120 at the lab origin), the GF on ``gf_ns`` (UR10e on a
    0.5 m pedestal at x = 2.6 m facing it, flange at ``gf_flange_xyz`` in its base)."""

    lee_ns: str = 'servicer'
    gf_ns: str = 'client'
    lee_model: str = 'kr120r2500pro'
    gf_model: str = 'ur10e'
    gf_base_xyz: tuple = (2.6, 0.0, 0.5)
    gf_flange_xyz: tuple = (0.45, 0.0, 0.3)


def snare_twin_config(cfg: HtvCaptureConfig, layout: SnareLabLayout = SnareLabLayout(), servo=None, lee_ft=None,
                      gf_ft=None, timestep: float = 0.001):
    """The lab twin's :class:`hil_lab_twin.scene.TwinConfig` with the mock-ups at Table 3's relative pose.

    The GF robot holds the shaft horizontal, pointing at the LEE robot; the LEE robot's joints are
    solved (the motion tables' IK) so that the LEE sits at ``pose_gf_in_lee`` from the GF.
    Both robots carry a bare F/T sensor (payload ``none``): the wires act on the sensor's tool
    body (:class:`SnareWires`).
    """
    from hil_lab_twin.scene import FtConfig, RobotConfig, ServoConfig, TwinConfig, reachable_ik
    from hil_motion_table.robot_models import rpy_matrix
    from hil_motion_table.kinematics import SerialKinematics
    from hil_motion_table.robot_models import SERIAL_ROBOTS

    servo = servo or ServoConfig()
    # flange z along the base's +x (at the LEE robot), x up: the LEE robot's flange then has x down
    facing = np.column_stack([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [1.0, 0.0, 0.0]])
    gf_base = pin.SE3(rpy_matrix((0.0, 0.0, math.pi)), np.array(layout.gf_base_xyz, dtype=float))
    pose_flange_gf = pin.SE3(facing, np.array(layout.gf_flange_xyz, dtype=float))
    q_gf = reachable_ik(SerialKinematics(SERIAL_ROBOTS[layout.gf_model]()), pose_flange_gf,
               (math.pi / 2, -math.pi / 2, 1.0, -math.pi / 2, math.pi / 2, math.pi), 'GF')
    up = pin.SE3(np.eye(3), np.array([0.0, 0.0, SENSOR_HEIGHT_M]))
    gf_sensor = gf_base * pose_flange_gf * up
    lee_sensor = gf_sensor * pose_sensor_in_gf().inverse() * pose_gf_in_lee(cfg).inverse() * pose_sensor_in_lee()
    lee_kin = SerialKinematics(SERIAL_ROBOTS[layout.lee_model]())
    q_lee = reachable_ik(lee_kin, lee_sensor * up.inverse(), lee_kin.q_home, 'LEE')
    robots = (RobotConfig(layout.lee_ns, 'serial', layout.lee_model, 'none', q_initial=tuple(q_lee), servo=servo,
                          ft=lee_ft or FtConfig(seed=21)),
              RobotConfig(layout.gf_ns, 'serial', layout.gf_model, 'none', base_xyz=tuple(layout.gf_base_xyz),
                          base_rpy=(0.0, 0.0, math.pi), q_initial=tuple(q_gf), servo=servo, ft=gf_ft or FtConfig(seed=22)))
    return TwinConfig(robots=robots, timestep=timestep)


def pose_body_in_flange(pose_body_in_sensor: pin.SE3) -> pin.SE3:
    """A body fixed to a mock-up, in the flange frame (the motion table's ``pose_body_in_flange``)."""
    return pin.SE3(np.eye(3), np.array([0.0, 0.0, SENSOR_HEIGHT_M])) * pose_body_in_sensor


# -- the wires in the twin -----------------------------------------------------------------------
def _site_twist_local(twin, site: str) -> np.ndarray:
    """Body twist ``[v; w]`` of a site in its own frame."""
    import mujoco

    sid = mujoco.mj_name2id(twin.model, mujoco.mjtObj.mjOBJ_SITE, site)
    res = np.zeros(6)
    mujoco.mj_objectVelocity(twin.model, twin.data, mujoco.mjtObj.mjOBJ_SITE, sid, res, 1)   # [w; v] local
    return np.concatenate([res[3:], res[:3]])


class SnareWires:
    """The LEE's wires between the twin's two mock-ups (seed 000 Eqs. 10-12, the drive of Table 3).

    ``apply(twin)`` computes the wire wrench from the mock-ups' present poses and velocities and
    puts it on both tool bodies (MuJoCo ``xfrc_applied``, at their CoM, world axes), to act during
    the next step; ``advance(dt)`` integrates the ring angle. The equal and opposite wrenches act
    at the same material point, so the wires conserve momentum.

    With a :class:`CompliantMount` on a side (``lee_mount``: the wire ring; ``gf_mount``: the GF
    shaft; default ``None``: fixed to its mock-up, as before) the wires act on that side's carriage,
    and the mock-up body receives the mount's spring-damper force at the carriage plus the wires'
    couple (the carriage does not rotate), so that side's F/T sensor measures what the mount passes
    on: the wires' wrench in a steady state, less the carriage's inertia force in motion.
    """

    def __init__(self, cfg: HtvCaptureConfig, layout: SnareLabLayout = SnareLabLayout(),
                 lee_mount: CompliantMount | None = None, gf_mount: CompliantMount | None = None):
        self.layout = layout
        self.system = SnareSystem(None, grapple_in_sensor(), lee_snare(cfg), cfg.law, None)
        self.theta = self.system.wires.theta0
        self.theta_dot = 0.0
        self.driving = False                        # the snare drive runs once commanded (start_drive)
        self.pose_sensor_in_lee = pose_sensor_in_lee()
        self.wrench_on_gf_sensor = np.zeros(6)      # last applied: on the GF mock-up, sensor frame, about its origin
        self.wrench_on_lee = np.zeros(6)            # and on the LEE mock-up, LEE frame, about its origin
        self.normal_force_n = np.zeros(self.system.wires.n_wires)
        # the carriages (hil_snare.mount): LEE side, rest at the wire plane's centre; GF side, rest at the shaft's base
        self.mounts = (None if lee_mount is None and gf_mount is None
                       else MountedWires(self.system, lee_mount, gf_mount, (0.0, 0.0, 0.0)))
        self._bodies = None

    @property
    def mounted(self) -> bool:
        return self.mounts is not None

    @property
    def carriages(self):
        """``(LEE side, GF side)``: each a :class:`hil_snare.mount.Carriage` or ``None``."""
        return (None, None) if self.mounts is None else self.mounts.carriages

    def _init(self, twin) -> None:
        import mujoco

        m = twin.model
        self._bodies = tuple(mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f'{ns}_payload')
                             for ns in (self.layout.lee_ns, self.layout.gf_ns))
        if min(self._bodies) < 0:
            raise KeyError('the twin has no bare F/T sensor bodies for the LEE and GF mock-ups (payload none)')
        if self.mounts is not None:
            pose_lee, twist_lee, pose_gs, twist_gs = self.mockup_states(twin)
            self.mounts.start((pose_lee, pose_gs), (twist_lee, twist_gs))

    def mockup_states(self, twin):
        """``(pose_lee, twist_lee, pose_gf_sensor, twist_gf_sensor)``: world poses, body twists."""
        pose_ls = twin.site_pose_in_world(f'{self.layout.lee_ns}_ft_site')
        twist_ls = _site_twist_local(twin, f'{self.layout.lee_ns}_ft_site')
        pose_lee = pose_ls * self.pose_sensor_in_lee.inverse()
        twist_lee = self.pose_sensor_in_lee.act(pin.Motion(twist_ls)).vector
        pose_gs = twin.site_pose_in_world(f'{self.layout.gf_ns}_ft_site')
        twist_gs = _site_twist_local(twin, f'{self.layout.gf_ns}_ft_site')
        return pose_lee, twist_lee, pose_gs, twist_gs

    def section(self, twin):
        """Where the GF axis pierces the wire plane, in the LEE frame, and whether the shaft reaches it.

        With mounts: the shaft and the wire plane where their carriages are (at the end of the last step)."""
        pose_lee, _, pose_gs, _ = self.mockup_states(twin)
        if self.mounts is not None:
            pose_lee, pose_gs = self.mounts.moved((pose_lee, pose_gs))
        p_lee, _, in_shaft = self.system.grapple_section(pose_lee, pose_gs)
        return p_lee, in_shaft

    def apply(self, twin) -> None:
        if self._bodies is None:
            self._init(twin)
        pose_lee, twist_lee, pose_gs, twist_gs = self.mockup_states(twin)
        if self.mounts is not None:
            w_lee, w_gf, self.theta_dot = self.mounts.step(twin.dt, self.theta, (pose_lee, pose_gs),
                                                           (twist_lee, twist_gs))
        else:
            w_gf, w_lee, self.theta_dot = self.system.wrenches(self.theta, pose_lee, twist_lee, pose_gs, twist_gs,
                                                               record=True)
        self.wrench_on_gf_sensor, self.wrench_on_lee = w_gf, w_lee
        self.normal_force_n[:] = 0.0
        for c in self.system.contacts:
            self.normal_force_n[c.wire] += c.normal_force_n
        d = twin.data
        for body, pose, w in ((self._bodies[0], pose_lee, w_lee), (self._bodies[1], pose_gs, w_gf)):
            f = pose.rotation @ w[:3]
            tau = pose.rotation @ w[3:] + cross3(pose.translation - d.xipos[body], f)
            d.xfrc_applied[body, :3] = f
            d.xfrc_applied[body, 3:] = tau

    def start_drive(self) -> None:
        """The LEE's capture command: the ring turns the wires closed (seed 000 Table 3's tightening)."""
        self.driving = True

    def advance(self, dt_s: float) -> None:
        if self.driving:
            self.theta += self.theta_dot * dt_s


class SnareLab:
    """The twin with its wires: what :class:`hil_lab_twin.pacing.RealTimePacer` steps (``time``, ``dt``,
    ``advance_to``) and what a lockstep loop steps (``step``)."""

    def __init__(self, twin, wires: SnareWires):
        self.twin = twin
        self.wires = wires

    @property
    def time(self) -> float:
        return self.twin.time

    @property
    def dt(self) -> float:
        return self.twin.dt

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            self.wires.apply(self.twin)
            self.twin.step()
            self.wires.advance(self.twin.dt)

    def advance_to(self, t: float, max_steps: int = 1000) -> int:
        k = 0
        while self.twin.time + 0.5 * self.twin.dt <= t and k < max_steps:
            self.step()
            k += 1
        return k
