"""Training of the DFlash drafter shipped for the embedded SmolLM2 target (see ddtree/training/README.md):
prompts (prompts.py), self-distilled data (data.py), the multi-anchor training forward (forward.py) and the job
(train.py). Importing this package imports nothing heavy; run the modules with `python -m`."""
