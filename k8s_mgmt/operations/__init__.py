"""One module per LCM operation; each takes an OperationContext."""
