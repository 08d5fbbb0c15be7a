"""The native engine: a static-cache decoder forward over ragged padded tree batches (Triton on CUDA)."""
from ddtree.engine.backend import NativeBackend
from ddtree.engine.decoder import FlatMask, NativeDecoder, packed_mask_attention

__all__ = ["NativeBackend", "NativeDecoder", "FlatMask", "packed_mask_attention"]
