import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'hil_campaign'


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
        *_share_tree('campaigns'),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='HIL stack maintainers',
    maintainer_email='hil-dev@example.invalid',
    description='Campaigns over the lockstep runners: parameter grids, random draws and boundary bisections on Dask distributed, one Parquet table per campaign.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'campaign = hil_campaign.cli:main',
        ],
    },
)
