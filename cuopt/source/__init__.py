"""The source model: tree-sitter parse of a .cu file and its kernels."""
