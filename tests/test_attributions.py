"""Tests of explainopt.attributions (Raedler et al. 2025): losses, the SOCPs, agreement rates."""

import cvxpy as cp
import numpy as np
import pytest

from explainopt import attributions as A
from explainopt import experiments


# --------------------------------------------------------------------------- Table 1 and Appendix A

@pytest.mark.parametrize("name", list(A.FUNCTIONS))
def test_gradients_match_central_finite_differences(name, rng):
    f = A.FUNCTIONS[name]
    X = rng.uniform(-5, 5, size=(40, 3))
    h = 1e-6
    numeric = np.stack([(f(X + h * e) - f(X - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(f.gradient(X), numeric, rtol=1e-6, atol=1e-5)


def test_grids_have_the_paper_sizes_and_are_equidistant_on_the_box():
    for d, n in {1: 80, 2: 81, 3: 125, 4: 81}.items():
        X = A.grid(d)
        assert X.shape == (n, d)
        assert X.min() == -5 and X.max() == 5
        assert len(np.unique(X, axis=0)) == n
    assert A.grid_spacing(A.grid(2)) == pytest.approx(1.25)


def test_admissible_radii_follow_appendix_a():
    assert A.admissible_radii(1) == [1, 2, 3, 5, 10]
    assert A.admissible_radii(2) == [2, 3, 5, 10]
    assert A.admissible_radii(3) == [3, 5, 10]
    assert A.admissible_radii(4) == [5, 10]


# --------------------------------------------------------------------------- losses (Table 2)

def test_neighbourhood_counts_include_the_point_itself():
    X = A.grid(1, 5)  # -5, -2.5, 0, 2.5, 5
    nb = A.neighbourhood(X, 2.5)
    assert nb.n_pairs == 4
    np.testing.assert_array_equal(nb.counts, [2, 3, 3, 3, 2])


def test_losses_on_a_hand_computed_line():
    X = np.array([[0.0], [1.0], [3.0]])
    E = np.array([[0.0], [2.0], [2.0]])
    # u = 2: neighbours 0-1 (dist 1) and 1-2 (dist 2); |dE| = 2 and 0.
    assert A.max_sensitivity_loss(E, X, 2) == pytest.approx(2 + 2 + 0)
    assert A.local_stability_loss(E, X, 2) == pytest.approx(2 + 2 + 0)
    assert A.average_sensitivity_loss(E, X, 2) == pytest.approx(2 / 2 + 2 / 3 + 0)
    assert A.average_sensitivity_loss(E, X, 2, squared=True) == pytest.approx(4 / 2 + 4 / 3)
    assert A.faithfulness_loss(E, np.zeros_like(E)) == pytest.approx(8)


@pytest.mark.parametrize("metric", A.ALL_METRICS)
@pytest.mark.parametrize("dimension,radius", [(1, 1.0), (2, 3.0), (3, 5.0)])
def test_cvxpy_loss_equals_numpy_loss_at_a_fixed_explanation(metric, dimension, radius, rng):
    X = A.grid(dimension, {1: 30, 2: 25, 3: 27}[dimension])
    E0 = rng.normal(size=X.shape)
    E = cp.Variable(X.shape)
    loss = A.robustness_expression(E, X, radius, metric)
    problem = cp.Problem(cp.Minimize(loss.expression), loss.constraints + [E == E0])
    problem.solve(solver="CLARABEL")
    assert problem.value == pytest.approx(A.robustness_loss(E0, X, radius, metric), rel=1e-6)
    assert A.faithfulness_expression(cp.Constant(E0), np.zeros_like(E0)).value == pytest.approx(np.sum(E0**2))


# --------------------------------------------------------------------------- the SOCPs

@pytest.fixture(scope="module")
def solved():
    """A small grid of solved problems shared by the tests below."""
    configs = A.experiment_configs(["x^3", "sin x"], [1, 2], [1, 3], pointwise=(False, True))
    return experiments.run_grid(A.explanation_run, configs, progress=False)


def test_every_small_problem_is_solved(solved):
    assert len(solved) == 2 * 2 * 3 * (2 + 1)  # (1 with u = 1 and 3) + (2 with u = 3)
    assert all(r.status == "optimal" and r.has_solution for r in solved)


def test_faithfulness_constraint_is_active_at_global_solutions(solved):
    for r in solved:
        if not r.pointwise:
            assert r.faithfulness == pytest.approx(r.eta, rel=1e-5)


def test_pointwise_solutions_respect_every_pointwise_bound(solved):
    for r in solved:
        if r.pointwise:
            assert r.max_pointwise_faithfulness <= r.eta / len(r.X) * (1 + 1e-5)
            assert r.faithfulness <= r.eta * (1 + 1e-5)


def test_solver_objective_equals_numpy_loss_at_the_solution(solved):
    for r in solved:
        assert r.objective == pytest.approx(r.robustness, rel=1e-5, abs=1e-6)


def test_solution_beats_the_gradient_and_the_scaled_mean_explanation(solved):
    for r in solved:
        if r.pointwise:
            continue
        # Two feasible candidates: E = ∇f, and E = ∇f + c(mean − ∇f) with L_faithful = c² L^max = η.
        G = r.gradients
        shrunk = G + np.sqrt(0.2) * (G.mean(axis=0) - G)
        assert A.faithfulness_loss(shrunk, G) == pytest.approx(r.eta)
        for candidate in (G, shrunk):
            assert r.robustness <= A.robustness_loss(candidate, r.X, r.radius, r.metric) * (1 + 1e-6) + 1e-8


def test_squared_average_sensitivity_solves_and_matches_its_numpy_loss():
    r = A.optimize_explanations("x^2", 1, 2, "average_sensitivity_squared")
    assert r.status == "optimal"
    assert r.objective == pytest.approx(r.robustness, rel=1e-5)
    assert r.faithfulness_ratio == pytest.approx(1, rel=1e-5)


def test_max_faithfulness_loss_is_that_of_the_mean_gradient():
    G = np.array([[1.0, 0.0], [3.0, 2.0]])
    assert A.max_faithfulness_loss(G) == pytest.approx(2 * (1 + 1))


# --------------------------------------------------------------------------- agreement

def test_agreement_rate_on_hand_made_explanations():
    E1 = np.array([[3.0, 1.0], [1.0, 2.0], [-5.0, 1.0], [0.0, 1.0]])
    E2 = np.array([[2.0, 1.0], [2.0, 1.0], [1.0, -4.0], [0.0, 2.0]])
    E3 = np.array([[1.0, 0.5], [0.0, 1.0], [1.0, 2.0], [0.0, 3.0]])
    assert A.agreement_rate(E1, E2) == pytest.approx(2 / 4)  # points 0 and 3
    assert A.agreement_rate(E1, E3) == pytest.approx(3 / 4)  # |.| matters: point 2 disagrees
    assert A.agreement_rate(E1, E2, E3) == pytest.approx(2 / 4)
    assert A.agreement_rate(E1, E1) == 1.0


def test_agreement_uses_absolute_values_and_exact_ties_count_for_both_features():
    E = np.array([[-3.0, 1.0], [2.0, 2.0]])
    F = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert A.agreement_rate(E, F) == 1.0


def test_relative_tolerance_absorbs_round_off_between_tied_features():
    E = np.array([[1.0, 1.0 + 1e-12]])
    F = np.array([[1.0 + 1e-12, 1.0]])
    assert A.agreement_rate(E, F) == 0.0
    assert A.agreement_rate(E, F, rtol=1e-6) == 1.0


def test_agreement_in_one_dimension_is_one(rng):
    assert A.agreement_rate(rng.normal(size=(10, 1)), rng.normal(size=(10, 1))) == 1.0


def test_chance_agreement_counts_tied_top_features():
    G = np.array([[1.0, 1.0], [2.0, 1.0], [3.0, -3.0], [1.0, 0.0]])
    assert A.chance_agreement(G, 3) == pytest.approx((0.25 + 1 + 0.25 + 1) / 4)
    assert A.tied_top_share(G) == pytest.approx(0.5)


def test_agreement_table_has_pairwise_all_and_gradient_columns(solved):
    table = A.agreement_table(solved)
    assert len(table) == 2 * 2 * 3  # variants x functions x (D, u) cells
    assert {"max_sensitivity vs local_stability", "all three", "average_sensitivity vs gradient"} <= set(table)
    assert (table.loc[table.D == 1, "all three"] == 1).all()
    pairwise = table[[c for c in table if " vs " in c and "gradient" not in c]].min(axis=1)
    assert (table["all three"] <= pairwise + 1e-12).all()


# --------------------------------------------------------------------------- bad inputs

def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown function"):
        A.optimize_explanations("x^4", 1, 1, "max_sensitivity")
    with pytest.raises(ValueError, match="unknown robustness metric"):
        A.optimize_explanations("x^2", 1, 1, "smoothness")
    with pytest.raises(ValueError, match="below the grid step"):
        A.optimize_explanations("x^2", 4, 3, "max_sensitivity")
    with pytest.raises(ValueError, match="perfect power"):
        A.grid(2, 80)
    with pytest.raises(ValueError, match="dimension"):
        A.grid(0)
    with pytest.raises(ValueError, match="radius"):
        A.neighbourhood(A.grid(1), -1)
    with pytest.raises(TypeError, match="radius"):
        A.neighbourhood(A.grid(1), "1")
    with pytest.raises(ValueError, match="shape"):
        A.max_sensitivity_loss(np.zeros((3, 2)), np.zeros((4, 2)), 1)
    with pytest.raises(ValueError, match="NaN"):
        A.faithfulness_loss(np.array([[np.nan]]), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="at least two"):
        A.agreement_rate(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="eta_fraction"):
        A.optimize_explanations("x^2", 1, 1, "max_sensitivity", eta_fraction=1.5)
