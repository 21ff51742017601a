"""One interface over the lockstep runners: ``run(scenario, overrides, seed) -> metrics``.

Campaigns call every runner the same way (issue 14; issue 16 item 2's "scenario in,
record and metrics out"). The runners themselves are in :mod:`hil_bringup.runners` (its
docstring lists them), or in their mission package when that package depends on hil_bringup
(``hil_snare.runner``; ``hil_docking.mission``, ``hil_docking.designer``); the adapters here
load the scenario with the overrides applied (:mod:`hil_campaign.overrides`, validated by the
scenario's own loader), run, and reduce the run to a flat dict of numbers and booleans;
``run_with_record`` also returns the wrapped runner's record.
``runner.*`` overrides are the adapter's own knobs (:class:`Option`).

================================  ============================================================
name                              what runs
================================  ============================================================
``envisat_hil``                   :class:`hil_bringup.runners.mission.HilMission` (seed 004 Fig. 7, ideal
                                  robots) with F/T noise and command delay
                                  (:class:`hil_campaign.envisat.ImperfectLabMission`)
``envisat_absolute``              :class:`hil_bringup.runners.mission.AbsoluteMission`, the reference
``envisat_twin_unforced``         :func:`hil_bringup.runners.twin_validation.run_unforced_validation`
                                  (seed 004 Figs. 8-9 with the MuJoCo twin in the loop)
``teleop``                        :func:`hil_bringup.runners.teleop.run_teleop` (seed 001 HILS 2)
``teleop_twin``                   :func:`hil_bringup.runners.teleop_twin.run_teleop_twin` (the same, MuJoCo
                                  lab twin in the loop)
``snare_capture``                 :func:`hil_snare.runner.run` on an HTV-capture scenario (seed 000 runs 3-4),
                                  judged by :func:`hil_snare.runner.capture_outcome`
``docking_min_mass``              :func:`hil_docking.designer.m_min_simulated` (the exact-delay loop in time,
                                  seed 003 Eq. 24) beside the designer's bounds (exact margin, Eq. 29)
``client_unforced``               the client alone, Eq. (2) torque-free (a cheap real runner for
                                  engine tests and the overhead benchmark)
================================  ============================================================

Plain Python, no rclpy.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import yaml

from hil_campaign.overrides import Option, OverrideError, load_with_overrides, resolve_options, split_overrides
from hil_common.fields import ScenarioError

from hil_common.errors import SimulationFailed


@dataclass(frozen=True)
class ScenarioSource:
    """A scenario's raw YAML mapping and where it came from (shipped to workers as data, so a
    cluster's workers need not see the campaign's files)."""

    source: str
    data: dict

    @classmethod
    def resolve(cls, name_or_path: str | Path, relative_to: Path | None = None,
                find: Callable[[str], Path] | None = None) -> 'ScenarioSource':
        """A path (absolute, or relative to ``relative_to`` then the working directory) or the name of
        a shipped scenario, looked up by ``find`` (default: hil_bringup's, ``envisat_capture``; a
        runner passes its own :meth:`Runner.scenario_path`)."""
        if find is None:
            from hil_bringup.scenario import scenario_path as find

        text = str(name_or_path)
        if Path(text).suffix in ('.yaml', '.yml'):
            candidates = [Path(text)] if Path(text).is_absolute() else \
                ([relative_to / text] if relative_to is not None else []) + [Path(text)]
            path = next((p for p in candidates if p.is_file()), None)
            if path is None:
                raise ScenarioError(f"scenario file '{text}' not found (looked in: {', '.join(map(str, candidates))})")
        else:
            path = find(text)
            if not Path(path).is_file():
                raise ScenarioError(f"scenario '{text}' not found (looked for {path})")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ScenarioError(f'{path}: not valid YAML ({exc})') from exc
        if not isinstance(data, dict):
            raise ScenarioError(f'{path}: a scenario must be a mapping')
        return cls(text if path.suffix != Path(text).suffix else str(path), data)


def load_envisat(path: Path):
    """``hil_bringup.scenario.load_scenario`` (imported when a run needs it)."""
    from hil_bringup.scenario import load_scenario

    return load_scenario(path)


def load_teleop(path: Path):
    """``hil_teleop.scenario.load_teleop_scenario`` (imported when a run needs it)."""
    from hil_teleop.scenario import load_teleop_scenario

    return load_teleop_scenario(path)


class Runner:
    """Base of the adapters: validate overrides and options, load the scenario, simulate."""

    name = ''
    default_scenario = ''
    description = ''
    options: tuple[Option, ...] = ()
    metrics: Mapping[str, str] = {}

    def loader(self, path: Path):
        raise NotImplementedError

    def scenario_path(self, name: str) -> Path:
        """The file of a scenario shipped under ``name`` (default: hil_bringup's scenarios)."""
        from hil_bringup.scenario import scenario_path

        return scenario_path(name)

    def derived_overrides(self, raw: Mapping[str, Any], options: dict) -> dict:
        """Scenario overrides computed from options (e.g. a tumble rate into the twist)."""
        return {}

    def simulate(self, scenario, options: dict, seed: int) -> tuple[dict, Any]:
        """``(metrics, record)`` of one run of the loaded scenario."""
        raise NotImplementedError

    def prepare(self, scenario: ScenarioSource | str | Path, overrides: Mapping[str, Any]):
        """``(loaded scenario, options)``: every error names the override or the field."""
        source = scenario if isinstance(scenario, ScenarioSource) else \
            ScenarioSource.resolve(scenario, find=self.scenario_path)
        fields, given = split_overrides(dict(overrides))
        options = resolve_options(self.options, given, self.name)
        derived = self.derived_overrides(source.data, options)
        clash = sorted(set(derived) & set(fields))
        if clash:
            raise OverrideError(f"override '{clash[0]}' is also set by this runner's options; give one of them")
        return load_with_overrides(self.loader, source.data, source.source, {**fields, **derived}), options

    def run(self, scenario: ScenarioSource | str | Path, overrides: Mapping[str, Any] | None = None,
            seed: int = 0) -> dict:
        """Run once; a flat dict of this runner's metrics (numbers, booleans)."""
        return self.run_with_record(scenario, overrides, seed)[0]

    def run_with_record(self, scenario: ScenarioSource | str | Path, overrides: Mapping[str, Any] | None = None,
                        seed: int = 0) -> tuple[dict, Any]:
        """Run once; ``(metrics, record)``, the record being the wrapped runner's own
        (``MissionRecord``, ``TeleopRun``, the twin validation's dict of records)."""
        loaded, options = self.prepare(scenario, overrides or {})
        out, record = self.simulate(loaded, options, int(seed))
        missing = sorted(set(self.metrics) - set(out))
        if missing:
            raise SimulationFailed(f'runner {self.name!r} did not produce the metrics {missing}')
        return {k: out[k] for k in self.metrics}, record


# -- Envisat ---------------------------------------------------------------------------------------
_TUMBLE_OPTIONS = (
    Option('tumble_rate_deg_s', None, "client spin rate about the scenario's spin axis oriented to its largest "
           "positive component (Envisat: body +y; -2.5 is seed 004's spin) (default: the scenario's)",
           min=-20.0, max=20.0),
    Option('tumble_axis_tilt_deg', 0.0, "tilt of the spin axis about client x from the scenario's axis",
           min=-90.0, max=90.0),
    Option('record_every_s', 0.05, 'record decimation', min=0.001, max=10.0),
)

_CAPTURE_METRICS = {
    'capture_success': 'gripper latched and stayed latched',
    'grasp_time_s': 'latch time [s] (NaN: no grasp)',
    'peak_contact_force_n': 'peak contact force on the tool [N]',
    'peak_contact_torque_nm': 'peak contact torque on the tool [N m]',
    'momentum_error_linear': 'largest relative change of the linear momentum after the grasp',
    'momentum_error_angular': 'largest relative change of the angular momentum after the grasp',
    'settle_time_s': 'relative velocity settled (1 mm/s, 0.05 deg/s) after the grasp [s]',
    'final_relative_speed_mm_s': 'servicer speed relative to the client at the end [mm/s]',
    'final_relative_rate_deg_s': 'servicer rate relative to the client at the end [deg/s]',
    'max_thrust_n': 'largest thruster force component [N]',
    'max_joint_torque_nm': 'largest arm joint torque [N m]',
    'client_table_exit_s': "client table command leaves its workspace box [s] (NaN: never)",
    'diverged_at_s': 'the run stopped as unstable at this time [s] (NaN: it did not)',
}


class _EnvisatRunner(Runner):
    default_scenario = 'envisat_capture'

    loader = staticmethod(load_envisat)

    def derived_overrides(self, raw, options):
        from hil_campaign.envisat import tumble_twist

        if options['tumble_rate_deg_s'] is None and options['tumble_axis_tilt_deg'] == 0.0:
            return {}
        twist = (raw.get('client') or {}).get('twist_client_body_0')
        if not isinstance(twist, list) or len(twist) != 6:
            raise OverrideError("override 'runner.tumble_rate_deg_s': the scenario's client.twist_client_body_0 "
                                'is not a list of 6 numbers')
        return {'client.twist_client_body_0': tumble_twist(twist, options['tumble_rate_deg_s'],
                                                           options['tumble_axis_tilt_deg'])}


class EnvisatHilRunner(_EnvisatRunner):
    name = 'envisat_hil'
    description = 'Envisat capture, HIL loop with ideal robots (seed 004 Fig. 7), F/T noise and command delay'
    options = _TUMBLE_OPTIONS + (
        Option('ft_noise_force_n', 0.0, 'F/T noise, standard deviation per force axis [N]', min=0.0, max=100.0),
        Option('ft_noise_torque_nm', 0.0, 'F/T noise, standard deviation per torque axis [N m]', min=0.0, max=100.0),
        Option('command_delay_s', 0.0, 'robot command transport delay [s] (rounded to admittance periods)',
               min=0.0, max=1.0),
        Option('divergence_force_n', 1e4, 'contact force or torque [N, N m] beyond which the run is stopped as unstable',
               min=1.0),
    )
    metrics = _CAPTURE_METRICS

    def simulate(self, scenario, options, seed):
        from hil_campaign.envisat import Diverged, ImperfectLabMission, capture_metrics

        mission = ImperfectLabMission(scenario, options['ft_noise_force_n'], options['ft_noise_torque_nm'],
                                      options['command_delay_s'], seed, options['divergence_force_n'])
        try:
            rec = mission.run(scenario.mission['duration_s'], options['record_every_s'])
            diverged = None
        except Diverged as stop:
            rec, diverged = mission.record.finish(), stop.t
        return capture_metrics(mission, rec, mission.peak_contact_force_n, mission.peak_contact_torque_nm, diverged), rec


class EnvisatAbsoluteRunner(_EnvisatRunner):
    name = 'envisat_absolute'
    description = 'Envisat capture, absolute reference ("GNCDE"): free-floating servicer and client in orbit'
    options = _TUMBLE_OPTIONS
    metrics = _CAPTURE_METRICS

    def simulate(self, scenario, options, seed):
        from hil_bringup.runners.mission import AbsoluteMission
        from hil_campaign.envisat import capture_metrics

        mission = AbsoluteMission(scenario)
        rec = mission.run(scenario.mission['duration_s'], options['record_every_s'])
        return capture_metrics(mission, rec), rec


class EnvisatTwinUnforcedRunner(_EnvisatRunner):
    name = 'envisat_twin_unforced'
    description = 'unforced validation with the MuJoCo lab twin in the loop against the absolute reference (seed 004 Figs. 8-9)'
    options = (
        Option('duration_s', None, "run length [s] (default: the scenario's unforced_validation.duration_s)",
               min=0.01, max=3600.0),
        Option('delay_compensation', True, "the motion tables' predictor of the robots' response delay"),
        Option('record_every_s', 0.1, 'record decimation', min=0.001, max=10.0),
    )
    metrics = {
        'measured_position_error_m': 'max |relative position measured on the robots - reference| [m]',
        'measured_angle_error_rad': 'max relative attitude error, measured on the robots [rad]',
        'integrated_position_error_m': 'idem from the admittances\' Eq. (23) states [m]',
        'integrated_angle_error_rad': 'idem [rad]',
        'relative_motion_range_m': 'largest range of the reference relative position over the run [m]',
        'table_faults': 'motion-table faults counted over the run',
    }

    def derived_overrides(self, raw, options):
        return {}

    def simulate(self, scenario, options, seed):
        import dataclasses

        from hil_bringup.runners.twin_validation import (run_unforced_validation, validation_scenario,
                                                         validation_twin_config)

        # The twin's F/T noise is seeded per run (sensor i: seed + i).
        config = validation_twin_config(validation_scenario(scenario))
        robots = tuple(dataclasses.replace(r, ft=dataclasses.replace(r.ft, seed=seed + 1 + i)) if r.ft is not None else r
                       for i, r in enumerate(config.robots))
        arm = dataclasses.replace(config.arm, wrist_ft=dataclasses.replace(config.arm.wrist_ft, seed=seed))
        out = run_unforced_validation(scenario, options['duration_s'], options['record_every_s'],
                                      twin_config=dataclasses.replace(config, robots=robots, arm=arm),
                                      delay_compensation=options['delay_compensation'])
        m, i = out['measured_vs_reference'], out['integrated_vs_reference']
        return {'measured_position_error_m': m['max_position_error_m'], 'measured_angle_error_rad': m['max_angle_error_rad'],
                'integrated_position_error_m': i['max_position_error_m'], 'integrated_angle_error_rad': i['max_angle_error_rad'],
                'relative_motion_range_m': float(max(out['relative_motion_range_m'])),
                'table_faults': float(sum(sum(c.values()) for c in out['table_faults'].values()))}, out


# -- teleop (seed 001) -----------------------------------------------------------------------------
class TeleopRunner(Runner):
    name = 'teleop'
    default_scenario = 'massive_payload_teleop'
    description = 'delayed teleoperation of a massive payload, HILS 2 with the scripted operator (seed 001)'
    options = (Option('duration_s', None, "run length [s] (default: the scenario's, last pull + delay + settle)",
                      min=0.01, max=3600.0),)
    metrics = {
        'alignment_error_m': 'max |x_vir(t - delay) - x_s(t)| along the pulls (seed 001 Figs. 16-17) [m]',
        'mean_abs_force_slave_n': 'mean |f_s,x| [N]',
        'mean_abs_force_virtual_n': 'mean |f_vir,x| [N]',
        'force_mse_n2': 'Eq. (11): mean ||f_s||^2 [N^2]',
        'stale_fraction': 'fraction of steps the slave saw a stale command',
        'payload_travel_m': 'payload displacement along x at the end [m]',
    }

    loader = staticmethod(load_teleop)

    def _run(self, config, operator, duration_s):
        from hil_bringup.runners.teleop import run_teleop

        return run_teleop(config, operator, duration_s)

    def simulate(self, scenario, options, seed):
        import dataclasses

        from hil_teleop.config import mse
        from hil_bringup.runners.teleop_experiments import hils2_agreement

        config = dataclasses.replace(scenario.config, seed=seed)
        duration = options['duration_s'] if options['duration_s'] is not None else scenario.duration_s()
        if duration <= config.delay_s:
            raise OverrideError(f"override 'runner.duration_s': {duration} s must exceed the delay ({config.delay_s} s) "
                                'to compare the virtual arm with the slave')
        run = self._run(config, scenario.operator(), duration)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', RuntimeWarning)     # pull windows beyond a short run are empty
            agreement = hils2_agreement(run)
        return {'alignment_error_m': agreement.max_position_error_m,
                'mean_abs_force_slave_n': agreement.mean_abs_force_slave_n,
                'mean_abs_force_virtual_n': agreement.mean_abs_force_virtual_n,
                'force_mse_n2': mse(run.f_s[:, :3]), 'stale_fraction': float(np.mean(run.stale)),
                'payload_travel_m': float(run.x_payload[-1, 0] - run.x_payload[0, 0])}, run


class TeleopTwinRunner(TeleopRunner):
    name = 'teleop_twin'
    description = ('delayed teleoperation, HILS 2, with the MuJoCo lab twin in the loop (KR 120 slave, UR10e payload '
                   'table, F/T sensors; hil_bringup.runners.teleop_twin, seed 001)')

    def _run(self, config, operator, duration_s):
        from hil_bringup.runners.teleop_twin import run_teleop_twin

        return run_teleop_twin(config, operator, duration_s)


# -- snare-wire capture (seed 000) ----------------------------------------------------------------
def load_snare(path: Path):
    """``hil_snare.scenario.load_snare_scenario`` (imported when a run needs it)."""
    from hil_snare.scenario import load_snare_scenario

    return load_snare_scenario(path)


class SnareCaptureRunner(Runner):
    name = 'snare_capture'
    default_scenario = 'htv_case_study'
    description = ('SSRMS snare-wire capture of the HTV, lockstep (seed 000 runs 3-4, hil_snare.runner.run), '
                   'judged by hil_snare.runner.capture_outcome; deterministic (the seed is not used)')
    options = (
        Option('record_every_s', None, 'trace decimation [s] (default: every step, so the peak wire force is '
               "that of every step); capture is judged on the trace", min=1e-4, max=1.0),
        Option('settle_s', 1.0, 'capture criterion: window at the end of the run [s]', min=0.01, max=100.0),
        Option('speed_tol_mps', 0.005, 'capture criterion: largest GF speed relative to the LEE in the window [m/s]',
               min=1e-6, max=1.0),
    )
    metrics = {
        'captured': 'seed 000 §6.1 criterion (capture_outcome): GF in the wire plane throughout, pinched within '
                    'two GF radii of the LEE axis and slower than speed_tol_mps relative to the LEE at the end',
        'left_wire_plane': 'the GF shaft left the wire plane (escaped the snare)',
        'tail_rel_speed_mps': 'largest GF speed relative to the LEE over the settle window [m/s] (NaN: it left)',
        'tail_dist_to_axis_m': 'largest GF distance from the LEE axis over the settle window [m] (NaN: it left)',
        'peak_wire_force_n': 'largest normal force of one wire over the run, at the recorded samples [N]',
        'first_contact_s': 'first wire contact [s] (NaN: none)',
        'final_wire_force_n': 'sum of the wires\' normal forces at the end [N]',
    }

    loader = staticmethod(load_snare)

    def scenario_path(self, name: str) -> Path:
        from hil_snare.scenario import scenario_path

        return scenario_path(name)

    def simulate(self, scenario, options, seed):
        from hil_snare.runner import capture_outcome, run

        if scenario.kind != 'htv_capture':
            raise OverrideError(f"runner 'snare_capture' judges seed 000's HTV capture (kind htv_capture); "
                                f"the scenario is of kind {scenario.kind!r}")
        system, ctrl, poses, x = scenario.build()
        every = 1 if options['record_every_s'] is None else max(1, round(options['record_every_s'] / scenario.dt_s))
        trace, _, _ = run(system, ctrl, poses, x, scenario.duration_s, scenario.dt_s, scenario.control_period_s,
                          record_every=every)
        outcome = capture_outcome(system, trace, options['settle_s'], options['speed_tol_mps'])
        a = trace.arrays()
        force = a['normal_force_n']
        touched = np.flatnonzero(force.sum(axis=1) > 0.0)
        left = not np.all(np.isfinite(a['rel_position_m']))
        return {'captured': bool(outcome.captured), 'left_wire_plane': bool(left),
                'tail_rel_speed_mps': float(outcome.rel_speed_mps),
                'tail_dist_to_axis_m': float(outcome.min_dist_to_axis_m),     # capture_outcome's max over the window
                'peak_wire_force_n': float(force.max()),
                'first_contact_s': float(a['t'][touched[0]]) if touched.size else float('nan'),
                'final_wire_force_n': float(force[-1].sum())}, trace


# -- docking delay-stability boundary (seed 003) ---------------------------------------------------
def load_docking(path: Path):
    """``hil_docking.scenario.load_docking_scenario`` (imported when a run needs it)."""
    from hil_docking.scenario import load_docking_scenario

    return load_docking_scenario(path)


class DockingMinMassRunner(Runner):
    name = 'docking_min_mass'
    default_scenario = 'cisas_docking'
    description = ("minimum stable simulated mass of the facility's contact loop m s^2 + (b s + k) e^{-s Delta} = 0 "
                   '(seed 003 Eq. 24 before Pade) for the scenario\'s contact k, b and loop delay Delta: the '
                   'time-domain boundary (hil_docking.designer.m_min_simulated) beside the designer\'s bounds; '
                   'deterministic (the seed is not used)')
    options = (
        Option('servo_lag_s', 0.0, "robot first-order servo lag tau in the loop [s] (beyond the seed; "
               "hil_docking.designer's lag_s)", min=0.0, max=1.0),
        Option('rel_tol', 0.01, 'width of the simulated bracket, relative', min=1e-4, max=0.5),
        Option('agreement_tol', 0.02, 'designer_agrees: largest |m_min_exact / m_min_simulated - 1|', min=0.0, max=1.0),
        Option('beyond_bound_probes', 6.0, 'where Delta + tau >= b/k: masses simulated (geometric, Eq. (29) '
               'scale b (Delta + tau) / 2 up to 100 times it) to confirm that none is stable', min=2.0, max=24.0),
    )
    metrics = {
        'stable_mass_exists': 'Delta + tau < b/k (hil_docking.designer.delay_bound_s): some mass is stable',
        'delay_bound_s': 'b/k [s]: no mass is stable at or above this delay (plus lag)',
        'm_min_simulated_kg': 'time-domain boundary, exact delay (upper, stable end of the bracket) [kg] '
                              '(NaN: no stable mass; beyond the bound, the smallest probe found stable)',
        'm_min_exact_kg': 'designer: exact delay margin (closed-form crossover), bisected [kg] (NaN: none)',
        'm_min_pade1_kg': 'designer: seed 003 Eq. (29), first-order Pade, at Delta + tau [kg] (NaN: none)',
        'exact_over_simulated': 'm_min_exact_kg / m_min_simulated_kg',
        'pade1_over_simulated': 'm_min_pade1_kg / m_min_simulated_kg (< 1: Eq. (29) is optimistic)',
        'designer_agrees': 'the exact bound is within agreement_tol of the simulated one, or neither finds a '
                           'stable mass (beyond the bound every probe grows)',
        'beyond_bound_max_growth_min': 'beyond the bound: the smallest envelope growth among the probes '
                                       '(> 1: all unstable) (NaN within the bound)',
        'loop_delay_s': 'Delta [s]', 'stiffness_n_m': 'k [N/m]', 'damping_ns_m': 'b [N s/m]',
    }

    loader = staticmethod(load_docking)

    def scenario_path(self, name: str) -> Path:
        from hil_docking.scenario import scenario_path

        return scenario_path(name)

    def simulate(self, scenario, options, seed):
        from hil_docking.designer import delay_bound_s, envelope_growth, m_min_exact, m_min_pade1, m_min_simulated

        d, tau = scenario.loop_delay_s, options['servo_lag_s']
        k, b = scenario.orbital_contact.stiffness_n_m, scenario.orbital_contact.damping_ns_m
        nan = float('nan')
        out = {'delay_bound_s': delay_bound_s(k, b), 'loop_delay_s': d, 'stiffness_n_m': k, 'damping_ns_m': b}
        if d + tau < out['delay_bound_s']:
            sim = m_min_simulated(d, k, b, rel_tol=options['rel_tol'], lag_s=tau)
            exact = m_min_exact(d, k, b, lag_s=tau)
            pade1 = float(m_min_pade1(d + tau, k, b))
            out.update(stable_mass_exists=True, m_min_simulated_kg=sim, m_min_exact_kg=exact, m_min_pade1_kg=pade1,
                       exact_over_simulated=exact / sim, pade1_over_simulated=pade1 / sim,
                       designer_agrees=bool(abs(exact / sim - 1.0) <= options['agreement_tol']),
                       beyond_bound_max_growth_min=nan)
            return out, out
        # Beyond b/k the designer refuses every mass: probe the loop in time from the Eq. (29) scale up.
        masses = np.geomspace(0.5 * b * (d + tau), 50.0 * b * (d + tau), int(round(options['beyond_bound_probes'])))
        growth = envelope_growth(masses, k, b, d, lag_s=tau)
        stable = growth < 1.0
        out.update(stable_mass_exists=False, m_min_simulated_kg=float(masses[np.argmax(stable)]) if stable.any() else nan,
                   m_min_exact_kg=nan, m_min_pade1_kg=nan, exact_over_simulated=nan, pade1_over_simulated=nan,
                   designer_agrees=bool(not stable.any()), beyond_bound_max_growth_min=float(growth.min()))
        return out, {**out, 'probe_masses_kg': masses, 'probe_growth': growth}


# -- a cheap real runner ---------------------------------------------------------------------------
class ClientUnforcedRunner(Runner):
    name = 'client_unforced'
    default_scenario = 'envisat_capture'
    description = "the client alone, torque-free (seed 004 Eq. 2) in orbit, from the scenario's client section"
    options = (Option('duration_s', 1.0, 'simulated time [s]', min=0.0, max=1e5),
               Option('dt_s', 0.01, 'integration step [s]', min=1e-5, max=10.0))
    metrics = {
        'final_position_x_m': 'client CoM in orbit at the end, x [m]',
        'final_position_y_m': 'idem y [m]',
        'final_position_z_m': 'idem z [m]',
        'rotation_angle_rad': 'rotation angle of the client attitude at the end, |log3 R| [rad]',
        'energy_drift_rel': 'relative change of the kinetic energy (0 for the exact solution)',
        'momentum_drift_rel': 'relative change of the orbit-frame momentum [p; L] (0 for the exact solution)',
    }

    loader = staticmethod(load_envisat)

    def simulate(self, scenario, options, seed):
        import pinocchio as pin

        from hil_dynamics.client import AbsoluteRigidBody

        c = scenario.client
        body = AbsoluteRigidBody(c.body, c.twist_client_body_0)
        e0 = c.body.kinetic_energy(body.twist_body)
        h0 = c.body.momentum_in_parent(body.pose_in_orbit, body.twist_body)
        n = int(round(options['duration_s'] / options['dt_s']))
        for _ in range(n):
            body.step(np.zeros(6), options['dt_s'])
        e1 = c.body.kinetic_energy(body.twist_body)
        h1 = c.body.momentum_in_parent(body.pose_in_orbit, body.twist_body)
        p = body.pose_in_orbit.translation
        scale = float(np.linalg.norm(h0))
        return {'final_position_x_m': float(p[0]), 'final_position_y_m': float(p[1]), 'final_position_z_m': float(p[2]),
                'rotation_angle_rad': float(np.linalg.norm(pin.log3(body.pose_in_orbit.rotation))),
                'energy_drift_rel': float(abs(e1 - e0) / e0) if e0 > 0 else 0.0,
                'momentum_drift_rel': float(np.linalg.norm(h1 - h0) / scale) if scale > 0 else 0.0}, \
            {'pose_in_orbit': body.pose_in_orbit, 'twist_body': body.twist_body}


RUNNERS: dict[str, Runner] = {r.name: r for r in (EnvisatHilRunner(), EnvisatAbsoluteRunner(), EnvisatTwinUnforcedRunner(),
                                                  TeleopRunner(), TeleopTwinRunner(), SnareCaptureRunner(),
                                                  DockingMinMassRunner(), ClientUnforcedRunner())}


def get_runner(name: str) -> Runner:
    try:
        return RUNNERS[name]
    except KeyError:
        raise OverrideError(f'unknown runner {name!r} (runners: {sorted(RUNNERS)})') from None
