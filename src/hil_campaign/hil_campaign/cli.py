"""``campaign FILE``: run a campaign file on Dask (``./dev run campaign envisat_capture_robustness``).

FILE is a path or the name of a campaign shipped with hil_campaign. Results go to
``runs/campaigns/<campaign>/`` (``--out``): ``results.parquet``, ``journal.jsonl``,
``summary.json`` and the plots. Rerunning the same command resumes: only the runs the
journal lacks are done. Exit status: 0 done, 1 invalid file, 130 interrupted (resumable).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hil_campaign.spec import CampaignError, load_campaign


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog='campaign', description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('file', nargs='?', help='campaign YAML, or the name of a shipped campaign')
    p.add_argument('--out', type=Path, help='output folder (default: runs/campaigns/<campaign>)')
    p.add_argument('--scheduler', metavar='tcp://HOST:8786',
                   help='address of an existing Dask scheduler (default: a local cluster of processes)')
    p.add_argument('--workers', type=int, help='local worker processes (default: one per CPU)')
    p.add_argument('--fresh', action='store_true', help='forget the journal: redo every run')
    p.add_argument('--no-plots', action='store_true', help='write the table only')
    p.add_argument('--no-progress', action='store_true', help='no progress bar')
    p.add_argument('--dry-run', action='store_true', help='validate the file and list the planned runs')
    p.add_argument('--list', action='store_true', help='list the shipped campaigns and the runners')
    return p


def _list() -> None:
    from hil_campaign.runners import RUNNERS
    from hil_campaign.spec import campaign_path

    folder = campaign_path('envisat_capture_robustness').parent
    print('shipped campaigns:')
    for f in sorted(folder.glob('*.yaml')):
        print(f'  {f.stem}')
    print('runners (runner.* options; metrics):')
    for r in RUNNERS.values():
        print(f'  {r.name}: {r.description}')
        for o in r.options:
            default = "the scenario's" if o.default is None else o.default
            print(f'      runner.{o.name} (default {default}): {o.description}')
        print(f"      metrics: {', '.join(r.metrics)}")


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        _list()
        return 0
    if not args.file:
        _parser().print_usage(sys.stderr)
        return 2
    try:
        campaign = load_campaign(args.file)
    except CampaignError as exc:
        print(f'campaign: {exc}', file=sys.stderr)
        return 1
    plan = campaign.plan()
    print(f'campaign {campaign.name}: runner {campaign.runner}, scenario {campaign.scenario.source}, '
          f'{plan.total()} runs{" at most (bisection)" if campaign.bisection else ""}', flush=True)
    if args.dry_run:
        for spec in plan.initial():
            print(f'  point {spec.point} iteration {spec.iteration} seed {spec.seed} {spec.params}')
        return 0
    from hil_campaign.engine import CampaignInterrupted, run_campaign

    out = args.out or Path('runs') / 'campaigns' / campaign.name
    try:
        result = run_campaign(campaign, out, scheduler=args.scheduler, workers=args.workers, fresh=args.fresh,
                              progress=False if args.no_progress else None, plots=not args.no_plots)
    except CampaignInterrupted as stop:
        r = stop.result
        print(f'interrupted: {r.total} runs finished ({r.executed} now, {r.reused} from the journal) written to '
              f'{r.table_path}; run the same command again to do the rest', file=sys.stderr)
        return 130
    print(f'{result.total} runs ({result.executed} executed, {result.reused} from the journal, {result.failed} failed) '
          f'in {result.wall_s:.1f} s -> {result.table_path}')
    for b in result.boundaries:
        print(f"  boundary of {campaign.bisection.parameter} at point {b['point']}: {b['boundary']:.6g} "
              f"(bracket [{b['low']:.6g}, {b['high']:.6g}]) {b['note']}")
    for p in result.plots:
        print(f'  plot: {p}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
