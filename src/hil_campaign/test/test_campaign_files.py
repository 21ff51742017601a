"""Campaign files and scenario overrides: validation names the field; plans are what the file says.

No engine here (see test_campaign_cluster.py): the grid is the Cartesian product, random draws
are reproducible from the seed, and the bisection plan converges on a known boundary at the
rate of a bisection.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from hil_campaign.overrides import OverrideError, apply_overrides
from hil_campaign.runners import ScenarioSource, get_runner
from hil_campaign.spec import CampaignError, campaign_path, load_campaign
from hil_common.fields import ScenarioError

BASE = {
    'campaign': 'unit',
    'runner': 'client_unforced',
    'seed': 5,
    'overrides': {'runner.duration_s': 0.1},
    'parameters': {'grid': {'client.mass_kg': [1000.0, 2000.0, 3000.0], 'runner.dt_s': [0.01, 0.02]}},
}


def write(tmp_path: Path, data: dict, name: str = 'c.yaml') -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def with_(base: dict, **changes) -> dict:
    out = yaml.safe_load(yaml.safe_dump(base))
    out.update(changes)
    return out


# -- overrides -------------------------------------------------------------------------------------
def test_overrides_set_fields_and_list_elements_and_leave_the_source_alone():
    raw = {'client': {'mass_kg': 1.0, 'twist': [0.0, 1.0, 2.0]}}
    out = apply_overrides(raw, {'client.mass_kg': 7.0, 'client.twist.2': -4.0})
    assert out == {'client': {'mass_kg': 7.0, 'twist': [0.0, 1.0, -4.0]}}
    assert raw == {'client': {'mass_kg': 1.0, 'twist': [0.0, 1.0, 2.0]}}


@pytest.mark.parametrize('path, words', [
    ('client.mas_kg', ["override 'client.mas_kg'", "client has no field 'mas_kg'", 'mass_kg']),
    ('client.twist.3', ["override 'client.twist.3'", 'index 3 out of range', '3 elements']),
    ('client.twist.x', ["'x' is not an index"]),
    ('client.mass_kg.value', ['client.mass_kg is a value']),
    ('orbit', ["the top level has no field 'orbit'"]),
])
def test_an_override_of_a_field_the_scenario_lacks_is_refused_by_name(path, words):
    with pytest.raises(OverrideError) as err:
        apply_overrides({'client': {'mass_kg': 1.0, 'twist': [0.0, 1.0, 2.0]}}, {path: 1.0})
    for w in words:
        assert w in str(err.value)


def test_overridden_values_go_through_the_scenario_loader_and_its_errors_name_the_field():
    runner = get_runner('client_unforced')
    src = ScenarioSource.resolve('envisat_capture')
    with pytest.raises(ScenarioError, match=r"field 'client.mass_kg': must be > 0, got -5.0"):
        runner.run(src, {'client.mass_kg': -5.0})
    with pytest.raises(ScenarioError, match=r"field 'client.twist_client_body_0': element 1 must be a finite number"):
        runner.run(src, {'client.twist_client_body_0.1': 'fast'})
    with pytest.raises(ScenarioError, match=r"field 'runner.dt_s': -1.0 is below the minimum"):
        runner.run(src, {'runner.dt_s': -1.0})
    with pytest.raises(OverrideError, match=r"runner 'client_unforced' has no option 'dt'"):
        runner.run(src, {'runner.dt': 0.1})
    # a valid override reaches the loaded scenario
    loaded, options = runner.prepare(src, {'client.mass_kg': 1234.5, 'runner.dt_s': 0.5})
    assert loaded.client.body.mass_kg == 1234.5 and options['dt_s'] == 0.5


# -- campaign files --------------------------------------------------------------------------------
@pytest.mark.parametrize('change, words', [
    ({'runner': 'nope'}, ["field 'runner'", "'nope' is not one of"]),
    ({'seed': 'x'}, ["field 'seed'", 'expected a number']),
    ({'campaign': 'a b'}, ["field 'campaign'"]),
    ({'extra': 1}, ["field 'extra'", 'not a known top-level key']),
    ({'metrics': ['energy_drift_rel', 'grasp_time_s']}, ["field 'metrics'", "element 1: 'grasp_time_s'"]),
    ({'parameters': {'grid': {'client.mass_kg': []}}}, ["field 'parameters.grid.client.mass_kg'", 'non-empty list']),
    ({'parameters': {'grid': {'client.mass_kg': [1.0, [2.0]]}}}, ["field 'parameters.grid.client.mass_kg'", 'element 1']),
    ({'parameters': {'random': {'draws': 2, 'values': {'client.mass_kg': {'gauss': [1, 2]}}}}},
     ["field 'parameters.random.values.client.mass_kg'", 'uniform']),
    ({'parameters': {'random': {'draws': 2, 'values': {'client.mass_kg': {'uniform': [2, 1]}}}}},
     ["field 'parameters.random.values.client.mass_kg.uniform'", 'upper bound']),
    ({'parameters': {'random': {'draws': 0.5, 'values': {'client.mass_kg': {'uniform': [1, 2]}}}}},
     ["field 'parameters.random.draws'"]),
    ({'parameters': {'bisection': {'parameter': 'client.mass_kg', 'low': 1.0, 'high': 2.0, 'iterations': 3}}},
     ["field 'success'", 'required by a bisection']),
    ({'parameters': {'bisection': {'parameter': 'client.mass_kg', 'low': 2.0, 'high': 1.0, 'iterations': 3}},
      'success': {'metric': 'energy_drift_rel', 'below': 1e-9}}, ["field 'parameters.bisection.high'"]),
    ({'success': {'metric': 'energy_drift_rel', 'below': 1.0, 'above': 0.0}}, ["field 'success.above'"]),
    ({'plots': {'success_map': ['client.mass_kg', 'runner.dt_s']}}, ["field 'success'", 'success_map']),
    ({'plots': {'success_map': ['client.mass_kg', 'runner.duration_s']}, 'success': {'metric': 'energy_drift_rel'}},
     ["field 'plots.success_map'", "'runner.duration_s' is not a parameter"]),
    ({'plots': {'curves': {'x': 'client.mass_kg', 'series': 'client.mass_kg', 'metrics': ['energy_drift_rel']}}},
     ["field 'plots.curves.series'", 'must differ from x']),
    ({'plots': {'curves': {'x': 'client.mass_kg', 'metrics': ['grasp_time_s']}}},
     ["field 'plots.curves.metrics'", "'grasp_time_s' is not a metric"]),
    ({'plots': {'curves': {'x': 'runner.duration_s', 'metrics': ['energy_drift_rel']}}}, ["field 'plots.curves.x'"]),
    ({'overrides': {'runner.duration_s': 0.1, 'client.mass_kg': 1.0}}, ["field 'parameters.grid'", 'also fixed']),
    # the first run is checked at load: a misspelt path fails before any run starts
    ({'overrides': {'client.mas_kg': 1.0}}, ["override 'client.mas_kg'", "client has no field 'mas_kg'"]),
    ({'overrides': {'runner.duration_s': -1.0}}, ["field 'runner.duration_s'", 'below the minimum']),
    ({'scenario': 'no_such_scenario'}, ["field 'scenario'", "'no_such_scenario' not found"]),
])
def test_campaign_file_errors_name_the_file_and_the_field(tmp_path, change, words):
    path = write(tmp_path, with_(BASE, **change))
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    assert str(path) in str(err.value)
    for w in words:
        assert w in str(err.value), str(err.value)


def test_grid_is_the_cartesian_product_with_one_seed_and_id_per_point(tmp_path):
    c = load_campaign(write(tmp_path, BASE))
    specs = c.plan().initial()
    assert [(s.params['client.mass_kg'], s.params['runner.dt_s']) for s in specs] == \
        [(m, d) for m in (1000.0, 2000.0, 3000.0) for d in (0.01, 0.02)]
    assert [s.point for s in specs] == list(range(6))
    assert len({s.seed for s in specs}) == 6 and len({s.run_id for s in specs}) == 6
    # the same file plans the same runs; another seed plans other seeds (and ids)
    again = load_campaign(write(tmp_path, BASE, 'again.yaml')).plan().initial()
    assert [(s.run_id, s.seed) for s in again] == [(s.run_id, s.seed) for s in specs]
    other = load_campaign(write(tmp_path, with_(BASE, seed=6), 'other.yaml')).plan().initial()
    assert not {s.seed for s in other} & {s.seed for s in specs}
    # extending the grid keeps the seeds and ids of the points it had (their results are reused)
    wider = with_(BASE, parameters={'grid': {'client.mass_kg': [500.0, 1000.0, 2000.0, 3000.0],
                                             'runner.dt_s': [0.01, 0.02]}})
    kept = {(s.params['client.mass_kg'], s.params['runner.dt_s']): (s.seed, s.run_id)
            for s in load_campaign(write(tmp_path, wider, 'wider.yaml')).plan().initial()}
    assert all(kept[(s.params['client.mass_kg'], s.params['runner.dt_s'])] == (s.seed, s.run_id) for s in specs)
    # editing the scenario's content changes every run id (the table must not mix them)
    edited = ScenarioSource(c.scenario.source, {**c.scenario.data, 'scenario': 'edited'})
    from hil_campaign.spec import run_id
    assert run_id(c.runner, edited, c.overrides, specs[0].params, specs[0].seed) != specs[0].run_id


def test_random_draws_follow_their_distribution_and_the_seed(tmp_path):
    data = with_(BASE, parameters={'grid': {'client.mass_kg': [1000.0, 2000.0]},
                                   'random': {'draws': 200, 'values': {
                                       'runner.dt_s': {'uniform': [0.01, 0.03]},
                                       'client.twist_client_body_0.4': {'normal': [0.1, 0.02]},
                                       'runner.duration_s': {'loguniform': [0.01, 1.0]},
                                       'client.twist_client_body_0.0': {'choice': [-1.0, 1.0]}}}},
                 overrides={})
    specs = load_campaign(write(tmp_path, data)).plan().initial()
    assert len(specs) == 400 and [s.point for s in specs] == list(range(400))
    assert [s.params['client.mass_kg'] for s in specs] == [1000.0] * 200 + [2000.0] * 200
    dt = [s.params['runner.dt_s'] for s in specs]
    assert 0.01 <= min(dt) and max(dt) <= 0.03 and abs(sum(dt) / len(dt) - 0.02) < 0.002   # mean 0.02, sd of mean 0.0003
    w = [s.params['client.twist_client_body_0.4'] for s in specs]
    mean = sum(w) / len(w)
    sd = math.sqrt(sum((x - mean) ** 2 for x in w) / (len(w) - 1))
    assert abs(mean - 0.1) < 0.005 and abs(sd - 0.02) < 0.004
    logs = [math.log10(s.params['runner.duration_s']) for s in specs]
    assert -2.0 <= min(logs) and max(logs) <= 0.0 and abs(sum(logs) / len(logs) + 1.0) < 0.1
    assert {s.params['client.twist_client_body_0.0'] for s in specs} == {-1.0, 1.0}
    again = load_campaign(write(tmp_path, data, 'again.yaml')).plan().initial()
    assert [s.params for s in again] == [s.params for s in specs]


def test_bisection_brackets_a_known_boundary_halving_it_each_iteration(tmp_path):
    """A success criterion that flips at a known value (success iff mass < 1234): after n
    iterations the bracket holds the boundary and is (high - low) / 2**n wide."""
    data = with_(BASE, parameters={'grid': {'runner.dt_s': [0.01, 0.02]},
                                   'bisection': {'parameter': 'client.mass_kg', 'low': 1000.0, 'high': 2000.0,
                                                 'iterations': 6}},
                 success={'metric': 'energy_drift_rel', 'below': 0.5})
    c = load_campaign(write(tmp_path, data))
    plan = c.plan()
    queue, seen, rows = list(plan.initial()), [], []
    assert plan.total() == 2 * 8
    while queue:
        spec = queue.pop(0)
        seen.append(spec)
        ok = spec.params['client.mass_kg'] < 1234.0
        row = {'status': 'ok', 'metrics': {'energy_drift_rel': 0.0 if ok else 1.0}}
        rows.append({'run_id': spec.run_id, 'point': spec.point, 'iteration': spec.iteration, 'params': spec.params,
                     'seed': spec.seed, 'error': None, 'code_version': 'test', **row})
        queue += plan.completed(spec, row)
    assert len(seen) == plan.total()
    # the boundary curve and the histograms are drawn from the table
    from hil_campaign.plots import write_plots
    from hil_campaign.results import build_table

    table = build_table(rows, c.parameter_names, c.metrics)
    assert table.num_rows == 16 and table.column('iteration').to_pylist()[:8] == list(range(8))
    assert {p.name for p in write_plots(c, table, plan.boundaries(), tmp_path)} == {'boundary.png', 'histograms.png'}
    for b in plan.boundaries():
        assert b['low'] <= 1234.0 <= b['high']
        assert b['high'] - b['low'] == pytest.approx(1000.0 / 2 ** 6)
        assert b['success_at_low'] is True
    # every run of a group shares the group's seed (one realisation along the bisection)
    for point in (0, 1):
        assert len({s.seed for s in seen if s.point == point}) == 1
    # no flip inside [low, high]: the group stops after its two ends and says so
    plan = c.plan()
    queue, n = list(plan.initial()), 0
    while queue:
        spec = queue.pop(0)
        n += 1
        queue += plan.completed(spec, {'status': 'ok', 'metrics': {'energy_drift_rel': 0.0}})
    assert n == 4 and all(math.isnan(b['boundary']) and 'success at both ends' in b['note'] for b in plan.boundaries())


def test_the_shipped_campaigns_are_valid_and_modest():
    for name in ('envisat_capture_robustness', 'envisat_delay_boundary', 'teleop_mass_error', 'snare_capture_limit',
                 'docking_min_mass_map'):
        c = load_campaign(campaign_path(name))
        assert c.name == name
        assert c.success is not None and (c.success_map is not None or c.bisection is not None)
        assert c.plan().total() <= 16, 'keep shipped campaigns modest'


def test_curves_plot_is_drawn_from_the_table(tmp_path):
    """plots.curves: metrics over one parameter, one line per value of another (the docking map's
    simulated boundary beside the designer's bounds); a failed row is left out."""
    from hil_campaign.plots import write_plots
    from hil_campaign.results import build_table

    data = with_(BASE, plots={'curves': {'x': 'client.mass_kg', 'series': 'runner.dt_s',
                                         'metrics': ['energy_drift_rel', 'momentum_drift_rel']}})
    c = load_campaign(write(tmp_path, data))
    assert c.curves == {'x': 'client.mass_kg', 'series': 'runner.dt_s',
                        'metrics': ['energy_drift_rel', 'momentum_drift_rel']}
    rows = []
    for spec in c.plan().initial():
        failed = spec.point == 0
        rows.append({'run_id': spec.run_id, 'point': spec.point, 'iteration': 0, 'params': spec.params, 'seed': spec.seed,
                     'status': 'failed' if failed else 'ok', 'error': 'boom' if failed else None, 'code_version': 'test',
                     'metrics': None if failed else {m: spec.params['client.mass_kg'] * 1e-9 for m in c.metrics}})
    table = build_table(rows, c.parameter_names, c.metrics)
    assert {p.name for p in write_plots(c, table, [], tmp_path)} == {'histograms.png', 'curves.png'}
    assert (tmp_path / 'curves.png').stat().st_size > 10_000
