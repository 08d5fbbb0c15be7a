"""Triton kernels (issue 5): each kernel lives beside the torch reference it is tested against."""
