"""What the plugin posts and the answers to it: summaries, staleness nudges and contradiction
notes, the updates their buttons run, and the outbox port."""
