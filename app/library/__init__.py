"""The store, the models and finding documents and pots: what every other part of the app builds on."""
