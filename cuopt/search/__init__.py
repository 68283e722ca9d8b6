"""Search over rewrite sequences: Monte Carlo Tree Search guided by a policy."""
