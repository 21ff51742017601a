"""Snare scenarios (``src/hil_snare/scenarios/*.yaml``), validated with errors that name the field.

:func:`load_snare_scenario` reads one with :class:`hil_common.fields.Fields` into a
:class:`SnareScenario` whose :meth:`~SnareScenario.build` returns the lockstep system. Every rule
object is built while loading, so a bad value (negative stiffness or friction, zero tightening
time, a joint band table that does not increase, a grapple outside the LEE when the scenario
says inside) stops the load with a :class:`hil_common.fields.ScenarioError` naming the field,
and no run starts. Plain Python, no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hil_common.fields import Fields, ScenarioError
from hil_snare.contact import LOOSE_WIRE_TABLE4, LooseWireLaw, SnareWireLaw
from hil_snare.joints import DEG, BandedJoint, SsrmsGearbox
from hil_snare.runner import (ContactExperimentConfig, HtvCaptureConfig, JemrmsCaptureConfig,
                              build_contact_experiment, build_htv_capture, build_jemrms_capture)

KINDS = ('htv_capture', 'jemrms_capture', 'contact_experiment')


def scenario_path(name: str) -> Path:
    """A scenario shipped with hil_snare (``htv_capture`` -> .../scenarios/htv_capture.yaml)."""
    from hil_common.fields import shipped_file

    return shipped_file('hil_snare', 'scenarios', name, Path(__file__).resolve().parents[1], 'snare scenario')


def _rule(fields: Fields, make, names):
    """Build a rule object; a ValueError naming one of ``names`` becomes a ScenarioError on that field."""
    try:
        return make()
    except ValueError as exc:
        msg = str(exc)
        for name in names:
            if name in msg:
                raise fields.error(name, msg) from exc
        raise fields.error(names[0], msg) from exc


def _nonneg(f: Fields, key, default=None):
    return f.number(key, default, min=0.0)


def _wire_law(w: Fields):
    kind = w.string('law', choices=('snare', 'loose'))
    if kind == 'snare':
        return SnareWireLaw(alpha_n=_nonneg(w, 'alpha_n'), beta_per_m=_nonneg(w, 'beta_per_m'),
                            gamma_n_per_m=_nonneg(w, 'gamma_n_per_m'), c_kg_per_sm2=_nonneg(w, 'c_kg_per_sm2'),
                            mu=_nonneg(w, 'mu'))
    s_mm = int(w.number('contact_position_mm', 90))
    if s_mm not in LOOSE_WIRE_TABLE4:
        raise w.error('contact_position_mm', f'must be one of {sorted(LOOSE_WIRE_TABLE4)} (seed 002 Table 4), got {s_mm}')
    return LooseWireLaw.at_position(s_mm, c_ns_per_m=_nonneg(w, 'c_ns_per_m'), mu=_nonneg(w, 'mu'))


def _bands(a: Fields) -> BandedJoint:
    b = a.section('joint_bands')
    edges = b.data.get('edges_deg')
    if not isinstance(edges, list) or not edges:
        raise b.error('edges_deg', f'expected a non-empty list of band edges, got {edges!r}')
    edges = b.vector('edges_deg', len(edges))
    if any(e <= 0.0 for e in edges) or any(y <= x for x, y in zip(edges, edges[1:])):
        raise b.error('edges_deg', f'band edges must be > 0 and strictly increasing, got {edges}')
    n = len(edges) + 1
    k = b.vector('stiffness_nm_per_deg', n)
    d = b.vector('viscosity_nms_per_deg', n)
    if any(v <= 0.0 for v in k):
        raise b.error('stiffness_nm_per_deg', f'every band needs a stiffness > 0, got {k}')
    if any(v < 0.0 for v in d):
        raise b.error('viscosity_nms_per_deg', f'viscosities must be >= 0, got {d}')
    return BandedJoint(np.array(edges) * DEG, np.array(k) / DEG, np.array(d) / DEG)


@dataclass
class SnareScenario:
    name: str
    kind: str
    config: object
    dt_s: float
    duration_s: float
    control_period_s: float
    source: Path | None = None        # the YAML it was read from

    def build(self):
        """``(system, controller, poses, x)`` for the lockstep runner."""
        build = {'htv_capture': build_htv_capture, 'jemrms_capture': build_jemrms_capture,
                 'contact_experiment': build_contact_experiment}[self.kind]
        return build(self.config)


def load_snare_scenario(path_or_name) -> SnareScenario:
    path = Path(path_or_name)
    if not path.suffix:
        path = scenario_path(str(path_or_name))
    f = Fields.load(path)
    kind = f.string('kind', choices=KINDS)
    run = f.section('run')
    dt = run.number('dt_s', positive=True, max=0.01)
    duration = run.number('duration_s', positive=True)
    period = dt
    init = f.section('initial_state')
    w = f.section('wires')
    law = _wire_law(w)
    if kind == 'htv_capture':
        a = f.section('arm')
        a.string('model', choices=('ssrms',))
        g = a.section('gearbox')
        gearbox = _rule(g, lambda: SsrmsGearbox(g.number('k_g_nm_per_rad'), g.number('delta_rad'), g.number('tau_delta_nm')),
                        ['k_g_nm_per_rad', 'delta_rad', 'tau_delta_nm'])
        c = f.section('control')
        period = c.number('period_s', positive=True)
        cfg = HtvCaptureConfig(
            joints_deg=tuple(init.vector('joints_deg', 7)), rel_position_m=tuple(init.vector('rel_position_m', 3)),
            rel_velocity_mps=tuple(init.vector('rel_velocity_mps', 3)),
            rel_attitude_deg=tuple(init.vector('rel_attitude_deg', 3)),
            lee_velocity_mps=tuple(init.vector('lee_velocity_mps', 3, default=[0.0, 0.0, 0.0])),
            grapple_in_corner=bool(init.data.get('grapple_in_corner', False)), law=law, gearbox=gearbox,
            motor_inertia_kgm2=a.number('motor_izz_kgm2', positive=True) * a.number('gear_ratio', positive=True) ** 2,
            motor_damping_nms_per_rad=_nonneg(a, 'motor_damping_nms_per_rad'),
            kp=_nonneg(c, 'kp_nm_per_rad'), kd=_nonneg(c, 'kd_nms_per_rad'),
            ring_radius_m=w.number('ring_radius_m', positive=True), sag_ratio=w.number('sag_ratio', min=0.0, max=0.9),
            x_wire_m=w.number('x_wire_m'), initial_angle_deg=w.number('initial_angle_deg', positive=True),
            final_angle_deg=w.number('final_angle_deg', positive=True, max=359.0),
            tightening_time_s=w.number('tightening_time_s', positive=True),
            stall_force_n=w.number('stall_force_n', 500.0, positive=True),
            dt_s=dt, control_period_s=period, duration_s=duration,
            require_inside=bool(init.data.get('grapple_inside_lee', True)))
        if cfg.final_angle_deg < cfg.initial_angle_deg:
            raise w.error('final_angle_deg', f'must be >= initial_angle_deg ({cfg.initial_angle_deg}), got {cfg.final_angle_deg}')
    elif kind == 'jemrms_capture':
        a = f.section('arm')
        a.string('model', choices=('jemrms',))
        c = f.section('control')
        period = c.number('period_s', positive=True)
        cfg = JemrmsCaptureConfig(speed_mps=init.number('speed_mps', positive=True),
                                  joints_deg=tuple(init.vector('joints_deg', 6)),
                                  motor_inertia_kgm2=a.number('motor_inertia_kgm2', positive=True),
                                  motor_damping_nms_per_rad=_nonneg(a, 'motor_damping_nms_per_rad'),
                                  kp=_nonneg(c, 'kp_nm_per_rad'), kd=_nonneg(c, 'kd_nms_per_rad'), law=law,
                                  joint_law=_bands(a), dt_s=dt, control_period_s=period, duration_s=duration)
    else:
        cfg = ContactExperimentConfig(speed_mps=init.number('speed_mps', positive=True),
                                      probe_offset_m=init.number('probe_offset_m', 0.03), law=law, dt_s=dt,
                                      duration_s=duration)
    scenario = SnareScenario(f.string('name', path.stem), kind, cfg, dt, duration, period, path)
    if kind == 'htv_capture':
        # the initial-state checks (grapple inside the LEE) run here, before any run can start
        try:
            scenario.build()
        except ScenarioError as exc:
            raise ScenarioError(f'{path}: {exc}') from exc
    return scenario
