import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'hil_admittance'


def _share_tree(folder):
    """data_files entries installing every file below `folder` into share/<package>/folder."""
    entries = {}
    for path in glob(os.path.join(folder, '**', '*'), recursive=True):
        if os.path.isfile(path) and '__pycache__' not in path:
            target = os.path.join('share', PACKAGE, os.path.dirname(path))
            entries.setdefault(target, []).append(path)
    return sorted(entries.items())


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        *_share_tree('config'),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='HIL stack maintainers',
    maintainer_email='hil-dev@example.invalid',
    description='Admittance nodes: thin ROS shells over the hil_dynamics client and servicer rules (seed 004 Eqs. 11, 18, 22, 23).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'client_admittance_node = hil_admittance.client_admittance_node:main',
            'servicer_admittance_node = hil_admittance.servicer_admittance_node:main',
            'obsw_controller_node = hil_admittance.obsw_controller_node:main',
        ],
    },
)
