"""Gang placement by scale-up domain: one domain when one has room (best fit), else fewest domains."""

from __future__ import annotations

import numpy as np

from twin.workload.placement import choose_gang, largest_domain


def test_best_fit_single_domain():
    # free devices: domain 0 has 8, domain 1 has 4, domain 2 has 6 → a gang of 5 goes to domain 2
    dom = np.array([0] * 8 + [1] * 4 + [2] * 6)
    pick = choose_gang(dom, 5)
    assert set(dom[pick]) == {2} and pick.size == 5
    assert list(pick) == list(range(12, 17))  # layout order inside the domain


def test_ties_go_to_layout_order():
    dom = np.array([3] * 4 + [1] * 4)
    assert set(dom[choose_gang(dom, 4)]) == {3}


def test_fewest_domains_fullest_first():
    dom = np.array([0] * 3 + [1] * 8 + [2] * 6)
    pick = choose_gang(dom, 12)  # 8 + 4 of 6: two domains, not three
    assert sorted(set(dom[pick])) == [1, 2] and pick.size == 12
    assert np.all(np.diff(pick) > 0)


def test_one_domain_refuses_to_span():
    dom = np.array([0] * 8 + [1] * 8)
    assert choose_gang(dom, 9, one_domain=True) is None
    assert choose_gang(dom, 9).size == 9
    assert choose_gang(dom, 17) is None
    assert largest_domain(dom) == 8
