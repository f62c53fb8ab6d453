"""Data files shipped with the app: catalyst prompts, settings, CSS, the sample document."""
