"""Our baselines beside their authors' code, on the same networks and factuals: agreement in validity,
robustness and distance.

    python benchmarks/baselines.py --authors-dominguez /tmp/AdversariallyRobustRecourse --instances 10
    python benchmarks/baselines.py --authors-dominguez PATH --pairs banknote:NN50 --rhos 0.2
    python benchmarks/baselines.py --authors-proplace /tmp/proplace --datasets carla/compas --instances 10
    python benchmarks/baselines.py --authors-dominguez PATH --authors-proplace PATH   # both tables

The authors' repositories are not part of this project; the benchmark imports from them at run time.

``--authors-dominguez PATH`` (``RicardoDominguez/AdversariallyRobustRecourse``; needs cvxpy and tqdm, both in
the project's environment): chapter 2's Table 3 cells (:data:`~explainopt.chapters.robust_regions.TABLE3_PAIRS`
x `--rhos`, the first `--instances` drawn factuals, the chapter's fitted networks). Their
``recourse.DifferentiableRecourse`` (``utils.get_recourse_hyperparams``, ``robust=True``, the [0, 1] box of
``build_feasibility_sets``) runs on a float32 copy of the network (a target of class 0 by negating its logit)
beside our (float32 too) :func:`~explainopt.counterfactuals.adversarial_recourse.adversarial_recourse`. Per (pair, rho):
how often each finds a recourse, is valid, is robust (certified exactly at rho by
:func:`~explainopt.counterfactuals.regions.certify_region`), the mean l1 distances, how often the two agree on
validity and robustness, and the largest |x_ours - x_theirs|.

``--authors-proplace PATH`` (``junqi-jiang/proplace``; needs matplotlib and sklearn): chapter 4's networks
(:func:`~explainopt.chapters.proplace.prepare`, the authors' widths and epochs, `--retrained` networks of each
kind) and factuals. Their RBR (``rbr/rbr.py`` with ``experiments/exputils.run_rbr``'s settings) and RobX
(``exputils.counterfactual_stability``, ``robx``, ``run_robx``: read from their file with ``ast`` and run
here, since the rest of ``exputils`` needs carla, alibi and gurobipy) beside ours (:func:`~explainopt.
counterfactuals.rbr.rbr`, :func:`~explainopt.counterfactuals.baselines.robx`, with the chapter's settings).
Per data set and method: validity, vΔ (at the data set's delta; over the points inside [0, 1]), vr,
normalised l1 and the share outside [0, 1] (their RBR has no box constraint) of both (Table 1's metrics,
:func:`~explainopt.counterfactuals.proplace.evaluate`), agreement on validity, and the mean |x_ours - x_theirs|. Their ROAR (carla's), Proto-R (alibi) and MILP-R/PROPLACE (gurobipy) are not run.
"""

import argparse
import ast
import importlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from explainopt.chapters import proplace as ch4
from explainopt.chapters import robust_regions as ch2
from explainopt.counterfactuals import baselines, rbr
from explainopt.counterfactuals.adversarial_recourse import adversarial_recourse
from explainopt.counterfactuals.proplace import evaluate
from explainopt.counterfactuals.regions import certify_region
from explainopt.encoders import model_predict, network_layers


def authors_module(path: str, name: str):
    """Import module `name` from the authors' checkout at `path`."""
    if not Path(path, *name.split(".")).with_suffix(".py").exists():
        raise SystemExit(f"{path} has no {name.replace('.', '/')}.py: is it the authors' checkout?")
    sys.path.insert(0, str(path))
    return importlib.import_module(name)


class Float32Logit(torch.nn.Module):
    """The network as the authors' code sees it: float32, ``forward`` the logit (negated for target 0), and
    ``predict_torch`` (probability >= 0.5)."""

    def __init__(self, model, target: int = 1):
        super().__init__()
        layers = []
        for W, b in network_layers(model):
            lin = torch.nn.Linear(W.shape[1], W.shape[0])
            with torch.no_grad():
                lin.weight.copy_(torch.as_tensor(W, dtype=torch.float32))
                lin.bias.copy_(torch.as_tensor(b, dtype=torch.float32))
            layers += [lin, torch.nn.ReLU()]
        self.net = torch.nn.Sequential(*layers[:-1])
        self.sign = 1.0 if target == 1 else -1.0

    def forward(self, x):
        return self.sign * self.net(x).reshape(-1)

    def predict_torch(self, x):
        return (torch.sigmoid(self(x)) >= 0.5).to(torch.int)


def dominguez_table(path: str, rhos, instances: int, seed: int, pairs=None) -> pd.DataFrame:
    recourse, utils = authors_module(path, "recourse"), authors_module(path, "utils")
    rows = []
    for dataset, name in pairs or ch2.TABLE3_PAIRS:
        X, _ = ch2.paper_data(dataset)
        clf = ch2.fitted_model(dataset, name, seed)
        D = X.shape[1]
        constraints = dict(increasing=[], decreasing=[], limits=np.array([[0.0, 1.0]] * D))
        for rho in rhos:
            for index in ch2.factual_indices(dataset, instances, random_state=seed):
                x0 = X[index]
                target = 1 - int(model_predict(clf, x0[None])[0])
                ours = adversarial_recourse(clf, x0, rho=rho, target=target)
                torch.manual_seed(seed)
                explainer = recourse.DifferentiableRecourse(Float32Logit(clf, target),
                                                            utils.get_recourse_hyperparams("ERM"))
                bounds = recourse.build_feasibility_sets(x0[None], list(range(D)), constraints)
                _, found, _, cfs = explainer.find_recourse(x0[None], list(range(D)), bounds, target=1.0, robust=True,
                                                           epsilon=rho, verbose=False)
                theirs = cfs[0].astype(float)
                row = dict(dataset=dataset, model=name, rho=rho, index=index)
                for who, x, ok in (("ours", ours.x, ours.robust_by_attack), ("theirs", theirs, bool(found[0]))):
                    cert = certify_region(clf, x, rho=rho, norm="l2", target=target, n_samples=1000,
                                          random_state=seed + index)
                    row |= {f"{who}_found": ok, f"{who}_valid": bool(model_predict(clf, x[None])[0] == target),
                            f"{who}_robust": bool(cert.certified), f"{who}_l1": float(np.abs(x - x0).sum())}
                row["max_abs_diff"] = float(np.abs(ours.x - theirs).max())
                rows.append(row)
    frame = pd.DataFrame(rows)
    agree = frame.assign(valid_agree=frame.ours_valid == frame.theirs_valid,
                         robust_agree=frame.ours_robust == frame.theirs_robust)
    return agree.groupby(["dataset", "model", "rho"], sort=False).agg(
        n=("index", "size"), found_ours=("ours_found", "mean"), found_theirs=("theirs_found", "mean"),
        valid_ours=("ours_valid", "mean"), valid_theirs=("theirs_valid", "mean"),
        robust_ours=("ours_robust", "mean"), robust_theirs=("theirs_robust", "mean"),
        valid_agree=("valid_agree", "mean"), robust_agree=("robust_agree", "mean"),
        l1_ours=("ours_l1", "mean"), l1_theirs=("theirs_l1", "mean"), max_abs_diff=("max_abs_diff", "max"))


def authors_functions(path: str, names, namespace: dict) -> dict:
    """The functions `names` of the authors' ``experiments/exputils.py``, defined in `namespace` (the rest of
    the file, which imports carla, alibi and gurobipy, is not run)."""
    tree = ast.parse(Path(path, "experiments", "exputils.py").read_text())
    chosen = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    exec(compile(ast.Module(body=chosen, type_ignores=[]), "exputils.py", "exec"), namespace)
    return namespace


class AuthorsModel:
    """Our torch network with the authors' InnModel interface (``predict``, ``predict_proba``)."""

    def __init__(self, net):
        self.net = net

    def proba(self, X):
        with torch.no_grad():
            return torch.sigmoid(self.net(torch.as_tensor(np.asarray(X, float)))).numpy().ravel()

    def predict(self, X):
        return np.round(self.proba(np.atleast_2d(X))).astype(np.int64)

    def predict_proba(self, X):
        p = self.proba(np.atleast_2d(X))
        return np.c_[1 - p, p]


def proplace_table(path: str, datasets, instances: int, retrained: int, seed: int) -> pd.DataFrame:
    rbr_module = authors_module(path, "rbr.rbr")
    ns = authors_functions(path, {"normalised_l1", "counterfactual_stability", "robx", "run_robx"},
                           {"np": np, "tqdm": lambda it: it})
    rows = []
    for dataset in datasets:
        prep = ch4.prepare(dataset, None, retrained, retrained, "train")
        model, X1 = prep["model"], prep["split"]["X1"]
        idx = ch4.factual_indices(prep, instances)
        F = ch4.factuals(prep)[idx]
        theirs_model = AuthorsModel(model)
        split = type("Split", (), {"X1": pd.DataFrame(X1)})()
        np.random.seed(seed)
        ces = {("RobX", "theirs"): np.array(ns["run_robx"](theirs_model, split, F, ch4.ROBX_TAU.get(dataset, 0.5))),
               ("RobX", "ours"): np.array([baselines.robx(model, x0, X1, tau=ch4.ROBX_TAU.get(dataset, 0.5)).x
                                           for x0 in F]),
               ("RBR", "ours"): np.array([rbr.rbr(model, x0, X1).x for x0 in F])}
        theirs_rbr = []
        for x0 in F:  # experiments/exputils.run_rbr
            arg = rbr_module.RBR(theirs_model, X1, num_cfacts=1000, max_iter=500,
                                 random_state=np.random.RandomState(10), device="cpu")
            theirs_rbr.append(arg.fit_instance(x0.astype(np.float32), 200, 0.2, 1.0, 1.0, 1.0, 1.0, None))
        ces[("RBR", "theirs")] = np.array(theirs_rbr, float)
        for method in ("RBR", "RobX"):
            row = dict(dataset=ch4.short(dataset), method=method, n=len(F))
            for who in ("ours", "theirs"):
                m = evaluate(model, F, ces[(method, who)], delta=ch4.DELTAS[dataset], retrained=prep["retrained"])
                row |= {f"{k}_{who}": m[k] for k in ("validity", "vΔ", "vr", "l1", "outside")}
            a, b = ces[(method, "ours")], ces[(method, "theirs")]
            row["valid_agree"] = 100 * float((model_predict(model, a) == model_predict(model, b)).mean())
            row["mean_abs_diff"] = float(np.abs(a - b).mean())
            rows.append(row)
    return pd.DataFrame(rows).set_index(["dataset", "method"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors-dominguez", metavar="PATH", help="checkout of RicardoDominguez/AdversariallyRobustRecourse")
    parser.add_argument("--authors-proplace", metavar="PATH", help="checkout of junqi-jiang/proplace")
    parser.add_argument("--rhos", type=float, nargs="+", default=[0.1, 0.2])
    parser.add_argument("--pairs", nargs="+", metavar="DATASET:MODEL", help="Table 3 pairs (default: all four)")
    parser.add_argument("--datasets", nargs="+", default=["carla/compas"])
    parser.add_argument("--instances", type=int, default=5, help="factuals per cell")
    parser.add_argument("--retrained", type=int, default=2, help="retrained networks of each kind (chapter 4's vr)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not (args.authors_dominguez or args.authors_proplace):
        parser.error("give --authors-dominguez PATH and/or --authors-proplace PATH")
    pd.set_option("display.width", 250, "display.max_columns", 30, "display.precision", 3)
    if args.authors_dominguez:
        print("Chapter 2, Table 3 baseline: Dominguez-Olmedo et al.'s Algorithm 1, ours vs. their code")
        pairs = [tuple(p.split(":")) for p in args.pairs] if args.pairs else None
        print(dominguez_table(args.authors_dominguez, args.rhos, args.instances, args.seed, pairs).to_string())
    if args.authors_proplace:
        print("Chapter 4 baselines: ours vs. the PROPLACE authors' code (percentages; l1 normalised)")
        print(proplace_table(args.authors_proplace, args.datasets, args.instances, args.retrained, args.seed).to_string())


if __name__ == "__main__":
    main()
