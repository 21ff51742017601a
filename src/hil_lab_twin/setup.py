from setuptools import find_packages, setup

PACKAGE = 'hil_lab_twin'


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='HIL stack maintainers',
    maintainer_email='hil-dev@example.invalid',
    description='MuJoCo twin of a HIL facility (client and servicer robots, hexapod, F/T sensors) exposing ros2_control-style topics and RDT/UDP sensors.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'lab_twin_node = hil_lab_twin.lab_twin_node:main',
            'lab_twin_snapshot = hil_lab_twin.snapshot:main',
        ],
    },
)
