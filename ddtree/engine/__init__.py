"""The native engine: a static-cache decoder forward over ragged padded tree batches (Triton on CUDA)."""
from ddtree.engine.batch_session import BatchSession
from ddtree.engine.decoder import NativeDecoder, packed_mask_attention

__all__ = ["BatchSession", "NativeDecoder", "packed_mask_attention"]
