"""`cuopt optimize`: baseline, search, confirmation, write-back, report and trace for one kernel."""
