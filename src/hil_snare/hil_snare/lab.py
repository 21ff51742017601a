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

from hil_snare.runner import DEG, HtvCaptureConfig, lee_snare
from hil_snare.system import Grapple, SnareSystem
from hil_snare.targets import GF_SHAFT_LENGTH_M, GF_SHAFT_RADIUS_M, htv
from hil_common.errors import ConfigError

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


@dataclass(frozen=True)
class CompliantMount:
    """A compliant mount between a mock-up body and what touches the wires (plain Python, SI units).

    A carriage of ``mass_kg`` translates (does not rotate) against its mock-up body on an isotropic
    spring-damper, ``stiffness_n_per_m`` and ``damping_ratio`` of critical
    (``d = 2 zeta sqrt(k m)``), at rest where it was built. :class:`SnareWires` takes one for either
    side: the LEE's wire ring (``lee_mount``: the ring and its wires on a carriage in the LEE mock-up,
    rest point the wire plane's centre ``(x_wire, 0, 0)`` of the LEE frame) and the GF shaft
    (``gf_mount``: the shaft on a carriage on the client sensor, rest point the shaft's base, the
    sensor origin). The carriages are integrated in ``substeps`` per twin step (symplectic Euler,
    the robots' bodies held at their step-start state): on a light carriage the wire contact
    (seed 000 Eq. 10, ``dF_s/d delta ~ beta F_s``: 360 kN/m at 167 N) is far stiffer than the
    twin's step can take explicitly. The robots' bodies then see only the mounts' springs.

    Defaults are **assumptions** (no public figure for the SSRMS LEE's carriage compliance, and the
    GF mock-up's mount is ours): 50 kN/m a side (25 kN/m in series), 5 kg, critically damped (a 16 Hz
    mount mode, above the robots' 10 Hz servo, far below the contact's). With 10 kg carriages the
    twin-alone pinch kept a 10 N limit cycle; with 5 kg it settles. Seed 000 measured its wire
    law on a wire held by a rigid frame (its Fig. 10), so a real LEE's yield is not in Eqs. 10-11:
    a mount softens the first contact (lockstep case 3, one such mount on the LEE: peak before 3 s
    103 N rigid, 91 N at 300 kN/m, 63 N at 50 kN/m, 47 N at 20 kN/m) and leaves the settled pinch
    as it is. docs/snare.md ("The pinch in the twin") has the measurements.
    """

    stiffness_n_per_m: float = 50e3
    mass_kg: float = 5.0
    damping_ratio: float = 1.0
    substeps: int = 2

    def __post_init__(self):
        for name in ('stiffness_n_per_m', 'mass_kg'):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0.0):
                raise ConfigError(f'CompliantMount.{name} must be > 0, got {v!r}')
        if not (isinstance(self.damping_ratio, (int, float)) and math.isfinite(self.damping_ratio)
                and self.damping_ratio >= 0.0):
            raise ConfigError(f'CompliantMount.damping_ratio must be >= 0, got {self.damping_ratio!r}')
        if not (isinstance(self.substeps, int) and self.substeps >= 1):
            raise ConfigError(f'CompliantMount.substeps must be an integer >= 1, got {self.substeps!r}')

    @property
    def damping_n_s_per_m(self) -> float:
        return 2.0 * self.damping_ratio * math.sqrt(self.stiffness_n_per_m * self.mass_kg)


class _Carriage:
    """One mount's state: the carriage's point mass at ``p`` with velocity ``v`` (world), its rest point
    ``rest_in_body`` fixed to the mock-up frame ``B`` (what the wires see is ``B`` moved to the carriage)."""

    def __init__(self, mount: CompliantMount, rest_in_body):
        self.mount = mount
        self.rest_in_body = np.asarray(rest_in_body, dtype=float)
        self.p = None
        self.v = None
        self.offset_m = np.zeros(3)          # from the rest point, frame B, at the end of the last step [m]

    def rest(self, pose: pin.SE3, twist) -> tuple[np.ndarray, np.ndarray]:
        """The rest point (world) and its velocity (world) on the mock-up at ``pose``, body twist ``twist``."""
        r0 = self.rest_in_body
        return pose.act(r0), pose.rotation @ (twist[:3] + np.cross(twist[3:], r0))

    def frame(self, pose: pin.SE3, twist, p_rest) -> tuple[pin.SE3, np.ndarray]:
        """Frame ``B`` moved with the carriage, and its body twist (``B``'s angular velocity)."""
        rot = pose.rotation
        moved = pin.SE3(rot, pose.translation + (self.p - p_rest))
        w_b = np.asarray(twist[3:])
        return moved, np.concatenate([rot.T @ self.v - np.cross(w_b, self.rest_in_body), w_b])

    def substep(self, h: float, rot, wrench_on_frame, p_rest, v_rest) -> tuple[np.ndarray, np.ndarray]:
        """Advance by ``h`` under the wires' wrench on the moved frame (its axes, about its origin).
        Returns the mount's force on the carriage and the wires' couple about the carriage (world)."""
        m = self.mount
        f_w = rot @ wrench_on_frame[:3]
        f_m = -m.stiffness_n_per_m * (self.p - p_rest) - m.damping_n_s_per_m * (self.v - v_rest)
        couple = rot @ (wrench_on_frame[3:] - np.cross(self.rest_in_body, wrench_on_frame[:3]))
        self.v = self.v + h * (f_w + f_m) / m.mass_kg
        self.p = self.p + h * self.v
        return f_m, couple


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
        # the carriages: (LEE side, rest at the wire plane's centre; GF side, rest at the shaft's base)
        self.carriages = (None if lee_mount is None else _Carriage(lee_mount, (self.system.wires.x_wire_m, 0.0, 0.0)),
                          None if gf_mount is None else _Carriage(gf_mount, (0.0, 0.0, 0.0)))
        self._bodies = None

    @property
    def mounted(self) -> bool:
        return any(c is not None for c in self.carriages)

    def _init(self, twin) -> None:
        import mujoco

        m = twin.model
        self._bodies = tuple(mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f'{ns}_payload')
                             for ns in (self.layout.lee_ns, self.layout.gf_ns))
        if min(self._bodies) < 0:
            raise KeyError('the twin has no bare F/T sensor bodies for the LEE and GF mock-ups (payload none)')
        pose_lee, twist_lee, pose_gs, twist_gs = self.mockup_states(twin)
        for carriage, pose, twist in zip(self.carriages, (pose_lee, pose_gs), (twist_lee, twist_gs)):
            if carriage is not None:
                carriage.p, carriage.v = carriage.rest(pose, twist)

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
        lee, gf = self.carriages
        if lee is not None and lee.p is not None:
            pose_lee = pin.SE3(pose_lee.rotation, pose_lee.translation + pose_lee.rotation @ lee.offset_m)
        if gf is not None and gf.p is not None:
            pose_gs = pin.SE3(pose_gs.rotation, pose_gs.translation + pose_gs.rotation @ gf.offset_m)
        p_lee, _, in_shaft = self.system.grapple_section(pose_lee, pose_gs)
        return p_lee, in_shaft

    def apply(self, twin) -> None:
        if self._bodies is None:
            self._init(twin)
        pose_lee, twist_lee, pose_gs, twist_gs = self.mockup_states(twin)
        if self.mounted:
            w_lee, w_gf = self._mounted(twin.dt, (pose_lee, pose_gs), (twist_lee, twist_gs))
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
            tau = pose.rotation @ w[3:] + np.cross(pose.translation - d.xipos[body], f)
            d.xfrc_applied[body, :3] = f
            d.xfrc_applied[body, 3:] = tau

    #: at most this many carriage substeps per twin step
    MAX_SUBSTEPS = 64

    def substeps(self, dt_s: float) -> int:
        """Carriage substeps for the next twin step: at least each mount's ``substeps``, and enough that,
        at the last step's wire forces, the explicit update neither overshoots the regularised friction
        (Eq. 12, a damper ``mu F_n / v_eps`` at rest: ``h c / m <= 1``) nor the contact's stiffness
        (Eq. 10, ``dF_s/d delta ~ beta F_s + gamma``: ``omega h <= 0.5``), ``m`` the carriages' reduced
        mass (a robot's body counts as rigid within a step)."""
        mounts = [c.mount for c in self.carriages if c is not None]
        m_red = 1.0 / sum(1.0 / m.mass_kg for m in mounts)
        law = self.system.law
        f_total = float(self.normal_force_n.sum())
        c_friction = law.mu * f_total / law.v_eps_mps
        k_contact = law.beta_per_m * f_total + self.system.wires.n_wires * law.gamma_n_per_m
        n = max(max(m.substeps for m in mounts), math.ceil(dt_s * c_friction / m_red),
                math.ceil(2.0 * dt_s * math.sqrt(k_contact / m_red)))
        return min(n, self.MAX_SUBSTEPS)

    def _mounted(self, dt_s: float, poses, twists):
        """The wires over one twin step with the carriages: ``(wrench on the LEE mock-up, LEE frame, about
        its origin; on the GF mock-up, sensor frame, about its origin)``, each the mean over the
        substeps (the impulse the step passes on).

        Each carriage (a point mass ``m`` at ``p``, world) obeys ``m p'' = f_w + f_m``,
        ``f_m = -K (p - p_r) - D (p' - p_r')``, ``p_r`` its rest point on the mock-up body, ``f_w`` the
        wires' force on it (seed 000 Eqs. 10-12 by :meth:`hil_snare.system.SnareSystem.wrenches`
        between the two frames moved with their carriages). The mock-up body receives ``-f_m`` at
        the carriage and the wires' couple about it; an unmounted side receives the wires' wrench.
        """
        n = self.substeps(dt_s)
        h = dt_s / n
        rests = [None if c is None else c.rest(pose, tw) for c, pose, tw in zip(self.carriages, poses, twists)]
        totals = [np.zeros(6), np.zeros(6)]      # on each body: world force, world moment about the body frame's origin
        theta_dot = 0.0
        for _ in range(n):
            frames = []
            for c, pose, tw, rest in zip(self.carriages, poses, twists, rests):
                frames.append((pose, tw) if c is None else c.frame(pose, tw, rest[0]))
            (pose_l, tw_l), (pose_g, tw_g) = frames
            w_g, w_l, td = self.system.wrenches(self.theta, pose_l, tw_l, pose_g, tw_g, record=True)
            theta_dot += td
            for c, pose, rest, w, moved, total in zip(self.carriages, poses, rests, (w_l, w_g), (pose_l, pose_g), totals):
                rot = pose.rotation
                if c is None:
                    f = rot @ w[:3]
                    total[:3] += f
                    total[3:] += rot @ w[3:]
                else:
                    p_before = c.p
                    f_m, couple = c.substep(h, rot, w, *rest)
                    total[:3] -= f_m
                    total[3:] += couple + np.cross(0.5 * (p_before + c.p) - pose.translation, -f_m)
        self.theta_dot = theta_dot / n
        for c, pose, rest in zip(self.carriages, poses, rests):
            if c is not None:
                c.offset_m = pose.rotation.T @ (c.p - rest[0])
        return tuple(np.concatenate([pose.rotation.T @ t[:3], pose.rotation.T @ t[3:]]) / n
                     for pose, t in zip(poses, totals))

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
