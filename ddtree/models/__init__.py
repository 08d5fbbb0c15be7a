"""Models: the target loader, the DFlash drafter and target/drafter pairs."""
from ddtree.models.drafter import DFlashConfig, DFlashDrafter, DraftCache
from ddtree.models.pair import (ModelPair, draft_logits, load_default_pair, load_pair, random_drafter_for,
                                tiny_random_pair)
from ddtree.models.target import TargetCache, load_target, target_forward

__all__ = [
    "load_target", "target_forward", "TargetCache",
    "DFlashConfig", "DFlashDrafter", "DraftCache",
    "ModelPair", "load_pair", "load_default_pair", "random_drafter_for", "tiny_random_pair", "draft_logits",
]
