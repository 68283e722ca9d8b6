"""`cuopt capture`: kernel launches recorded from the running program (CUPTI through the CUDA
injection entry point), stored as a manifest and .npy arrays."""
