"""The network trainer: torch's Adam and loss, computed with arithmetic that gives the same bits on any CPU."""

import hashlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from explainopt.training import exact_exp, fixed_matmul, fixed_sum, initial_layers, network_logits, train_relu_network


def test_exact_exp_is_within_two_ulp_of_the_correctly_rounded_exp(rng):
    x = np.r_[rng.uniform(-700, 700, 20_000), rng.uniform(-5, 5, 20_000), 0.0, 1.0, -1.0]
    ours = exact_exp(x)
    reference = np.array([math.exp(v) for v in x])
    assert np.all(np.abs(ours - reference) <= 2 * np.spacing(reference))


def test_fixed_sum_and_matmul_agree_with_exact_sums(rng):
    A, B = rng.normal(size=(7, 33)), rng.normal(size=(33, 5))
    exact = np.array([[math.fsum(A[i] * B[:, j]) for j in range(5)] for i in range(7)])
    assert np.allclose(fixed_matmul(A, B), exact, rtol=0, atol=1e-13)
    # the fixed pairwise order (1e16 + -1e16) + (1 + 1), where a left-to-right sum loses a 1
    assert fixed_sum(np.array([1e16, 1.0, -1e16, 1.0])) == 2.0


def _torch_adam(layers, X, y, *, batches, learning_rate, weight_decay):
    """The same steps with torch (float64): nn.Linear layers, BCEWithLogitsLoss + L2 term, optim.Adam."""
    modules = []
    for W, b in layers:
        linear = torch.nn.Linear(W.shape[1], W.shape[0]).double()
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(W))
            linear.bias.copy_(torch.from_numpy(b))
        modules += [linear, torch.nn.ReLU()]
    net = torch.nn.Sequential(*modules[:-1])
    opt = torch.optim.Adam(net.parameters(), lr=learning_rate)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y.astype(float))
    for rows in batches:
        loss = torch.nn.BCEWithLogitsLoss()(net(Xt[rows])[:, 0], yt[rows])
        loss = loss + weight_decay * sum((p ** 2).sum() for p in net.parameters())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [(m.weight.detach().numpy(), m.bias.detach().numpy()) for m in net if isinstance(m, torch.nn.Linear)]


def test_training_takes_torchs_adam_steps_on_torchs_loss(rng):
    X, y = rng.uniform(size=(40, 3)), (rng.uniform(size=40) > 0.5).astype(int)
    ours = train_relu_network(X, y, hidden=(4, 4), epochs=2, batch_size=16, learning_rate=0.01, weight_decay=1e-4,
                              random_state=3)
    replay = np.random.default_rng(3)  # the trainer's stream: initial layers, then one permutation per epoch
    start = initial_layers([3, 4, 4, 1], replay)
    batches = [order[i:i + 16] for order in (replay.permutation(40) for _ in range(2)) for i in range(0, 40, 16)]
    theirs = _torch_adam(start, X, y, batches=batches, learning_rate=0.01, weight_decay=1e-4)
    for (W, b), (Wt, bt) in zip(ours, theirs):
        assert np.allclose(W, Wt, rtol=0, atol=1e-12) and np.allclose(b, bt, rtol=0, atol=1e-12)


def test_a_trained_network_separates_a_separable_problem(rng):
    X = rng.uniform(size=(200, 2))
    y = (X[:, 0] + X[:, 1] > 1).astype(int)
    layers = train_relu_network(X, y, hidden=(8, 8), epochs=40, random_state=0)
    assert ((network_logits(layers, X) > 0) == y).mean() > 0.95


def test_bad_training_data_is_refused():
    with pytest.raises(ValueError, match="finite"):
        train_relu_network([[np.nan, 0.0]], [1])
    with pytest.raises(ValueError, match="shape"):
        train_relu_network([[0.0, 1.0]], [1, 0])


TRAIN = """
import hashlib, json, numpy as np
from explainopt.training import train_relu_network
rng = np.random.default_rng(0)
X = rng.uniform(size=(300, 5)); y = (X @ [1, -2, 1, 0.5, -1] > 0).astype(int)
layers = train_relu_network(X, y, hidden=(12, 12), epochs=8, random_state=1)
flat = np.concatenate([a.ravel() for layer in layers for a in layer])
print(json.dumps(hashlib.sha256(flat.tobytes()).hexdigest()))
"""
#: Code paths forced in a fresh interpreter: the libraries' own choices, and every kernel family set to its
#: most portable one (NumPy's baseline SIMD, OpenBLAS's SSE3 kernels, torch's scalar kernels).
CODE_PATHS = {
    "native": {"EXPLAINOPT_CODE_PATHS": "native"},
    "portable": {"EXPLAINOPT_CODE_PATHS": "native", "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4",
                 "OPENBLAS_CORETYPE": "Prescott", "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"},
    "pinned": {},
}


def test_training_gives_the_same_bits_under_every_forced_code_path():
    hashes = {}
    for name, env in CODE_PATHS.items():
        clean = {k: v for k, v in os.environ.items() if k not in {"NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE"}}
        out = subprocess.run([sys.executable, "-c", TRAIN], env={**clean, **env}, capture_output=True, text=True,
                             check=True)
        hashes[name] = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(set(hashes.values())) == 1, hashes
