"""Training-step time of the LTR scorer vs allRank's model at the same configuration.

One step = forward + LambdaLoss (NDCG-Loss2++, ours, on both models' scores) + backward +
Adam step, on the same padded batch (default 64 queries x 120 slots x 136 features, list
lengths uniform in 30..120 (``--full``: all 120), allRank's MSLR example architecture with
h=2). allRank's weights
are copied into ours so both compute the same function. Steps alternate between the two
models; the median over the timed steps is reported after warm-up.

    python benchmarks/ranker.py                      # CPU, float32
    python benchmarks/ranker.py --device cuda --precision bf16

Prints ``ratio: <allrank_time / ours>`` last.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from groupbias.ltr.allrank_compat import load_allrank_weights  # noqa: E402
from groupbias.ltr.losses import lambda_loss  # noqa: E402
from groupbias.ltr.model import make_scorer  # noqa: E402


def model_cfg(h: int, dropout: float) -> dict:
    return {
        "fc_model": {"sizes": [144], "input_norm": False, "activation": None, "dropout": 0.0},
        "transformer": {
            "N": 2,
            "d_ff": 384,
            "h": h,
            "positional_encoding": None,
            "dropout": dropout,
        },
        "post_model": {"output_activation": "Sigmoid", "d_output": 1},
    }


def build_allrank(cfg: dict, n_features: int):
    from allrank.config import TransformerConfig
    from allrank.models.model import make_model

    c = copy.deepcopy(cfg)
    return make_model(
        c["fc_model"], TransformerConfig(**c["transformer"]), c["post_model"], n_features=n_features
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--slate", type=int, default=120)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--full",
        action="store_true",
        help="every list fills the slate (no padding) instead of 30..slate items",
    )
    args = ap.parse_args()

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    cfg = model_cfg(args.heads, args.dropout)
    allrank = build_allrank(cfg, args.features).to(device)
    ours = make_scorer(cfg, n_features=args.features)
    load_allrank_weights(ours, allrank.state_dict())
    ours = ours.to(device)

    g = torch.Generator().manual_seed(args.seed)
    b, slate, f = args.batch, args.slate, args.features
    lengths = torch.randint(min(30, slate), slate + 1, (b,), generator=g)
    lengths[0] = slate
    if args.full:
        lengths[:] = slate
    mask = torch.arange(slate)[None, :] < lengths[:, None]
    x = torch.randn(b, slate, f, generator=g) * mask[..., None]
    y = torch.randint(0, 5, (b, slate), generator=g).float() * mask
    indices = torch.arange(slate).expand(b, -1).contiguous()
    x, y, mask, indices = (t.to(device) for t in (x, y, mask, indices))
    padded = ~mask

    def autocast():
        if args.precision == "bf16":
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return nullcontext()

    opt_a = torch.optim.Adam(allrank.parameters(), lr=1e-4)
    opt_o = torch.optim.Adam(ours.parameters(), lr=1e-4)

    def step_allrank():
        opt_a.zero_grad(set_to_none=True)
        with autocast():
            s = allrank.score(x, padded, indices)
        lambda_loss(s.float(), y, mask, weighting="ndcgLoss2PP").backward()
        opt_a.step()

    def step_ours():
        opt_o.zero_grad(set_to_none=True)
        with autocast():
            s = ours(x, mask)
        lambda_loss(s.float(), y, mask, weighting="ndcgLoss2PP").backward()
        opt_o.step()

    def timed(fn) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    allrank.train()
    ours.train()
    for _ in range(args.warmup):
        timed(step_allrank)
        timed(step_ours)
    t_a, t_o = [], []
    for _ in range(args.steps):
        t_a.append(timed(step_allrank))
        t_o.append(timed(step_ours))
    med_a, med_o = statistics.median(t_a), statistics.median(t_o)
    print(
        f"device {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}"
        f", {torch.get_num_threads()} threads), precision {args.precision}, torch "
        f"{torch.__version__}"
    )
    print(
        f"batch {b} queries x {slate} slots x {f} features "
        f"({int(mask.sum())} real items); fc [144], N=2, h={args.heads}, d_ff=384, "
        f"dropout {args.dropout}; loss NDCG-Loss2++ (ours) for both"
    )
    print(f"allRank make_model: median {med_a * 1e3:.2f} ms/step over {args.steps} steps")
    print(f"groupbias scorer:   median {med_o * 1e3:.2f} ms/step over {args.steps} steps")
    print(f"ratio: {med_a / med_o:.3f}")


if __name__ == "__main__":
    main()
