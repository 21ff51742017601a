"""Deterministic lockstep runs of the snare simulators (plain Python, no rclpy).

:func:`build_htv_capture` sets up seed 000's HTV capture (run 3: Table 3's initial state;
run 4: the case study, grapple in a corner and the LEE moving along z);
:func:`run` steps a :class:`hil_snare.system.SnareSystem` with its controller and records a
trace; :func:`capture_outcome` applies the success criterion; :func:`bisect_capture_limit`
finds the case study's limiting speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from hil_common.fields import ScenarioError
from hil_snare.arms import JEMRMS_MAIN_ARM, SSRMS_TABLE1
from hil_snare.contact import LooseWireLaw, SnareWireLaw
from hil_snare.control import CameraFrameController
from hil_snare.geometry import LeeSnare, SingleWire, closest_on_polyline
from hil_snare.joints import BandedJoint, SsrmsGearbox
from hil_snare.mount import CompliantMount
from hil_snare.system import ArmConfig, SnareSystem
from hil_snare.targets import air_table_target, htv, payload_500kg

from hil_common.errors import SimulationFailed

DEG = math.pi / 180.0

# seed 000 Table 3
TABLE3_JOINTS_DEG = (-31.87, 42.73, -66.72, 105.1, -178.6, -174.6, -131.5)
TABLE3_REL_POSITION_M = (-0.4760, 0.013, -0.003)
TABLE3_REL_VELOCITY_MPS = (0.030, -0.012, 0.008)
TABLE3_REL_ATTITUDE_DEG = (0.0108, 0.763, 0.110)


@dataclass
class HtvCaptureConfig:
    """Seed 000 runs 3 and 4. Defaults: Tables 1, 3, 4 and our stated assumptions (docs/snare.md)."""

    joints_deg: tuple = TABLE3_JOINTS_DEG
    rel_position_m: tuple = TABLE3_REL_POSITION_M       # GF tip in the LEE frame
    rel_velocity_mps: tuple = TABLE3_REL_VELOCITY_MPS   # GF tip relative to the LEE, LEE frame
    rel_attitude_deg: tuple = TABLE3_REL_ATTITUDE_DEG   # roll, pitch, yaw of the GF frame in the LEE frame
    lee_velocity_mps: tuple = (0.0, 0.0, 0.0)           # initial LEE velocity (LEE frame), case study
    grapple_in_corner: bool = False                     # case study: the GF starts in a corner
    corner_gap_m: float = 0.002                         # clearance to the two corner wires
    law: SnareWireLaw = field(default_factory=SnareWireLaw)
    gearbox: SsrmsGearbox = field(default_factory=SsrmsGearbox)
    motor_inertia_kgm2: float = 2.67e-4 * 1845.0 ** 2
    motor_damping_nms_per_rad: float = 18000.0
    kp: float = 120.0
    kd: float = 240.0
    ring_radius_m: float = 0.17
    sag_ratio: float = 0.15
    x_wire_m: float = -0.60
    initial_angle_deg: float = 130.0
    final_angle_deg: float = 200.0
    tightening_time_s: float = 5.0
    stall_force_n: float = 500.0
    dt_s: float = 2e-3
    control_period_s: float = 0.01
    duration_s: float = 10.0
    require_inside: bool = True
    # compliant mounts of the wire ring (in the LEE) and of the GF shaft (on the HTV), hil_snare.mount;
    # None: the wires and the shaft fixed to their bodies (seed 000's model)
    lee_mount: CompliantMount | None = None
    gf_mount: CompliantMount | None = None


def corner_position(snare: LeeSnare, radius_m: float, gap_m: float, corner_deg: float = 95.0) -> np.ndarray:
    """A point on the bisector of the corner at ring angle ``corner_deg``, ``radius + gap`` from its two wires."""
    u = np.array([math.cos(corner_deg * DEG), math.sin(corner_deg * DEG)])
    lo, hi = 0.0, snare.ring_radius_m
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        p = mid * u
        d = min(closest_on_polyline(c, p)[0] for c in snare.curves(snare.theta0))
        if snare.inside(snare.theta0, p) and d > radius_m + gap_m:
            lo = mid
        else:
            hi = mid
    return lo * u


class ScenarioInputError(ScenarioError):
    """The initial state contradicts the scenario (e.g. the grapple is not inside the snare)."""


class IntegrationDiverged(SimulationFailed):
    """The fixed-step integration left its stability region (the state is no longer finite)."""


def lee_snare(cfg: HtvCaptureConfig) -> LeeSnare:
    """The LEE's three wires and their drive (seed 000 §2, Table 3) of a run-3/4 configuration."""
    return LeeSnare(cfg.ring_radius_m, cfg.sag_ratio, cfg.initial_angle_deg, cfg.final_angle_deg,
                    cfg.tightening_time_s, cfg.x_wire_m, stall_force_n=cfg.stall_force_n)


def build_htv_capture(cfg: HtvCaptureConfig):
    """Return ``(system, controller, poses, x)`` for seed 000's HTV capture."""
    arm = ArmConfig(SSRMS_TABLE1, cfg.gearbox, cfg.motor_inertia_kgm2, cfg.motor_damping_nms_per_rad)
    snare = lee_snare(cfg)
    body, grapple, pose_gf_in_htv = htv()
    system = SnareSystem(body, grapple, snare, cfg.law, arm, lee_mount=cfg.lee_mount, gf_mount=cfg.gf_mount)
    q0 = np.asarray(cfg.joints_deg, dtype=float) * DEG
    pin.framesForwardKinematics(system.model, system.data, q0)
    jac = pin.computeFrameJacobian(system.model, system.data, q0, system.frame_id, pin.LOCAL)
    lee_twist = np.concatenate([np.asarray(cfg.lee_velocity_mps, dtype=float), np.zeros(3)])
    v0 = np.linalg.pinv(jac) @ lee_twist
    pose_lee = system.data.oMf[system.frame_id]
    rel = np.asarray(cfg.rel_position_m, dtype=float).copy()
    if cfg.grapple_in_corner:
        rel[1:] = corner_position(snare, grapple.radius_m, cfg.corner_gap_m)
    r = np.asarray(cfg.rel_attitude_deg, dtype=float) * DEG
    pose_gf_in_lee = pin.SE3(pin.rpy.rpyToMatrix(*r), rel)
    pose_htv_in_world = pose_lee * pose_gf_in_lee * pose_gf_in_htv.inverse()
    # GF tip velocity = LEE point velocity + relative velocity; the HTV does not spin.
    v_rel_world = pose_lee.rotation @ np.asarray(cfg.rel_velocity_mps, dtype=float)
    v_world = v_rel_world if not cfg.grapple_in_corner else np.zeros(3)
    twist_htv = np.concatenate([pose_htv_in_world.rotation.T @ v_world, np.zeros(3)])
    poses, x = system.initial_state(pose_htv_in_world, twist_htv, q0, v0)
    if cfg.require_inside:
        p_lee, _, in_shaft = system.grapple_section(pose_lee, pose_htv_in_world)
        if not in_shaft:
            raise ScenarioInputError('initial_state: the grapple shaft does not reach the wire plane '
                                     f'(x_wire_m {cfg.x_wire_m}) although the scenario says it is inside the LEE')
        if not snare.inside(snare.theta0, p_lee[1:]):
            raise ScenarioInputError(f'initial_state.rel_position_m: the grapple at (y, z) = {p_lee[1:].round(4).tolist()} m '
                                     'is outside the wire triangle although the scenario says it is inside the LEE')
    ctrl = CameraFrameController(system.model, q0, cfg.kp, cfg.kd)
    return system, ctrl, poses, x


@dataclass
class Trace:
    t: list = field(default_factory=list)
    rel_position_m: list = field(default_factory=list)    # GF section point in the LEE frame
    rel_velocity_mps: list = field(default_factory=list)  # of the GF section point relative to the LEE
    joints_rad: list = field(default_factory=list)
    normal_force_n: list = field(default_factory=list)    # per wire
    energy_j: list = field(default_factory=list)
    target_twist: list = field(default_factory=list)      # body twist of the target at its CoM

    def arrays(self):
        return {k: np.asarray(v) for k, v in self.__dict__.items()}


def relative_state(system: SnareSystem, t, poses, x):
    """The GF section in the LEE frame, its velocity relative to the LEE, and whether the shaft reaches the
    wire plane; with mounts, where the carriages put the wire ring and the shaft (the bodies' velocities)."""
    q, v, _, _, vt = system.split(x)
    pose_lee, twist_lee, pose_t = system.mounted_frames(poses, q, v)
    p_lee, p_tgt, in_shaft = system.grapple_section(pose_lee, pose_t)
    if p_lee is None:
        return np.full(3, np.nan), np.full(3, np.nan), False
    v_rel = system.relative_point_velocity(pose_lee, twist_lee, p_lee, pose_t, vt, p_tgt)
    return p_lee, v_rel, in_shaft


def run(system: SnareSystem, ctrl, poses, x, duration_s: float, dt_s: float, control_period_s: float,
        record_every: int = 5, progress=None, energy=False) -> tuple[Trace, list, np.ndarray]:
    """Fixed-step lockstep run; the controller runs every ``control_period_s`` (zero-order hold)."""
    trace = Trace()
    n_steps = int(round(duration_s / dt_s))
    ctrl_every = max(1, int(round(control_period_s / dt_s)))
    t = 0.0
    for k in range(n_steps + 1):
        if ctrl is not None and k % ctrl_every == 0:
            q, v = system.split(x)[:2]
            system.tau_c = ctrl.update(ctrl_every * dt_s, system.q_full(poses, q), v)
        if k % record_every == 0 or k == n_steps:
            p, vr, in_shaft = relative_state(system, t, poses, x)
            if not in_shaft:
                p = np.full(3, np.nan)
            if system.mounts is not None:       # the wires' forces on the carriages at the last step
                f = system.mounts.normal_force_n.copy()
            else:
                system.derivative(t, poses, x, record=True)
                f = np.zeros(system.wires.n_wires)
                for c in system.contacts:
                    f[c.wire] += c.normal_force_n
            trace.t.append(t)
            trace.rel_position_m.append(p)
            trace.rel_velocity_mps.append(vr)
            trace.joints_rad.append(system.split(x)[0].copy())
            trace.normal_force_n.append(f)
            trace.target_twist.append(system.split(x)[4].copy())
            if energy:
                trace.energy_j.append(system.energy(t, poses, x))
            if progress is not None:
                progress(t, p, vr)
        if k == n_steps:
            break
        poses, x = system.step(t, dt_s, poses, x)
        t = (k + 1) * dt_s
        if not np.all(np.isfinite(x)):
            raise IntegrationDiverged(f'the state is not finite at t = {t:.4f} s with dt = {dt_s * 1e3:g} ms: '
                                      'the wire contact got stiffer than the step allows (docs/snare.md, step-size study)')
    return trace, poses, x


@dataclass
class Outcome:
    captured: bool
    reason: str
    rel_speed_mps: float
    min_dist_to_axis_m: float


def capture_outcome(system: SnareSystem, trace: Trace, settle_s: float = 1.0, speed_tol_mps: float = 0.005) -> Outcome:
    """Seed 000 §6.1's criterion: captured when the relative velocity of LEE and GF is ~0 after the wires close.

    Captured iff (a) the grapple shaft crosses the wire plane throughout, (b) at the end of the
    tightening the grapple is held by the wires (within 2 grapple radii of the LEE axis, where the
    closed wires pinch it), and (c) over the last ``settle_s`` of the run the relative speed stays
    below ``speed_tol_mps``.
    """
    a = trace.arrays()
    t, p, v = a['t'], a['rel_position_m'], a['rel_velocity_mps']
    if np.any(~np.isfinite(p)):
        return Outcome(False, 'grapple left the wire plane', float('nan'), float('nan'))
    tail = t >= t[-1] - settle_s
    speed = np.linalg.norm(v[tail], axis=1).max()
    r_axis = np.linalg.norm(p[tail][:, 1:], axis=1).max()
    if r_axis > 2.0 * system.grapple.radius_m:
        return Outcome(False, f'grapple not pinched ({r_axis:.3f} m off the axis)', float(speed), float(r_axis))
    if speed > speed_tol_mps:
        return Outcome(False, f'relative speed {speed:.4f} m/s after the wires closed', float(speed), float(r_axis))
    return Outcome(True, 'captured', float(speed), float(r_axis))


def bisect_capture_limit(make_config, lo_mps: float, hi_mps: float, iterations: int, settle_s: float = 1.0,
                         speed_tol_mps: float = 0.005):
    """Coarse bisection of the case study's limiting LEE speed.

    ``make_config(v)`` returns the :class:`HtvCaptureConfig` for speed ``v``. Returns
    ``(lo, hi, log)``: the last captured and the first failed speed (``hi`` is None when even
    ``hi_mps`` is captured), and ``[(v, Outcome)]``.
    """
    log = []

    def captured(v):
        cfg = make_config(v)
        system, ctrl, poses, x = build_htv_capture(cfg)
        trace, _, _ = run(system, ctrl, poses, x, cfg.duration_s, cfg.dt_s, cfg.control_period_s, record_every=10)
        out = capture_outcome(system, trace, settle_s, speed_tol_mps)
        log.append((v, out))
        return out.captured

    if not captured(lo_mps):
        return None, lo_mps, log
    if captured(hi_mps):
        return hi_mps, None, log
    lo, hi = lo_mps, hi_mps
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if captured(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi, log


# ---- seed 002 ----------------------------------------------------------------------------------

@dataclass
class ContactExperimentConfig:
    """Seed 002 §4.3 (run 1): the 8.9 kg air-table target hits one loose wire at s = 90 mm."""

    speed_mps: float = 0.1                 # seed 002 does not state it (Fig. 14 not in our text)
    probe_offset_m: float = 0.03           # probe beside the CoM line: the contact spins the target
    law: LooseWireLaw = field(default_factory=lambda: LooseWireLaw.at_position(90))
    wire_length_m: float = 0.180           # L (Table 5)
    wire_span_m: float = 0.175             # l (Table 5)
    dt_s: float = 2e-4
    duration_s: float = 1.0


def build_contact_experiment(cfg: ContactExperimentConfig):
    """World: the table (z up). The wire frame has x vertical: its plane is horizontal at the probe's height."""
    half = 0.5 * cfg.wire_span_m
    wire = SingleWire((0.0, -half), (0.0, half), cfg.wire_length_m)
    rot = np.column_stack([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # wire x = world z, y = world x
    body, grapple = air_table_target(probe_tip_m=(0.25, cfg.probe_offset_m, 0.0))
    system = SnareSystem(body, grapple, wire, cfg.law, None, pose_wires_in_world=pin.SE3(rot, np.zeros(3)))
    # probe 20 mm before the wire (on its concave side), aimed at the middle: s = 90 mm (Table 5)
    pose_target = pin.SE3(np.eye(3), np.array([-0.25 - 0.02, -cfg.probe_offset_m, 0.0]))
    poses, x = system.initial_state(pose_target, np.array([cfg.speed_mps, 0, 0, 0, 0, 0]))
    return system, None, poses, x


@dataclass
class JemrmsCaptureConfig:
    """Seed 002 §5 (run 2): the 500 kg payload moves along the LEE's y into its one wire."""

    speed_mps: float = 0.02                # seed 002 states 10 m/s; see docs/snare.md for why we do not use it
    joints_deg: tuple = (0.0, 30.0, -60.0, 30.0, 0.0, 0.0)
    motor_inertia_kgm2: float = 100.0      # assumption (JEMRMS motor data not public)
    motor_damping_nms_per_rad: float = 500.0  # assumption
    kp: float = 120.0
    kd: float = 240.0
    law: LooseWireLaw = field(default_factory=lambda: LooseWireLaw.at_position(90))
    joint_law: BandedJoint = field(default_factory=BandedJoint.jemrms_table2)
    start_gap_m: float = 0.01
    dt_s: float = 5e-4
    control_period_s: float = 0.01
    duration_s: float = 4.0


def build_jemrms_capture(cfg: JemrmsCaptureConfig):
    arm = ArmConfig(JEMRMS_MAIN_ARM, cfg.joint_law, cfg.motor_inertia_kgm2, cfg.motor_damping_nms_per_rad)
    half = 0.0875
    wire = SingleWire((0.0, half), (0.0, -half), 0.180, x_wire_m=-0.30)   # along LEE z, bowed toward -y
    body, grapple, pose_gf_in_body = payload_500kg()
    system = SnareSystem(body, grapple, wire, cfg.law, arm)
    q0 = np.asarray(cfg.joints_deg, dtype=float) * DEG
    pin.framesForwardKinematics(system.model, system.data, q0)
    pose_lee = system.data.oMf[system.frame_id]
    # GF tip 0.1 m beyond the wire plane, on the wire's convex (+y) side, moving along -y into it
    sag = wire.sag_ratio * half
    pose_gf_in_lee = pin.SE3(np.eye(3), np.array([-0.20, -sag + grapple.radius_m + cfg.start_gap_m, 0.0]))
    pose_body = pose_lee * pose_gf_in_lee * pose_gf_in_body.inverse()
    v_world = pose_lee.rotation @ np.array([0.0, -cfg.speed_mps, 0.0])
    poses, x = system.initial_state(pose_body, np.concatenate([pose_body.rotation.T @ v_world, np.zeros(3)]), q0)
    ctrl = CameraFrameController(system.model, q0, cfg.kp, cfg.kd)
    return system, ctrl, poses, x
