from setuptools import find_packages, setup

PACKAGE = 'hil_dynamics'


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
    description='Spacecraft dynamics rules (no rclpy): SE(3) conventions, rigid-body client and relative-to-nominal admittance after De Stefano et al. 2021 (seed 004).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
        ],
    },
)
