"""Models: the target loader, the DFlash drafter and target/drafter pairs."""
