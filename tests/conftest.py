"""Without a GPU, Triton kernels (ours and SGLang's) run in Triton's interpreter. The switch must be on before any
kernel module is imported, so it is set here, before test modules are collected."""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
