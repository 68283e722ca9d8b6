"""The learned policy: kernel corpus, features, self-play data, model and training."""
