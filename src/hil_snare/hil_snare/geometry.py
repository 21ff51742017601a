"""Snare-wire geometry: elliptic wire curves, the LEE's three tightening wires, one loose wire.

All curves lie in the *wire plane* ``x = x_wire_m`` of their frame (the LEE frame, or the lab
frame for seed 002's air-table experiment) and are given by their in-plane ``(y, z)``
coordinates. The grapple is a cylinder (shaft) of radius ``r`` whose axis pierces that plane;
its section is treated as a circle (the grapple's tilt stays below a degree in every run).

* Wire curve (seed 000 §2, "the wire curve in the LEE is described by using an elliptic
  function"): half an ellipse over the chord between the wire's two anchors, with semi-minor
  axis ``sag_ratio`` times the half-chord, bowed outward (to the right of the anchor-to-anchor
  direction). Sampled as a polyline of ``n_samples`` points.
* :class:`LeeSnare`: three wires, wire ``i`` from a fixed anchor at ring angle
  ``phi_i = 90 deg + 120 deg i`` to an anchor on the rotating ring at ``phi_i + theta``;
  the drive turns ``theta`` from the initial to the final angle over the tightening time (seed
  000 Table 3: 130 deg -> 200 deg in 5 s) unless the wires' force stalls it. The chord's distance from the axis is
  ``R cos(theta / 2)``: the three chords bound a curvilinear triangle that closes on the axis
  as ``theta -> 180 deg`` and pinches the grapple beyond.
* :class:`SingleWire`: one loose wire between fixed anchors ``l`` apart, of length ``L``
  (seed 002 Tables 3 and 5: L = 180 mm, l = 175 mm); its sag follows from the length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from hil_common.errors import ConfigError

DEG = math.pi / 180.0


_ARC_CACHE: dict = {}


def _arc_basis(n: int):
    if n not in _ARC_CACHE:
        u = np.linspace(math.pi, 0.0, n)
        _ARC_CACHE[n] = (np.cos(u)[:, None], np.sin(u)[:, None])
    return _ARC_CACHE[n]


def elliptic_arc(a_yz, b_yz, sag_ratio: float, n: int) -> np.ndarray:
    """Half-ellipse from ``a_yz`` to ``b_yz`` bowed to the right of ``b - a`` by ``sag_ratio`` x half-chord."""
    a_yz = np.asarray(a_yz, dtype=float)
    b_yz = np.asarray(b_yz, dtype=float)
    mid = 0.5 * (a_yz + b_yz)
    half = 0.5 * (b_yz - a_yz)
    right = np.array([half[1], -half[0]])         # rotate half-chord by -90 deg
    cu, su = _arc_basis(n)
    return mid + cu * half + (sag_ratio * su) * right


def half_ellipse_length(a: float, b: float) -> float:
    """Half the perimeter of an ellipse (Ramanujan's second approximation, rel. error < 1e-9 here)."""
    h = ((a - b) / (a + b)) ** 2
    return 0.5 * math.pi * (a + b) * (1.0 + 3.0 * h / (10.0 + math.sqrt(4.0 - 3.0 * h)))


def sag_for_length(chord_m: float, length_m: float) -> float:
    """Sag ratio ``b / a`` of a half-ellipse over ``chord_m`` whose arc length is ``length_m``."""
    if not (length_m > chord_m > 0.0):
        raise ConfigError(f'a loose wire needs length > chord > 0, got length {length_m!r}, chord {chord_m!r}')
    a = 0.5 * chord_m
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if half_ellipse_length(a, mid * a) < length_m:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass
class WireHit:
    """The closest point of one wire to the grapple axis, in the wire plane."""

    wire: int
    distance_m: float          # signed distance from the wire curve to the grapple axis (> 0 on the left)
    normal_yz: np.ndarray      # unit, the wire's left normal at its closest point
    segment: int               # closest segment of the polyline and the parameter on it
    s: float
    u: float = 0.0             # ellipse parameter of the closest point (pi at the first anchor, 0 at the second)


@njit(cache=True, nogil=True)
def _closest_kernel(points, py, pz):
    best = np.inf
    bk = 0
    bt = 0.0
    bx = 0.0
    by = 0.0
    for k in range(points.shape[0] - 1):
        ax, ay = points[k, 0], points[k, 1]
        dx, dy = points[k + 1, 0] - ax, points[k + 1, 1] - ay
        t = ((py - ax) * dx + (pz - ay) * dy) / (dx * dx + dy * dy)
        t = min(max(t, 0.0), 1.0)
        cx, cy = ax + t * dx, ay + t * dy
        d2 = (py - cx) ** 2 + (pz - cy) ** 2
        if d2 < best:
            best, bk, bt, bx, by = d2, k, t, cx, cy
    return math.sqrt(best), bx, by, bk, bt


@njit(cache=True, nogil=True)
def _ellipse_refine(mx, my, hx, hy, rx, ry, px, py, u):
    """Newton on ``(X(u) - p) . X'(u) = 0`` for ``X(u) = m + cos(u) h + sin(u) r``, ``u`` in [0, pi]."""
    ok = True
    for _ in range(5):
        c, s = math.cos(u), math.sin(u)
        ex, ey = mx + c * hx + s * rx - px, my + c * hy + s * ry - py
        dx, dy = -s * hx + c * rx, -s * hy + c * ry
        f = ex * dx + ey * dy
        fp = dx * dx + dy * dy - ex * (c * hx + s * rx) - ey * (c * hy + s * ry)
        if fp <= 0.0:       # beyond the centre of curvature: keep the polyline's answer
            ok = False
            break
        u = min(max(u - f / fp, 0.0), math.pi)
    c, s = math.cos(u), math.sin(u)
    return ok, u, mx + c * hx + s * rx, my + c * hy + s * ry, s * hx - c * rx, s * hy - c * ry


@njit(cache=True, nogil=True)
def closest_on_arc(mx, my, hx, hy, rx, ry, n, px, py):
    """Closest point of the arc ``X(u) = m + cos(u) h + sin(u) r``, ``u`` from pi to 0, to ``p``.

    A global search on the ``n``-point polyline of :func:`elliptic_arc` (the same points),
    refined by :func:`_ellipse_refine` on the exact curve. Returns ``(distance, cx, cy, tx, ty,
    u, k, s)``: the closest point, the tangent in the traversal direction (first anchor to
    second), the ellipse parameter, and the polyline segment and parameter of the coarse search.
    """
    du = math.pi / (n - 1)
    best = np.inf
    bk = 0
    bt = 0.0
    bx = by = btx = bty = 0.0
    ax = mx + math.cos(math.pi) * hx + math.sin(math.pi) * rx
    ay = my + math.cos(math.pi) * hy + math.sin(math.pi) * ry
    for k in range(n - 1):
        u1 = math.pi - (k + 1) * du
        qx = mx + math.cos(u1) * hx + math.sin(u1) * rx
        qy = my + math.cos(u1) * hy + math.sin(u1) * ry
        dx, dy = qx - ax, qy - ay
        t = ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)
        t = min(max(t, 0.0), 1.0)
        cx, cy = ax + t * dx, ay + t * dy
        d2 = (px - cx) ** 2 + (py - cy) ** 2
        if d2 < best:
            best, bk, bt, bx, by, btx, bty = d2, k, t, cx, cy, dx, dy
        ax, ay = qx, qy
    u = math.pi - (bk + bt) * du
    ok, ur, cx, cy, tx, ty = _ellipse_refine(mx, my, hx, hy, rx, ry, px, py, u)
    if ok and tx * tx + ty * ty > 0.0:
        return math.hypot(px - cx, py - cy), cx, cy, tx, ty, ur, bk, bt
    return math.sqrt(best), bx, by, btx, bty, u, bk, bt


def closest_on_polyline(points: np.ndarray, p_yz: np.ndarray):
    """Closest point of a polyline to ``p_yz``: (distance, closest point, segment index, segment parameter).

    Compiled (:func:`_closest_kernel`); :func:`closest_on_polyline_reference` is the same in numpy.
    """
    d, cx, cy, k, t = _closest_kernel(points, float(p_yz[0]), float(p_yz[1]))
    return d, np.array([cx, cy]), k, t


def closest_on_polyline_reference(points: np.ndarray, p_yz: np.ndarray):
    """Numpy reference of :func:`closest_on_polyline`."""
    s0 = points[:-1]
    d = points[1:] - s0
    rel = p_yz - s0
    t = np.clip(np.einsum('ij,ij->i', rel, d) / np.einsum('ij,ij->i', d, d), 0.0, 1.0)
    c = s0 + t[:, None] * d
    diff = p_yz - c
    dist2 = np.einsum('ij,ij->i', diff, diff)
    k = int(np.argmin(dist2))
    return math.sqrt(dist2[k]), c[k], k, t[k]


class WireSet:
    """A set of wire curves in a plane, shaped by a scalar ``theta`` (the snare ring angle) or fixed."""

    n_wires = 0
    x_wire_m = 0.0
    has_drive = False

    def curves(self, theta: float) -> list[np.ndarray]:
        raise NotImplementedError

    def load_kernels(self) -> None:
        """Load the compiled closest-point kernels (Numba's cache) now, with the argument types :meth:`hits` and
        :meth:`inside` pass, not in a node's first contact step (10-60 ms; hil_common.kernel_loads)."""
        closest_on_arc(0.0, 0.0, 1.0, 0.0, 0.0, 1.0, self.n_samples, 0.0, 0.0)
        closest_on_polyline(np.array([[0.0, 0.0], [1.0, 0.0]]), np.zeros(2))

    def curve_rates(self, theta: float, theta_dot: float) -> list[np.ndarray] | None:
        """d(curve points)/dt, or None when the wires do not move."""
        return None

    def hits(self, theta: float, p_yz: np.ndarray, reach_m: float) -> list[WireHit]:
        """Wires whose signed distance to the grapple axis at ``p_yz`` is below ``reach_m``.

        Contact is one-sided: the grapple lives on the left of every wire (traversed from its
        first to its second anchor; inside the LEE's triangle, on the concave side of a loose
        wire). ``distance_m`` is signed (negative once the axis is past the curve), so the
        penetration ``reach - distance`` keeps growing however deep the wire is pushed; the
        normal always points to the left side.
        """
        out = []
        py, pz = float(p_yz[0]), float(p_yz[1])
        for i in range(self.n_wires):
            (mx, my), (hx, hy), (rx, ry) = self.arc(theta, i)
            # the curve lies right of its chord (a -> b = 2 half): a point left of it by > reach cannot touch it
            ax, ay = mx - hx, my - hy
            left = (hx * (pz - ay) - hy * (py - ax)) / math.hypot(hx, hy)
            if left > reach_m:
                continue
            dist, cx, cy, tx, ty, u, k, s = closest_on_arc(mx, my, hx, hy, rx, ry, self.n_samples, py, pz)
            side = tx * (pz - cy) - ty * (py - cx)
            signed = dist if side >= 0.0 else -dist
            if signed >= reach_m:
                continue
            if dist > 1e-12:
                n = np.array([(py - cx) / signed, (pz - cy) / signed])
            else:  # axis exactly on the wire: its left normal
                n = np.array([-ty, tx]) / math.hypot(tx, ty)
            out.append(WireHit(i, signed, n, k, s, u))
        return out

    def arc(self, theta: float, i: int):
        """``(mid, half, sag x right)`` of wire ``i``: ``X(u) = mid + cos(u) half + sin(u) sag right``."""
        raise NotImplementedError

    def wire_velocity(self, theta: float, theta_dot: float, hit: WireHit) -> np.ndarray:
        """Velocity of the wire's point closest to the grapple, from the ring's rotation."""
        rates = self.curve_rates(theta, theta_dot)
        if rates is None:
            return np.zeros(2)
        r = rates[hit.wire]
        return (1.0 - hit.s) * r[hit.segment] + hit.s * r[hit.segment + 1]

    def inside(self, theta: float, p_yz) -> bool:
        """Is ``p_yz`` on the left of every wire (traversed fixed anchor -> moving anchor)?"""
        p_yz = np.asarray(p_yz, dtype=float)
        for pts in self.curves(theta):
            dist, c, k, s = closest_on_polyline(pts, p_yz)
            seg = pts[k + 1] - pts[k]
            side = seg[0] * (p_yz[1] - c[1]) - seg[1] * (p_yz[0] - c[0])
            if side < 0.0 and dist > 0.0:
                return False
        return True


class LeeSnare(WireSet):
    """The LEE's three snare wires (seed 000 §2 and Table 3) and their drive.

    The drive turns the ring at ``(final - initial) / tightening_time`` until the final angle;
    it is a motor with a linear torque-speed droop: the rate falls to zero as the wires' total
    normal force reaches ``stall_force_n`` (a closed snare stalls its drive; the seed does not
    model this, docs/snare.md states the value).
    """

    n_wires = 3
    has_drive = True

    def __init__(self, ring_radius_m: float = 0.17, sag_ratio: float = 0.15, initial_angle_deg: float = 130.0,
                 final_angle_deg: float = 200.0, tightening_time_s: float = 5.0, x_wire_m: float = -0.60,
                 n_samples: int = 25, stall_force_n: float = 500.0):
        if not (ring_radius_m > 0.0 and math.isfinite(ring_radius_m)):
            raise ConfigError(f'ring_radius_m must be > 0, got {ring_radius_m!r}')
        if not (0.0 <= sag_ratio < 1.0):
            raise ConfigError(f'sag_ratio must be in [0, 1), got {sag_ratio!r}')
        if not (tightening_time_s > 0.0 and math.isfinite(tightening_time_s)):
            raise ConfigError(f'tightening_time_s must be > 0, got {tightening_time_s!r}')
        if not (0.0 < initial_angle_deg <= final_angle_deg < 360.0):
            raise ConfigError(f'wire angles must satisfy 0 < initial <= final < 360 deg, got '
                             f'{initial_angle_deg!r} -> {final_angle_deg!r}')
        if not (stall_force_n > 0.0):
            raise ConfigError(f'stall_force_n must be > 0, got {stall_force_n!r}')
        if n_samples < 3:
            raise ConfigError(f'n_samples must be >= 3, got {n_samples!r}')
        self.ring_radius_m = ring_radius_m
        self.sag_ratio = sag_ratio
        self.theta0 = initial_angle_deg * DEG
        self.theta1 = final_angle_deg * DEG
        self.tightening_time_s = tightening_time_s
        self.stall_force_n = stall_force_n
        self.x_wire_m = x_wire_m
        self.n_samples = n_samples
        self.phi = np.array([90.0, 210.0, 330.0]) * DEG
        self._cache_theta = None
        self.load_kernels()

    def arc(self, theta: float, i: int):
        r = self.ring_radius_m
        phi = self.phi[i]
        a = (r * math.cos(phi), r * math.sin(phi))
        b = (r * math.cos(phi + theta), r * math.sin(phi + theta))
        half = (0.5 * (b[0] - a[0]), 0.5 * (b[1] - a[1]))
        return ((0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1])), half,
                (self.sag_ratio * half[1], -self.sag_ratio * half[0]))

    def nominal_rate(self) -> float:
        return (self.theta1 - self.theta0) / self.tightening_time_s

    def drive_rate(self, theta: float, total_normal_force_n: float) -> float:
        if theta >= self.theta1:
            return 0.0
        return self.nominal_rate() * min(1.0, max(0.0, 1.0 - total_normal_force_n / self.stall_force_n))

    def curves(self, theta: float) -> list[np.ndarray]:
        if self._cache_theta != theta:
            r = self.ring_radius_m
            out = []
            for phi in self.phi:
                a = r * np.array([math.cos(phi), math.sin(phi)])
                b = r * np.array([math.cos(phi + theta), math.sin(phi + theta)])
                out.append(elliptic_arc(a, b, self.sag_ratio, self.n_samples))
            self._cache = out
            self._cache_theta = theta
        return self._cache

    def curve_rates(self, theta: float, theta_dot: float):
        if theta_dot == 0.0:
            return None
        cu, su = _arc_basis(self.n_samples)
        out = []
        for phi in self.phi:
            # only the moving anchor b moves: d mid = d half = b'/2, d right = rot(-90) b'/2
            db = self.ring_radius_m * theta_dot * np.array([-math.sin(phi + theta), math.cos(phi + theta)])
            out.append(0.5 * (1.0 + cu) * db + (0.5 * self.sag_ratio * su) * np.array([db[1], -db[0]]))
        return out

    def wire_velocity(self, theta: float, theta_dot: float, hit: WireHit) -> np.ndarray:
        if theta_dot == 0.0:
            return np.zeros(2)
        phi = self.phi[hit.wire]
        db = self.ring_radius_m * theta_dot * np.array([-math.sin(phi + theta), math.cos(phi + theta)])
        c, sn = math.cos(hit.u), math.sin(hit.u)
        return 0.5 * (1.0 + c) * db + 0.5 * self.sag_ratio * sn * np.array([db[1], -db[0]])

    def chord_offset_m(self, theta: float) -> float:
        """Distance of each chord from the LEE axis, ``R cos(theta/2)`` (negative once past the axis)."""
        return self.ring_radius_m * math.cos(0.5 * theta)


class SingleWire(WireSet):
    """One loose wire with fixed anchors (seed 002 §4.3 experiment, §5 JEMRMS LEE)."""

    n_wires = 1

    def __init__(self, anchor_a_yz, anchor_b_yz, length_m: float, x_wire_m: float = 0.0, n_samples: int = 41):
        a = np.asarray(anchor_a_yz, dtype=float)
        b = np.asarray(anchor_b_yz, dtype=float)
        chord = float(np.linalg.norm(b - a))
        self.sag_ratio = sag_for_length(chord, length_m)
        self.length_m = length_m
        self.chord_m = chord
        self.x_wire_m = x_wire_m
        self.n_samples = n_samples
        self._curves = [elliptic_arc(a, b, self.sag_ratio, n_samples)]
        half = 0.5 * (b - a)
        self._arc = (tuple(0.5 * (a + b)), tuple(half), (self.sag_ratio * half[1], -self.sag_ratio * half[0]))
        self.load_kernels()

    def arc(self, theta: float, i: int):
        return self._arc

    def curves(self, theta: float) -> list[np.ndarray]:
        return self._curves

    def max_deflection_m(self) -> float:
        """Seed 002 §4.1's ``Q``: the midpoint deflection at which the wire becomes taut (length L)."""
        return math.sqrt((0.5 * self.length_m) ** 2 - (0.5 * self.chord_m) ** 2) - 0.5 * self.chord_m * self.sag_ratio
