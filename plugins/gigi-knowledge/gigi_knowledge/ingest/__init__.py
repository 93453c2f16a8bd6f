"""A message's way in: the event gate, the per-channel window, the processing queue and the tiers
(classify, extract, write) one message goes through."""
