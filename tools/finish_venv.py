"""Finish an editable install of the ament_python packages into a virtual environment.

Run by ``./dev setup`` after ``pip install -e src/<pkg>`` and ``setup.py install_data``:

* the ROS ``setup.cfg`` of each package (``[develop] script_dir=$base/lib/<pkg>``) puts
  node executables in ``<venv>/lib/<pkg>/``, where launch_ros looks for them; this links
  each one into ``<venv>/bin`` so it is also on PATH;
* writes ``hil_ament_prefix.pth`` so that every interpreter of the venv has
  ``AMENT_PREFIX_PATH`` include the venv (``get_package_share_directory`` works there
  without sourcing anything).
"""

import os
import sys
import sysconfig
from pathlib import Path


def link_executables(venv: Path) -> list[str]:
    linked = []
    for marker in sorted((venv / 'share' / 'ament_index' / 'resource_index' / 'packages').glob('hil_*')):
        lib_dir = venv / 'lib' / marker.name
        if not lib_dir.is_dir():
            continue
        for exe in sorted(lib_dir.iterdir()):
            if exe.is_file() and os.access(exe, os.X_OK):
                target = venv / 'bin' / exe.name
                if target.is_symlink() or target.exists():
                    target.unlink()
                target.symlink_to(os.path.relpath(exe, target.parent))
                linked.append(f'{marker.name}/{exe.name}')
    return linked


PTH = (
    "import os, sys; "
    "p = os.path.join(sys.prefix); "
    "a = os.environ.get('AMENT_PREFIX_PATH', ''); "
    "os.environ['AMENT_PREFIX_PATH'] = a if p in a.split(os.pathsep) else (p + (os.pathsep + a if a else ''))\n"
)


def main() -> int:
    venv = Path(sys.argv[1]).resolve()
    linked = link_executables(venv)
    site = Path(sysconfig.get_paths(vars={'base': str(venv), 'platbase': str(venv)})['purelib'])
    (site / 'hil_ament_prefix.pth').write_text(PTH)
    print(f'[dev] executables in <venv>/lib/<package>/ linked to <venv>/bin: {", ".join(linked) or "none"}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
