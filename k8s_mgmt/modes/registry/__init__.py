"""The registry VNF: one VM turned into a private container registry."""
