"""The engine: model loading, the memory pot, Continual Context Distillation, scorers, CR-RoPE, generation."""
