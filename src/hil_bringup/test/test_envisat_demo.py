"""The Envisat demo's outputs: seed-004-style plots, the rendered picture and a readable MCAP bag."""

import numpy as np
import pytest

from hil_bringup import envisat_demo
from hil_bringup.recorder import read_counts
from hil_bringup.runners.mission import AbsoluteMission, HilMission
from hil_bringup.scenario import load_scenario


@pytest.mark.filterwarnings('error::UserWarning', 'error::RuntimeWarning')
def test_plots_render_and_the_capture_bag_reads_back(tmp_path):
    scenario = load_scenario('envisat_capture')
    scenario.obsw.sync_duration_s = 0.5               # reach the approach phase within a short run
    hil = HilMission(scenario)
    rec = hil.run(1.0, record_every_s=0.02)
    ref = AbsoluteMission(scenario).run(1.0, record_every_s=0.02)
    files = envisat_demo.plot_fig8_fig9(rec, ref, tmp_path, 'test')
    files += [envisat_demo.plot_fig12(rec, hil.controller.phase_times, tmp_path),
              envisat_demo.plot_fig13(rec, hil.controller.phase_times, tmp_path)]
    for path in files:
        assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and path.stat().st_size > 10_000
    counts = envisat_demo.record_capture_mcap(rec, hil.model.joint_names, tmp_path / 'capture', rate_hz=50.0)
    assert read_counts(tmp_path / 'capture') == counts
    assert counts['/client/state'] == len(rec.t) == 51
    assert counts['/obsw/phase'] == 2                 # sync, then approach
    metrics = envisat_demo.capture_metrics(scenario, hil, rec, ref)
    assert metrics['phase_times_s'] == {'sync': 0.0, 'approach': 0.5}
    assert metrics['hil_vs_reference']['max_position_error_m'] < 1e-6
    assert np.isfinite(metrics['max_thrust_n'])


def test_console_values_are_rounded_in_units_chosen_by_magnitude():
    from hil_bringup.console import angle, duration, length, number

    assert duration(38.050000000000004) == '38.05 s' and duration(None) == 'never' and duration(125.4) == '2 min 05 s'
    assert length(1.06e-11) == '10.6 pm' and length(1.06e-08) == '10.6 nm' and length(0.23) == '230 mm'
    assert length(5.0) == '5 m' and angle(2.75e-7) == '275 nrad' and number(7.5e-05, 2) == '7.5e-05'
