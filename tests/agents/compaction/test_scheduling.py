"""Cache-aware scheduling: a small compaction step is taken only when it costs no more per
call in cache than the large step."""

from agents.compaction.scheduling import Step, per_call_cost, small_step_pays

BUDGET = 10_000


def test_a_step_that_rewrites_more_costs_more_per_call():
    assert per_call_cost(Step(6_000, 5_000), BUDGET, 500) > per_call_cost(Step(6_000, 1_000), BUDGET, 500)


def test_a_small_step_that_rewrites_little_pays():
    assert small_step_pays(Step(8_000, 1_000), Step(6_000, 5_000), BUDGET, 500)


def test_a_small_step_just_under_the_budget_does_not_pay():
    assert not small_step_pays(Step(9_500, 3_000), Step(6_000, 5_000), BUDGET, 500)


def test_a_small_step_over_the_budget_never_pays():
    assert not small_step_pays(Step(10_001, 0), Step(6_000, 5_000), BUDGET, 500)


def test_no_growth_counts_as_one_token_a_call():
    assert per_call_cost(Step(6_000, 0), BUDGET, 0) == per_call_cost(Step(6_000, 0), BUDGET, 1)
