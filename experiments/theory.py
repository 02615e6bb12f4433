"""§4: the closed-form approximations against simulation.

Construction of "uniformly distributed scores" (§4.1, see :mod:`groupbias.evaluation.theory`): per
query ``n_N`` non-affected items (``n_N^+`` relevant) and ``n_A`` affected items (``n_A^+``
relevant); unbiased scores ``u ~ U[1/2, 1]`` for relevant and ``U[0, 1/2)`` for non-relevant
items; the simulator applies ``a = β u`` to the affected group. For each β on the grid the
library metrics of the biased scores are compared with the theory:

- E[ν] = max(2 − 1/β, 0) against the empirical ν (Eq. 7, threshold a* = 1/2);
- NDCG of the attractiveness ranking against Eq. (8)–(9) at E[ν] (Thm 4.1);
- ρ(DTR) of the perceived relevance (scores discretized at a*) against ν (Thm 4.3);
- Δ(EEL) (ℓ1, scores discretized at a*) against Thm 4.2 with the fitted α, α'.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias import metrics as M
from groupbias import theory as T
from groupbias.app.setup import Setup
from groupbias.core.io import write_text_atomic
from groupbias.core.validation import integer
from groupbias.evaluation import exposure as E
from groupbias.simulate.group_bias import simulate_attractiveness

from .common import check_common, rng_for


def simulate_section4(
    rng: np.random.Generator,
    beta: float,
    n_queries: int,
    *,
    n_N: int,
    n_pos_N: int,
    n_A: int,
    n_pos_A: int,
):
    """Flat (attractiveness, relevance, groups, qptr) of the §4 construction."""
    size = n_N + n_A
    one = np.r_[
        np.ones(n_pos_N), np.zeros(n_N - n_pos_N), np.ones(n_pos_A), np.zeros(n_A - n_pos_A)
    ]
    r = np.tile(one, n_queries)
    g = np.tile(np.r_[np.zeros(n_N), np.ones(n_A)], n_queries)
    u = np.where(r == 1, rng.uniform(0.5, 1.0, r.size), rng.uniform(0.0, 0.5, r.size))
    qptr = np.arange(0, n_queries * size + 1, size, dtype=np.int64)
    a = simulate_attractiveness(u, g, qptr=qptr, beta_query=np.full(n_queries, beta))
    return a, r, g, qptr


def _simulated(a, r, g, qptr) -> dict:
    perceived = E.discretize(a, thresholds=(0.5,)).astype(np.float64)
    return {
        "nu": float(np.nanmean(T.nu(a, r, g, qptr=qptr, threshold=0.5))),
        "ndcg": M.ndcg(a, r, qptr=qptr, groups=g, gain="linear"),
        "rho_dtr": M.rho_dtr_tabular(perceived, r, qptr=qptr, groups=g),
        "delta_eel": M.delta_eel_tabular(
            a, r, qptr=qptr, groups=g, thresholds=(0.5,), distance="l1"
        ),
    }


def _theory(beta: float, n: dict, fit) -> dict:
    nu_th = float(T.expected_nu(beta))
    return {
        "nu": nu_th,
        "ndcg": float(T.expected_ndcg(nu_th, n["n_pos_N"], n["n_N"], n["n_pos_A"])),
        "rho_dtr": float(T.rho_dtr_theory(nu_th)),
        # Thm 4.2 is the signed change (of G_N's target); compare its magnitude
        "delta_eel": abs(
            float(
                T.delta_eel_theory(
                    nu_th,
                    n["n_pos_N"],
                    n["n_N"],
                    n["n_pos_A"],
                    alpha=fit.alpha,
                    alpha_prime=fit.alpha_prime,
                )
            )
        ),
    }


#: the fewest simulated queries of a table (the default is 4000)
MIN_QUERIES = 100


@dataclass
class Theory:
    """``experiment=theory``: ``n_queries`` simulated lists of ``n_N`` non-affected items
    (``n_pos_N`` relevant) and ``n_A`` affected items (``n_pos_A`` relevant), for every β of
    ``bias.betas``."""

    trains_ranker = False  # tabular regime only: the ranker groups are not built

    name: str = "theory"
    n_queries: int = 4000
    n_N: int = 10
    n_pos_N: int = 5
    n_A: int = 10
    n_pos_A: int = 5

    def __post_init__(self) -> None:
        check_common(self)
        # the simulated column is a Monte-Carlo mean over queries, set beside the closed
        # form: from one query (or a handful) it is noise printed as a result
        integer("n_queries", self.n_queries, low=MIN_QUERIES)
        integer("n_N", self.n_N, low=1)
        integer("n_A", self.n_A, low=1)
        integer("n_pos_N", self.n_pos_N, low=0, high=self.n_N)
        integer("n_pos_A", self.n_pos_A, low=0, high=self.n_A)

    def run(self, setup: Setup, run_dir) -> dict:
        n = dict(n_N=self.n_N, n_pos_N=self.n_pos_N, n_A=self.n_A, n_pos_A=self.n_pos_A)
        fit = T.fit_alpha(n["n_N"] + n["n_A"])
        records = []
        for beta in setup.bias.betas:
            sim = _simulated(
                *simulate_section4(rng_for(setup.seed, "theory", beta), beta, self.n_queries, **n)
            )
            th = _theory(beta, n, fit)
            for metric in sim:
                for cond, value in (("simulation", sim[metric]), ("theory", th[metric])):
                    records.append(
                        {
                            "dataset": "§4 construction",
                            "regime": "theory",
                            "beta": beta,
                            "metric": metric,
                            "condition": cond,
                            "value": float(value),
                        }
                    )
        return {"records": records, "alpha": fit.alpha, "alpha_prime": fit.alpha_prime}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import pandas as pd

        from groupbias.reporting.plots import save_figure

        df = pd.DataFrame(metrics["records"])
        wide = df.pivot_table(index="beta", columns=["metric", "condition"], values="value")
        lines = [
            "| β | " + " | ".join(f"{m} ({c})" for m, c in wide.columns) + " |",
            "|---" * (len(wide.columns) + 1) + "|",
        ]
        for beta, row in wide.sort_index(ascending=False).iterrows():
            lines.append(f"| {beta:g} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
        table = "\n".join(lines) + "\n"
        write_text_atomic(Path(run_dir) / "theory.md", table)
        print(
            f"α = {metrics['alpha']:.3f}, α' = {metrics['alpha_prime']:.3f} (n = "
            f"{self.n_N + self.n_A})"
        )
        print(table)
        fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
        for ax, metric in zip(axes, ("nu", "ndcg", "rho_dtr", "delta_eel")):
            for cond, style in (("simulation", "o"), ("theory", "-")):
                s = df[(df.metric == metric) & (df.condition == cond)].sort_values("beta")
                ax.plot(s.beta, s.value, style, label=cond)
            ax.set_xlabel("β")
            ax.set_title(
                {
                    "nu": "ν (Eq. 7)",
                    "ndcg": "NDCG (Thm 4.1)",
                    "rho_dtr": "ρ(DTR) (Thm 4.3)",
                    "delta_eel": "Δ(EEL) ℓ1 vs |Thm 4.2|",
                }[metric]
            )
            ax.legend(fontsize=8)
        fig.tight_layout()
        out = save_figure(fig, Path(run_dir) / "theory")
        print(f"[groupbias] figure: {out['png']}")
