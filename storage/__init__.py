"""Where documents and their pots live under $INFINIPOT_HOME; plain dicts, tensors and bytes only."""
