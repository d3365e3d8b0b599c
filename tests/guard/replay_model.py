"""Tiny loss functions for `dataaudit replay` tests (imported by MODULE:FACTORY)."""
import torch


def make_loss():
    """Squared output of a fixed linear layer over "features": a huge input gives an Inf loss."""
    lin = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        lin.weight.fill_(1.0)

    def loss_fn(batch):
        return (lin(batch["features"]) ** 2).mean()

    return loss_fn


def make_group_loss():
    """log(10 + sum of the batch's first feature): rows of -6 are fine alone and NaN together."""
    return lambda batch: torch.log(10 + batch["features"][:, 0].sum())


def broken():
    raise RuntimeError("no checkpoint here")


not_callable = 3


def make_square_loss():
    """The mean of each row's squared feature sum, in the features' own dtype: 300 overflows float16, not float32."""
    return lambda batch: (batch["features"].sum(1) ** 2).mean()
