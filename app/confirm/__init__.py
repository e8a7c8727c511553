"""The real torch.distributed confirmation: job types, the warm pool, the torch worker, the CLI."""
