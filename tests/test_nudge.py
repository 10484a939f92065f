"""Chapter 1's nudge test on recorded graphs: forward difference with h = 0.0001, its
printed figures to four decimals, and the replay's bounds."""

import math

import pytest

from engine import DEFAULT_NUDGE, Limits, ProgramError, Value, evaluate, measure_gradient, measure_leaf_gradients, parse


def run(source):
    return evaluate(parse(source))


def by_label(measured):
    return {leaf.label: gradient for leaf, gradient in measured.items() if leaf.label}


def f4(x):
    """The chapter's printout format, {x,8:F4}."""
    return f"{x:.4f}"


def test_default_nudge_is_one_ten_thousandth():
    assert DEFAULT_NUDGE == 0.0001


def test_power_at_3_measures_6_0001():
    measured = by_label(measure_leaf_gradients(run("a = 3; e = a ** 2")))
    assert f4(measured["a"]) == "6.0001"
    assert measured["a"] == pytest.approx(6.0001, abs=1e-9)


def test_addition_is_exact_to_four_decimals():
    measured = by_label(measure_leaf_gradients(run("a = 2; b = 3; a + b")))
    assert (f4(measured["a"]), f4(measured["b"])) == ("1.0000", "1.0000")
    assert measured["a"] == pytest.approx(1.0, abs=1e-9)


def test_multiplication_is_exact_to_four_decimals():
    measured = by_label(measure_leaf_gradients(run("a = 2; b = 3; a * b")))
    assert (f4(measured["a"]), f4(measured["b"])) == ("3.0000", "2.0000")
    assert measured["a"] == pytest.approx(3.0, abs=1e-9)
    assert measured["b"] == pytest.approx(2.0, abs=1e-9)


def test_exp_at_1_drifts_in_the_fourth_decimal():
    measured = by_label(measure_leaf_gradients(run("a = 1; exp(a)")))
    assert f4(math.e) == "2.7183"
    assert f4(measured["a"]) == "2.7184"


def test_log_at_4_hides_its_drift_below_the_fourth_decimal():
    measured = by_label(measure_leaf_gradients(run("a = 4; log(a)")))
    assert f4(measured["a"]) == "0.2500"
    assert measured["a"] != 0.25  # it is curved: the drift is there, just small
    assert measured["a"] == pytest.approx(0.25, abs=1e-5)


def test_halving_the_nudge_halves_the_error():
    out = run("a = 3; a ** 2")
    leaf = out._children[0]
    error = lambda h: measure_gradient(out, leaf, h) - 6.0  # noqa: E731
    assert error(1e-4) == pytest.approx(1e-4, rel=1e-6)
    assert error(5e-5) == pytest.approx(5e-5, rel=1e-5)


def test_every_leaf_is_measured_including_constants():
    out = run("a = 2; b = 3; c = a * b; L = c + a")
    measured = measure_leaf_gradients(out)
    assert sorted(leaf.label for leaf in measured) == ["a", "b"]
    assert by_label(measured)["a"] == pytest.approx(4.0, abs=1e-9)
    out = run("a = 2; a * 5")
    measured = measure_leaf_gradients(out)
    assert sorted(leaf.data for leaf in measured) == [2.0, 5.0]


def test_measured_agrees_with_backward_on_a_neuron():
    out = run("x = 0.5; w = -3; b = 2; n = x * w + b; o = n.tanh(); o * o + log(exp(o)) / 2")
    measured = measure_leaf_gradients(out, h=1e-6)
    out.backward()
    for leaf, gradient in measured.items():
        assert gradient == pytest.approx(leaf.grad, rel=1e-4, abs=1e-6)


def test_reused_leaf_is_nudged_everywhere_it_is_used():
    out = run("a = 1; b = a + a; c = b + b")
    assert by_label(measure_leaf_gradients(out))["a"] == pytest.approx(4.0, abs=1e-9)
    out = run("a = 3; a * a")
    assert by_label(measure_leaf_gradients(out))["a"] == pytest.approx(6.0001, abs=1e-9)


def test_replay_leaves_the_graph_untouched():
    out = run("a = 2; b = 3; c = a * b; L = c + a")
    before = [(n.data, n.grad) for n in (out, *out._children)]
    measure_leaf_gradients(out)
    assert [(n.data, n.grad) for n in (out, *out._children)] == before


def test_replay_uses_the_recorded_exponent_and_functions():
    for source, expected in [
        ("a = 2; a ** -1", -0.25),
        ("a = 0.5; relu(a)", 1.0),
        ("a = 0.3; tanh(a)", 1 - math.tanh(0.3) ** 2),
    ]:
        measured = by_label(measure_leaf_gradients(run(source), h=1e-7))
        assert measured["a"] == pytest.approx(expected, rel=1e-5)


def test_non_finite_graphs_measure_without_raising():
    measured = by_label(measure_leaf_gradients(run("a = 0; log(a)")))
    assert measured["a"] == math.inf  # log(0.0001) minus -Infinity
    measured = by_label(measure_leaf_gradients(run("a = -8; a ** 0.5")))
    assert math.isnan(measured["a"])


def test_check_evaluation_limit():
    out = run("a = 2; b = 3; c = a * b; L = c + a")  # 2 leaves x 4 nodes = 8 replays
    measure_leaf_gradients(out, limits=Limits(max_check_evaluations=8))
    with pytest.raises(ProgramError) as caught:
        measure_leaf_gradients(out, limits=Limits(max_check_evaluations=7))
    err = caught.value
    assert (err.line, err.column) == (1, 1)
    assert "more than the limit of 7 node evaluations" in err.message


def test_default_check_limit_bounds_a_wide_graph():
    x = Value(0.0)
    for i in range(1_500):
        x = x + Value(float(i))  # 1,501 leaves x 3,001 nodes > 1,000,000
    with pytest.raises(ProgramError, match="limit of 1,000,000"):
        measure_leaf_gradients(x)
