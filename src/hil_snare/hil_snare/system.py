"""The snare-capture multibody: flexible-joint arm + wires + free target (plain Python, no rclpy).

Equations (seed 000 Eqs. 3-4; seed 002 Eqs. 1-2):

* links (Pinocchio ABA): ``M_a(q_a) q_a'' + C(q_a, q_a') = tau_g(delta, delta') + J_e^T F_e``
* motors: ``M_m q_m'' + D q_m' + tau_g(delta, delta') = tau_c``, ``M_m = I_zz eta^2`` (Eq. 5),
  ``delta = q_m - q_a``
* target: a free rigid body at its CoM (seed 004 Eq. 2, :class:`hil_dynamics.rigid_body.RigidBody`)
* the wire-grapple contact (:mod:`hil_snare.contact`) between the wires (in the LEE frame, or
  fixed in the world when there is no arm) and the grapple shaft on the target.

Integration: RKMK4 (:func:`hil_dynamics.lie_integrators.rkmk4_step`) on the target pose (and the
arm's base pose when it floats) with classical RK4 on the vector states, fixed step; the
controller's torque is held over a step. docs/snare.md has the step-size study behind the
default ``dt_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from hil_dynamics.lie_integrators import rkmk4_step
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import cross3
from hil_snare.arms import ArmSpec, build_model
from hil_snare.contact import friction_gain
from hil_snare.mount import CompliantMount, MountedWires
from hil_common.errors import ConfigError


@dataclass(frozen=True)
class Grapple:
    """The grapple fixture's shaft on the target: a cylinder in the target's CoM frame.

    ``tip_m`` is the shaft's free end, ``axis`` (unit) points from its base to its tip.
    """

    tip_m: tuple
    axis: tuple
    length_m: float
    radius_m: float

    def __post_init__(self):
        if not (self.length_m > 0.0 and self.radius_m > 0.0):
            raise ConfigError(f'grapple length_m and radius_m must be > 0, got {self.length_m!r}, {self.radius_m!r}')


@dataclass
class ArmConfig:
    spec: ArmSpec
    joint_law: object                 # SsrmsGearbox or BandedJoint
    motor_inertia_kgm2: float         # I_zz eta^2 (Eq. 5)
    motor_damping_nms_per_rad: float  # D (Table 4)
    base: str = 'fixed'
    pose_base_in_world: pin.SE3 = field(default_factory=pin.SE3.Identity)

    def __post_init__(self):
        if not (self.motor_inertia_kgm2 > 0.0 and math.isfinite(self.motor_inertia_kgm2)):
            raise ConfigError(f'motor_inertia_kgm2 must be > 0, got {self.motor_inertia_kgm2!r}')
        if not (self.motor_damping_nms_per_rad >= 0.0):
            raise ConfigError(f'motor_damping_nms_per_rad must be >= 0, got {self.motor_damping_nms_per_rad!r}')


@dataclass
class ContactSample:
    wire: int
    delta_m: float
    delta_dot_mps: float
    normal_force_n: float
    force_on_grapple_world: np.ndarray
    point_world: np.ndarray


class SnareSystem:
    """State, derivative and one RK step of arm + wires + target.

    The vector state is ``x = [q_joints, v, q_m, v_m, V_target]`` (``v`` includes the base twist
    first when the base floats); the poses are ``[target CoM in world, (arm base in world)]``.
    """

    @staticmethod
    def relative_point_velocity(pose_lee, twist_lee, p_lee, pose_target, twist_target, p_tgt) -> np.ndarray:
        """Velocity of the grapple's material point relative to the LEE's, in LEE coordinates.

        ``p_lee`` and ``p_tgt`` are the same point in the LEE and target frames; the twists are body
        twists ``[v, w]`` at the frames' origins.
        """
        v_tgt_world = pose_target.rotation @ (twist_target[:3] + cross3(twist_target[3:], p_tgt))
        v_lee_world = pose_lee.rotation @ (twist_lee[:3] + cross3(twist_lee[3:], p_lee))
        return pose_lee.rotation.T @ (v_tgt_world - v_lee_world)

    def __init__(self, target: RigidBody, grapple: Grapple, wires, law, arm: ArmConfig | None = None,
                 pose_wires_in_world: pin.SE3 | None = None, lee_mount: CompliantMount | None = None,
                 gf_mount: CompliantMount | None = None):
        self.target = target
        self.grapple = grapple
        self.wires = wires
        self.law = law
        self.arm = arm
        self.tau_c = None
        self.contacts: list[ContactSample] = []
        self.pose_wires_in_world = pose_wires_in_world or pin.SE3.Identity()
        g_tip = np.asarray(grapple.tip_m, dtype=float)
        g_axis = np.asarray(grapple.axis, dtype=float)
        self._g_axis = g_axis / np.linalg.norm(g_axis)
        self._g_base = g_tip - grapple.length_m * self._g_axis
        if arm is not None:
            self.model = build_model(arm.spec, arm.base, arm.pose_base_in_world)
            self.data = self.model.createData()
            self.frame_id = self.model.getFrameId('lee')
            self.free = arm.base == 'free'
            self.n = arm.spec.n_joints
            self.nv = self.model.nv
            self.tau_c = np.zeros(self.n)
            self.tau_link_bias = np.zeros(self.nv)    # a constant external joint torque (tests, preloads)
        else:
            self.model = None
            self.free = False
            self.n = 0
            self.nv = 0
        self.nx = self.n + self.nv + 2 * self.n + 6 + 1    # last: the snare ring angle theta
        # compliant mounts of the wire ring and the GF shaft (hil_snare.mount, the lab twin's own law):
        # the carriages are stepped in substeps before each step, their reactions held over it
        self.mounts = (None if lee_mount is None and gf_mount is None
                       else MountedWires(self, lee_mount, gf_mount, self._g_base))
        self._held = None          # (wrench on the target, on the LEE, theta_dot) over the present step

    # ---- state layout -------------------------------------------------------------------
    def split(self, x):
        n, nv = self.n, self.nv
        q = x[:n]
        v = x[n:n + nv]
        qm = x[n + nv:2 * n + nv]
        vm = x[2 * n + nv:3 * n + nv]
        vt = x[3 * n + nv:3 * n + nv + 6]
        return q, v, qm, vm, vt

    def q_full(self, poses, q):
        if self.free:
            return np.concatenate([pin.SE3ToXYZQUAT(poses[1]), q])
        return q

    def initial_state(self, pose_target_in_world: pin.SE3, twist_target_body, q_joints=None, v=None,
                      pose_base_in_world: pin.SE3 | None = None):
        """Arm at rest unless ``v`` is given; motors on their links (zero twist, zero gearbox torque)."""
        x = np.zeros(self.nx)
        if self.arm is not None:
            q_joints = np.zeros(self.n) if q_joints is None else np.asarray(q_joints, dtype=float)
            v = np.zeros(self.nv) if v is None else np.asarray(v, dtype=float)
            x[:self.n] = q_joints
            x[self.n:self.n + self.nv] = v
            x[self.n + self.nv:2 * self.n + self.nv] = q_joints
            x[2 * self.n + self.nv:3 * self.n + self.nv] = v[self.nv - self.n:]
        x[3 * self.n + self.nv:-1] = np.asarray(twist_target_body, dtype=float)
        x[-1] = getattr(self.wires, 'theta0', 0.0)
        poses = [pose_target_in_world]
        if self.free:
            poses.append(pose_base_in_world or self.arm.pose_base_in_world)
        return poses, x

    # ---- kinematics -----------------------------------------------------------------------
    def lee_pose_and_twist(self, poses, q, v):
        """Pose of the wire frame in the world and its body twist (LOCAL)."""
        if self.arm is None:
            return self.pose_wires_in_world, np.zeros(6)
        qf = self.q_full(poses, q)
        pin.forwardKinematics(self.model, self.data, qf, v)
        pose = pin.updateFramePlacement(self.model, self.data, self.frame_id)
        twist = pin.getFrameVelocity(self.model, self.data, self.frame_id, pin.LOCAL).vector
        return pose, twist

    def grapple_section(self, pose_lee, pose_target):
        """Where the grapple axis pierces the wire plane: (point in LEE, point in target, in_shaft)."""
        rel = pose_lee.actInv(pose_target)
        base = rel.act(self._g_base)
        axis = rel.rotation @ self._g_axis
        if abs(axis[0]) < 1e-9:
            return None, None, False
        lam = (self.wires.x_wire_m - base[0]) / axis[0]
        p_lee = base + lam * axis
        p_target = self._g_base + lam * self._g_axis
        self._axis_lee = axis
        return p_lee, p_target, 0.0 <= lam <= self.grapple.length_m

    # ---- dynamics ---------------------------------------------------------------------------
    def contact_forces(self, theta, pose_lee, twist_lee, pose_target, twist_target, record=False):
        """(force on the grapple in LEE coordinates, section point in LEE and target frames), and theta_dot."""
        p_lee, p_tgt, in_shaft = self.grapple_section(pose_lee, pose_target)
        if record:
            self.contacts = []
        hits = self.wires.hits(theta, p_lee[1:], self.grapple.radius_m) if in_shaft else []
        theta_dot = 0.0
        if self.wires.has_drive:
            f_static = sum(self.law.static_force(self.grapple.radius_m - h.distance_m) for h in hits)
            theta_dot = self.wires.drive_rate(theta, f_static)
        if not hits:
            return None, theta_dot
        # velocity of the grapple's material point relative to the LEE's, in LEE coordinates
        v_rel = self.relative_point_velocity(pose_lee, twist_lee, p_lee, pose_target, twist_target, p_tgt)
        # scalar arithmetic on 3-vectors below: several times cheaper than numpy at this size
        vx, vy, vz = float(v_rel[0]), float(v_rel[1]), float(v_rel[2])
        ax, ay, az = (float(a) for a in self._axis_lee)
        fx = fy = fz = 0.0
        mu, v_eps = self.law.mu, self.law.v_eps_mps
        for h in hits:
            # The in-plane distance's gradient w.r.t. a rigid motion of the shaft, taken at the
            # material point under the section: the in-plane normal minus its share along the
            # axis, i.e. perpendicular to the shaft. Forces along it derive from the wire potential.
            ny, nz = float(h.normal_yz[0]), float(h.normal_yz[1])
            nx = -(ny * ay + nz * az) / ax
            wy, wz = self.wires.wire_velocity(theta, theta_dot, h) if theta_dot else (0.0, 0.0)
            sx, sy, sz = vx, vy - wy, vz - wz                     # slip of the grapple on the wire
            delta = self.grapple.radius_m - h.distance_m
            delta_dot = -(nx * sx + ny * sy + nz * sz)
            f_n = self.law.normal_force(delta, delta_dot)
            nn = math.sqrt(nx * nx + ny * ny + nz * nz)
            us = (nx * sx + ny * sy + nz * sz) / (nn * nn)
            tx, ty, tz = sx - us * nx, sy - us * ny, sz - us * nz   # tangential slip
            k = friction_gain(mu, f_n, tx * tx + ty * ty + tz * tz, v_eps)              # Eq. (12), regularised
            fix, fiy, fiz = f_n * nx + k * tx, f_n * ny + k * ty, f_n * nz + k * tz
            fx, fy, fz = fx + fix, fy + fiy, fz + fiz
            if record:
                self.contacts.append(ContactSample(h.wire, delta, delta_dot, f_n,
                                                   pose_lee.rotation @ np.array([fix, fiy, fiz]), pose_lee.act(p_lee)))
        f = np.array([fx, fy, fz])
        return (f, p_lee, p_tgt), theta_dot

    def wrenches(self, theta, pose_lee, twist_lee, pose_target, twist_target, record=False):
        """The wire contact between an LEE and a grapple at given poses and body twists.

        Returns ``(wrench on the target at its CoM in its body frame, wrench on the LEE about its
        origin in the LEE frame, theta_dot of the snare drive)``. This is what a lab twin needs to
        put the wires between its LEE and GF models (docs/snare.md, Open).
        """
        c, theta_dot = self.contact_forces(theta, pose_lee, twist_lee, pose_target, twist_target, record)
        wrench_t = np.zeros(6)
        wrench_lee = np.zeros(6)
        if c is not None:
            f_lee, p_lee, p_tgt = c
            f_tgt_body = pose_target.rotation.T @ (pose_lee.rotation @ f_lee)
            wrench_t[:3] = f_tgt_body
            wrench_t[3:] = cross3(p_tgt, f_tgt_body)
            wrench_lee[:3] = -f_lee
            wrench_lee[3:] = cross3(p_lee, -f_lee)
        return wrench_t, wrench_lee, theta_dot

    def derivative(self, t, poses, x, record=False):
        q, v, qm, vm, vt = self.split(x)
        pose_t = poses[0]
        if self._held is not None:      # with mounts: the carriages' reactions over the step
            wrench_t, wrench_lee, theta_dot = self._held
        else:
            pose_lee, twist_lee = self.lee_pose_and_twist(poses, q, v)
            wrench_t, wrench_lee, theta_dot = self.wrenches(x[-1], pose_lee, twist_lee, pose_t, vt, record)
        tau_ext = np.zeros(self.nv)
        if self.arm is not None and wrench_lee.any():
            jac = pin.computeFrameJacobian(self.model, self.data, self.q_full(poses, q), self.frame_id, pin.LOCAL)
            tau_ext = jac.T @ wrench_lee
        vt_dot = self.target.acceleration(vt, wrench_t)
        twists = [vt]
        x_dot = np.empty_like(x)
        if self.arm is not None:
            n, nv = self.n, self.nv
            va = v[nv - n:]
            tau_g = self.arm.joint_law.torque(qm - q, vm - va)
            tau = tau_ext + self.tau_link_bias
            tau[nv - n:] += tau_g
            a = pin.aba(self.model, self.data, self.q_full(poses, q), v, tau)
            am = (self.tau_c - self.arm.motor_damping_nms_per_rad * vm - tau_g) / self.arm.motor_inertia_kgm2
            x_dot[:n] = va
            x_dot[n:n + nv] = a
            x_dot[n + nv:2 * n + nv] = vm
            x_dot[2 * n + nv:3 * n + nv] = am
            if self.free:
                twists.append(v[:6])
        x_dot[3 * self.n + self.nv:-1] = vt_dot
        x_dot[-1] = theta_dot
        return np.asarray(twists), x_dot

    def step(self, t, dt, poses, x):
        if self.mounts is None:
            return rkmk4_step(t, dt, poses, x, self.derivative)
        # the lab twin's splitting (hil_snare.mount): the carriages over the step with the LEE and the
        # target held at the step's start, then the arm and the target under the carriages' mean reactions
        q, v, _, _, vt = self.split(x)
        pose_lee, twist_lee = self.lee_pose_and_twist(poses, q, v)
        w_lee, w_t, theta_dot = self.mounts.step(dt, x[-1], (pose_lee, poses[0]), (twist_lee, vt))
        self._held = (w_t, w_lee, theta_dot)
        try:
            return rkmk4_step(t, dt, poses, x, self.derivative)
        finally:
            self._held = None

    def mounted_frames(self, poses, q, v):
        """``(pose_lee, twist_lee, pose_target)``: the LEE and the target, each moved by its carriage's offset
        (at the end of the last step) when it has a mount (what the wires touch)."""
        pose_lee, twist_lee = self.lee_pose_and_twist(poses, q, v)
        pose_t = poses[0]
        if self.mounts is not None:
            pose_lee, pose_t = self.mounts.moved((pose_lee, pose_t))
        return pose_lee, twist_lee, pose_t

    # ---- invariants ---------------------------------------------------------------------------
    def energy(self, t, poses, x) -> float:
        """Kinetic energy of links, motors and target + gearbox and wire potentials [J]."""
        q, v, qm, vm, vt = self.split(x)
        e = self.target.kinetic_energy(vt)
        if self.arm is not None:
            qf = self.q_full(poses, q)
            mass = pin.crba(self.model, self.data, qf)
            mass = np.triu(mass) + np.triu(mass, 1).T
            e += 0.5 * float(v @ mass @ v) + 0.5 * self.arm.motor_inertia_kgm2 * float(vm @ vm)
            e += self.arm.joint_law.energy(qm - q)
        pose_lee, twist_lee, pose_t = self.mounted_frames(poses, q, v)
        if self.mounts is not None:     # the carriages' kinetic energy and their springs
            bodies = (self.lee_pose_and_twist(poses, q, v), (poses[0], vt))
            e += sum(c.energy(*b) for c, b in zip(self.mounts.carriages, bodies) if c is not None)
        p_lee, _, in_shaft = self.grapple_section(pose_lee, pose_t)
        if in_shaft:
            for h in self.wires.hits(x[-1], p_lee[1:], self.grapple.radius_m):
                e += self.law.potential(self.grapple.radius_m - h.distance_m)
        return e

    def linear_momentum(self, poses, x) -> np.ndarray:
        """Total linear momentum of target and arm in the world frame."""
        q, v, _, _, vt = self.split(x)
        p = poses[0].rotation @ (self.target.mass_kg * vt[:3])
        if self.arm is not None:
            pin.computeCentroidalMomentum(self.model, self.data, self.q_full(poses, q), v)
            p = p + self.data.hg.linear
        if self.mounts is not None:
            p = p + sum(c.mount.mass_kg * c.v for c in self.mounts.carriages if c is not None and c.v is not None)
        return p
