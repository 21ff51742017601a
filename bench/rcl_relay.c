/* A bare relay on rcl, in C: the floor of a compiled hot path's plumbing (bench_rcl_relay.py).
 *
 * One rcl wait set with one subscription; each geometry_msgs/WrenchStamped taken as serialized CDR,
 * its six doubles copied into a std_msgs/Float64MultiArray (empty layout, six doubles) published as
 * serialized CDR. No Python runs in the loop. Built by bench_rcl_relay.py with the venv's gcc flags
 * (the ROS wheels ship rcl's headers in .venv/include and librcl in .venv/lib) and loaded with ctypes
 * into a process that imported rclpy first, which loads rcl's dependencies.
 *
 * relay_main(in_topic, out_topic, warm_s, seconds, on_sample, result): relays for warm_s from the first sample,
 * then measures for seconds; result = {samples, CPU seconds of the process, wall seconds}. on_sample NULL: the
 * wrench is copied in C; else on_sample(wrench_in, out) makes the output's six doubles (a Python function through
 * ctypes: what a node with its plumbing in C and its rule in Python pays to enter Python once per sample) and a
 * non-zero return stops the relay. Returns 0, or 1 with the rcl error printed on stderr.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <geometry_msgs/msg/wrench_stamped.h>
#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rcl/wait.h>
#include <rmw/serialized_message.h>
#include <std_msgs/msg/float64_multi_array.h>

#define CHECK(call) do { rcl_ret_t ret_ = (call); if (ret_ != RCL_RET_OK) { \
    fprintf(stderr, "rcl_relay: %s failed: %s\n", #call, rcl_get_error_string().str); return 1; } } while (0)

static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static double monotonic_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef int (*on_sample_t)(const double *wrench_in, double *out);

int relay_main(const char *in_topic, const char *out_topic, double warm_s, double seconds, on_sample_t on_sample,
               double *result) {
  rcl_allocator_t allocator = rcl_get_default_allocator();
  rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&init_options, allocator));
  rcl_context_t context = rcl_get_zero_initialized_context();
  CHECK(rcl_init(0, NULL, &init_options, &context));
  rcl_node_t node = rcl_get_zero_initialized_node();
  rcl_node_options_t node_options = rcl_node_get_default_options();
  CHECK(rcl_node_init(&node, "bench_rcl_relay", "", &context, &node_options));
  rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
  rcl_subscription_options_t sub_options = rcl_subscription_get_default_options();
  CHECK(rcl_subscription_init(&sub, &node, ROSIDL_GET_MSG_TYPE_SUPPORT(geometry_msgs, msg, WrenchStamped), in_topic,
                              &sub_options));
  rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t pub_options = rcl_publisher_get_default_options();
  CHECK(rcl_publisher_init(&pub, &node, ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, Float64MultiArray), out_topic,
                           &pub_options));
  rcl_wait_set_t wait_set = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&wait_set, 1, 0, 0, 0, 0, 0, &context, allocator));
  rmw_serialized_message_t in = rmw_get_zero_initialized_serialized_message();
  CHECK(rmw_serialized_message_init(&in, 256, &allocator));

  /* Float64MultiArray in little-endian CDR: the 4-byte encapsulation header, then (stream offsets)
   * 0 layout.dim length 0, 4 layout.data_offset 0, 8 data length 6, 12 padding to 8, 16 the doubles. */
  unsigned char out_buffer[4 + 16 + 48];
  const unsigned int six = 6;
  memset(out_buffer, 0, sizeof out_buffer);
  out_buffer[1] = 0x01;
  memcpy(out_buffer + 4 + 8, &six, 4);
  rmw_serialized_message_t out = {out_buffer, sizeof out_buffer, sizeof out_buffer, allocator};

  long samples = 0, samples_warm = -1;
  double cpu_0 = 0.0, wall_0 = 0.0, start = monotonic_s();
  while (rcl_context_is_valid(&context)) {
    double now = monotonic_s();
    if (samples == 0) {
      start = now;                  /* the warm-up counts from the first sample */
    }
    if (samples_warm < 0 && samples > 0 && now - start >= warm_s) {
      samples_warm = samples;
      cpu_0 = cpu_s();
      wall_0 = now;
    }
    if (samples_warm >= 0 && now - wall_0 >= seconds) {
      break;
    }
    CHECK(rcl_wait_set_clear(&wait_set));
    CHECK(rcl_wait_set_add_subscription(&wait_set, &sub, NULL));
    rcl_ret_t ret = rcl_wait(&wait_set, RCL_MS_TO_NS(200));
    if (ret == RCL_RET_TIMEOUT) {
      continue;
    }
    CHECK(ret);
    for (;;) {
      rmw_message_info_t info;
      ret = rcl_take_serialized_message(&sub, &in, &info, NULL);
      if (ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
        break;
      }
      CHECK(ret);
      if (in.buffer_length < 4 + 48) {
        fprintf(stderr, "rcl_relay: a wrench of %zu bytes\n", in.buffer_length);
        return 1;
      }
      if (on_sample == NULL) {
        memcpy(out_buffer + 4 + 16, in.buffer + in.buffer_length - 48, 48);   /* the wrench: the last six doubles */
      } else {
        double wrench[6], out_values[6];
        memcpy(wrench, in.buffer + in.buffer_length - 48, 48);
        if (on_sample(wrench, out_values) != 0) {
          fprintf(stderr, "rcl_relay: on_sample stopped the relay\n");
          return 1;
        }
        memcpy(out_buffer + 4 + 16, out_values, 48);
      }
      CHECK(rcl_publish_serialized_message(&pub, &out, NULL));
      samples++;
    }
  }
  result[0] = (double)(samples - (samples_warm < 0 ? samples : samples_warm));
  result[1] = cpu_s() - cpu_0;
  result[2] = monotonic_s() - wall_0;
  CHECK(rmw_serialized_message_fini(&in));
  CHECK(rcl_wait_set_fini(&wait_set));
  CHECK(rcl_publisher_fini(&pub, &node));
  CHECK(rcl_subscription_fini(&sub, &node));
  CHECK(rcl_node_fini(&node));
  CHECK(rcl_shutdown(&context));
  CHECK(rcl_context_fini(&context));
  CHECK(rcl_init_options_fini(&init_options));
  return 0;
}
