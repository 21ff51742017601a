#!/usr/bin/env bash
# Source ROS 2 Jazzy and the workspace; apply the loopback-only DDS profile unless the
# lab opted into its network with HIL_NETWORK=lab (docs/network.md).
set -e
source /opt/ros/jazzy/setup.bash
source /ws/install/setup.bash
if [ "${HIL_NETWORK:-loopback}" != "lab" ]; then
  export HIL_NETWORK=loopback
  export FASTRTPS_DEFAULT_PROFILES_FILE="$(ros2 pkg prefix hil_common)/share/hil_common/config/fastdds_loopback.xml"
fi
exec "$@"
