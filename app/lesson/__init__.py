"""The published Atlas lesson record: model, loader, rendering and quiz."""
