"""Compliant mounts of the wire ring and the GF shaft: the one definition (plain Python, no rclpy, SI units).

The LEE's wires (seed 000 Eqs. 10-12) are stiff: ``dF_s/d delta ~ beta F_s``, 360 kN/m at the
167 N a wire carries in the settled pinch. :class:`CompliantMount` puts what touches the wires on a
carriage: a point mass that translates (does not rotate) against its body on an isotropic
spring-damper. Both the lab twin (:class:`hil_snare.lab.SnareWires`, the bodies are the robots'
mock-ups) and the lockstep runner (:class:`hil_snare.system.SnareSystem` with ``mounts``, the bodies
are the SSRMS's LEE and the HTV) step the wires through :class:`MountedWires`, so both integrate the
same mount physics with the same splitting:

* over one step of the bodies (``dt``) the carriages are integrated in substeps (symplectic Euler),
  the bodies held at their step-start state, as many substeps as the last step's wire forces need
  (:meth:`MountedWires.substeps`);
* each body receives the mean, over the substeps, of its mount's reaction (the spring-damper force
  at the carriage) plus the wires' couple (the carriage does not rotate), held over the step; a side
  without a mount receives the wires' wrench as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError
from hil_dynamics.se3 import cross3


@dataclass(frozen=True)
class CompliantMount:
    """A compliant mount between a body and what touches the wires (SI units).

    A carriage of ``mass_kg`` translates (does not rotate) against its body on an isotropic
    spring-damper, ``stiffness_n_per_m`` and ``damping_ratio`` of critical
    (``d = 2 zeta sqrt(k m)``), at rest where it was built. Either side can have one: the LEE's wire
    ring (rest point the wire plane's centre ``(x_wire, 0, 0)`` of the LEE frame) and the GF shaft
    (rest point the shaft's base). The carriages are integrated in at least ``substeps`` per step of
    the bodies (:class:`MountedWires`): on a light carriage the wire contact (seed 000 Eq. 10) is
    far stiffer than the bodies' step can take explicitly. The bodies then see only the springs.

    Defaults are **assumptions** (no public figure for the SSRMS LEE's carriage compliance, and the
    GF mock-up's mount is ours): 50 kN/m a side (25 kN/m in series), 5 kg, critically damped (a 16 Hz
    mount mode, above the lab robots' 10 Hz servo, far below the contact's). With 10 kg carriages the
    twin-alone pinch kept a 10 N limit cycle; with 5 kg it settles. Seed 000 measured its wire
    law on a wire held by a rigid frame (its Fig. 10), so a real LEE's yield is not in Eqs. 10-11: the
    mounts soften the first contact (lockstep case 3, both mounts: peak before 3 s 51 N against 103 N
    rigid) and leave the settled pinch as it is. The snare graph puts them on both sides by default
    (``mounts:=true``): live, the pinch holds at 20 and 50 kN/m and diverges at 100 and 300 kN/m and
    without mounts. docs/snare.md ("The pinch in the twin", "Live against lockstep") has the measurements.
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


class Carriage:
    """One mount's state: the carriage's point mass at ``p`` with velocity ``v`` (world), its rest point
    ``rest_in_body`` fixed to the body frame ``B`` (what the wires see is ``B`` moved to the carriage)."""

    def __init__(self, mount: CompliantMount, rest_in_body):
        self.mount = mount
        self.rest_in_body = np.asarray(rest_in_body, dtype=float)
        self.p = None
        self.v = None
        self.offset_m = np.zeros(3)          # from the rest point, frame B, at the end of the last step [m]

    def rest(self, pose: pin.SE3, twist) -> tuple[np.ndarray, np.ndarray]:
        """The rest point (world) and its velocity (world) on the body at ``pose``, body twist ``twist``."""
        r0 = self.rest_in_body
        return pose.act(r0), pose.rotation @ (twist[:3] + cross3(twist[3:], r0))

    def frame(self, pose: pin.SE3, twist, p_rest) -> tuple[pin.SE3, np.ndarray]:
        """Frame ``B`` moved with the carriage, and its body twist (``B``'s angular velocity)."""
        rot = pose.rotation
        moved = pin.SE3(rot, pose.translation + (self.p - p_rest))
        w_b = np.asarray(twist[3:])
        return moved, np.concatenate([rot.T @ self.v - cross3(w_b, self.rest_in_body), w_b])

    def substep(self, h: float, rot, wrench_on_frame, p_rest, v_rest) -> tuple[np.ndarray, np.ndarray]:
        """Advance by ``h`` (symplectic Euler) under the wires' wrench on the moved frame (its axes, about
        its origin). Returns the mount's force on the carriage and the wires' couple about the carriage (world)."""
        m = self.mount
        f_w = rot @ wrench_on_frame[:3]
        f_m = -m.stiffness_n_per_m * (self.p - p_rest) - m.damping_n_s_per_m * (self.v - v_rest)
        couple = rot @ (wrench_on_frame[3:] - cross3(self.rest_in_body, wrench_on_frame[:3]))
        self.v = self.v + h * (f_w + f_m) / m.mass_kg
        self.p = self.p + h * self.v
        return f_m, couple

    def energy(self, pose: pin.SE3, twist) -> float:
        """Kinetic energy of the carriage and the spring's potential [J] (the body at ``pose``, ``twist``)."""
        if self.p is None:
            return 0.0
        p_r, _ = self.rest(pose, twist)
        return 0.5 * self.mount.mass_kg * float(self.v @ self.v) + 0.5 * self.mount.stiffness_n_per_m * float(
            (self.p - p_r) @ (self.p - p_r))


class MountedWires:
    """The wires between an LEE frame and a grapple's body frame with compliant mounts, over one step.

    ``wires`` is a :class:`hil_snare.system.SnareSystem` whose :meth:`~hil_snare.system.SnareSystem.wrenches`
    gives the contact between an LEE frame and the grapple's body frame (the twin: the GF sensor
    frame; lockstep: the HTV's CoM frame). ``grapple_rest_in_body``: the GF carriage's rest point
    (the shaft's base) in that body frame. A side whose mount is ``None`` is fixed to its body.
    """

    #: at most this many carriage substeps per step
    MAX_SUBSTEPS = 64

    def __init__(self, wires, lee_mount: CompliantMount | None, gf_mount: CompliantMount | None,
                 grapple_rest_in_body):
        if lee_mount is None and gf_mount is None:
            raise ConfigError('MountedWires needs a mount on at least one side (lee_mount, gf_mount)')
        self.wires = wires
        self.carriages = (None if lee_mount is None else Carriage(lee_mount, (wires.wires.x_wire_m, 0.0, 0.0)),
                          None if gf_mount is None else Carriage(gf_mount, grapple_rest_in_body))
        self.normal_force_n = np.zeros(wires.wires.n_wires)   # each wire's, at the last substep [N]

    @property
    def started(self) -> bool:
        return all(c is None or c.p is not None for c in self.carriages)

    def start(self, poses, twists) -> None:
        """The carriages at rest on their bodies (``poses``, ``twists``: the LEE's, the grapple body's)."""
        for carriage, pose, twist in zip(self.carriages, poses, twists):
            if carriage is not None:
                carriage.p, carriage.v = carriage.rest(pose, twist)

    def moved(self, poses):
        """The two body frames moved by their carriages' offsets (at the end of the last step)."""
        out = []
        for c, pose in zip(self.carriages, poses):
            out.append(pose if c is None or c.p is None else pin.SE3(pose.rotation, pose.translation
                                                                      + pose.rotation @ c.offset_m))
        return tuple(out)

    def substeps(self, dt_s: float) -> int:
        """Carriage substeps for the next step: at least each mount's ``substeps``, and enough that, at
        the last step's wire forces, the explicit update neither overshoots the regularised friction
        (Eq. 12, a damper ``mu F_n / v_eps`` at rest: ``h c / m <= 1``) nor the contact's stiffness
        (Eq. 10, ``dF_s/d delta ~ beta F_s + gamma``: ``omega h <= 0.5``), ``m`` the carriages' reduced
        mass (a body counts as rigid within a step)."""
        mounts = [c.mount for c in self.carriages if c is not None]
        m_red = 1.0 / sum(1.0 / m.mass_kg for m in mounts)
        law = self.wires.law
        f_total = float(self.normal_force_n.sum())
        c_friction = law.mu * f_total / law.v_eps_mps
        k_contact = law.beta_per_m * f_total + self.wires.wires.n_wires * law.gamma_n_per_m
        n = max(max(m.substeps for m in mounts), math.ceil(dt_s * c_friction / m_red),
                math.ceil(2.0 * dt_s * math.sqrt(k_contact / m_red)))
        return min(n, self.MAX_SUBSTEPS)

    def step(self, dt_s: float, theta: float, poses, twists):
        """The wires over one step of the bodies: ``(wrench on the LEE, LEE frame, about its origin; on the
        grapple's body, its frame, about its origin; the drive's ring rate)``, each the mean over the
        substeps (the impulse the step passes on).

        Each carriage (a point mass ``m`` at ``p``, world) obeys ``m p'' = f_w + f_m``,
        ``f_m = -K (p - p_r) - D (p' - p_r')``, ``p_r`` its rest point on its body, ``f_w`` the
        wires' force on it (seed 000 Eqs. 10-12 between the two frames moved with their carriages).
        The body receives ``-f_m`` at the carriage and the wires' couple about it; an unmounted side
        receives the wires' wrench.
        """
        if not self.started:
            self.start(poses, twists)
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
            w_g, w_l, td = self.wires.wrenches(theta, pose_l, tw_l, pose_g, tw_g, record=True)
            theta_dot += td
            for c, pose, rest, w, total in zip(self.carriages, poses, rests, (w_l, w_g), totals):
                rot = pose.rotation
                if c is None:
                    total[:3] += rot @ w[:3]
                    total[3:] += rot @ w[3:]
                else:
                    p_before = c.p
                    f_m, couple = c.substep(h, rot, w, *rest)
                    total[:3] -= f_m
                    total[3:] += couple + cross3(0.5 * (p_before + c.p) - pose.translation, -f_m)
        self.normal_force_n[:] = 0.0
        for contact in self.wires.contacts:
            self.normal_force_n[contact.wire] += contact.normal_force_n
        for c, pose, rest in zip(self.carriages, poses, rests):
            if c is not None:
                c.offset_m = pose.rotation.T @ (c.p - rest[0])
        w_lee, w_gf = (np.concatenate([pose.rotation.T @ t[:3], pose.rotation.T @ t[3:]]) / n
                       for pose, t in zip(poses, totals))
        return w_lee, w_gf, theta_dot / n
