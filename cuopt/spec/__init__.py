"""The kernel spec: sidecar TOML describing launch, data and sizes."""
