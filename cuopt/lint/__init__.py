"""`cuopt check`: a static lint pass (syntax, spec, nvcc, optimization findings)."""
