"""What each command runs: check, generate, and both as one stream (`run`)."""
