"""The native engine: a static-cache decoder forward over ragged padded tree batches (Triton on CUDA)."""
from ddtree.engine.batch_session import BatchSession
from ddtree.engine.decoder import NativeDecoder

__all__ = ["BatchSession", "NativeDecoder"]
