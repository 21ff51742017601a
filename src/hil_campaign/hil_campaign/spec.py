"""Campaign files: what to run, over which parameters, and what to collect.

A campaign is one YAML file, validated with errors that name the field
(``parameters.grid.runner.tumble_rate_deg_s``)::

    campaign: envisat_capture_robustness     # name of the table and of the output folder
    runner: envisat_hil                      # hil_campaign.runners.RUNNERS
    scenario: envisat_capture                # shipped name or path (default: the runner's)
    seed: 14                                 # every random draw and every run seed derive from it
    overrides: {mission.duration_s: 40.0}    # fixed for every run (dotted scenario paths, runner.*)
    parameters:
      grid:                                  # Cartesian product, in file order
        runner.tumble_rate_deg_s: [-1.0, -2.5]
      random:                                # per grid point (or alone), `draws` times
        draws: 2
        values:
          runner.ft_noise_force_n: {uniform: [0.0, 0.5]}     # uniform, loguniform, normal, choice
      bisection:                             # per grid point; excludes `random`
        parameter: runner.command_delay_s
        low: 0.0
        high: 0.05
        iterations: 4
    success: {metric: capture_success}       # or {metric: m, below: x} / {metric: m, above: x}
    metrics: [capture_success, grasp_time_s] # default: all of the runner's
    plots:
      success_map: [runner.tumble_rate_deg_s, runner.ft_noise_force_n]
      histograms: [grasp_time_s]             # default: every numeric metric
      curves: {x: p1, series: p2, metrics: [m1, m2]}   # metrics over p1, one line per p2 value

:func:`load_campaign` returns a :class:`Campaign`; :meth:`Campaign.plan` the runs as a
:class:`Plan` (fixed for grids and draws; adaptive for bisections: each midpoint depends on
the outcomes so far, so the engine asks the plan for the next runs as results arrive).
Runs are identified by a hash of what determines their result (:func:`run_id`), which is
what makes a campaign resumable and its table reproducible. Plain Python, no rclpy.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from hil_campaign.runners import RUNNERS, ScenarioSource, get_runner
from hil_common.fields import Fields, ScenarioError

DISTRIBUTIONS = ('uniform', 'loguniform', 'normal', 'choice')


class CampaignError(ScenarioError):
    """A campaign file or one of its fields is invalid."""


@dataclass(frozen=True)
class Success:
    """When a run counts as a success: a boolean metric, or a metric below/above a threshold."""

    metric: str
    below: float | None = None
    above: float | None = None

    def __call__(self, row: dict) -> bool:
        if row.get('status') != 'ok':
            return False
        value = (row.get('metrics') or {}).get(self.metric, row.get(self.metric))
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        if self.below is not None:
            return float(value) < self.below
        if self.above is not None:
            return float(value) > self.above
        return bool(value)

    def label(self) -> str:
        if self.below is not None:
            return f'{self.metric} < {self.below:g}'
        if self.above is not None:
            return f'{self.metric} > {self.above:g}'
        return self.metric


@dataclass(frozen=True)
class Bisection:
    parameter: str
    low: float
    high: float
    iterations: int


@dataclass(frozen=True)
class RunSpec:
    """One run: its place in the campaign (``point``, ``iteration``), parameters and seed."""

    point: int
    iteration: int
    params: dict
    seed: int
    run_id: str


@dataclass
class Campaign:
    name: str
    source: str
    runner: str
    scenario: ScenarioSource
    seed: int
    overrides: dict
    grid: dict                       # name -> list of values
    random: dict                     # name -> (distribution, args)
    draws: int
    bisection: Bisection | None
    success: Success | None
    metrics: list
    success_map: list | None
    histograms: list
    description: str = ''
    parameter_names: list = field(default_factory=list)
    curves: dict | None = None       # plots.curves: {'x': parameter, 'series': parameter or None, 'metrics': [...]}

    def overrides_for(self, spec: RunSpec) -> dict:
        return {**self.overrides, **spec.params}

    def run_id(self, params: dict, seed: int) -> str:
        if getattr(self, '_digest', None) is None:
            self._digest = _fixed_digest(self.runner, self.scenario, self.overrides)
        return run_id(self.runner, self.scenario, self.overrides, params, seed, self._digest)

    def _entropy(self, base: dict, draw_index: int, purpose: int) -> list[int]:
        """Seed material from the campaign seed, the grid values and the draw: not from the position in
        the grid, so that extending a grid keeps the seeds (and the run ids) of the points it had."""
        digest = hashlib.sha256(json.dumps(_canonical(base), sort_keys=True).encode()).digest()
        return [self.seed, purpose, draw_index, *np.frombuffer(digest[:16], dtype=np.uint32).tolist()]

    def run_seed(self, base: dict, draw_index: int = 0) -> int:
        """The seed of the runs at grid values ``base`` (draw ``draw_index``)."""
        return int(np.random.SeedSequence(self._entropy(base, draw_index, 0)).generate_state(1)[0])

    def grid_points(self) -> list[dict]:
        names = list(self.grid)
        return [dict(zip(names, values)) for values in product(*(self.grid[n] for n in names))]

    def plan(self) -> 'Plan':
        points = self.grid_points()
        if self.bisection is not None:
            return BisectionPlan(self, points)
        specs = []
        draws = self.draws if self.random else 1
        for gi, base in enumerate(points):
            for j in range(draws):
                rng = np.random.default_rng(np.random.SeedSequence(self._entropy(base, j, 1)))
                params = dict(base)
                for name, (dist, args) in self.random.items():
                    params[name] = draw(rng, dist, args)
                seed = self.run_seed(base, j)
                specs.append(RunSpec(gi * draws + j, 0, params, seed, self.run_id(params, seed)))
        return FixedPlan(specs)


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, float):
        return repr(value)          # exact, and NaN-safe
    if hasattr(value, 'item'):
        return _canonical(value.item())
    return value


def _fixed_digest(runner: str, scenario: ScenarioSource, overrides: dict) -> str:
    return hashlib.sha256(json.dumps(_canonical({'runner': runner, 'scenario': scenario.data, 'overrides': overrides}),
                                     sort_keys=True).encode()).hexdigest()


def run_id(runner: str, scenario: ScenarioSource, overrides: dict, params: dict, seed: int,
           fixed_digest: str | None = None) -> str:
    """Hash of everything that determines a run's result except the code: runner, scenario
    content, overrides, parameters and seed (``fixed_digest``: the first three, precomputed)."""
    fixed = fixed_digest or _fixed_digest(runner, scenario, overrides)
    payload = json.dumps(_canonical({'fixed': fixed, 'params': params, 'seed': int(seed)}), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def draw(rng: np.random.Generator, dist: str, args) -> Any:
    if dist == 'uniform':
        return float(rng.uniform(args[0], args[1]))
    if dist == 'loguniform':
        return float(math.exp(rng.uniform(math.log(args[0]), math.log(args[1]))))
    if dist == 'normal':
        return float(rng.normal(args[0], args[1]))
    return args[int(rng.integers(len(args)))]


# -- plans -----------------------------------------------------------------------------------------
class Plan:
    """Which runs to do. ``initial()`` first; ``completed(spec, row)`` returns the runs it unlocks."""

    def initial(self) -> list[RunSpec]:
        raise NotImplementedError

    def completed(self, spec: RunSpec, row: dict) -> list[RunSpec]:
        return []

    def total(self) -> int:
        """Number of runs (an upper bound for bisections)."""
        raise NotImplementedError


class FixedPlan(Plan):
    def __init__(self, specs: list[RunSpec]):
        self.specs = specs

    def initial(self):
        return list(self.specs)

    def total(self):
        return len(self.specs)


@dataclass
class _Group:
    point: int
    base: dict
    seed: int
    low: float
    high: float
    ok_low: bool | None = None
    ok_high: bool | None = None
    iteration: int = 1
    done: bool = False
    note: str = ''


class BisectionPlan(Plan):
    """Per grid point: the two ends, then ``iterations`` midpoints halving the bracket in which
    the success criterion flips. Every run of a group has the group's seed, so noise is the
    same along the bisection and the boundary is that of one realisation."""

    def __init__(self, campaign: Campaign, points: list[dict]):
        self.c = campaign
        b = campaign.bisection
        self.groups = [_Group(p, base, campaign.run_seed(base), b.low, b.high) for p, base in enumerate(points)]

    def _spec(self, g: _Group, iteration: int, value: float) -> RunSpec:
        params = {**g.base, self.c.bisection.parameter: value}
        return RunSpec(g.point, iteration, params, g.seed, self.c.run_id(params, g.seed))

    def initial(self):
        return [s for g in self.groups for s in (self._spec(g, 0, g.low), self._spec(g, 1, g.high))]

    def total(self):
        return len(self.groups) * (2 + self.c.bisection.iterations)

    def completed(self, spec, row):
        g = self.groups[spec.point]
        if g.done:
            return []
        if row.get('status') != 'ok':
            g.done, g.note = True, f"run {spec.iteration} failed: {row.get('error')}"
            return []
        ok = self.c.success(row)
        value = spec.params[self.c.bisection.parameter]
        if spec.iteration == 0:
            g.ok_low = ok
        elif spec.iteration == 1:
            g.ok_high = ok
        elif ok == g.ok_low:
            g.low = value
        else:
            g.high = value
        if g.ok_low is None or g.ok_high is None:
            return []                       # the other end is still running
        if g.ok_low == g.ok_high:
            g.done, g.note = True, f"no boundary in [{g.low:g}, {g.high:g}]: {'success' if g.ok_low else 'failure'} at both ends"
            return []
        if g.iteration - 1 >= self.c.bisection.iterations:
            g.done = True
            return []
        g.iteration += 1
        return [self._spec(g, g.iteration, 0.5 * (g.low + g.high))]

    def boundaries(self) -> list[dict]:
        """Per group: its grid values, the final bracket and the boundary estimate (its middle)."""
        out = []
        for g in self.groups:
            bracketed = g.ok_low is not None and g.ok_high is not None and g.ok_low != g.ok_high
            out.append({**g.base, 'point': g.point, 'low': g.low, 'high': g.high,
                        'boundary': 0.5 * (g.low + g.high) if bracketed else float('nan'),
                        'success_at_low': g.ok_low, 'note': g.note})
        return out


# -- loading ---------------------------------------------------------------------------------------
def _value_list(sec: Fields, key: str) -> list:
    values = sec.data[key]
    if not isinstance(values, list) or not values:
        raise sec.error(key, f'expected a non-empty list of values, got {values!r}')
    for i, v in enumerate(values):
        if isinstance(v, (dict, list)) or v is None or (isinstance(v, float) and not math.isfinite(v)):
            raise sec.error(key, f'element {i} must be a finite number, a boolean or a string, got {v!r}')
    return list(values)


def _distribution(sec: Fields, key: str) -> tuple[str, list]:
    spec = sec.data[key]
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in DISTRIBUTIONS:
        raise sec.error(key, f'expected one of {{{", ".join(f"{d}: [...]" for d in DISTRIBUTIONS)}}}, got {spec!r}')
    dist, args = next(iter(spec.items()))
    if dist == 'choice':
        inner = Fields({dist: args}, sec.source, sec.path_of(key))
        return dist, _value_list(inner, dist)
    inner = Fields({dist: args}, sec.source, sec.path_of(key))
    a, b = inner.vector(dist, 2)
    if dist in ('uniform', 'loguniform') and not b > a:
        raise inner.error(dist, f'the upper bound must exceed the lower one, got [{a}, {b}]')
    if dist == 'loguniform' and a <= 0.0:
        raise inner.error(dist, f'the bounds must be > 0, got [{a}, {b}]')
    if dist == 'normal' and b < 0.0:
        raise inner.error(dist, f'the standard deviation must be >= 0, got {b}')
    return dist, [a, b]


def _names(sec: Fields, key: str, allowed: list, what: str) -> list:
    raw = sec.data.get(key)
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise sec.error(key, f'expected a list of {what} names, got {raw!r}')
    for i, v in enumerate(raw):
        if v not in allowed:
            raise sec.error(key, f'element {i}: {v!r} is not a {what} of this campaign ({sorted(allowed)})')
    return list(raw)


def _whole(sec: Fields, key: str, min: float, max: float) -> int:
    value = sec.number(key, min=min, max=max)
    if value != int(value):
        raise sec.error(key, f'expected a whole number, got {value}')
    return int(value)


def campaign_path(name_or_path: str | Path) -> Path:
    """A campaign file path, or the name of one shipped with hil_campaign (``envisat_capture_robustness``)."""
    path = Path(name_or_path)
    if path.suffix in ('.yaml', '.yml'):
        if not path.is_file():
            raise CampaignError(f'campaign file {path} not found')
        return path
    from hil_common.fields import shipped_file

    return shipped_file('hil_campaign', 'campaigns', str(path), Path(__file__).resolve().parents[1], 'campaign',
                        error=CampaignError)


def load_campaign(name_or_path: str | Path) -> Campaign:
    """Load and validate a campaign file; every error names the file and the field."""
    path = campaign_path(name_or_path)
    try:
        top = Fields.load(path)
    except ScenarioError as exc:
        raise CampaignError(str(exc)) from None
    try:
        return _campaign(top, path)
    except CampaignError:
        raise
    except ScenarioError as exc:
        raise CampaignError(str(exc)) from None


def _campaign(top: Fields, path: Path) -> Campaign:
    top.refuse_unknown(['campaign', 'description', 'runner', 'scenario', 'seed', 'overrides', 'parameters', 'success',
                        'metrics', 'plots'])
    name = top.string('campaign')
    if not name.replace('_', '').replace('-', '').isalnum():
        raise top.error('campaign', f'{name!r} must be letters, digits, - and _ (it names the output folder)')
    runner_name = top.string('runner', choices=sorted(RUNNERS))
    runner = get_runner(runner_name)
    try:
        scenario = ScenarioSource.resolve(top.string('scenario', default=runner.default_scenario), path.parent,
                                          find=runner.scenario_path)
    except ScenarioError as exc:
        raise top.error('scenario', str(exc)) from None
    seed = _whole(top, 'seed', 0, 2**32 - 1)
    overrides = dict(top.section('overrides').data) if top.has('overrides') else {}
    for k in overrides:
        if not isinstance(k, str):
            raise top.error('overrides', f'keys must be dotted field paths, got {k!r}')

    grid, random, draws, bisection = {}, {}, 1, None
    params = top.section('parameters') if top.has('parameters') else Fields({}, top.source, 'parameters')
    params.refuse_unknown(['grid', 'random', 'bisection'])
    if params.has('grid'):
        g = params.section('grid')
        if not g.data:
            raise params.error('grid', 'expected at least one parameter')
        grid = {k: _value_list(g, k) for k in g.data}
    if params.has('random'):
        r = params.section('random')
        r.refuse_unknown(['draws', 'values'])
        draws = _whole(r, 'draws', 1, 1e6)
        v = r.section('values')
        if not v.data:
            raise r.error('values', 'expected at least one parameter')
        random = {k: _distribution(v, k) for k in v.data}
    if params.has('bisection'):
        b = params.section('bisection')
        b.refuse_unknown(['parameter', 'low', 'high', 'iterations'])
        if params.has('random'):
            raise params.error('random', 'cannot be combined with a bisection (a boundary needs one realisation)')
        low, high = b.number('low'), b.number('high')
        if not high > low:
            raise b.error('high', f'must exceed low ({low}), got {high}')
        bisection = Bisection(b.string('parameter'), low, high, _whole(b, 'iterations', 1, 60))
    names = [*grid, *random, *([bisection.parameter] if bisection else [])]
    for section, keys in (('grid', grid), ('random', random)):
        for k in keys:
            if k in overrides:
                raise params.error(section, f"'{k}' is also fixed in overrides; give it once")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise top.error('parameters', f"'{dupes[0]}' is varied twice")
    if bisection and bisection.parameter in overrides:
        raise params.error('bisection', f"'{bisection.parameter}' is also fixed in overrides; give it once")

    metrics = _names(top, 'metrics', list(runner.metrics), 'metric') if top.has('metrics') else list(runner.metrics)
    success = None
    if top.has('success'):
        s = top.section('success')
        s.refuse_unknown(['metric', 'below', 'above'])
        metric = s.string('metric', choices=metrics)
        if s.has('below') and s.has('above'):
            raise s.error('above', 'give below or above, not both')
        success = Success(metric, s.number('below') if s.has('below') else None,
                          s.number('above') if s.has('above') else None)
    if bisection is not None and success is None:
        raise top.error('success', 'is required by a bisection (what flips at the boundary)')

    success_map, histograms, curves = None, [m for m in metrics], None
    if top.has('plots'):
        p = top.section('plots')
        p.refuse_unknown(['success_map', 'histograms', 'curves'])
        if p.has('success_map'):
            success_map = _names(p, 'success_map', names, 'parameter')
            if len(success_map) != 2:
                raise p.error('success_map', f'expected two parameter names, got {success_map!r}')
            if success is None:
                raise top.error('success', 'is required by plots.success_map')
        if p.has('histograms'):
            histograms = _names(p, 'histograms', metrics, 'metric')
        if p.has('curves'):
            cv = p.section('curves')
            cv.refuse_unknown(['x', 'series', 'metrics'])
            x = cv.string('x', choices=names)
            series = cv.string('series', choices=names) if cv.has('series') else None
            if series == x:
                raise cv.error('series', f'must differ from x ({x!r})')
            curves = {'x': x, 'series': series, 'metrics': _names(cv, 'metrics', metrics, 'metric')}
            if not curves['metrics']:
                raise cv.error('metrics', 'expected at least one metric name')

    campaign = Campaign(name, str(path), runner_name, scenario, int(seed), overrides, grid, random, draws, bisection,
                        success, metrics, success_map, histograms, top.string('description', default=''), names,
                        curves)
    _check_first_run(campaign, top)
    return campaign


def _check_first_run(campaign: Campaign, top: Fields) -> None:
    """Validate the fixed overrides and one value of every parameter against the scenario and
    the runner now, so that a misspelt path fails before any run starts (errors name it)."""
    runner = get_runner(campaign.runner)
    params = {k: v[0] for k, v in campaign.grid.items()}
    params.update({k: (args[0] if dist == 'choice' else float(args[0])) for k, (dist, args) in campaign.random.items()})
    if campaign.bisection is not None:
        params[campaign.bisection.parameter] = campaign.bisection.low
    try:
        runner.prepare(campaign.scenario, {**campaign.overrides, **params})
    except ScenarioError as exc:
        raise CampaignError(f'{top.source}: {exc}') from None
