"""A demo picks its own ROS domain unless the user set one, so two demos on one host do not cross."""

from hil_common.network import DEMO_DOMAIN_RANGE, demo_domain_id


def test_a_set_domain_is_kept_and_an_unset_one_is_drawn_in_range():
    assert demo_domain_id({'ROS_DOMAIN_ID': '42'}) == 42
    drawn = set()
    for _ in range(200):
        env = {}
        domain = demo_domain_id(env)
        assert env['ROS_DOMAIN_ID'] == str(domain) and DEMO_DOMAIN_RANGE[0] <= domain <= DEMO_DOMAIN_RANGE[1]
        drawn.add(domain)
    assert len(drawn) > 50          # not one fixed domain
