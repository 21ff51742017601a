"""Campaign engine (hil_campaign on Dask distributed): throughput, per-run overhead, shipped size.

Prints:
* throughput of a CPU-bound campaign (the ``client_unforced`` runner, ~1 s per run) on a
  LocalCluster of 1 and of 2 worker processes (started and warmed before the clock starts),
  and the speed-up (target >= 1.6x with 2 workers on a 2-core machine);
* the per-run overhead of the engine: runs/s for a trivial run (the same runner with zero
  duration: scenario load and validation, Dask round trip, journal), and the engine's share
  (wall time per run minus the time inside the run);
* the wall time of the shipped Envisat robustness campaign (``envisat_capture_robustness``)
  on the default engine (a LocalCluster sized to the machine, started by the campaign).

docs/campaigns.md turns these into an estimate for a 1000-run campaign on N workers.
The load average is printed: on a shared machine the figures include the other load.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import yaml

N_CPU_RUNS = 12
N_TRIVIAL_RUNS = 60


def _campaign(folder: Path, name: str, n: int, duration_s: float, dt_s: float):
    from hil_campaign.spec import load_campaign

    data = {'campaign': name, 'runner': 'client_unforced', 'seed': 1,
            'overrides': {'runner.duration_s': duration_s, 'runner.dt_s': dt_s},
            'parameters': {'grid': {'client.twist_client_body_0.0': [0.001 * i for i in range(n)]}}}
    path = folder / f'{name}.yaml'
    path.write_text(yaml.safe_dump(data))
    return load_campaign(path)


def _cluster(n_workers: int):
    import logging

    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host='127.0.0.1',
                        dashboard_address=None, scheduler_kwargs={'dashboard_address': '127.0.0.1:0'},
                        silence_logs=logging.ERROR, preload=['hil_campaign.preload'])


def _timed_campaign(campaign, out: Path, address: str):
    from hil_campaign.engine import run_campaign

    t0 = time.perf_counter()
    result = run_campaign(campaign, out, scheduler=address, progress=False, plots=False)
    wall = time.perf_counter() - t0
    inside = [json.loads(line)['wall_s'] for line in (out / 'journal.jsonl').read_text().splitlines()]
    return result, wall, inside


def throughput(folder: Path) -> None:
    rates = {}
    for n_workers in (1, 2):
        with _cluster(n_workers) as cluster:
            # warm-up campaign (first runs per worker), then the measured one
            _timed_campaign(_campaign(folder, f'warm{n_workers}', n_workers * 2, 0.2, 2e-4), folder / f'warm{n_workers}',
                            cluster.scheduler_address)
            campaign = _campaign(folder, f'cpu{n_workers}', N_CPU_RUNS, 1.0, 3e-5)
            result, wall, inside = _timed_campaign(campaign, folder / f'cpu{n_workers}', cluster.scheduler_address)
        rates[n_workers] = result.executed / wall
        print(f'  {n_workers} worker(s): {result.executed} runs of {statistics.median(inside):.2f} s (median inside the '
              f'run) in {wall:5.1f} s -> {rates[n_workers]:5.2f} runs/s')
    speedup = rates[2] / rates[1]
    print(f'  speed-up with 2 workers: {speedup:.2f}x (target >= 1.6x: {"met" if speedup >= 1.6 else "MISSED"})')


def overhead(folder: Path) -> None:
    with _cluster(1) as cluster:
        _timed_campaign(_campaign(folder, 'warm_trivial', 4, 0.0, 0.01), folder / 'warm_trivial', cluster.scheduler_address)
        campaign = _campaign(folder, 'trivial', N_TRIVIAL_RUNS, 0.0, 0.01)
        result, wall, inside = _timed_campaign(campaign, folder / 'trivial', cluster.scheduler_address)
    per_run = wall / result.executed
    print(f'  trivial runs, 1 worker: {result.executed / wall:5.1f} runs/s ({per_run * 1e3:.0f} ms per run: '
          f'{statistics.mean(inside) * 1e3:.0f} ms inside the run (scenario load and validation), '
          f'{(per_run - statistics.mean(inside)) * 1e3:.0f} ms engine: Dask round trip, journal)')


def envisat(folder: Path) -> None:
    from hil_campaign.engine import available_cpus, run_campaign
    from hil_campaign.results import read_table
    from hil_campaign.spec import load_campaign

    campaign = load_campaign('envisat_capture_robustness')
    t0 = time.perf_counter()
    result = run_campaign(campaign, folder / 'envisat', progress=False)
    wall = time.perf_counter() - t0
    inside = [json.loads(line)['wall_s'] for line in (folder / 'envisat' / 'journal.jsonl').read_text().splitlines()]
    captured = sum(1 for r in read_table(result.table_path).to_pylist() if r['capture_success'])
    print(f'  envisat_capture_robustness: {result.executed} runs ({result.failed} failed, {captured} captured) on '
          f'{available_cpus()} local workers in {wall:.0f} s (cluster start and plots included); per run '
          f'{statistics.mean(inside):.0f} s mean, {max(inside):.0f} s max')


def main() -> None:
    print(f'campaign engine (Dask distributed), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs:')
    with tempfile.TemporaryDirectory(prefix='bench_campaign_') as tmp:
        folder = Path(tmp)
        throughput(folder)
        overhead(folder)
        if os.environ.get('HIL_BENCH_CAMPAIGN_SKIP_ENVISAT') != '1':
            envisat(folder)
        else:
            print('  envisat_capture_robustness: skipped (HIL_BENCH_CAMPAIGN_SKIP_ENVISAT=1)')


if __name__ == '__main__':
    main()
