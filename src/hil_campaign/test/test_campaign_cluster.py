"""The engine on a real Dask cluster: a scheduler and two workers as separate processes on
127.0.0.1 (ephemeral ports), as a lab starts them (``dask scheduler``, ``dask worker``).

The campaign's runner is ``client_unforced`` (the client alone, torque-free, Eq. 2): cheap but
real, and its results have a closed form (p(T) = v T), so the table is checked against
physics, not against itself. Covered: rows and columns of the Parquet table, a failing run
that records its error while the campaign goes on, reproducibility (same file -> same table),
resume after Ctrl-C and a killed worker (a rerun does only the missing runs), the default
LocalCluster path with its progress bar, and the plots.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hil_campaign.engine import CtrlC, run_campaign
from hil_campaign.results import JOURNAL, TABLE, Journal, read_table
from hil_campaign.spec import load_campaign

T_S = 0.6
SPEEDS = [0.0, 0.1, 0.2, 0.3]
MASSES = [1000.0, -1.0]                           # -1 kg: refused by the scenario loader at run time


def campaign_file(folder: Path, dt_s: float = 0.01, name: str = 'cluster_test') -> Path:
    data = {
        'campaign': name,
        'runner': 'client_unforced',
        'seed': 11,
        'overrides': {'runner.duration_s': T_S, 'runner.dt_s': dt_s},
        'parameters': {'grid': {'client.twist_client_body_0.0': SPEEDS, 'client.mass_kg': MASSES}},
        'success': {'metric': 'energy_drift_rel', 'below': 1e-9},
        'plots': {'success_map': ['client.twist_client_body_0.0', 'client.mass_kg']},
    }
    path = folder / f'{name}.yaml'
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _dask(*args) -> list[str]:
    return [sys.executable, '-m', 'dask', *args]


def start_worker(scheduler_file: Path, name: str | None = None) -> subprocess.Popen:
    """One worker process (no nanny: killing it kills the worker, as a machine going down)."""
    named = ['--name', name] if name else []
    return subprocess.Popen(_dask('worker', '--scheduler-file', str(scheduler_file), '--nthreads', '1', '--no-nanny',
                                  '--no-dashboard', '--host', '127.0.0.1', '--memory-limit', '2GiB',
                                  '--preload', 'hil_campaign.preload', *named),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    from distributed import Client

    folder = tmp_path_factory.mktemp('dask')
    scheduler_file = folder / 'scheduler.json'
    procs = [subprocess.Popen(_dask('scheduler', '--host', '127.0.0.1', '--port', '0', '--no-dashboard',
                                    '--scheduler-file', str(scheduler_file)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    try:
        deadline = time.monotonic() + 60.0
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        address = json.loads(scheduler_file.read_text())['address']
        assert address.startswith('tcp://127.0.0.1:')
        procs += [start_worker(scheduler_file) for _ in range(2)]
        with Client(address, timeout='60s') as client:
            client.wait_for_workers(2, timeout=120)
        yield {'address': address, 'scheduler_file': scheduler_file, 'procs': procs}
    finally:
        for p in reversed(procs):          # the processes this fixture started, by pid
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait(timeout=30)


def rows_of(table) -> list[dict]:
    return table.to_pylist()


def without_code_version(table):
    """The table less its code_version column: other commits may land in this checkout while the
    test runs (a worker started later reports a newer ``git describe``)."""
    return table.drop_columns(['code_version'])


def check_rows(rows: list[dict]) -> None:
    """Each row against the closed form, or its error naming the field."""
    for r in rows:
        assert r['code_version']
        if r['client.mass_kg'] < 0:
            # a failing run records its error in its row, naming the field; the campaign went on
            assert r['status'] == 'failed' and r['final_position_x_m'] is None
            assert "field 'client.mass_kg': must be > 0" in r['error']
        else:
            assert r['status'] == 'ok' and r['error'] is None
            # closed form: the Envisat scenario does not spin about x, so p_x(T) = v T
            assert r['final_position_x_m'] == pytest.approx(r['client.twist_client_body_0.0'] * T_S, abs=1e-12)
            assert r['energy_drift_rel'] < 1e-12


def test_a_campaign_through_a_scheduler_and_two_worker_processes(cluster, tmp_path):
    campaign = load_campaign(campaign_file(tmp_path))
    out = tmp_path / 'out'
    result = run_campaign(campaign, out, scheduler=cluster['address'], progress=False)
    n = len(SPEEDS) * len(MASSES)
    assert (result.total, result.executed, result.reused) == (n, n, 0)
    table = read_table(out / TABLE)
    assert table.num_rows == n
    assert table.column_names[:5] == ['point', 'iteration', 'run_id', 'client.twist_client_body_0.0', 'client.mass_kg']
    assert {'seed', 'status', 'error', 'code_version', 'final_position_x_m', 'energy_drift_rel'} <= set(table.column_names)
    rows = rows_of(table)
    assert [r['point'] for r in rows] == list(range(n))
    # the runs were spread over both worker processes
    workers = {json.loads(line).get('worker') for line in (out / JOURNAL).read_text().splitlines()}
    assert len(workers) == 2
    check_rows(rows)
    assert result.failed == len(SPEEDS)
    assert {p.name for p in result.plots} == {'success_map.png', 'histograms.png'}
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['runs'] == n and summary['failed'] == len(SPEEDS) and summary['success'] == n - len(SPEEDS)

    # reproducible: the same file into a fresh folder gives the same table
    again = run_campaign(load_campaign(campaign_file(tmp_path)), tmp_path / 'again', scheduler=cluster['address'],
                         progress=False, plots=False)
    assert again.executed == n
    assert without_code_version(read_table(tmp_path / 'again' / TABLE)).equals(without_code_version(table),
                                                                             check_metadata=True)
    # rerun into the same folder: nothing left to do, no cluster needed, same table
    rerun = run_campaign(load_campaign(campaign_file(tmp_path)), out, scheduler='tcp://127.0.0.1:1', progress=False,
                         plots=False)
    assert (rerun.executed, rerun.reused) == (0, n)
    assert read_table(out / TABLE).equals(table, check_metadata=True)


def test_ctrl_c_and_a_killed_worker_then_a_rerun_does_only_the_missing_runs(cluster, tmp_path):
    """The campaign runs in its own process (the ``campaign`` CLI) on the cluster plus a third
    worker. While that worker is running a task it is killed (SIGKILL); Dask gives its runs to
    the others. As soon as a run is journaled the CLI gets Ctrl-C (SIGINT): it exits 130 with
    the finished runs journaled. The rerun executes exactly the runs the journal lacks, and the
    final table is complete and right (closed form; reproducibility is the test above)."""
    from distributed import Client

    dt_s = 1e-4          # 6000 steps, ~0.4-1 s per run: slow enough to interrupt (at 2e-4, one run in about ten
    # had all eight runs finished before the Ctrl-C arrived, and exited 0)
    path = campaign_file(tmp_path, dt_s=dt_s, name='interrupted')
    n = len(SPEEDS) * len(MASSES)
    extra = start_worker(cluster['scheduler_file'], name=f'doomed-{os.getpid()}')
    out = tmp_path / 'out'
    killed = interrupted = False
    try:
        with Client(cluster['address'], timeout='60s') as watcher:
            watcher.wait_for_workers(3, timeout=120)
            extra_address = next(a for a, w in watcher.scheduler_info()['workers'].items()
                                 if w.get('name') == f'doomed-{os.getpid()}')
            cli = subprocess.Popen([sys.executable, '-m', 'hil_campaign.cli', str(path), '--out', str(out),
                                    '--scheduler', cluster['address'], '--no-progress', '--no-plots'],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            journal = Journal(out / JOURNAL)
            deadline = time.monotonic() + 120.0
            while cli.poll() is None and time.monotonic() < deadline:
                if not killed and watcher.processing(workers=[extra_address]).get(extra_address):
                    extra.kill()                   # mid-run: it holds a task
                    killed = True
                if killed and journal.rows():
                    cli.send_signal(signal.SIGINT)
                    interrupted = True
                    break
                time.sleep(0.01)
            stdout, stderr = cli.communicate(timeout=60)
    finally:
        if extra.poll() is None:
            extra.kill()
        extra.wait(timeout=10)
    assert killed and interrupted, (stdout, stderr)
    assert cli.returncode == 130, (stdout, stderr)
    assert 'run the same command again' in stderr
    done = Journal(out / JOURNAL).rows()
    assert 1 <= len(done) < n, 'the interrupt came too late to test resuming'
    # no run was lost to the killed worker: the scheduler gave its runs to the others
    assert not any(r.get('engine_error') for r in done.values())
    # the partial table holds what finished
    assert read_table(out / TABLE).num_rows == len(done)

    campaign = load_campaign(path)
    result = run_campaign(campaign, out, scheduler=cluster['address'], progress=False, plots=False)
    assert (result.executed, result.reused, result.total) == (n - len(done), len(done), n)
    rows = rows_of(read_table(out / TABLE))
    assert [r['point'] for r in rows] == list(range(n))
    check_rows(rows)


def test_a_ctrl_c_lost_in_a_finalizer_still_stops_the_campaign_loop(monkeypatch):
    """Python runs the SIGINT handler wherever the main thread is. Inside a finalizer (a Dask
    future released by the garbage collector) the ``KeyboardInterrupt`` is only reported to
    ``sys.unraisablehook`` and execution goes on: CI once saw the campaign above run to its
    end and exit 0. :class:`CtrlC` remembers the signal, so the loop's next ``check`` raises.
    Real signals, real finalizer; the previous handler is back afterwards."""
    lost = []
    monkeypatch.setattr(sys, 'unraisablehook', lambda info: lost.append(info.exc_type))

    class ReleasedByTheCollector:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)     # the handler runs here, inside the finalizer

    before = signal.getsignal(signal.SIGINT)
    with CtrlC() as ctrl_c:
        ctrl_c.check()                             # nothing yet
        ReleasedByTheCollector()                   # dropped at once
        assert lost == [KeyboardInterrupt]         # Python swallowed the raise: we are still here
        with pytest.raises(KeyboardInterrupt):
            ctrl_c.check()
    assert signal.getsignal(signal.SIGINT) is before


def test_the_default_engine_is_a_local_cluster_of_processes_with_a_progress_bar(tmp_path):
    campaign = load_campaign(campaign_file(tmp_path, name='local'))
    bar = io.StringIO()
    result = run_campaign(campaign, tmp_path / 'out', workers=1, progress=True, progress_file=bar, plots=False)
    n = len(SPEEDS) * len(MASSES)
    assert (result.total, result.executed, result.failed) == (n, n, len(SPEEDS))
    text = bar.getvalue()
    assert f'{n}/{n}' in text and f'failed={len(SPEEDS)}' in text
    assert '<' in text and ('run/s' in text or 's/run' in text)         # elapsed<remaining (the ETA), rate
    pids = {json.loads(line)['worker'].split(':')[-1] for line in (tmp_path / 'out' / JOURNAL).read_text().splitlines()}
    assert pids and str(os.getpid()) not in pids                             # runs ran in a worker process
