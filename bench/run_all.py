"""Run every benchmark (bench/bench_*.py, each with a main()) and print its figures.

Benchmarks print measurements and targets; they never fail on a missed target (that is
what the printed figure is for) and are not part of the test suite.
Usage: ./dev bench [name-substring ...] [--option ...]; the long soak (bench_soak, 30 min) only when named.
The names are the words before the first option; the options and their values (``--only relay``) are the
benchmarks' own (each parses what it knows from ``sys.argv``) and select no benchmark.
"""

import importlib.util
import sys
import time
from pathlib import Path


#: Benchmarks that take long: run only when named.
LONG = {'bench_soak': '30 min (HIL_SOAK_MINUTES)'}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    first_option = next((i for i, a in enumerate(argv) if a.startswith('-')), len(argv))
    argv = argv[:first_option]          # the names: '--only relay' selects an arrangement, not bench_rcl_relay
    here = Path(__file__).resolve().parent
    failures = 0
    for path in sorted(here.glob('bench_*.py')):
        if argv and not any(a in path.stem for a in argv):
            continue
        if not argv and path.stem in LONG:
            print(f'=== {path.stem}: skipped (it runs for {LONG[path.stem]}; ./dev bench {path.stem[6:]} runs it)')
            continue
        print(f'=== {path.stem}', flush=True)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        t0 = time.perf_counter()
        try:
            spec.loader.exec_module(module)
            module.main()
        except Exception as exc:  # noqa: BLE001 - report and go on with the other benchmarks
            failures += 1
            print(f'!!! {path.stem} failed: {exc!r}', flush=True)
        print(f'--- {path.stem} took {time.perf_counter() - t0:.1f} s', flush=True)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
