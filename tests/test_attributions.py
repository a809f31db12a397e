"""Tests of explainopt.attributions (Raedler et al. 2025): losses, the SOCPs, agreement rates.

The algorithm works on any points and gradients; the paper's functions and grids are tested with the
chapter (tests/test_chapter_optimizing_explanations.py).
"""

import cvxpy as cp
import numpy as np
import pytest

from explainopt import attributions as A


def square_grid(dimension: int, per_axis: int) -> np.ndarray:
    axis = np.linspace(-5, 5, per_axis)
    return np.stack([m.ravel() for m in np.meshgrid(*([axis] * dimension), indexing="ij")], axis=1)


def cubic_gradient(X):
    """∇f of f(x) = Σ_d 0.35 x_d³."""
    return 1.05 * X**2


# --------------------------------------------------------------------------- neighbourhoods and losses (Table 2)

def test_grid_spacing_is_the_smallest_pairwise_distance():
    assert A.grid_spacing(square_grid(2, 9)) == pytest.approx(1.25)
    assert A.grid_spacing(np.array([[0.0], [3.0], [1.0]])) == pytest.approx(1.0)


def test_neighbourhood_counts_include_the_point_itself():
    X = square_grid(1, 5)  # -5, -2.5, 0, 2.5, 5
    nb = A.neighbourhood(X, radius=2.5)
    assert nb.n_pairs == 4
    np.testing.assert_array_equal(nb.counts, [2, 3, 3, 3, 2])
    np.testing.assert_allclose(nb.difference @ np.arange(5.0), [-1, -1, -1, -1])


def test_losses_on_a_hand_computed_line():
    X = np.array([[0.0], [1.0], [3.0]])
    E = np.array([[0.0], [2.0], [2.0]])
    # u = 2: neighbours 0-1 (dist 1) and 1-2 (dist 2); |dE| = 2 and 0.
    assert A.max_sensitivity_loss(E, X, radius=2) == pytest.approx(2 + 2 + 0)
    assert A.local_stability_loss(E, X, radius=2) == pytest.approx(2 + 2 + 0)
    assert A.average_sensitivity_loss(E, X, radius=2) == pytest.approx(2 / 2 + 2 / 3 + 0)
    assert A.average_sensitivity_loss(E, X, radius=2, squared=True) == pytest.approx(4 / 2 + 4 / 3)
    assert A.faithfulness_loss(E, np.zeros_like(E)) == pytest.approx(8)


@pytest.mark.parametrize("metric", A.ALL_METRICS)
@pytest.mark.parametrize("dimension,per_axis,radius", [(1, 30, 1.0), (2, 5, 3.0), (3, 3, 5.0)])
def test_cvxpy_loss_equals_numpy_loss_at_a_fixed_explanation(metric, dimension, per_axis, radius, rng):
    X = square_grid(dimension, per_axis)
    E0 = rng.normal(size=X.shape)
    E = cp.Variable(X.shape)
    loss = A.robustness_expression(E, X, radius=radius, metric=metric)
    problem = cp.Problem(cp.Minimize(loss.expression), loss.constraints + [E == E0])
    problem.solve(solver="CLARABEL")
    assert problem.value == pytest.approx(A.robustness_loss(E0, X, radius=radius, metric=metric), rel=1e-6)
    assert A.faithfulness_expression(cp.Constant(E0), np.zeros_like(E0)).value == pytest.approx(np.sum(E0**2))


def test_max_faithfulness_loss_is_that_of_the_mean_gradient():
    G = np.array([[1.0, 0.0], [3.0, 2.0]])
    assert A.max_faithfulness_loss(G) == pytest.approx(2 * (1 + 1))


# --------------------------------------------------------------------------- the SOCPs (Section 3.2)

PROBLEMS = [(1, 20, 1.0), (1, 20, 3.0), (2, 5, 3.0)]  # (D, points per axis, u)


@pytest.fixture(scope="module")
def solved():
    """Solutions for f = Σ 0.35 x³ on small grids, every metric, both constraint variants."""
    out = []
    for dimension, per_axis, radius in PROBLEMS:
        X = square_grid(dimension, per_axis)
        G = cubic_gradient(X)
        eta = 0.2 * A.max_faithfulness_loss(G)
        for metric in A.METRICS:
            for pointwise in (False, True):
                out.append(A.solve_explanations(X, G, radius=radius, metric=metric, eta=eta, pointwise=pointwise))
    return out


def test_every_small_problem_is_solved_and_names_its_solver(solved):
    assert len(solved) == len(PROBLEMS) * 3 * 2
    for r in solved:
        assert r.status == "optimal" and r.has_solution
        assert r.solver and r.fallback_from is None
        assert r.explanations.shape == r.X.shape


def test_faithfulness_constraint_is_active_at_global_solutions(solved):
    for r in solved:
        if not r.pointwise:
            assert r.faithfulness == pytest.approx(r.eta, rel=1e-5)
            assert r.faithfulness_ratio == pytest.approx(1, rel=1e-5)


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
            loss = A.robustness_loss(candidate, r.X, radius=r.radius, metric=r.metric)
            assert r.robustness <= loss * (1 + 1e-6) + 1e-8


def test_squared_average_sensitivity_solves_and_matches_its_numpy_loss():
    X = square_grid(1, 30)
    G = 2 * X
    r = A.solve_explanations(X, G, radius=2, metric="average_sensitivity_squared", eta=0.2 * A.max_faithfulness_loss(G))
    assert r.status == "optimal"
    assert r.objective == pytest.approx(r.robustness, rel=1e-5)
    assert r.faithfulness_ratio == pytest.approx(1, rel=1e-5)


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
    np.testing.assert_array_equal(A.top_features(E, rtol=1e-6), [[True, True]])


def test_agreement_in_one_dimension_is_one(rng):
    assert A.agreement_rate(rng.normal(size=(10, 1)), rng.normal(size=(10, 1))) == 1.0


def test_chance_agreement_counts_tied_top_features():
    G = np.array([[1.0, 1.0], [2.0, 1.0], [3.0, -3.0], [1.0, 0.0]])
    assert A.chance_agreement(G, 3) == pytest.approx((0.25 + 1 + 0.25 + 1) / 4)
    assert A.chance_agreement(G, 2) == pytest.approx((0.5 + 1 + 0.5 + 1) / 4)
    assert A.tied_top_share(G) == pytest.approx(0.5)


# --------------------------------------------------------------------------- bad inputs

def test_bad_inputs_raise_clear_errors():
    X = square_grid(1, 20)
    G = cubic_gradient(X)
    with pytest.raises(ValueError, match="unknown robustness metric"):
        A.solve_explanations(X, G, radius=1, metric="smoothness", eta=1.0)
    with pytest.raises(ValueError, match="below the grid step"):
        A.solve_explanations(X, G, radius=0.1, metric="max_sensitivity", eta=1.0)
    with pytest.raises(ValueError, match="eta"):
        A.solve_explanations(X, G, radius=1, metric="max_sensitivity", eta=0.0)
    with pytest.raises(ValueError, match="shape"):
        A.solve_explanations(X, G[:5], radius=1, metric="max_sensitivity", eta=1.0)
    with pytest.raises(TypeError):
        A.neighbourhood(X, 1.0)  # the radius is keyword-only
    with pytest.raises(ValueError, match="radius"):
        A.neighbourhood(X, radius=-1)
    with pytest.raises(TypeError, match="radius"):
        A.neighbourhood(X, radius="1")
    with pytest.raises(ValueError, match="non-empty 2-d"):
        A.as_points(np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        A.max_sensitivity_loss(np.zeros((3, 2)), np.zeros((4, 2)), radius=1)
    with pytest.raises(ValueError, match="NaN"):
        A.faithfulness_loss(np.array([[np.nan]]), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="at least two"):
        A.agreement_rate(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="rtol"):
        A.top_features(np.zeros((2, 2)), rtol=-1)
    with pytest.raises(ValueError, match="n_explanations"):
        A.chance_agreement(np.zeros((2, 2)), 1)
