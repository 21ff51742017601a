from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'hil_snare'


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/scenarios', sorted(glob('scenarios/*.yaml'))),
        ('share/' + PACKAGE + '/launch', sorted(glob('launch/*.launch.py'))),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='HIL stack maintainers',
    maintainer_email='hil-dev@example.invalid',
    description='Snare-wire capture simulators: flexible-joint SSRMS and JEMRMS, wire-grapple contact, camera-frame control, HTV capture (seeds 000 and 002).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'snare_demo = hil_snare.demo:main',
            'snare_servicer_node = hil_snare.snare_servicer_node:main',
            'snare_twin_node = hil_snare.snare_twin_node:main',
        ],
    },
)
