"""Training the learned policy, apart from the product: a corpus of generated kernels (families,
spellings), self-play data collected on the GPU, the torch network and its training, search-efficiency
curves and the `cuopt-train` commands. It uses the product (the search, the features, the weights
format); nothing in the product imports it."""
