"""Randomly initialised DFlash drafters for unit tests, their weights spread wide enough that outputs differ."""
import torch

from ddtree.models import DFlashConfig, DFlashDrafter


def noisy_drafter(config: dict, seed: int = 0) -> DFlashDrafter:
    """A drafter of `config` (DFlashConfig fields): norm weights 1 + 0.2 N(0, 1), every other weight 0.3 N(0, 1)."""
    torch.manual_seed(seed)
    drafter = DFlashDrafter(DFlashConfig(**config))
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            p.copy_(1 + 0.2 * torch.randn_like(p) if name.endswith("norm.weight") else 0.3 * torch.randn_like(p))
    return drafter.eval()
